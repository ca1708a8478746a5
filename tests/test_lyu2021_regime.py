"""Tests of the Lyu chapter's Thm 6.2 regime grid helpers and the Thm 5.5
unequal-start functions (twolayer.experiments / theory.lyu2021), against
computations written out here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twolayer.experiments import lyu2021 as E
from twolayer.theory import lyu2021 as L


def test_outcome_three_ways():
    assert E.thm62_outcome(5e-4, 0.99) == "converges"
    assert E.thm62_outcome(0.1, 2.3) == "fails"
    # far from ½φ but not yet certified: still moving
    assert E.thm62_outcome(0.1, 1.0005) == "not resolved"
    # a converged error wins over a (spurious) certificate
    assert E.thm62_outcome(1e-4, 1.5) == "converges"


def _frame():
    common = dict(K=1.0, eps=0.05, init_scale=1e-6)
    rows = [
        dict(common, H=H, data=data, seed=s, outcome=outcome(s), peaks_outside=peaks(s))
        for s in range(10)
        for H, data, outcome, peaks in (
            (40.0, "book", lambda s: "converges", lambda s: 0),
            (
                20.0,
                "redrawn",
                lambda s: "fails" if s < 4 else "converges",
                lambda s: int(s % 2),
            ),
        )
    ]
    return pd.DataFrame(rows)


def test_regime_table_counts_and_interval():
    t = E.thm62_regime_table(_frame()).set_index("setting")
    book = t.loc["H = 40, σ = 1e-06, book's set"]
    assert (book["runs"], book["converge"], book["fail"]) == (10, 10, 0)
    assert book["95% interval"].startswith("0.00–")
    red = t.loc["H = 20, σ = 1e-06, set redrawn per seed"]
    assert red["fail"] == 4 and red["failure frequency"] == pytest.approx(0.4)
    lo, hi = map(float, red["95% interval"].split("–"))
    assert lo < 0.4 < hi  # Clopper–Pearson interval around 4/10: [0.12, 0.74]
    assert lo == pytest.approx(0.12, abs=0.01) and hi == pytest.approx(0.74, abs=0.01)


def test_gband_check_counts_each_way():
    g = E.thm62_gband_check(_frame())
    # redrawn: seeds 0, 2, 4, 6, 8 have no outer maximum; of those 0 and 2 fail
    assert g == dict(
        g_runs=10, g_inside=5, g_inside_fail=2, g_outside=5, g_outside_conv=3
    )


def test_select_one_setting_in_seed_order():
    f = _frame().sample(frac=1.0, random_state=0)
    sel = E.thm62_select(f, 20.0, data="redrawn")
    assert list(sel["seed"]) == list(range(10))
    assert E.thm62_select(f, 20.0).empty  # no book-set runs at H = 20


def test_unequal_start_norms_and_signs():
    w = np.array([0.6, 0.8])
    W, a = L.thm55_unequal_start(w, 3.0, 10.0, np.random.default_rng(0))
    assert np.linalg.norm(W, axis=1) == pytest.approx([3.0, 0.3])
    assert a == pytest.approx([3.0, -0.3])
    assert W[0] @ w > 0 > W[1] @ w
    W, a = L.thm55_unequal_start(w, 3.0, 0.1, np.random.default_rng(0))
    assert np.linalg.norm(W, axis=1) == pytest.approx([3.0, 30.0])


def test_norm_imbalance():
    W = np.array([[3.0, 0.0], [0.0, 1.0]])
    a = np.array([3.0, -1.0])
    assert L.norm_imbalance(W, a) == pytest.approx((18 - 2) / 20)
    assert L.norm_imbalance(*L.two_neuron_limit([1.0, 0.0])) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        L.norm_imbalance(np.ones((3, 2)), np.ones(3))


def test_imbalance_exponent_recovers_a_power_law():
    lt = np.linspace(10, 200, 100)
    v = 0.5 * 10 ** (-lt / 9)  # d log v / d log t = -1/9 ... in log10 t units
    # |v| = 0.5 t^(-1/9): log10|v| = log10 0.5 - log10(t)/9
    assert L.imbalance_exponent(lt, v, lo=1e-20, hi=1e-2) == pytest.approx(-1 / 9)
    assert np.isnan(L.imbalance_exponent(lt, v, lo=1e-3, hi=2e-3))
