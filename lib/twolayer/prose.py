"""Numbers quoted in the prose of a page come from the run, through myst-nb's glue;
sentences that depend on numbers read right (counts, plurals, ranges, exponents)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def glue(name: str, value: Any, display: bool = False) -> None:
    """``myst_nb.glue`` for numbers quoted in prose.

    NumPy scalars are turned into Python numbers first: myst-nb formats a glued
    value (``{glue:text}`name:.3f```) from its text form, which for a NumPy
    scalar reads ``np.float64(...)`` and cannot be formatted.
    """
    from myst_nb import glue as myst_glue

    if isinstance(value, np.generic):
        value = value.item()
    myst_glue(name, value, display=display)


def glue_each(**values: Any) -> None:
    """:func:`glue` every ``name=value`` given."""
    for name, value in values.items():
        glue(name, value)


def glue_range(name: str, values: Any) -> None:
    """Glue the smallest and the largest of ``values`` (over seeds, say) as
    ``<name>_lo`` and ``<name>_hi`` — the range a page quotes."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError(f"glue_range({name!r}): no values")
    glue(f"{name}_lo", float(arr.min()))
    glue(f"{name}_hi", float(arr.max()))


# -- sentences that depend on numbers ------------------------------------------------
# A number and its exponent, a count and its noun are joined by no-break spaces
# (U+00A0), so a line never breaks inside "1.2 × 10⁻³" or "20 seeds".
NBSP = "\u00a0"
_SUPERSCRIPT = str.maketrans("0123456789-+.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺·")
MINUS = "\u2212"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``word`` for one, its plural otherwise (``many``, else ``word + "s"``; a
    word ending in s, x, z, ch or sh takes "es"): ``plural(1, "seed")`` is "seed",
    ``plural(0, "draw")`` "draws", ``plural(2, "maximum", "maxima")`` "maxima"."""
    if n == 1:
        return word
    if many is not None:
        return many
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def count(k: int, n: int | None = None, noun: str = "", many: str | None = None) -> str:
    """A count a reader takes in at once: ``k`` out of ``n``.

    ``count(0, 20)`` "none", ``count(1, 20)`` "1 of 20", ``count(5, 5)`` "all 5";
    with a noun: ``count(0, 20, "draw")`` "none of the 20 draws", ``count(1, 20,
    "draw")`` "1 of 20 draws", ``count(5, 5, "seed")`` "all 5 seeds",
    ``count(1, 1, "seed")`` "the one seed". Without ``n``: ``count(3, noun="seed")``
    "3 seeds", ``count(0, noun="seed")`` "no seeds".
    """
    k = int(k)
    if k < 0 or (n is not None and not 0 <= k <= int(n)):
        raise ValueError(f"count: k={k} must be between 0 and n={n}")
    sp = NBSP
    if n is None:
        if not noun:
            return "none" if k == 0 else str(k)
        return (
            f"no {plural(0, noun, many)}"
            if k == 0
            else f"{k}{sp}{plural(k, noun, many)}"
        )
    n = int(n)
    nouns = f"{sp}{plural(n, noun, many)}" if noun else ""
    if k == 0:
        return f"none of the {n}{nouns}" if noun else "none"
    if k == n:
        if n == 1:
            return f"the one {noun}" if noun else "the only one"
        return f"all {n}{nouns}"
    return f"{k} of {n}{nouns}"


def number(x: float, digits: int = 3, markup: str = "unicode") -> str:
    """``x`` to ``digits`` significant digits, as a reader writes it: plain
    decimals from 10⁻³ to 10⁴ (``0.932``, ``1200``), else a mantissa and a power
    of ten kept on one line (``1.2 × 10⁻³``). ``markup``: "unicode" (superscripts,
    no-break spaces), "tex" (``1.2 \\times 10^{-3}``, for math) or "myst" (the
    ``{sup}`` role, for generated Markdown)."""
    x = float(x)
    if x != x:
        return "n/a"
    if x in (float("inf"), float("-inf")):
        return ("" if x > 0 else MINUS) + "∞"
    if x == 0:
        return "0"
    rounded = float(f"{x:.{digits - 1}e}")
    sign = MINUS if rounded < 0 and markup != "tex" else ("-" if rounded < 0 else "")
    if 1e-3 <= abs(rounded) < 1e4:
        decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
        text = f"{abs(rounded):.{decimals}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return sign + text
    mantissa, exponent = f"{abs(rounded):.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    e = int(exponent)
    power = _power(e, markup)
    if mantissa == "1":
        return sign + power
    times = {"tex": r" \times ", "myst": f"{NBSP}×{NBSP}"}.get(markup, f"{NBSP}×{NBSP}")
    return f"{sign}{mantissa}{times}{power}"


def _power(e: float | int, markup: str) -> str:
    if e == 0:
        return "1"
    if e == 1:
        return "10"
    text = f"{e:g}" if isinstance(e, float) else str(e)
    if markup == "tex":
        return f"10^{{{text}}}"
    if markup == "myst":
        return "10{sup}`" + text.replace("-", MINUS) + "`"
    return "10" + text.translate(_SUPERSCRIPT)


def power10(log10_value: float, digits: int = 3, markup: str = "unicode") -> str:
    """A quantity stored as its log10, written for a reader as a power of ten.

    A whole exponent reads ``10⁻³``; otherwise "unicode" gives the value itself
    (``power10(-3.19)`` is ``6.46 × 10⁻⁴``), "myst" and "tex" the power with its
    decimal exponent (``10{sup}`−3.19```, ``10^{-3.19}``)."""
    v = float(log10_value)
    if v != v:
        return "n/a"
    if v == round(v) and abs(v) < 400:
        return _power(int(round(v)), markup)
    if markup == "unicode":
        return number(10.0**v, digits, markup)
    exp = f"{v:.{max(digits - 1, 1)}f}".rstrip("0").rstrip(".")
    if markup == "tex":
        return f"10^{{{exp}}}"
    return "10{sup}`" + exp.replace("-", MINUS) + "`"


def span(
    lo: float,
    hi: float | None = None,
    digits: int = 3,
    *,
    between: str = "{lo}–{hi}",
    single: str = "{v}",
    markup: str = "unicode",
) -> str:
    """A range over seeds printed once when it is one number at the shown
    precision: ``span(0.6665, 0.6665, 4)`` is "0.6665" (not "between 0.6665 and
    0.6665"); ``span(0.66, 0.67)`` "0.66–0.67". ``between`` and ``single`` are the
    two phrasings (``between="between {lo} and {hi}", single="{v}"``). ``lo`` may be
    a sequence of values (``hi`` omitted): its smallest and largest are used."""
    if hi is None:
        import numpy as _np

        arr = _np.asarray(lo, dtype=float).ravel()
        if arr.size == 0:
            raise ValueError("span: no values")
        lo, hi = float(arr.min()), float(arr.max())
    a, b = number(lo, digits, markup), number(hi, digits, markup)
    if a == b:
        return single.format(v=a)
    return between.format(lo=a, hi=b)


def join(items, last: str = "and") -> str:
    """``["a", "b", "c"]`` as "a, b and c" ("a" alone, "a and b" for two)."""
    items = [str(i) for i in items]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {last} {items[-1]}"
