"""Tests of the Min et al. helpers behind the Fig 5, Figs 7-9, Fig 6 and sweep pages."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer import data, flows, models
from twolayer.theory import min2024 as M


def _toy():
    return data.opposite_cones(12, 2, 0.3, seed=1)


def test_band_and_activation_match_one_on_aligned_neurons():
    ds = _toy()
    xp, xm = M.aggregate_data(ds.X, ds.y)
    W = np.stack([xp, 2 * xp, xm])
    v = np.array([1.0, 0.5, -1.0])
    assert M.band(W, v, ds.X, ds.y) == 1.0
    assert M.activation_match(W, v, ds.X, ds.y) == 1.0
    # a positive neuron pointing at x- matches its class on no point
    assert M.activation_match(np.stack([xm]), [1.0], ds.X, ds.y) == 0.0


def test_pattern_accuracy_is_one_in_own_cone_and_zero_in_the_other():
    ds = _toy()
    xp, xm = M.aggregate_data(ds.X, ds.y)
    acc = M.pattern_accuracy(np.stack([xp, xm]), [1.0, 1.0], ds.X, ds.y)
    np.testing.assert_allclose(acc, [1.0, 0.0])


def test_small_output_end_and_halving_index():
    X = np.array([[1.0, 0.0]])
    Ws = np.array([[[0.1, 0.0]], [[0.5, 0.0]], [[2.0, 0.0]], [[3.0, 0.0]]])
    vs = np.array([[1.0], [1.0], [1.0], [1.0]])
    assert M.small_output_end(Ws, vs, X) == 1
    assert M.halving_index([4.0, 3.0, 2.0, 1.0]) == 2
    assert M.halving_index([4.0, 3.0]) is None
    assert M.first_index([0.1, 0.95, 0.99], 0.9) == 1


def test_linear_gd_matches_autograd_free_formula_and_aligns_with_x_plus_minus():
    ds = _toy()
    rng = np.random.default_rng(0)
    W0, v0 = 1e-4 * rng.standard_normal((6, 2)), 1e-4 * rng.standard_normal(6)
    k, Ws, vs = M.linear_gd(
        W0, v0, ds.X, ds.y, lr=0.05, steps=400, snapshot_steps=[0, 400]
    )
    assert list(k) == [0, 400]
    xp, xm = M.aggregate_data(ds.X, ds.y)
    # every neuron aligns with x+ - x- (up to sign): |cos| -> 1
    W = Ws[-1]
    cos = np.abs(W @ (xp - xm)) / np.linalg.norm(W, axis=1) / np.linalg.norm(xp - xm)
    assert cos.min() > 0.99
    # one step by hand
    _, Ws1, vs1 = M.linear_gd(W0, v0, ds.X, ds.y, lr=0.1, steps=1, snapshot_steps=[1])
    u = W0.T @ v0
    r = ds.X.T @ (ds.y / (1 + np.exp(ds.y * (ds.X @ u))))
    np.testing.assert_allclose(Ws1[0], W0 + 0.1 * np.outer(v0, r))
    np.testing.assert_allclose(vs1[0], v0 + 0.1 * W0 @ r)


def test_entry_time_law_and_angles():
    assert M.entry_time(0.3, 0.3) == pytest.approx(0.0)
    assert M.entry_time(np.pi / 2, 0.01) == pytest.approx(np.log(1 / np.tan(0.005)))
    with pytest.raises(ValueError, match="theta"):
        M.entry_time(1.0, 0.0)
    x1, x2 = np.array([1.0, 0.0]), np.array([np.sin(0.1), np.cos(0.1)])
    W = np.array([[np.cos(-0.5), np.sin(-0.5)], [1.0, 1.0], [-1.0, -1.0]])
    phi = M.entry_angle(W, x1, x2)
    assert phi[0] == pytest.approx(0.5) and np.isnan(phi[1]) and np.isnan(phi[2])


def test_entry_time_law_predicts_gradient_flow_of_a_balanced_neuron():
    theta = 0.05
    ds = data.two_point_set(theta)
    net = models.TwoLayerNet(
        2, 8, init="balanced", init_scale=1e-12, seed=3, signs=np.ones(8)
    )
    W0, _ = net.weights()
    phi0 = M.entry_angle(W0, ds.X[0], ds.X[1])
    steps = 6000
    traj = flows.gd(
        net,
        ds,
        lr=2e-3,
        steps=steps,
        reduction="sum",
        snapshot_steps=range(0, steps + 1, 10),
    )
    t = M.paper_time(traj.times)
    measured = M.entry_times(t, traj.param("W"), ds.X, ds.y)
    one = ~np.isnan(phi0)
    assert one.any()
    np.testing.assert_allclose(
        measured[one], M.entry_time(phi0[one], theta), rtol=0.03, atol=0.02
    )


def test_point_cosine():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(
        M.point_cosine(np.array([[2.0, 0.0], [1.0, 1.0]]), X), [1.0, np.sqrt(0.5)]
    )


def test_rebalanced_keeps_the_network_and_lemma4_ratio_at_most_a_quarter():
    ds = _toy()
    rng = np.random.default_rng(2)
    W, v = 1e-3 * rng.standard_normal((10, 2)), 1e-2 * rng.standard_normal(10)
    Wb, vb = M.rebalanced(W, v)
    np.testing.assert_allclose(vb[:, None] * Wb, v[:, None] * W, rtol=1e-12)
    np.testing.assert_allclose(np.abs(vb), np.linalg.norm(Wb, axis=1), rtol=1e-12)
    for scale in (1e-3, 1e-1, 0.5):
        Ws, vs = M.rebalanced(
            scale * rng.standard_normal((10, 2)), scale * rng.standard_normal(10)
        )
        r = M.lemma4_ratio(Ws, vs, ds.X, ds.y)
        assert np.isnan(r) or r <= 0.25 + 1e-12


def test_thm1_eps_condition_and_loss_rate_ratio():
    ds = _toy()
    c = M.thm1_eps_condition(ds.X, ds.y, 50)
    assert 0 <= c < 1e-6
    t = np.array([1.0, 2.0, 4.0, 8.0])
    assert M.loss_rate_ratio(t, 1 / t, 2.0) == pytest.approx(1.0)
    assert M.loss_rate_ratio(t, 1 / np.sqrt(t), 2.0) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="t2"):
        M.loss_rate_ratio(t, 1 / t, 9.0)


def test_phase_summary_on_a_small_toy_run_and_join_runs():
    ds = _toy()
    nets = [
        models.TwoLayerNet(2, 10, init="gaussian", init_scale=1e-4, seed=s)
        for s in (0, 1)
    ]
    a = flows.gd_many(
        nets, ds, lr=0.01, steps=300, reduction="sum", snapshot_steps=range(0, 301, 10)
    )
    b = flows.gd(
        nets[0],
        ds,
        lr=0.01,
        steps=300,
        reduction="sum",
        snapshot_steps=range(0, 301, 10),
    )
    steps, loss, Ws, vs = M.join_runs(a[0], b)
    assert steps[-1] == 600 and len(steps) == len(loss) == len(Ws) == len(vs) == 61
    s = M.phase_summary(steps, loss, Ws, vs, ds.X, ds.y)
    assert s.t_band < s.t_half and s.band_before_fit < 1
    assert s.cos_plus > 0.9 and s.act == 1.0
    with pytest.raises(ValueError, match="never halves"):
        M.phase_summary(steps[:2], loss[:2], Ws[:2], vs[:2], ds.X, ds.y)


def test_cone_report_small_init_reaches_cones():
    ds = _toy()
    net = models.TwoLayerNet(2, 12, init="balanced", init_scale=1e-6, seed=0)
    W0, v0 = net.weights()
    run = flows.gd(
        net, ds, lr=0.01, steps=600, reduction="sum", snapshot_steps=range(0, 601, 5)
    )
    rep = M.cone_report(
        M.paper_time(run.times),
        run.param("W"),
        run.param("a"),
        np.sign(v0),
        ds.X,
        ds.y,
        W_init=W0,
    )
    assert np.isfinite(rep.t1) and rep.in_cone == 1.0
    assert rep.missed == 0 and rep.exits == 0 and rep.mono == 0


def test_alignment_escape_orders_alignment_before_escape_at_small_eps():
    ds = _toy()
    net = models.TwoLayerNet(2, 10, init="balanced", init_scale=1e-8, seed=0)
    run = flows.gd(
        net, ds, lr=0.01, steps=1500, reduction="sum", snapshot_steps=range(0, 1501, 5)
    )
    t1, t_esc, mono = M.alignment_escape(
        M.paper_time(run.times), run.param("W"), run.param("a"), ds.X, ds.y
    )
    assert t1 < t_esc < np.inf and mono == 0


def test_lemma3_ratios_below_one_on_a_small_balanced_flow():
    ds = _toy()
    net = models.TwoLayerNet(2, 8, init="balanced", init_scale=1e-4, seed=0)
    W0, _ = net.weights()
    lb = M.lemma1_bound(ds.X, W0, 1e-4)
    grid = np.linspace(0, float(M.book_time(lb.horizon)), 21)
    gf = flows.gradient_flow(net, ds, grid[-1], snapshot_times=grid, reduction="sum")
    rw, rf, T = M.lemma3_ratios(
        M.paper_time(gf.times), gf.param("W"), gf.param("a"), ds.X, W0, 1e-4
    )
    assert T == pytest.approx(lb.horizon) and 0 < rw <= 1 and 0 < rf <= 1


def test_two_point_summary_counts_outsiders_and_entries():
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 1.0])
    W_start = np.array([[1.0, -0.5], [1.0, 1.0], [-1.0, -1.0]])
    W_mid = np.array([[1.0, -0.1], [1.0, 1.0], [-1.0, -1.0]])
    W_end = np.array([[1.0, -1e-3], [1.0, 1.0], [-1.0, -1.0]])
    v = np.array([1.0, 1.0, 1.0])
    s = M.two_point_summary(
        np.stack([W_start, W_mid, W_end]), np.stack([v, v, v]), X, y, 1
    )
    np.testing.assert_allclose(s["in_plus"], [0.5, 0.5, 0.5])
    assert s["n_out"] == 1 and s["entered"] == 0.0
    assert s["settled"] > 0.99 and s["settled_init"] < 0.9


def test_entry_law_row_on_a_synthetic_record():
    theta = 0.1
    X, y = np.array([[1.0, 0.0], [np.sin(theta), np.cos(theta)]]), np.array([1.0, 1.0])
    phi0 = 1.0
    W0 = np.array([[np.cos(-phi0), np.sin(-phi0)]])
    t_law = float(M.entry_time(phi0, theta))
    times = np.array([0.0, t_law])
    Ws = np.stack([W0, np.array([[1.0, 0.0]])])  # in S+ at the second snapshot
    row = M.entry_law_row(theta, W0, [1.0], times, Ws, X, y)
    assert row["t1_measured"] == pytest.approx(t_law) and row["neurons"] == 1
    assert row["worst_neuron"] == pytest.approx(0.0)
