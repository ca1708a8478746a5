"""Fig 6's two loss drops, Figs 12–13's statistic and the Fig 5 clock
(``theory.min2024`` / ``experiments.min2024``), each against a hand computation."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from twolayer import data, models
from twolayer.experiments import min2024 as E
from twolayer.theory import min2024 as M


def _states(seed=0, k=4, h=3, d=2):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((k, h, d)), rng.standard_normal((k, h))


def test_class_losses_against_a_loop_relu_and_linear():
    Ws, vs = _states()
    X = np.array([[1.0, 0.2], [0.5, -1.0], [-1.0, 0.3]])
    y = np.array([1.0, -1.0, 1.0])
    for linear in (False, True):
        L = M.class_losses(Ws, vs, X, y, linear=linear)
        for k in range(len(Ws)):
            pre = X @ Ws[k].T
            f = (pre if linear else np.maximum(pre, 0)) @ vs[k]
            loss = np.log1p(np.exp(-y * f))
            assert L[k, 0] == pytest.approx(loss[y > 0].sum())
            assert L[k, 1] == pytest.approx(loss[y < 0].sum())
    with pytest.raises(ValueError):
        M.class_losses(Ws[:, :, :1], vs, X, y)


def test_class_halving_times_first_snapshot_at_half_or_nan():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    L = np.array([[4.0, 2.0], [3.0, 1.5], [2.0, 1.2], [1.0, 1.1]])
    assert M.class_halving_times(t, L)[0] == 2.0  # 2.0 <= 4 / 2
    assert np.isnan(M.class_halving_times(t, L)[1])  # 1.1 > 1
    with pytest.raises(ValueError):
        M.class_halving_times(t[:3], L)


def test_drop_separation_one_when_times_scale_as_norms_zero_when_equal():
    X = np.array([[3.0, 0.0], [-1.0, 0.0]])
    y = np.array([1.0, -1.0])  # ||x+|| = 3, ||x-|| = 1
    assert M.drop_separation(1.0, 3.0, X, y) == pytest.approx(1.0)
    assert M.drop_separation(2.0, 2.0, X, y) == pytest.approx(0.0)
    assert M.drop_separation(1.0, np.sqrt(3.0), X, y) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        M.drop_separation(1.0, float("nan"), X, y)


def test_unbalanced_cones_keeps_the_counts_and_the_balanced_draw():
    ds = E.unbalanced_cones(7, 3, 0.3, seed=4)
    assert (ds.y > 0).sum() == 7 and (ds.y < 0).sum() == 3
    full = data.opposite_cones(14, 2, 0.3, seed=4)
    assert np.allclose(ds.X[:7], full.X[full.y > 0][:7])
    assert np.allclose(ds.X[7:], full.X[full.y < 0][:3])
    assert M.separability(ds.X, ds.y) >= np.cos(0.6) - 1e-12


def test_two_drops_relu_separates_linear_does_not():
    table = E.two_drops([0], (6, 2), 0.3, 10, 1e-4, 0.02, 1500)
    row = table.iloc[0]
    ds = E.unbalanced_cones(6, 2, 0.3, 0)
    assert row.relu_sep == pytest.approx(
        M.drop_separation(row.relu_t_plus, row.relu_t_minus, ds.X, ds.y)
    )
    assert row.relu_sep > 0.5 > abs(row.linear_sep)
    t, L = table.attrs["first"]["relu"]
    assert M.class_halving_times(t, L) == (row.relu_t_plus, row.relu_t_minus)


def test_change_ratio_reads_the_snapshot_at_the_step():
    traj = SimpleNamespace(
        steps=np.array([0, 5, 10]),
        record=lambda name: np.array([[1.0, 1.0], [0.01, 10.0], [2.0, 2.0]]),
    )
    assert M.change_ratio(traj, 5) == pytest.approx(-3.0)
    with pytest.raises(ValueError):
        M.change_ratio(traj, 7)


def test_clock_factor_prediction_errors_and_rival():
    clock = E.Clock((1, 0), [0, 1], np.array([110.0, 90.0]), np.array([100.0, 100.0]))
    assert clock.factor == pytest.approx(1.0)
    err, rival = E.clock_errors(clock, [200.0, 220.0], [200.0, 200.0])
    assert np.allclose(err, [0.0, np.log(1.1)])
    assert np.allclose(rival, np.log(np.array([200.0, 220.0]) / 100.0))
    text = E.clock_reading((1, 7), [200.0, 220.0], [200.0, 200.0], clock)
    assert "1/0" in text and "0.095" in text
    assert "calibrates" in E.clock_reading((1, 0), [110.0, 90.0], [100.0, 100.0])


def test_escape_estimates_from_the_first_snapshot():
    ds = data.opposite_cones(6, 2, 0.3, seed=1)
    net = models.TwoLayerNet(2, 4, init_scale=1e-3, seed=2, init="gaussian")
    W, v = net.weights()
    traj = SimpleNamespace(param=lambda name: {"W": [W, W * 2], "a": [v, v]}[name])
    want = M.escape_iterations(
        0.1, *M.aggregate_data(ds.X, ds.y), M.max_output(W, v, ds.X)
    )
    assert E.escape_estimates([traj], ds, 0.1)[0] == pytest.approx(want)


def test_literal_reading_of_a_divergence_is_a_sentence_not_the_error():
    text = E.literal_reading(
        "gd: loss became inf at step 21 with step size lr=0.03", 0.9
    )
    assert "iteration 21" in text and "lr=" not in text


def test_linear_settled_lines_up_with_x1_plus_x2_not_a_point():
    got = E.linear_settled([0, 1], 6, 1e-2, 0.05, 3000)
    ds = data.two_point_set(None)
    net = models.TwoLayerNet(2, 6, seed=0, init="gaussian", init_scale=1e-2)
    _, Ws, vs = M.linear_gd(*net.weights(), ds.X, ds.y, 0.05, 3000, [3000])
    want = M.point_cosine(Ws[-1][vs[-1] > 0], ds.X).min()
    assert got[0] == pytest.approx(want)
    assert np.allclose(got, np.sqrt(0.5), atol=0.01)  # along x1 + x2, x1 ⊥ x2
