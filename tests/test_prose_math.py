"""A number glued into a sentence must sit outside the maths: MyST does not parse
roles inside ``$...$``, so ``$t = 10^{{glue:text}`x`}$`` renders the role's
source in the formula (MathJax draws it, so the browser check's text search
does not see it). Checked on every page's markdown, with planted examples."""

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
# $$...$$ first (display), then $...$ (inline, not across a blank line)
MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\$)(?:[^$\n]|\n(?!\n))+?\$", re.S)
INSIDE = re.compile(r"\{glue(?::\w+)?\}`|\{\{\s*\w+\s*\}\}")


def roles_in_math(text: str) -> list[str]:
    """The math spans of ``text`` that hold a glue role or a ``{{parameter}}``."""
    return [m.group(0) for m in MATH.finditer(text) if INSIDE.search(m.group(0))]


def markdown_cells(path: Path):
    for i, c in enumerate(json.loads(path.read_text())["cells"]):
        if c["cell_type"] == "markdown":
            yield i, "".join(c["source"])


@pytest.mark.parametrize(
    "text, bad",
    [
        ("by $t=10^{{glue:text}`t_hi:.1f`}$ at the latest", 1),
        ("a factor $e^{\\pm {glue}`d`}$", 1),
        ("step $\\eta = {{lr}}$ here", 1),
        ("$$\n x = {glue:math}`x`\n$$", 1),
        ("at $t = 10^3$ the gap is {glue:text}`gap:.3f`", 0),
        ("cost \\$5 and {glue}`x` then $y$", 0),
        ("$a$ {glue:text}`b` $c$", 0),
    ],
)
def test_planted_roles_in_math_are_found(text, bad):
    assert len(roles_in_math(text)) == bad


def test_no_page_glues_a_number_inside_its_maths():
    found = [
        f"{nb.relative_to(BOOK)} cell {i}: {span[:80]!r}"
        for nb in sorted(BOOK.glob("*/*.ipynb"))
        for i, text in markdown_cells(nb)
        for span in roles_in_math(text)
    ]
    found += [
        f"{md.relative_to(BOOK)}: {span[:80]!r}"
        for md in sorted(BOOK.glob("**/*.md"))
        for span in roles_in_math(md.read_text())
    ]
    assert not found, (
        "glue role or {{parameter}} inside $...$ (move it out):\n" + "\n".join(found)
    )


def control_characters(text: str) -> list[str]:
    """Control characters other than newline and tab (a TeX ``\\bar`` written into
    a notebook's JSON as ``\\b``ar becomes a backspace and ``ar``: MathJax then
    fails on the formula)."""
    return [repr(ch) for ch in text if ord(ch) < 32 and ch not in "\n\t"]


def test_planted_control_character_is_found():
    assert control_characters("its $\x08ar b$") == ["'\\x08'"]
    assert control_characters("its $\\bar b$\n\tok") == []


def test_no_markdown_cell_holds_a_control_character():
    found = [
        f"{nb.relative_to(BOOK)} cell {i}: {bad}"
        for nb in sorted(BOOK.glob("*/*.ipynb"))
        for i, text in markdown_cells(nb)
        if (bad := control_characters(text))
    ]
    assert not found, "control character in markdown (a JSON escape?):\n" + "\n".join(
        found
    )
