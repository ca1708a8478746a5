"""A notebook's declared parameters, and the check of a rerun's values.

Every notebook's parameters cell (cell tag ``parameters``, the one papermill
replaces) declares one parameter per line::

    width: int = 100  # >= 1; hidden neurons p
    alpha: float = 0.1  # [0, 1); leaky-ReLU slope
    mu_pos: list[float] = [1.0, 0.5]  # len 2; mean of the positive class
    step_rule: str = "mean"  # one of "mean", "sum"; how the step scales with n
    n = 500  # number of training points    (older form: type from the default)

i.e. ``name: type = default  # constraint; help``. Types: ``int``, ``float``,
``bool``, ``str``, ``list[int]``, ``list[float]``, ``list[list[int]]``. Constraints:
``> x``, ``>= x``, ``< x``, ``<= x``, intervals ``[a, b]``, ``(a, b)``, ``[a, b)``,
``(a, b]``, ``len N``, ``one of v1, v2``, ``-`` (none). :func:`validate` checks
values against these declarations before any kernel starts and raises
:class:`ParameterError` with one line naming the parameter, the value and what
is expected.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

TYPES = ("int", "float", "bool", "str", "list[int]", "list[float]", "list[list[int]]")
_INTERVAL = re.compile(r"([\[(])\s*([^,]+?)\s*,\s*([^\])]+?)\s*([\])])")
_BOUND = re.compile(r"(>=|<=|>|<)\s*(\S+)")


class ParameterError(ValueError):
    """A parameter value that does not match its declaration (one line)."""


@dataclass(frozen=True)
class Parameter:
    """One declared parameter of a notebook."""

    name: str
    type: str
    default: object
    default_text: str
    constraint: str
    help: str

    def describe(self) -> str:
        """``int >= 1`` — what a value must be."""
        return self.type + (f" {self.constraint}" if self.constraint else "")


def parameters_cell(path: str | Path) -> str:
    """The source of the cell tagged ``parameters`` ('' if there is none)."""
    nb = json.loads(Path(path).read_text())
    for cell in nb["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            src = cell["source"]
            return "".join(src) if isinstance(src, list) else src
    return ""


def _literal(text: str):
    return ast.literal_eval(text)


def _infer_type(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return "list[list[int]]"
    if isinstance(value, list):
        return (
            "list[int]"
            if all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            else "list[float]"
        )
    return "str"


def _split_comment(line: str) -> tuple[str, str]:
    """Code and comment of one line (a ``#`` inside a string literal is code)."""
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type == tokenize.COMMENT:
                return line[: tok.start[1]], tok.string[1:].strip()
    except (tokenize.TokenError, IndentationError):
        pass
    return line, ""


def _constraint_and_help(comment: str, declared: bool) -> tuple[str, str]:
    if declared and ";" in comment:
        constraint, help_text = comment.split(";", 1)
        constraint = constraint.strip()
        return ("" if constraint == "-" else constraint), help_text.strip()
    return "", comment


def declarations(path: str | Path) -> dict[str, Parameter]:
    """Every parameter the notebook's parameters cell declares, in order. A
    declaration may span several lines (a formatter wraps long defaults); its
    comment is the one on its last line."""
    source = parameters_cell(path)
    lines = source.splitlines()
    out: dict[str, Parameter] = {}
    for stmt in ast.parse(source).body:
        comment = _split_comment(lines[stmt.end_lineno - 1])[1]
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.value is not None
        ):
            name, type_name = stmt.target.id, ast.unparse(stmt.annotation)
        elif (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            name, type_name = stmt.targets[0].id, ""
        else:
            raise ValueError(
                f"{path}: cannot read the parameter declaration {ast.unparse(stmt)!r}"
            )
        default_text = ast.unparse(stmt.value)
        default = _literal(default_text)
        if type_name and type_name not in TYPES:
            raise ValueError(
                f"{path}: parameter {name!r} has type {type_name!r}; "
                f"types are {', '.join(TYPES)}"
            )
        constraint, help_text = _constraint_and_help(comment, bool(type_name))
        param = Parameter(
            name,
            type_name or _infer_type(default),
            default,
            default_text,
            constraint,
            help_text,
        )
        _check_constraint_syntax(param, path)
        out[name] = param
    return out


def _check_constraint_syntax(param: Parameter, path) -> None:
    c = param.constraint
    ok = (
        not c
        or _BOUND.fullmatch(c)
        or _INTERVAL.fullmatch(c)
        or re.fullmatch(r"len\s+\d+", c)
        or c.startswith("one of ")
    )
    if not ok:
        raise ValueError(
            f"{path}: parameter {param.name!r} has an unreadable constraint {c!r}"
        )


def _coerce(param: Parameter, value):
    """``value`` as the declared type, or None if it is not of that type."""
    t = param.type
    if t == "bool":
        return value if isinstance(value, bool) else None
    if t == "int":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if t == "float":
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(float(value))
        ):
            return float(value)
        return None
    if t == "str":
        return value if isinstance(value, str) else None
    if isinstance(value, (list, tuple)):
        inner = {
            "list[int]": "int",
            "list[float]": "float",
            "list[list[int]]": "list[int]",
        }[t]
        items = [_coerce(Parameter("", inner, None, "", "", ""), v) for v in value]
        return None if any(v is None for v in items) else items
    return None


def _satisfies(param: Parameter, value) -> bool:
    c = param.constraint
    if not c:
        return True
    if m := _BOUND.fullmatch(c):
        op, bound = m.groups()
        x = float(_literal(bound))
        return {">": value > x, ">=": value >= x, "<": value < x, "<=": value <= x}[op]
    if m := _INTERVAL.fullmatch(c):
        lo_b, lo, hi, hi_b = m.groups()
        lo, hi = float(_literal(lo)), float(_literal(hi))
        return (value >= lo if lo_b == "[" else value > lo) and (
            value <= hi if hi_b == "]" else value < hi
        )
    if m := re.fullmatch(r"len\s+(\d+)", c):
        return len(value) == int(m.group(1))
    choices = [_literal(v.strip()) for v in c.removeprefix("one of ").split(",")]
    return value in choices


def validate(decls: dict[str, Parameter], params: dict, page: str = "") -> dict:
    """Check ``params`` against the declarations; return them coerced to the
    declared types. Raises :class:`ParameterError` (one line) on the first
    unknown name, wrong type or value out of range."""
    where = f"{page}: " if page else ""
    out = {}
    for name, value in params.items():
        if name not in decls:
            raise ParameterError(
                f"{where}unknown parameter {name!r}; valid: {', '.join(decls)}"
            )
        param = decls[name]
        coerced = _coerce(param, value)
        if coerced is None or not _satisfies(param, coerced):
            help_text = f" ({param.help})" if param.help else ""
            raise ParameterError(
                f"{where}parameter {name} = {value!r}: "
                f"expected {param.describe()}{help_text}"
            )
        out[name] = coerced
    return out


def non_default(decls: dict[str, Parameter], params: dict) -> dict:
    """``params`` without the ones equal to their declared default, so that
    ``-p seed 0`` and no ``-p`` name the same run (and cache entry)."""
    return {k: v for k, v in params.items() if k not in decls or v != decls[k].default}
