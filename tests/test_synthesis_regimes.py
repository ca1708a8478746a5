"""Unit tests of twolayer.regimes (regime maps) and the synthesis pages' library functions."""
import numpy as np
import pandas as pd
import pytest

from twolayer import regimes, synthesis
from twolayer.theory import min2024


def _frame(rates):
    """A grid whose pass rate at scale i is rates[i] (10 seeds, one width; gap 0 passes, 1 fails)."""
    rows = []
    for i, rate in enumerate(rates):
        for s in range(10):
            rows.append(dict(init_scale=10.0 ** (i - 3), width=4, seed=s, gap=0.0 if s < rate * 10 else 1.0))
    return pd.DataFrame(rows)


def test_critical_scale_brackets_the_crossing():
    c = regimes.critical_scale(_frame([1, 1, 0.6, 0.2, 0]), "gap", 0.5)
    assert (c["lo"], c["hi"]) == (pytest.approx(1e-1), pytest.approx(1.0))
    assert c["rate_lo"] == pytest.approx(0.6) and c["rate_hi"] == pytest.approx(0.2)
    assert c["critical"] == pytest.approx(np.sqrt(1e-1))


def test_critical_scale_without_crossing_and_from_the_start():
    assert np.isnan(regimes.critical_scale(_frame([1, 1, 1]), "gap", 0.5)["critical"])
    c = regimes.critical_scale(_frame([0.1, 0, 0]), "gap", 0.5)
    assert np.isnan(c["lo"]) and c["hi"] == pytest.approx(1e-3)


def test_pass_rates_and_relation():
    f = _frame([1, 0.3])
    r = regimes.pass_rates(f, "gap", 0.5)
    assert r["pass_rate"].tolist() == pytest.approx([1.0, 0.3])
    r = regimes.pass_rates(f, "gap", 0.5, ">=")
    assert r["pass_rate"].tolist() == pytest.approx([0.0, 0.7])


def test_per_seed_takes_the_worst_width():
    f = pd.DataFrame(dict(init_scale=[1.0] * 4, width=[4, 20, 4, 20], seed=[0, 0, 1, 1], gap=[1, 3, 2, 0]))
    assert regimes.per_seed(f, 1.0, "gap").tolist() == [3, 2]


def test_code_key_is_stable_and_short():
    assert regimes.code_key() == regimes.code_key()
    assert len(regimes.code_key()) == 12


def test_own_cone_exits_counts_leaving_own_cone_or_dead():
    P, M, D, N = min2024.S_PLUS, min2024.S_MINUS, min2024.S_DEAD, min2024.S_NONE
    record = np.array([[N, M], [P, M], [P, D], [N, D]])
    signs = np.array([1.0, -1.0])
    assert synthesis.own_cone_exits(record, signs) == 1      # neuron 0 leaves S+ at the end
    assert synthesis.own_cone_exits(record, signs, start=3) == 0
    assert synthesis.own_cone_exits(np.array([[M], [N]]), np.array([1.0])) == 0  # not its own cone


def test_group_mass_ratio():
    W = np.array([[3.0, 4.0], [0.0, 1.0], [1.0, 0.0]])
    assert synthesis.group_mass_ratio(W, np.array([1.0, -1.0, -1.0])) == pytest.approx(5 / np.sqrt(2))


def test_grid_point_runs_and_is_seeded():
    a = regimes.sarussi_point(1e-3, 4, 0, t_max=1e3)
    b = regimes.sarussi_point(1e-3, 4, 0, t_max=1e3)
    assert a["sarussi"] == b["sarussi"] and 0 <= a["nar"] <= 1
    p = regimes.phuong_min_point(1e-3, 4, 0, t_max=1e120)  # reaches the first late snapshot
    assert set(p) >= {"phuong", "min_aligned", "stable_rank", "j0_event"}


def test_compute_records_errors_and_keys():
    f = regimes.compute("sarussi", points=[dict(init_scale=1e-3, width=4, seed=0, t_max=1e2),
                                           dict(init_scale=-1.0, width=4, seed=0, t_max=1e2)])
    assert f["error"].iloc[0] == "" and f["error"].iloc[1] != ""
    assert (f["code_key"] == regimes.code_key()).all()
    with pytest.raises(ValueError, match="name must be one of"):
        regimes.compute("nope")
