"""What a stored result was computed with: Python code as a syntax tree.

Four stores are keyed on library code, all through :func:`canonical`: finished
runs (:func:`twolayer.flows.memo.code_fingerprint`), executed pages
(:func:`twolayer.pipeline.imports.library_fingerprint`, in the page cache key),
the staleness of the stored held-out sweeps
(:func:`twolayer.pipeline.sweep.page_code`, which the robustness page compares)
and the regime grids (:func:`twolayer.regimes.code_key`). The key is the syntax
tree with docstrings dropped, so reformatting (``ruff format``), comments and
documentation keep every stored result; a change of code changes the key.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap
from pathlib import Path

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def canonical(source: str) -> bytes:
    """The code of ``source`` (a module, or a function's source, indented or
    not) without its layout, comments and docstrings: ``ast.dump`` of its parsed
    tree. Raises :class:`SyntaxError` for code that does not parse."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        if isinstance(node, _DOCUMENTED) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                node.body = node.body[1:]
    return ast.dump(tree).encode()


def file_digest(path: Path) -> bytes:
    """SHA-256 of a Python file's :func:`canonical` code (of its bytes if it does
    not parse: a broken file still has a key, and any edit of it changes it)."""
    raw = Path(path).read_bytes()
    try:
        code = canonical(raw.decode())
    except (SyntaxError, ValueError):  # ValueError: undecodable bytes, NUL
        code = b"unparsed " + raw
    return hashlib.sha256(code).digest()
