"""A page's cache key follows the library modules its notebook imports (issue:
a one-module edit re-executes only the pages that import that module)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from twolayer import pipeline
from twolayer.pipeline import imports

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "twolayer"


def _code_notebook(path: Path, *cells: str) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


def test_direct_and_transitive_imports(tmp_path):
    nb = _code_notebook(
        tmp_path / "a.ipynb",
        "import numpy as np\nfrom twolayer.theory import lyu2021",
        "%matplotlib inline\nfrom twolayer import plots",
    )
    mods = imports.notebook_modules(LIB, nb)
    # direct, their packages, what they import (relative imports included)
    assert {
        "twolayer",
        "twolayer.theory",
        "twolayer.theory.lyu2021",
        "twolayer.plots",
        "twolayer.metrics",
        "twolayer.validation",
        "twolayer.pipeline.record",
    } <= mods
    assert (
        "twolayer.theory.sarussi2021" not in mods
        and "twolayer.pipeline.cli" not in mods
    )


def test_imports_inside_functions_count(tmp_path):
    lib = tmp_path / "twolayer"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "a.py").write_text("def f():\n    from . import b\n    return b\n")
    (lib / "b.py").write_text("X = 1\n")
    (lib / "c.py").write_text("Y = 2\n")
    nb = _code_notebook(tmp_path / "n.ipynb", "from twolayer.a import f")
    assert imports.notebook_modules(lib, nb) == {"twolayer", "twolayer.a", "twolayer.b"}


def test_unparsable_cell_depends_on_everything(tmp_path):
    nb = _code_notebook(tmp_path / "a.ipynb", "from twolayer import data\ndef broken(:")
    assert imports.notebook_modules(LIB, nb) == imports.all_modules(LIB)


@pytest.fixture(scope="module")
def book_copy(tmp_path_factory):
    """The book's sources and library in a scratch root (edits stay there), and
    every page's cache key before any edit (each test restores what it edits)."""
    root = tmp_path_factory.mktemp("book")
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(
        ROOT / "book",
        root / "book",
        ignore=shutil.ignore_patterns("*.ipynb_checkpoints"),
    )
    shutil.copytree(
        LIB, root / "lib" / "twolayer", ignore=shutil.ignore_patterns("__pycache__")
    )
    paths = pipeline.Paths(root)
    return paths, _keys(paths)


def _keys(paths):
    return {
        nb: pipeline.cache_key(paths, nb, pipeline.page_parameters(paths, nb))
        for nb in pipeline.book_pages(paths)
    }


def _edited_keys(paths, module: Path) -> dict:
    """Every page's key with a line of code appended to ``module`` (restored)."""
    original = module.read_text()
    module.write_text(original + "\nEDITED = 1  # a code edit\n")
    try:
        return _keys(paths)
    finally:
        module.write_text(original)


def test_one_module_edit_invalidates_only_its_importers(book_copy):
    paths, before = book_copy
    after = _edited_keys(paths, paths.lib / "theory" / "sarussi2021.py")
    changed = {nb for nb in before if before[nb] != after[nb]}
    importers = {
        nb
        for nb in before
        if "twolayer.theory.sarussi2021"
        in imports.notebook_modules(paths.lib, pipeline.resolve(paths, nb))
    }
    assert changed == importers
    assert any(nb.startswith("sarussi2021/") for nb in changed)
    assert not any(
        nb.startswith("lyu2021/") for nb in changed
    )  # Lyu's pages do not import it


def test_a_package_init_edit_invalidates_every_page(book_copy):
    paths, before = book_copy
    after = _edited_keys(paths, paths.lib / "__init__.py")
    assert all(before[nb] != after[nb] for nb in before)
