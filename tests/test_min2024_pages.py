"""The read-outs the Min et al. pages call (theory.min2024), each against an
independent computation; and the chapter's figure functions draw."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest

from twolayer import data, models
from twolayer.theory import min2024 as M

matplotlib.use("Agg")


def _traj(Ws, vs, steps=None, loss=None):
    """A stand-in for a Trajectory: steps, loss and the "W", "a" snapshots."""
    Ws, vs = np.asarray(Ws, float), np.asarray(vs, float)
    params = {"W": Ws, "a": vs}
    return SimpleNamespace(
        steps=np.arange(len(Ws)) if steps is None else np.asarray(steps),
        loss=np.ones(len(Ws)) if loss is None else np.asarray(loss, float),
        param=params.__getitem__,
    )


def test_two_point_runs_counts_neurons_by_hand():
    X, y = np.eye(2), np.ones(2)  # orthogonal positive points x1, x2
    both, on_x1, dead = [1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]
    W0 = np.array([on_x1, on_x1, both, dead])
    W1 = np.array([on_x1, both, both, dead])  # neuron 1 enters S+ at the end
    W1[0] = [1.0, -1e-3]  # neuron 0 settles on x1
    v = np.array([1.0, 1.0, 1.0, 1.0])
    run = M.two_point_runs([_traj([W0, W0, W1], [v, v, v])] * 2, X, y, k_mid=1)
    # live positive neurons: 0, 1, 2 (3 is dead); in S+: 2 (start, mid), 1 and 2 (end)
    np.testing.assert_allclose(run["in_plus"], [[1 / 3, 1 / 3, 2 / 3]] * 2)
    np.testing.assert_array_equal(run["n_out"], [1, 1])  # neuron 0
    cos_end = 1 / np.hypot(1.0, 1e-3)
    np.testing.assert_allclose(run["settled"], [cos_end] * 2)
    np.testing.assert_allclose(run["settled_init"], [1 / np.sqrt(2)] * 2)
    np.testing.assert_allclose(run["entered"], [0.5] * 2)  # of neurons 0 and 1
    assert run["mu"] == 0.0 and run["rec"].shape == (3, 4)


def test_lemma1_along_against_autograd_directions():
    import torch

    ds = data.opposite_cones(10, 3, 0.4, seed=0)
    net = models.TwoLayerNet(3, 6, init="balanced", init_scale=1e-3, seed=0)
    W, v = net.weights()
    out = M.lemma1_along([W], [v], ds.X, ds.y, rebalance=True)
    Wt = torch.tensor(W, requires_grad=True)
    f = torch.relu(torch.tensor(ds.X) @ Wt.T) @ torch.tensor(v)
    (2 * torch.nn.functional.softplus(-torch.tensor(ds.y) * f).sum()).backward()
    wdot = -Wt.grad.numpy()  # the paper's loss 2 log(1 + e^-q)
    n = np.linalg.norm(W, axis=1)[:, None]
    u = W / n
    proj = lambda V: V - (u * V).sum(1, keepdims=True) * u  # noqa: E731
    act = (ds.X @ W.T > 0).T
    field = np.sign(v)[:, None] * ((act * ds.y) @ ds.X)
    expected = np.linalg.norm(proj(wdot) / n - proj(field), axis=1).max()
    assert out["error"][0] == pytest.approx(expected, rel=1e-9)
    assert out["drift"] == pytest.approx(0.0, abs=1e-12)  # balanced
    assert out["ratio"] <= 0.25 + 1e-12
    fmax = np.abs(np.maximum(ds.X @ W.T, 0) @ v).max()
    bound = 2 * len(ds.X) * np.linalg.norm(ds.X, axis=1).max() * fmax
    assert out["bound"][0] == pytest.approx(bound)


def test_entry_law_fit_on_exact_shapes():
    seeds = np.repeat([3, 1], 3)
    mu = np.tile([0.3, 0.1, 0.01], 2)
    C = np.where(seeds == 3, 2.0, 5.0)
    t1 = C * np.log(2) / np.sqrt(mu)  # exactly the bound's shape, C per seed
    fit = M.entry_law_fit(seeds, mu, t1, t1 * np.exp(-0.1))
    np.testing.assert_allclose(fit["t1_shape"], t1)
    np.testing.assert_allclose(fit["shape_err"], [0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(fit["law_err"], [0.1, 0.1])
    with pytest.raises(ValueError, match="equal-length"):
        M.entry_law_fit(seeds, mu[:2], t1, t1)


def test_changes_callback_and_random_signs():
    ds = data.opposite_cones(8, 2, 0.4, seed=1)
    net = models.TwoLayerNet(2, 4, init="gaussian", init_scale=0.1, seed=1)
    W, v = net.weights()
    assert M.changes_callback(ds.X, ds.y)(net) == M.norm_direction_changes(
        W, v, ds.X, ds.y
    )
    s = M.random_signs(1000, 7)
    assert set(np.unique(s)) == {-1.0, 1.0} and abs(s.mean()) < 0.1
    np.testing.assert_array_equal(s, M.random_signs(1000, 7))


def _phase(t_half, t_band, cp, cm, act):
    return M.PhaseSummary(t_half, t_band, cp, cm, act, 1.0, 100)


def test_phase_ranges_and_summaries():
    small = [_phase(40, 20.0, 0.95, 0.97, 0.99), _phase(60, 30.0, 0.96, 0.92, 0.9)]
    large = [_phase(8, np.inf, 0.3, 0.5, 0.2)]
    r = M.phase_ranges(small, large)
    assert r["t_half"] == (40, 60) and r["ratio"] == (0.5, 0.5)
    assert r["cos_minus"] == (0.92, 0.97) and r["l_cos"] == (0.5, 0.5)
    assert r["l_act"] == (0.2, 0.2)
    ds = data.opposite_cones(10, 3, 0.4, seed=0)
    rng = np.random.default_rng(0)
    Ws, vs = rng.normal(size=(4, 5, 3)), rng.normal(size=(4, 5))
    run = _traj(Ws, vs, steps=[0, 10, 20, 30], loss=[4.0, 3.0, 1.0, 0.5])
    (s,) = M.phase_summaries([run], ds.X, ds.y)
    assert s == M.phase_summary(run.steps, run.loss, Ws, vs, ds.X, ds.y)


def test_alignment_drop_and_literal_step():
    it = np.array([0, 10, 20, 30])
    drops, cp, cm = M.alignment_drop(
        it, [0.1, 0.99, 0.9, 0.5], [0.2, 0.98, 0.9, 0.6], 10
    )
    assert drops and (cp, cm) == (0.5, 0.6)
    assert not M.alignment_drop(it, [0.1, 0.99, 0.99, 0.98], [0.2, 0.9, 0.9, 0.5], 10)[
        0
    ]
    X, y = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]), np.array([1.0, 1.0, -1.0])
    W = np.array([[[1.0, 0.0], [0.0, 1.0]]] * 3)
    v = np.ones((3, 2))
    run = _traj(W, v, steps=[0, 5, 10], loss=[2.0, 1.5, 0.9])
    k, cos = M.literal_step(run, X, y)
    x_plus = X[y > 0].sum(0)
    assert k == 10 and cos == pytest.approx(
        W[2].mean(0) @ x_plus / np.hypot(*x_plus) / np.hypot(*W[2].mean(0))
    )
    with pytest.raises(ValueError, match="never halves"):
        M.literal_step(_traj(W, v, loss=[2.0, 1.5, 1.2]), X, y)


def test_figures_draw():
    from twolayer.figures import min2024 as F

    X, y = np.eye(2), np.ones(2)
    rng = np.random.default_rng(0)
    Ws, v = rng.normal(size=(3, 4, 2)), np.ones((3, 4))
    run = M.two_point_runs([_traj(Ws, v)], X, y, k_mid=1)
    for fig in (
        F.two_point_neurons({"a": run, "b": run}, 1),
        F.two_point_fraction({"a": run}, 1),
    ):
        assert fig.axes


def test_report_ranges_over_cone_reports():
    reports = [
        M.ConeReport(0.5, 3, 0, 1, 2, 0, 1.0),
        M.ConeReport(0.7, 4, 1, 0, 0, 2, 0.9),
    ]
    r = M.report_ranges(reports, prefix="x_")
    assert (r["x_t1_min"], r["x_t1_max"]) == (0.5, 0.7)
    assert (r["x_in_cone_min"], r["x_in_cone_max"]) == (0.9, 1.0)
    assert r["x_mono_max"] == 1 and len(r) == 14
    with pytest.raises(ValueError):
        M.report_ranges([])


def test_linear_rival_halves_where_its_loss_does():
    ds = data.opposite_cones(12, 4, 0.5, seed=3)
    rng = np.random.default_rng(3)
    W, v = 1e-3 * rng.normal(size=(6, 4)), 1e-3 * rng.normal(size=6)
    summary, half, srank = M.linear_rival(
        W, v, ds.X, ds.y, 0.05, 400, range(0, 401, 10)
    )
    _, Ws, vs = M.linear_gd(W, v, ds.X, ds.y, 0.05, 400, range(0, 401, 10))
    # the linear net's output is u·x with u = W^T v: its loss by hand
    loss = [
        np.log1p(np.exp(-ds.y * (ds.X @ (Wk.T @ vk)))).sum() for Wk, vk in zip(Ws, vs)
    ]
    k = next(i for i, L in enumerate(loss) if L <= loss[0] / 2)
    assert half == summary.t_half == 10 * k
    s = np.linalg.svd(Ws[k], compute_uv=False)
    assert srank == pytest.approx((s**2).sum() / s[0] ** 2)


def test_alignment_phase_stats_against_the_network():
    import torch

    ds = data.opposite_cones(10, 3, 0.4, seed=2)
    rng = np.random.default_rng(2)
    growth = np.geomspace(1e-3, 30, 8)[:, None, None]
    Ws = growth * rng.normal(size=(1, 5, 3)) + 0.01 * rng.normal(size=(8, 5, 3))
    vs = growth[:, :, 0] * rng.normal(size=(1, 5))
    out = M.alignment_phase_stats(np.arange(8) * 10, Ws, vs, ds.X, ds.y, lr=0.01)
    net = models.TwoLayerNet(3, 5, init="gaussian", init_scale=1.0, seed=0)
    with torch.no_grad():
        net.W.copy_(torch.tensor(Ws[0]))
        net.a.copy_(torch.tensor(vs[0]))
        f0 = float(net(torch.tensor(ds.X)).abs().max())
    assert out["f0"] == pytest.approx(f0)
    r = 0.01 * max(np.linalg.norm(x) for x in M.aggregate_data(ds.X, ds.y)) / 2
    assert out["t_esc"] == pytest.approx(np.log(1 / f0) / (2 * r))
    k = M.small_output_end(Ws, vs, ds.X)
    assert out["phase_it"] == 10 * k
    mono = M.monotonicity_violations(Ws[: k + 1], np.sign(vs[: k + 1]), ds.X, ds.y)
    assert out["mono_frac"] == pytest.approx(100 * mono.sum() / (k * 5 * 10))
