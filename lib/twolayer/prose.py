"""Numbers quoted in the prose of a page come from the run, through myst-nb's glue."""

from __future__ import annotations

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
