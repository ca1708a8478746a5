"""Tests of the Sarussi chapter's runs over data draws (Fig 9, App. J) and of the
resolved small-init start of the MNIST runs (Figs 2, 6), each against an
independent computation."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer import data, flows, models
from twolayer.experiments import sarussi2021 as ex
from twolayer.theory import margins
from twolayer.theory import sarussi2021 as s


def _net_W(ds, k, alpha, scale, seed):
    net = models.TwoLayerNet.fixed_second_layer(
        ds.d, k, alpha, init_scale=scale, seed=seed
    )
    return np.asarray(net.weights()[0], dtype=float), net


def test_gd_batch_equals_flows_gd_run_by_run_with_padded_sets():
    a = data.antipodal_gaussians(12, 2, mean=2.0, std=1.0, seed=3)
    b = data.antipodal_gaussians(10, 2, mean=1.0, std=1.0, seed=4)
    Wa, na = _net_W(a, 2, 0.2, 0.3, 5)
    Wb, nb = _net_W(b, 2, 0.2, 0.3, 6)
    X = np.zeros((2, 12, 2))
    y = np.ones((2, 12))
    mask = np.zeros((2, 12), bool)
    X[0], y[0], mask[0] = a.X, a.y, True
    X[1, :10], y[1, :10], mask[1, :10] = b.X, b.y, True
    out = s.gd_batch(np.stack([Wa, Wb]), X, y, 0.2, [0.5, 0.2], 30, [0, 7, 30], mask)
    for r, (ds, net, lr) in enumerate(((a, na, 0.5), (b, nb, 0.2))):
        tr = flows.gd(net, ds, lr=lr, steps=30, snapshot_steps=[0, 7, 30])
        for got, snap in zip(out, tr.snapshots):
            np.testing.assert_allclose(got[r], np.asarray(snap["W"]), atol=1e-12)


def test_gd_batch_rejects_a_run_without_points():
    with pytest.raises(ValueError, match="mask"):
        s.gd_batch(
            np.zeros((1, 2, 2)), np.ones((1, 3, 2)), np.ones((1, 3)), 0.2, 0.1, 2,
            [0], np.zeros((1, 3), bool),
        )  # fmt: skip


def test_separable_outlier_data_skips_a_non_separable_draw():
    bad = None
    for seed in range(40):
        try:
            ex.outlier_data(100, 3.0, [-2.0, 6.0], seed)
        except margins.NotSeparableError:
            bad = seed
            break
    assert bad is not None, "no non-separable draw among the first 40 (test setting)"
    base, out = ex.separable_outlier_data(100, 3.0, [-2.0, 6.0], bad)
    margins.max_margin(out.X, out.y)  # separable
    nxt = ex.outlier_data(100, 3.0, [-2.0, 6.0], bad + ex.DRAW_STRIDE)
    np.testing.assert_array_equal(out.X, nxt[1].X)


def test_fig9_draws_ties_each_data_draw_to_its_seed():
    settings = [("small", 1e-6, 0.5, True), ("process", 0.03, 0.1, False)]
    table, hists, draws = ex.fig9_draws(
        20, 3.0, [-2.0, 6.0], [0, 2], settings, 2, 0.2, 30, 5, 0.01
    )
    assert len(table) == 2 * 3  # two draws, three runs each (one rival)
    assert not np.array_equal(draws[0][1].X, draws[2][1].X)
    # the run of draw 2 equals flows.gd on that draw from init seed 2
    net = models.TwoLayerNet.fixed_second_layer(2, 2, 0.2, init_scale=0.03, seed=2)
    tr = flows.gd(net, draws[2][1], lr=0.1, steps=30, snapshot_steps=[0, 30])
    W = hists[(0.1, "process", True, 2)][1][-1]
    np.testing.assert_allclose(W, np.asarray(tr.snapshots[-1]["W"]), atol=1e-12)
    assert set(table.end_picture) <= {0, 1}


def test_resolved_schedule_starts_below_the_init_and_grows_with_t():
    plan = s.mnist_schedule(0.01, 2.0, 6, 0.1, [4.0], 2, t_start=1e-9, rel_start=0.05)
    lrs = [lr for lr, _, _ in plan]
    assert lrs[0] == 1e-9
    ramp = plan[1:7]
    for lr, n, _ in ramp:  # every ramp step at most rel_start of the time reached
        assert lr <= 0.01 + 1e-15
    times = np.cumsum([lr * n for lr, n, _ in plan])
    starts = np.r_[0.0, times[:-1]]
    for (lr, n, _), t0 in zip(plan[1:7], starts[1:7]):
        assert lr <= 0.05 * t0 * (1 + 1e-9)
    assert plan[7][0] == 0.01  # then the capped step up to t_early
    np.testing.assert_allclose(times[7], 2.0, rtol=1e-9)
    np.testing.assert_allclose(times[-1], 4.0, rtol=1e-9)


def test_resolved_schedule_checks_its_arguments():
    with pytest.raises(ValueError, match="both"):
        s.mnist_schedule(0.01, 2.0, 6, 0.1, [4.0], 2, t_start=1e-9)
    with pytest.raises(ValueError, match="t_start"):
        s.mnist_schedule(0.01, 2.0, 6, 0.1, [4.0], 2, t_start=1.0, rel_start=0.05)
