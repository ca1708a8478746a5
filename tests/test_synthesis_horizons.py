"""Issue 40: the synthesis chapter's layering, the weighted Phuong gap and the
reading of Lyu Thm 4.3's clause where its misses are resolved."""

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from twolayer import regimes, synthesis
from twolayer.synthesis import LYU_HORIZONS

LIB = Path(synthesis.__file__).resolve().parent


def _imports(name: str) -> set[str]:
    tree = ast.parse((LIB / name).read_text())
    return {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }


def test_layering_synthesis_reads_top_down():
    assert "regimes" not in _imports("synthesis.py")
    assert not {"synthesis", "regimes"} & _imports("limit_data.py")
    # the pages' names still resolve from both modules
    assert synthesis.lyu_data is regimes.lyu_data
    assert synthesis.sarussi_data is regimes.sarussi_data


def test_weighted_gap_is_zero_at_the_limit_and_ignores_vanishing_neurons():
    w_plus, w_minus = np.array([1.0, 0.0]), np.array([-1.0, 0.0])
    W = np.array([[2.0, 0.0], [-3.0, 0.0]])
    a = np.array([1.0, -1.0])
    assert synthesis.weighted_direction_gap(W, a, w_plus, w_minus) == pytest.approx(0)
    tiny = np.vstack([W, [0.0, 1e-3]])  # a vanishing neuron at 90 degrees
    a3 = np.array([1.0, -1.0, 1.0])
    gap = synthesis.weighted_direction_gap(tiny, a3, w_plus, w_minus)
    assert gap < 1e-6  # its share of the mass is ~1e-7
    big = np.vstack([W, [0.0, 3.0]])  # the same direction with a large norm counts
    assert synthesis.weighted_direction_gap(big, a3, w_plus, w_minus) > 0.3


def _continued(resolved, reached):
    rows = []
    for r, last in zip(resolved, reached):
        row = dict(resolved=r, reached=last, event=False)
        for h in LYU_HORIZONS:
            gap = np.nan if h > last else (0.01 if np.isfinite(r) and h >= r else 0.2)
            row.update({f"gap@{h:g}": gap, f"margin@{h:g}": 0.9, "kkt@300": 0.5})
        rows.append(row)
    return pd.DataFrame(rows)


def test_resolution_counts_a_miss_from_the_horizon_it_is_resolved_at():
    hits = np.array([True, False, True, False])
    cont = _continued([1e3, np.nan], [1e3, 1e5])
    res = regimes.lyu_resolution(hits, cont, 0.05, hits_200=np.array([1, 0, 0, 0]))
    assert res["log10_t"][:3] == [200.0, 300.0, 1e3]
    assert res["log10_t"][-1] == 1e5
    f = dict(zip(res["log10_t"], res["frequency"]))
    assert f[200.0] == 0.25 and f[300.0] == 0.5 and f[1e3] == 0.75 and f[1e5] == 0.75
    # the unresolved miss (draw 3) stays a failure; the resolved one (draw 1) holds
    assert res["successes"].tolist() == [True, True, True, False]
    assert res["quotes"]["cont_last"] == 1e5


def test_resolution_without_misses():
    res = regimes.lyu_resolution(np.ones(4, bool), pd.DataFrame(), 0.05)
    assert res["successes"].all() and res["quotes"]["cont_misses"] == 0
