"""Tests of the Min chapter's ReLU-against-linear statistic, Thm 1 (ii)'s
per-class excess and its ε-slope, and Fig 8's all-in iteration."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer.theory import min2024 as M

# two classes in 2-D, 126° apart: positive points around 0°, negative around 126°
_ANG = np.radians([-5.0, 0.0, 5.0, 121.0, 126.0, 131.0])
X = np.stack([np.cos(_ANG), np.sin(_ANG)], axis=1)
y = np.array([1.0, 1, 1, -1, -1, -1])


def _rows(*degrees):
    a = np.radians(degrees)
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def test_cone_overshoot_inside_and_outside():
    v = np.array([1.0, 1.0, -1.0, -1.0])
    inside = _rows(2.0, -2.0, 124.0, 128.0)  # mean rows at 0° and 126°
    assert M.cone_overshoot(inside, v, X, y) == pytest.approx(-5.0, abs=1e-6)
    # along ±(x+ − x−): the linear network's direction, outside both cones
    xp, xm = X[y > 0].sum(0), X[y < 0].sum(0)
    d = xp - xm
    lin = np.stack([d, d, -d, -d])
    expect = np.degrees(np.arccos(d @ xp / np.linalg.norm(d) / np.linalg.norm(xp))) - 5
    assert M.cone_overshoot(lin, v, X, y) == pytest.approx(expect, abs=1e-6)
    assert M.cone_overshoot(lin, v, X, y) > 20


def test_cone_overshoot_needs_both_classes():
    with pytest.raises(ValueError, match="class"):
        M.cone_overshoot(_rows(0.0, 1.0), np.array([1.0, 1.0]), X, y)


def test_class_excess_rank_one_blocks_and_total():
    rng = np.random.default_rng(0)
    u, w = rng.standard_normal(5), rng.standard_normal(5)
    v = np.array([1.0, 2.0, 3.0, -1.0, -2.0])
    W = np.vstack([np.outer([1, 2, 3], u), np.outer([1, 2], w)])
    assert M.class_excess(W, v) == pytest.approx(0.0, abs=1e-9)
    # the whole W has the second block as its excess
    s = np.linalg.svd(W, compute_uv=False)
    assert M.total_excess(W) == pytest.approx(s[1] ** 2, rel=1e-9)
    noise = 1e-3 * rng.standard_normal(W.shape)
    assert 0 < M.class_excess(W + noise, v) < 1e-4


def test_loglog_slope_recovers_power_and_refuses_bad_input():
    eps = np.array([1e-6, 1e-4, 1e-2])
    assert M.loglog_slope(eps, 3 * eps**2) == pytest.approx(2.0)
    assert M.loglog_slope(eps, np.full(3, 0.3)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        M.loglog_slope(eps, [1.0, 0.0, 1.0])


def test_all_in_from_first_step_staying_at_one():
    steps = np.array([0, 10, 20, 30])
    f = np.array([[0.5, 1.0, 0.9, 1.0], [1.0, 1.0, 1.0, 1.0], [0.2, 0.5, 0.7, 0.9]])
    assert M.all_in_from(steps, f).tolist() == [30.0, 0.0, 30.0]
    with pytest.raises(ValueError):
        M.all_in_from(steps[:3], f)


def test_two_point_summary_counts_sign_flips():
    Xp = np.array([[1.0, 0.0], [0.0, 1.0]])
    yp = np.array([1.0, 1.0])
    W = np.array([[[1.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]])
    vs = np.array([[-1e-6, 1e-6], [1.0, 1.0]])  # the first neuron changed sign
    assert M.two_point_summary(W, vs, Xp, yp, 0)["flips"] == 1


def test_relu_vs_linear_separates_where_x_plus_is_not_minus_x_minus():
    from twolayer.experiments import min2024 as E

    rl = E.relu_vs_linear([0], 20, 2.2, 0.2, 50, 1e-6, 2e-3, 3000)
    assert rl.relu_overshoot[0] < 0 < rl.linear_overshoot[0]
    assert rl.relu_dead[0] > 0 and rl.linear_dead[0] == 0


def test_excess_slopes_per_seed_from_long_flow_summaries():
    from twolayer.experiments import min2024 as E

    scales = {"small": 1e-6, "1e-4": 1e-4, "1e-2": 1e-2, "large": 1.0}
    longs = {
        k: [dict(excess=c * e**2, total_excess=0.3) for c in (1.0, 2.0)]
        for k, e in scales.items()
    }
    slope, slope_all = E.excess_slopes(longs, scales, [1e-6, 1e-4, 1e-2])
    assert slope == pytest.approx([2.0, 2.0])
    assert slope_all == pytest.approx([0.0, 0.0], abs=1e-12)
    with pytest.raises(ValueError, match="missing"):
        E.excess_slopes(longs, scales, [1e-6, 1e-3])
