"""The Min et al. chapter's experiments (``experiments.min2024``) on tiny settings,
each against an independent computation: a plain NumPy gradient descent of the
sum logistic loss and hand-made read-outs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from twolayer import data, models
from twolayer.experiments import min2024 as E
from twolayer.theory import min2024 as M


def _gd(W, v, X, y, lr, steps):
    """NumPy GD on ``Σ_i log(1 + e^{-y_i f(x_i)})``, ``f = Σ_j v_j relu(w_j·x)``:
    the states after 0..steps steps."""
    W, v = np.array(W, float), np.array(v, float)
    X, y = np.asarray(X, float), np.asarray(y, float)
    states = [(W.copy(), v.copy())]
    for _ in range(steps):
        Z = X @ W.T
        H = np.maximum(Z, 0)
        g = -y / (1 + np.exp(y * (H @ v)))  # dL/df_i
        gv = H.T @ g
        gW = ((g[:, None] * (Z > 0)) * v).T @ X
        W, v = W - lr * gW, v - lr * gv
        states.append((W.copy(), v.copy()))
    return states


def _loss(W, v, X, y):
    return float(np.logaddexp(0, -y * (np.maximum(X @ W.T, 0) @ v)).sum())


def test_two_points_against_numpy_gd_and_hand_counts():
    seeds, width, scale, lr, steps, every = [0, 1], 6, 0.3, 0.05, 40, 10
    runs = E.two_points(
        seeds, width, scale, lr, steps, every, k_mid=2, cases={"a": 0.5}
    )
    run, ds = runs["a"], data.two_point_set(0.5)
    for b, s in enumerate(seeds):
        net = models.TwoLayerNet(2, width, init="gaussian", init_scale=scale, seed=s)
        states = _gd(*net.weights(), ds.X, ds.y, lr, steps)[::every]
        if b == 0:
            np.testing.assert_allclose(run["Ws"], [W for W, _ in states], atol=1e-10)
        W_end, v_end = states[-1]
        live = (v_end > 0) & ((ds.X @ W_end.T) > 0).any(0)
        in_plus = [((ds.X @ W.T) > 0).all(0)[live].mean() for W, _ in states]
        np.testing.assert_allclose(run["in_plus"][b], in_plus)
    assert run["mu"] == pytest.approx(np.sin(0.5))


def test_two_phases_fixed_signs_and_initial_loss():
    ds = data.opposite_cones(12, 3, 0.4, seed=0)
    both, first = E.two_phases(
        ds,
        [0, 1],
        5,
        0.1,
        lr=0.05,
        batch=4,
        epochs=4,
        epochs_first=3,
        early_epoch=2,
        snapshot_every=2,
    )
    per_epoch = 3  # 12 points in batches of 4
    np.testing.assert_array_equal(both[0].steps, np.array([0, 1, 2, 4]) * per_epoch)
    np.testing.assert_array_equal(both[1].steps, np.array([0, 1, 2]) * per_epoch)
    np.testing.assert_array_equal(first[0].steps, np.array([0, 1, 2]) * per_epoch)
    for s, (b, f) in enumerate(zip(both, first)):
        net = models.TwoLayerNet(ds.d, 5, init="gaussian", init_scale=0.1, seed=s)
        assert b.loss[0] == pytest.approx(_loss(*net.weights(), ds.X, ds.y), rel=1e-5)
        signs = M.random_signs(5, s)
        np.testing.assert_allclose(f.param("a")[-1], signs)  # the layer never moves
        changes = M.norm_direction_changes(*net.weights(), ds.X, ds.y)
        np.testing.assert_allclose(b.record("changes")[0], changes, rtol=1e-4)


def _tiny_pair(n=10, d=6, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return data.Dataset(X, y, "tiny", "test")


def test_fig5_runs_joins_the_first_seed_and_matches_numpy_gd():
    ds = _tiny_pair()
    r = E.fig5_runs(
        ds, [0, 1], 4, 0.2, lr=0.05, seed_steps=40, iterations=70, n_snapshots=6
    )
    assert r.it[0] == 0 and r.it[-1] == 70 and np.all(np.diff(r.it) > 0)
    np.testing.assert_array_equal(r.runs[1].steps, np.arange(0, 41, 20))
    W70, v70 = _gd(r.Ws[0], r.vs[0], ds.X, ds.y, 0.05, 70)[-1]
    np.testing.assert_allclose(r.Ws[-1], W70, atol=1e-4)  # float32
    np.testing.assert_allclose(r.vs[-1], v70, atol=1e-4)
    assert r.loss[-1] == pytest.approx(_loss(W70, v70, ds.X, ds.y), rel=1e-4)


def test_fig5_large_init_scales_and_numpy_gd():
    ds = _tiny_pair()
    large = E.fig5_large(ds, [3], width=4, lr=0.01, steps=10)
    W0, v0 = large[0].param("W")[0], large[0].param("a")[0]
    unit = dict(init="gaussian", seed=3, dtype=torch.float32)
    Wu, vu = models.TwoLayerNet(ds.d, 4, **unit).weights()
    np.testing.assert_allclose(W0, Wu * ds.d**-0.5, rtol=1e-5)
    np.testing.assert_allclose(v0, vu * ds.d**-0.5 * (ds.d / 4) ** 0.5, rtol=1e-5)
    W10, _ = _gd(W0, v0, ds.X, ds.y, 0.01, 10)[-1]
    np.testing.assert_allclose(large[0].param("W")[-1], W10, atol=1e-5)


def test_fig5_literal_halving_and_divergence():
    ds = _tiny_pair()
    k, c = E.fig5_literal(ds, 4, 0.5, seed=0, lr_sum=0.2, steps=40)
    net = models.TwoLayerNet(ds.d, 4, init="gaussian", init_scale=0.5, seed=0)
    states = _gd(*net.weights(), ds.X, ds.y, 0.2, 40)[::2]
    losses = [_loss(W, v, ds.X, ds.y) for W, v in states]
    assert k == 2 * next(i for i, x in enumerate(losses) if x <= losses[0] / 2)
    assert -1 <= c <= 1
    assert E.literal_reading((k, 0.5), 0.9).endswith("before the neurons align")
    assert "same few steps" in E.literal_reading((k, 0.95), 0.9)
    assert E.literal_reading("boom", 0.9).startswith("GD diverges within the run")
    assert isinstance(E.fig5_literal(ds, 4, 1.0, seed=0, lr_sum=1e6, steps=40), str)


def test_drop_reading_by_hand():
    it = np.arange(5)
    curves = {
        "mean_plus": [0.1, 0.95, 0.96, 0.9, 0.5],
        "mean_minus": [0, 0.9, 0.97, 0.9, 0.6],
    }
    tr = SimpleNamespace(cos=lambda name: np.array(curves[name]))  # a Track
    assert E.drop_reading(it, tr, t_half=2).startswith(
        "the alignment *drops* (to 0.500"
    )
    curves["mean_plus"][-1] = curves["mean_minus"][-1] = 0.96
    assert E.drop_reading(it, tr, t_half=2).startswith("the alignment stays")


def test_lemma1_runs_quarter_at_balance_and_numpy_gd():
    ds = data.opposite_cones(8, 2, 0.4, seed=0)
    r = E.lemma1_runs(ds, 5, 1e-3, seed=0, t_flow=0.5, lr=0.01, steps=20)
    assert r.t_gf[-1] == pytest.approx(0.5) and r.t_gd[-1] == pytest.approx(0.1)
    assert r.gf["ratio"] <= 0.25 + 1e-9  # Lemma 4 at balanced states
    states = _gd(r.W0, r.v0, ds.X, ds.y, 0.01, 20)
    np.testing.assert_allclose(r.Ws[-1], states[-1][0], atol=1e-12)
    np.testing.assert_allclose(r.loss, [_loss(W, v, ds.X, ds.y) for W, v in states])
    assert len(r.gd["error"]) == 3  # every 10th of 21 states


def test_toy_cones_rival_output_and_cones():
    seeds = [0, 1]
    sets = [data.opposite_cones(8, 2, 0.3, seed=s) for s in seeds]
    cones, f0 = E.toy_cones(sets, seeds, 6, 1e-4, 1.0, lr=0.05, steps=200)
    for s, d, c in zip(seeds, sets, cones):
        net = models.TwoLayerNet(2, 6, init="balanced", init_scale=1.0, seed=s)
        W, v = net.weights()
        assert f0[s] == pytest.approx(np.abs(np.maximum(d.X @ W.T, 0) @ v).max())
        assert c[0].in_cone == 1.0  # Thm 1 (i) from the small init


def test_dead_branch_counts_by_hand():
    r = E.dead_branch(10, 2.2, 0.2, 8, 1e-4, seed=1, lr=0.05, steps=60)
    net = models.TwoLayerNet(2, 8, init="balanced", init_scale=1e-4, seed=1)
    W0, v0 = net.weights()
    act = (r.ds.X @ W0.T) > 0  # (points, neurons)
    own = np.array([act[r.ds.y == np.sign(v), j].any() for j, v in enumerate(v0)])
    assert r.inactive == int((~own).sum())
    assert r.t[-1] == pytest.approx(60 * 0.05 / 2)
    dead = (r.ds.X @ r.Ws[r.report.k1].T <= 0).all(0)
    assert r.dead_own == int((own & dead).sum())


def test_long_flows_paper_time_and_initial_loss():
    longs = E.long_flows([0], 6, 4, 0.4, 5, {"small": 1e-3}, t_long=10.0)
    (r,) = longs["small"]
    assert r["t"][-1] == pytest.approx(5.0)  # paper time = book time / 2
    assert r["loss"][0] == pytest.approx(6 * np.log(2), rel=1e-3)  # tiny outputs
    assert 1.0 <= r["late"] <= 4.0  # a stable rank of a 5 x 4 matrix


def test_entry_law_sweep_law_by_hand():
    df = E.entry_law_sweep([0.3], [0, 1], 20, 1e-6, lr=0.05, every=2)
    ds = data.two_point_set(0.3)
    for s, row in zip([0, 1], df.itertuples()):
        W, v = models.TwoLayerNet(
            2, 20, init="balanced", init_scale=1e-6, seed=s
        ).weights()
        act = (ds.X @ W.T) > 0
        one = (v > 0) & (act.sum(0) == 1)
        phi = np.arctan2(W[one, 1], W[one, 0])  # angle to x1 = [1, 0]
        phi = np.where(act[0, one], np.abs(phi), np.abs(phi - (np.pi / 2 - 0.3)))
        law = np.log(np.tan(phi / 2) / np.tan(0.3 / 2)).max()
        assert row.seed == s and row.neurons == one.sum()
        assert row.mu == pytest.approx(np.sin(0.3))
        assert row.t1_law == pytest.approx(max(law, 0.0), abs=1e-9)


def test_n_sweep_separability_and_step_shrink():
    kw = dict(half_angle=0.4, width=5, init_scale=1e-4, lr=0.05, steps=100, seed=0)
    df = E.n_sweep([6, 12], n_ref=6, **kw)
    for row, shrink in zip(df.itertuples(), (1, 2)):
        ds = data.opposite_cones(row.n, 2, 0.4, seed=0)
        Z = ds.X * ds.y[:, None]
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        assert row.mu == pytest.approx((Z @ Z.T).min())
        net = models.TwoLayerNet(2, 5, init="balanced", init_scale=1e-4, seed=0)
        states = _gd(*net.weights(), ds.X, ds.y, 0.05 / shrink, 100 * shrink)
        states = states[:: 5 * shrink]  # same flow time, snapshots every 5 * shrink
        t = np.arange(len(states)) * 5 * shrink * (0.05 / shrink) / 2  # paper time
        Ws, vs = np.array([W for W, _ in states]), np.array([v for _, v in states])
        t1, _, mono = M.alignment_escape(t, Ws, vs, ds.X, ds.y)
        assert row.t1 == pytest.approx(t1) and row.mono == mono


def test_eps_sweep_escape_and_rate_by_hand():
    df = E.eps_sweep([1e-1, 1e-3], [0], 8, 0.4, 5, lr=0.05, steps=200)
    d = data.opposite_cones(8, 2, 0.4, seed=0)
    rate = max(np.linalg.norm(d.X[d.y == c].sum(0)) for c in (1, -1))
    assert df.rate.tolist() == pytest.approx([rate, rate])
    for row in df.itertuples():
        net = models.TwoLayerNet(2, 5, init="balanced", init_scale=row.eps, seed=0)
        states = _gd(*net.weights(), d.X, d.y, 0.05, 200)[::5]
        out = [np.abs(np.maximum(d.X @ W.T, 0) @ v).max() for W, v in states]
        k = next((i for i, f in enumerate(out) if f >= 1), None)
        t_esc = np.inf if k is None else k * 5 * 0.05 / 2
        assert row.t_esc == pytest.approx(t_esc)
    t_end = 200 * 0.05 / 2
    gap = np.minimum(df.t1, t_end) - df.t_esc
    np.testing.assert_allclose(df["t1 - t_esc"], gap)
