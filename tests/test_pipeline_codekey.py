"""The code keys (run cache, page cache, held-out sweeps' staleness, regime grids)
hash syntax trees: a reformat, a comment or a docstring keeps every stored result,
a code edit changes the key; one helper serves all four."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

from twolayer import codekey, regimes
from twolayer.flows import memo
from twolayer.pipeline import imports, sweep

MODULE = '''"""A module."""

import math


def f(x, y=1):
    """Twice x, plus y."""
    return 2 * x + y  # the doubling


class A:
    """A class."""

    def g(self):
        return math.pi
'''

# ruff-format-like layout changes, other comments and docstrings: the same code
REFORMATTED = '''"""Another module docstring."""
import math
def f(x,
      y = 1):
    # a comment
    return (2 * x
            + y)
class A:
    def g(self):
        """Now documented."""
        return math.pi
'''

EDITED = MODULE.replace("2 * x", "3 * x")


def test_canonical_ignores_layout_comments_and_docstrings():
    assert codekey.canonical(REFORMATTED) == codekey.canonical(MODULE)
    assert codekey.canonical(EDITED) != codekey.canonical(MODULE)
    assert codekey.canonical(MODULE.replace("y=1", "y=2")) != codekey.canonical(MODULE)
    # a function's source taken from inside a class (indented) parses too
    method = "    def g(self):\n        return 1\n"
    assert codekey.canonical(method) == codekey.canonical(method.replace("    ", "", 1))


def test_file_digest_of_an_unparsable_file_is_its_bytes(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text("def f(:\n")
    first = codekey.file_digest(f)
    f.write_text("def f(:\n  # edited\n")
    assert codekey.file_digest(f) != first


def _notebook(path: Path, code: str) -> Path:
    cell = {"cell_type": "code", "metadata": {}, "source": code, "outputs": []}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb))
    return path


def test_page_key_survives_a_reformat_not_a_code_edit(tmp_path):
    lib = tmp_path / "twolayer"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    mod = lib / "m.py"
    nb = _notebook(tmp_path / "p.ipynb", "from twolayer import m")

    def key(source: str) -> str:
        mod.write_text(source)
        return imports.library_fingerprint(lib, nb)

    base = key(MODULE)
    assert key(REFORMATTED) == base, "a reformat re-executed the page"
    assert key(EDITED) != base, "a code edit kept the page's key"


def test_one_helper_for_every_store():
    """The run cache, the page cache, the sweeps' code check and the regime grids
    all go through :mod:`twolayer.codekey` (no copy of the hashing elsewhere)."""
    assert memo.canonical is codekey.canonical
    assert imports.file_digest is codekey.file_digest
    assert sweep.file_digest is codekey.file_digest
    for fn in (regimes.code_key, regimes.source_closure):
        assert "canonical(" in inspect.getsource(fn)
    assert not hasattr(regimes, "_canonical")
    for fn in (memo.code_fingerprint, imports.library_fingerprint, sweep.code_key):
        assert "read_bytes" not in inspect.getsource(fn)


def _page(path: Path, cells: list[tuple[str, str]]) -> Path:
    path.write_text(
        json.dumps(
            {
                "cells": [
                    {"cell_type": kind, "metadata": {}, "source": src}
                    for kind, src in cells
                ]
            }
        )
    )
    return path


def test_a_page_key_ignores_prose_and_cell_boundaries(tmp_path):
    """The held-out sweeps' staleness (``sweep.page_code``) reads the notebook's
    code as one syntax tree: rewording the page or splitting a cell keeps it."""
    from twolayer.pipeline.cache import notebook_tree

    base = _page(
        tmp_path / "a.ipynb",
        [("markdown", "# A page"), ("code", "x = 1\ny = x + 1  # two")],
    )
    key = notebook_tree(base)
    reworded = _page(
        tmp_path / "b.ipynb",
        [("markdown", "# Another title, and more prose"), ("code", "x = 1")]
        + [("markdown", "between"), ("code", "y = x + 1")],
    )
    assert notebook_tree(reworded) == key
    changed = _page(
        tmp_path / "c.ipynb", [("markdown", "# A page"), ("code", "x = 1\ny = x + 2")]
    )
    assert notebook_tree(changed) != key
    magic = _page(tmp_path / "d.ipynb", [("code", "%matplotlib inline")])
    assert notebook_tree(magic).startswith(b"unparsed ")
