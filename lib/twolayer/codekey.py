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
import sys
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


# The files every stored flow result shares (hashed whole by the regime grids and
# the stored theorem grids; not walked by :func:`source_closure`).
FLOW_CODE = (
    "data.py",
    "models.py",
    "flows/integrator.py",
    "flows/steps.py",
    "flows/logtime.py",
)


def _resolve(node, names: dict):
    """The object an ``ast.Name`` or ``module.attr`` node refers to, or None."""
    import ast
    import inspect

    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = names.get(node.value.id)
        if inspect.ismodule(owner):
            return getattr(owner, node.attr, None)
    return None


def _local_imports(tree, module) -> dict:
    """Names bound by ``import`` statements inside a function's body."""
    import ast
    import importlib

    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            mod = importlib.import_module(base, package=module.__package__)
            for alias in node.names:
                value = getattr(mod, alias.name, None)
                if value is None:
                    value = importlib.import_module(f"{mod.__name__}.{alias.name}")
                out[alias.asname or alias.name] = value
    return out


def source_closure(roots) -> list[tuple[str, str]]:
    """The library code a grid point runs: the source (syntax tree) of each root
    function and, transitively, of every function or class of the ``twolayer``
    library it names (``f``, ``module.f``, names imported inside the body), plus the
    value of every module constant it reads. Files hashed whole (:data:`FLOW_CODE`) are
    not walked. So a new function in a theory module, or an edit of one no grid
    point calls, keeps the grids current; an edit of one they call makes them stale."""
    import ast
    import inspect
    import textwrap

    whole = {"twolayer." + rel[:-3].replace("/", ".") for rel in FLOW_CODE}
    seen: dict[str, str] = {}
    stack = list(roots)
    while stack:
        obj = inspect.unwrap(stack.pop())
        name = f"{obj.__module__}.{obj.__qualname__}"
        if name in seen:
            continue
        src = textwrap.dedent(inspect.getsource(obj))
        seen[name] = canonical(src).hex()
        module = sys.modules[obj.__module__]
        tree = ast.parse(src)
        names = {**vars(module), **_local_imports(tree, module)}
        for node in ast.walk(tree):
            value = _resolve(node, names)
            owner = getattr(value, "__module__", "") or ""
            if inspect.isfunction(value) or inspect.isclass(value):
                if owner.startswith("twolayer.") and owner not in whole:
                    stack.append(value)
            elif isinstance(node, ast.Name) and isinstance(
                value, (int, float, str, tuple, frozenset)
            ):
                seen[f"{module.__name__}.{node.id}"] = repr(value)
    return sorted(seen.items())
