"""Staging the book source with the executed notebooks (placeholders filled,
generated tables inserted) and rendering it with Jupyter Book; a rerun's HTML page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import prose
from . import verdicts
from .generated import (
    chapter_scorecard,
    claims_markdown,
    copy_thumbnails,
    front_scorecards,
    parameters_markdown,
    run_times_markdown,
)
from .lock import CHECK_TAG
from .pages import Paths, book_pages, parameters
from .robustness import stale_markdown

# Markers in the book's Markdown and the functions whose output replaces them.
GENERATED = {
    "<!-- CLAIMS_TABLE -->": claims_markdown,
    "<!-- PARAMETERS_TABLE -->": parameters_markdown,
    "<!-- RUN_TIMES -->": run_times_markdown,
    "<!-- SWEEPS_STALE -->": stale_markdown,
}
# Markers whose output depends on the page they stand in: a chapter's scorecard
# (book/<chapter>/index.md) and the four papers' scorecards (the front page).
SCORECARD = "<!-- SCORECARD -->"
SCORECARDS = "<!-- SCORECARDS -->"


def stage(paths: Paths) -> None:
    """Assemble the book source with executed notebooks in ``_build/src``."""
    staged = paths.staged
    tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=paths.build))
    try:
        _stage_into(paths, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if staged.exists():
        shutil.rmtree(staged)
    os.replace(tmp, staged)


def _stage_into(paths: Paths, tmp: Path) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(paths.root / name, tmp / name)
    shutil.copytree(
        paths.book,
        tmp / "book",
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb"),
    )
    pages = book_pages(paths)
    claims = {nb: page_claims(paths, nb) for nb in pages}
    for nb in pages:
        src = paths.executed / f"{nb}.ipynb"
        if not src.exists():
            raise RuntimeError(f"{nb} has not been executed")
        values = {k: p.default for k, p in parameters(paths, nb).items()}
        text = fill_placeholders(json.loads(src.read_text()), values, nb)
        text, own = variant_labels(text, claims[nb], nb)
        text = for_readers(text, nb, own, related_lines(nb, claims))
        (tmp / "book" / f"{nb}.ipynb").write_text(
            json.dumps(text, indent=1, ensure_ascii=False)
        )
    thumbs = copy_thumbnails(paths, tmp / "book")
    for md in (tmp / "book").rglob("*.md"):
        text = md.read_text()
        for marker, fn in GENERATED.items():
            if marker in text:
                text = text.replace(marker, fn(paths))
        if SCORECARD in text:
            chapter = md.parent.name
            text = text.replace(SCORECARD, chapter_scorecard(paths, chapter, claims))
        if SCORECARDS in text:
            text = text.replace(SCORECARDS, front_scorecards(paths, claims, thumbs))
        md.write_text(text)


def page_claims(paths: Paths, nb: str) -> list[dict]:
    """The page's claims (its claims JSON), or none."""
    f = paths.executed / f"{nb}.claims.json"
    if not f.exists():
        return []
    return json.loads(f.read_text()).get("claims", [])


# Theorems tested on pages of two chapters: each page's box links to the others
# (name -> the chapter whose pages cite it without the author's name).
SHARED_SOURCES = {"Lyu Thm 4.3": "lyu2021"}


def _cites(page: str, source: str, theorem: str, home: str) -> bool:
    if theorem in source:
        return True
    short = theorem.split(" ", 1)[1]  # "Thm 4.3" on the chapter's own pages
    return page.startswith(home + "/") and bool(
        re.search(rf"(^|[^\w.]){re.escape(short)}(?![\d.])", source)
    )


def related_lines(nb: str, claims: dict[str, list[dict]]) -> list[str]:
    """For a theorem also tested on other pages (:data:`SHARED_SOURCES`): one line
    naming those pages with their verdicts on it, and this page's."""
    out = []
    for theorem, home in SHARED_SOURCES.items():

        def on(page: str) -> list[dict]:
            return [
                c
                for c in claims.get(page, [])
                if _cites(page, str(c.get("source", "")), theorem, home)
            ]

        mine = on(nb)
        if not mine:
            continue
        others = [
            f"{{doc}}`{page_name(p)} </book/{p}>` ({verdicts.tally_text(on(p))})"
            for p in sorted(claims)
            if p != nb and on(p)
        ]
        if others:
            out.append(
                f"**{theorem}** is also tested on {prose.join(others)}; here: "
                f"{verdicts.tally_text(mine)}."
            )
    return out


def page_name(nb: str) -> str:
    """``synthesis/limits`` -> "Synthesis · limits" (a short link text)."""
    chapter, name = nb.split("/", 1)
    return f"{verdicts.CHAPTER_NAMES.get(chapter, chapter)} · {name.replace('_', ' ')}"


LABEL = re.compile(r"^\(([^)\s]+)\)=\s*$", re.M)


def variant_labels(nb: dict, claims: list[dict], page: str):
    """A variant page (``<name>__<variant>``) is its notebook run with other
    parameters: its section labels get the variant's suffix (in the targets, the
    references to them in its text, and its claims' ``section``), so two pages
    never define one label. Other pages are returned unchanged."""
    if "__" not in page:
        return nb, claims
    suffix = "-" + page.split("__", 1)[1].replace("_", "-")
    labels = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            labels |= set(LABEL.findall(_text(cell)))
    if not labels:
        return nb, claims
    names = "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True))
    target = re.compile(rf"^\(({names})\)=", re.M)
    ref = re.compile(rf"(\{{(?:ref|numref)\}}`(?:[^`<]*<)?)({names})(>?`)")
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            text = target.sub(lambda m: f"({m.group(1)}{suffix})=", _text(cell))
            cell["source"] = ref.sub(lambda m: m[1] + m[2] + suffix + m[3], text)
    claims = [
        dict(c, section=c["section"] + suffix) if c.get("section") in labels else c
        for c in claims
    ]
    return nb, claims


def claims_label(nb: str) -> str:
    """The label given at staging to a page's "Claims" section."""
    return re.sub(r"[^A-Za-z0-9-]", "-", nb) + "-claims"


def _text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _markdown(text: str, tags: list[str] | None = None) -> dict:
    cell = {"cell_type": "markdown", "metadata": {}, "source": text}
    if tags:
        cell["metadata"]["tags"] = tags
    return cell


def for_readers(nb: dict, page: str, claims: list[dict], related=()) -> dict:
    """What a reader sees of an executed notebook: the verdict box after the first
    markdown cell, the bookkeeping folded (:func:`fold`), the claims cell's nbval
    table replaced by the claims as a table of real values."""
    cells = nb["cells"]
    fold(cells, page)
    labels = set()
    for c in cells:
        if c["cell_type"] == "markdown":
            labels |= set(LABEL.findall(_text(c)))
    own = claims_label(page)
    heading = next(
        (
            c
            for c in cells
            if c["cell_type"] == "markdown"
            and re.match(r"#+\s+(The )?[Cc]laims\b", _text(c).lstrip())
        ),
        None,
    )
    check = next(
        (i for i, c in enumerate(cells) if CHECK_TAG in _tags(c)),
        None,
    )
    if heading is not None:
        heading["source"] = f"({own})=\n" + _text(heading)
    elif check is not None:  # no heading: the label goes on the claims table
        pass

    def link_for(c: dict) -> str | None:
        sec = c.get("section")
        if sec and sec in labels:
            return sec
        return own if (heading is not None or check is not None) else None

    if check is not None:
        tags = _tags(cells[check])
        for t in ("remove-output", "hide-input"):
            if t not in tags:
                tags.append(t)
        table = verdicts.full_table(claims, link_for, own) if claims else ""
        if heading is None:
            table = f"({own})=\n" + (table or "")
        if table:
            cells.insert(check + 1, _markdown(table))
    first = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"), -1)
    cells.insert(
        first + 1, _markdown(verdicts.box(page, claims, link_for, list(related)))
    )
    return nb


def _tags(cell: dict) -> list[str]:
    return cell.setdefault("metadata", {}).setdefault("tags", [])


FOLDED = ("hide-input", "hide-cell", "hide-output", "remove-input", "remove-cell")
GLUE_CALLS = {"glue", "glue_each", "glue_range"}


class ReaderError(RuntimeError):
    """An executed page shows a reader something it must not (an exception, a
    Python repr): the message names the page and the cell."""


def _only_glue(source: str) -> bool:
    """Every statement of the cell is a glue call (or a loop of them)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False

    def is_glue(stmt) -> bool:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            f = stmt.value.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            return name in GLUE_CALLS
        if isinstance(stmt, ast.For):
            return all(is_glue(s) for s in stmt.body)
        return False

    return bool(tree.body) and all(is_glue(s) for s in tree.body)


def _is_ledger(source: str) -> bool:
    return bool(re.search(r"^\s*(ledger\.|ledger\s*=\s*Ledger\()", source, re.M))


REPR = re.compile(
    r"^\s*(Claim\(|Rival\(|Ledger\(|\[?<(twolayer|matplotlib)\.|<Figure size)", re.M
)
EXCEPTION = re.compile(
    r"Traceback \(most recent call last\)|^\w+(Error|Exception): ", re.M
)


def _output_text(o: dict) -> str:
    if o.get("output_type") == "stream":
        return _flat(o.get("text", ""))
    if o.get("output_type") == "error":
        return "\n".join(o.get("traceback", [])) or o.get("evalue", "")
    data = o.get("data", {})
    if set(data) - {"text/plain"}:  # an image or HTML is what shows
        return ""
    return _flat(data.get("text/plain", ""))


def _flat(x) -> str:
    return "".join(x) if isinstance(x, list) else str(x)


def fold(cells: list[dict], page: str) -> None:
    """Tag the code cells for readers (QuantEcon style): the parameters cell and
    the ledger cells fold whole (``hide-cell``), glue-only cells lose their code
    (``remove-input``), every other code cell shows its output with its code one
    click away (``hide-input``). A Python repr printed by a bookkeeping cell is
    removed (``remove-output``); an exception's text in an output is an error
    naming the page and the cell."""
    for i, c in enumerate(cells):
        if c["cell_type"] != "code":
            continue
        tags, src = _tags(c), _text(c)
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                continue  # not shown to readers (nb_output_stderr: remove)
            text = _output_text(o)
            if o.get("output_type") == "error" or EXCEPTION.search(text):
                raise ReaderError(
                    f"{page}: cell {i} ({src.strip().splitlines()[0][:60]!r}...) "
                    f"prints an exception: {text.strip()[:200]!r}"
                )
            if REPR.search(text):
                if "remove-output" not in tags:
                    tags.append("remove-output")
        if CHECK_TAG in tags:
            continue  # for_readers folds it and adds the table
        if "parameters" in tags or "injected-parameters" in tags:
            if "hide-cell" not in tags:
                tags.append("hide-cell")
            continue
        if "run-record" in tags or any(t in tags for t in FOLDED):
            continue
        if _only_glue(src):
            tags.append("remove-input")
        elif _is_ledger(src):
            tags.append("hide-cell")
        else:
            tags.append("hide-input")


PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def fill_placeholders(nb: dict, values: dict, page: str) -> dict:
    """A page's text names its setting by value: ``{{name}}`` in the notebook's
    markdown cells and in a cell's ``mystnb.figure.caption`` is replaced by the
    page's parameter value (a variant page gets its own), so prose never prints a
    parameter's name where its value belongs. In the first markdown cell (title
    and statement) an unknown name is an error naming the page; later cells leave
    a ``{{...}}`` that names no parameter as it is (LaTeX may use double braces)."""

    def value(m: re.Match, strict: bool = True) -> str:
        if m.group(1) not in values:
            if not strict:
                return m.group(0)
            raise ValueError(
                f"{page}: placeholder {{{{{m.group(1)}}}}} names no parameter of the "
                "page"
            )
        v = values[m.group(1)]
        return format(v, "g") if isinstance(v, float) else str(v)

    first = True
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            src = cell["source"]
            text = "".join(src) if isinstance(src, list) else src
            strict, first = first, False
            cell["source"] = PLACEHOLDER.sub(lambda m: value(m, strict), text)
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if isinstance(figure.get("caption"), str):
            figure["caption"] = PLACEHOLDER.sub(value, figure["caption"])
    return nb


def render(paths: Paths) -> int:
    """Jupyter Book (execution off) from the staged source into ``_build/html``."""
    cmd = [
        sys.executable,
        "-m",
        "jupyter_book",
        "build",
        str(paths.staged),
        "--path-output",
        str(paths.root),
        "-W",
        "-n",
        "--keep-going",
    ]
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    if jb:
        cmd = [jb] + cmd[3:]
    return subprocess.call(cmd)


def write_html(notebook: Path) -> Path:
    """An HTML page of an executed notebook beside it (nbconvert's classic
    template, code and figures included): a rerun can be read without a
    notebook front end."""
    import nbconvert
    import nbformat

    body, _ = nbconvert.HTMLExporter(template_name="classic").from_notebook_node(
        nbformat.read(notebook, as_version=4)
    )
    html = notebook.with_suffix(".html")
    tmp = html.with_name(html.name + ".tmp")
    tmp.write_text(body)
    os.replace(tmp, html)
    return html
