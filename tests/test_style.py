"""Style is what CI checks (``make unit``, so CI fails on a violation):

* ruff's lint rules (``E``, ``F``, ``W``, ``I``) and its formatter, lines <= 88
  characters, on the library and the tests (configuration in ``pyproject.toml``'s
  ``[tool.ruff]``);
* the same two ruff commands on the book's notebooks;
* no code cell over :data:`MAX_CELL_LINES` lines (a long cell is split, or its
  computation or figure moves to the library).

``ruff format`` fixes the layout, ``ruff check --fix`` the import order; long
strings, docstrings and comments are wrapped by hand; a long cell is split (one
measurement or one figure per cell) or its computation moves to the library."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["lib", "tests", "benchmarks"]
BOOK = "book"  # passed explicitly: ruff then lints it despite the pyproject exclude
MAX_CELL_LINES = 40
COMMANDS = [["check"], ["format", "--check"]]


def _ruff(command: list[str], paths: list[str]) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, (
        f"`ruff {' '.join(command)} {' '.join(paths)}` found style violations "
        f"(fix with `ruff format` / `ruff check --fix`):\n{res.stdout}{res.stderr}"
    )


@pytest.mark.parametrize("command", COMMANDS, ids=["check", "format"])
def test_library_and_tests_pass_ruff(command):
    _ruff(command, PATHS)


def book_notebooks() -> list[Path]:
    """The book's source notebooks (checkpoints left out)."""
    return sorted(
        p for p in (ROOT / BOOK).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
    )


def long_cells(path: Path, limit: int = MAX_CELL_LINES) -> list[str]:
    """The code cells of a notebook with more than ``limit`` source lines (blank
    and comment lines count), as ``"<cell index> (<lines> lines): <first line>"``."""
    cells = json.loads(path.read_text())["cells"]
    out = []
    for i, cell in enumerate(cells):
        lines = "".join(cell["source"]).splitlines()
        if cell["cell_type"] == "code" and len(lines) > limit:
            out.append(f"{i} ({len(lines)} lines): {lines[0][:60]}")
    return out


def _code(lines: int) -> dict:
    return {"cell_type": "code", "source": "x = 1\n" * lines}


def test_long_cells_are_found(tmp_path):
    markdown = {"cell_type": "markdown", "source": "text\n" * 99}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": [_code(40), markdown, _code(41)]}))
    assert long_cells(path) == ["2 (41 lines): x = 1"]


@pytest.mark.parametrize("command", COMMANDS, ids=["check", "format"])
def test_notebooks_pass_ruff(command):
    _ruff(command, [BOOK])


def test_no_code_cell_over_the_limit():
    found = {
        str(p.relative_to(ROOT)): cells
        for p in book_notebooks()
        if (cells := long_cells(p))
    }
    assert not found, (
        f"code cells over {MAX_CELL_LINES} lines (split them):\n"
        + "\n".join(f"  {nb} cell {c}" for nb, cells in found.items() for c in cells)
    )


def test_each_page_names_its_own_claims_registry():
    """``Ledger(registered=...)`` names ``<page>.claims.yml`` beside the notebook (the
    file the page's cache key hashes), and every registry belongs to a page."""
    from twolayer import protocol

    wrong, used = [], set()
    for nb in book_notebooks():
        named = re.findall(r'registered=\\"([^"\\]+)\\"', nb.read_text())
        own = protocol.path_for(nb)
        used |= {nb.parent / n for n in named}
        if named and named != [own.name] or own.is_file() and not named:
            wrong.append(f"{nb.relative_to(ROOT)}: {named} (own: {own.name})")
    orphans = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / BOOK).rglob("*" + protocol.SUFFIX)
        if p not in used
    )
    assert not wrong and not orphans, (wrong, orphans)


def test_package_docstrings_list_every_module():
    """``lib/twolayer/__init__.py`` and ``pipeline/__init__.py`` list what is there."""
    import twolayer
    from twolayer import pipeline

    lib = ROOT / "lib" / "twolayer"
    for package, folder in ((twolayer, lib), (pipeline, lib / "pipeline")):
        names = {
            p.stem if p.suffix == ".py" else p.name
            for p in folder.iterdir()
            if (p.suffix == ".py" and not p.stem.startswith("__"))
            or (p / "__init__.py").is_file()
        }
        missing = sorted(
            n for n in names if f"`{n}`" not in package.__doc__.replace("`.", "`")
        )
        assert not missing, f"{package.__name__}'s docstring does not list {missing}"
