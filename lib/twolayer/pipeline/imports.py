"""Which library modules a notebook runs: the import graph of ``lib/twolayer``.

A page's cache key hashes only the modules its notebook imports, directly or
through the library (``from twolayer.theory import lyu2021`` pulls in
``twolayer/__init__.py``, ``twolayer/theory/__init__.py``, ``lyu2021.py`` and
whatever those import), so a one-module edit re-executes only the pages that
can see it. Imports are read with :mod:`ast` from the whole file, including
imports inside functions; a notebook cell that cannot be parsed makes the page
depend on the whole library (the safe answer).
"""

from __future__ import annotations

import ast
import hashlib
import json
from functools import lru_cache
from pathlib import Path

from ..codekey import file_digest

PACKAGE = "twolayer"
# The run record appended to every executed page is written by this file, so a
# change in it changes every page's output.
ALWAYS = ("pipeline.record",)


def module_file(lib: Path, module: str) -> Path | None:
    """``twolayer.a.b`` -> ``lib/a/b.py`` or ``lib/a/b/__init__.py`` (None if
    absent)."""
    parts = module.split(".")[1:]
    base = lib.joinpath(*parts) if parts else lib
    for path in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if path is not None and path.is_file():
            return path
    return None


def _with_parents(module: str) -> set[str]:
    """Importing ``twolayer.a.b`` also runs ``twolayer`` and ``twolayer.a``."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def _named(tree: ast.AST, package: str) -> list[str]:
    """Every module name the import statements of ``tree`` may import (``from a
    import b`` names ``a`` and ``a.b``); ``package`` is the package relative
    imports start from ("" for a notebook)."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out += [base] + [f"{base}.{a.name}" for a in node.names]
    return out


def _library(lib: Path, names: list[str], package: str) -> set[str]:
    """The library modules (with their packages) among ``names``, imported from
    ``package``: its own packages are left out, they run already (so the run
    record, read by the pipeline and not by the kernel, does not pull in the
    ``pipeline`` package it lives in)."""
    running = _with_parents(package) if package else set()
    found: set[str] = set()
    for name in dict.fromkeys(names):
        if (name == PACKAGE or name.startswith(PACKAGE + ".")) and module_file(
            lib, name
        ):
            found |= {
                m
                for m in _with_parents(name)
                if m not in running and module_file(lib, m)
            }
    return found


def _imported(lib: Path, tree: ast.AST, package: str) -> set[str]:
    """Library modules named by the import statements of ``tree``; ``package`` is
    the package relative imports start from ("" for a notebook)."""
    return _library(lib, _named(tree, package), package)


def _package_of(lib: Path, module: str) -> str:
    path = module_file(lib, module)
    return (
        module
        if path is not None and path.name == "__init__.py"
        else module.rpartition(".")[0]
    )


@lru_cache(maxsize=None)
def _file_names(path: Path, mtime_ns: int, package: str) -> tuple[str, ...]:
    """:func:`_named` of a library file, parsed once per version of the file (keying
    every page parsed each module once per page: ~1 s a page)."""
    return tuple(_named(ast.parse(path.read_text(), str(path)), package))


def _module_imports(lib: Path, module: str) -> set[str]:
    path = module_file(lib, module)
    if path is None:
        return set()
    package = _package_of(lib, module)
    names = _file_names(path, path.stat().st_mtime_ns, package)
    return _library(lib, list(names), package)


def closure(lib: Path, modules: set[str]) -> set[str]:
    """Every library module reached from ``modules`` through imports."""
    seen, todo = set(), list(modules)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += sorted(_module_imports(lib, m) - seen)
    return seen


def all_modules(lib: Path) -> set[str]:
    """Every module of the library."""
    out = set()
    for path in lib.rglob("*.py"):
        rel = path.relative_to(lib).with_suffix("").parts
        rel = rel[:-1] if rel[-1] == "__init__" else rel
        out.add(".".join((PACKAGE,) + rel))
    return out


def notebook_code(path: Path) -> str:
    """The code cells of a notebook, IPython magics and shell lines dropped."""
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    lines = [
        ln
        for cell in code
        for ln in cell.splitlines()
        if not ln.lstrip().startswith(("%", "!"))
    ]
    return "\n".join(lines)


def notebook_modules(lib: Path, notebook: Path) -> set[str]:
    """The library modules a notebook runs (the whole library if a cell does not
    parse)."""
    try:
        tree = ast.parse(notebook_code(notebook))
    except SyntaxError:
        return all_modules(lib)
    direct = _imported(lib, tree, "")
    always = {f"{PACKAGE}.{m}" for m in ALWAYS if module_file(lib, f"{PACKAGE}.{m}")}
    return closure(lib, direct | always)


@lru_cache(maxsize=None)
def cached_digest(path: Path, mtime_ns: int) -> bytes:
    """:func:`twolayer.codekey.file_digest`, memoised on the file's modification
    time (``cached_digest.cache_clear()`` forgets)."""
    return file_digest(path)


def library_fingerprint(lib: Path, notebook: Path) -> str:
    """Hash of the library modules the notebook runs: their names and code as
    syntax trees (:func:`twolayer.codekey.file_digest`: reformatting, comments and
    docstrings keep the key)."""
    h = hashlib.sha256()
    for m in sorted(notebook_modules(lib, notebook)):
        path = module_file(lib, m)
        h.update(m.encode())
        h.update(cached_digest(path, path.stat().st_mtime_ns))
    return h.hexdigest()
