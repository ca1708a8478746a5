"""Tests of twolayer.flows.gradient_flow (the adaptive gradient-flow integrator)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from twolayer import data as D
from twolayer import flows as F
from twolayer import models as M
from twolayer.flows.integrator import FlowField, MarginOracle


@pytest.fixture(scope="module")
def tiny():
    ds = D.orthant_data(12, 3, seed=1)
    net = M.TwoLayerNet(3, 4, init="balanced", scale=0.5, seed=2)
    return ds, net


def _flat(state):
    """The parameters of a snapshot (not its ``log10_t`` label)."""
    keys = sorted(k for k in state if k not in F.trajectory.SNAPSHOT_LABELS)
    return np.concatenate([np.ravel(state[k]) for k in keys])


def test_agrees_with_small_step_gd(tiny):
    ds, net = tiny
    run_gd = F.gd(
        copy.deepcopy(net),
        ds,
        lr=1e-3,
        steps=3000,
        snapshot_steps=[0, 500, 1000, 2000, 3000],
    )
    run_gf = F.gradient_flow(
        net, ds, t_max=3.0, snapshot_times=run_gd.times, rtol=1e-9, atol=1e-12
    )
    np.testing.assert_allclose(run_gf.times, run_gd.times, rtol=1e-9, atol=1e-12)
    dist = F.trajectory_distance(run_gf, run_gd)
    assert dist[0] < 1e-14
    # Euler's global error is O(lr·t): a few 1e-3 relative at t = 3
    assert 0 < dist.max() < 5e-3
    # halving the GD step halves the distance (first-order convergence to the flow)
    run_gd2 = F.gd(
        copy.deepcopy(net),
        ds,
        lr=5e-4,
        steps=6000,
        snapshot_steps=[0, 1000, 2000, 4000, 6000],
    )
    dist2 = F.trajectory_distance(run_gf, run_gd2)
    assert 0.4 < dist2[-1] / dist[-1] < 0.6


def test_loss_decreases_and_model_untouched(tiny):
    ds, net = tiny
    before = _flat({k: v.detach().numpy().copy() for k, v in net.state_dict().items()})
    run = F.gradient_flow(net, ds, t_max=1e6, n_snapshots=10)
    after = _flat({k: v.detach().numpy() for k, v in net.state_dict().items()})
    np.testing.assert_array_equal(before, after)
    assert np.all(np.diff(run.record("log_loss")) < 1e-9)
    assert run.loss[-1] < 1e-3 * run.loss[0]


def test_snapshots_on_log_grid(tiny):
    ds, net = tiny
    run = F.gradient_flow(net, ds, t_max=1e10, n_snapshots=12, t_min=1e-1)
    assert len(run.snapshots) == 12 == len(run.times)
    assert run.times[0] == 0.0
    np.testing.assert_allclose(
        np.log10(run.times[1:]), np.linspace(-1, 10, 11), atol=1e-8
    )
    assert np.all(np.diff(run.steps) >= 0)
    np.testing.assert_array_equal(F.log_time_grid(5.0, 2), [0.0, 5.0])


def test_late_phase_does_not_underflow(tiny):
    ds, net = tiny
    run = F.gradient_flow(net, ds, t_max=1e200, n_snapshots=5)
    assert np.isfinite(run.times[-1]) and run.times[-1] == pytest.approx(
        1e200, rel=1e-8
    )
    # the loss is ~ 1/(t log t): its log is computed without underflow
    assert np.isfinite(run.record("log_loss")[-1]) and run.record("log_loss")[
        -1
    ] < -np.log(1e200)
    assert all(np.all(np.isfinite(_flat(s))) for s in run.snapshots)


def test_balance_conserved(tiny):
    """a_j² − ‖w_j‖² is conserved by gradient flow (Phuong & Lampert Lemma A.4)."""
    ds, net = tiny
    run = F.gradient_flow(net, ds, t_max=1e30, n_snapshots=6, rtol=1e-8, atol=1e-11)
    W, a = run.final["W"], run.final["a"]
    scale = (W**2).sum()
    assert np.max(np.abs(a**2 - (W**2).sum(1))) < 1e-5 * scale


def test_field_matches_autograd_gradient_and_gauge(tiny):
    """The reparametrised field equals −∇L(θ) in the original clock, and is
    invariant under the renormalisation φ → cφ (which changes no θ)."""
    ds, net = tiny
    oracle = MarginOracle(net, ds)
    field = FlowField(oracle, "mean")
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(field.P) * 1.5
    s = np.log(np.linalg.norm(theta))
    state = np.concatenate([theta / np.linalg.norm(theta), [s, np.log1p(2.0)]])
    d = field(0.0, state)
    # dθ/dτ from (dφ̂/dτ, ds/dτ); dt/dτ from d log(1+t)/dτ
    phat = state[:-2]
    dtheta_dtau = np.exp(s) * (d[:-2] + d[-2] * phat)
    dt_dtau = d[-1] * (1 + 2.0)
    dtheta_dt = dtheta_dtau / dt_dtau
    probe = M.TwoLayerNet(3, 4, seed=0)
    with torch.no_grad():
        probe.W.copy_(torch.tensor(theta[:12].reshape(4, 3)))
        probe.a.copy_(torch.tensor(theta[12:]))
    loss = F.logistic_loss(torch.tensor(ds.y) * probe(torch.tensor(ds.X)))
    loss.backward()
    grad = np.concatenate([probe.W.grad.numpy().ravel(), probe.a.grad.numpy()])
    np.testing.assert_allclose(dtheta_dt, -grad, rtol=1e-10, atol=1e-14)
    scaled = state.copy()
    scaled[:-2] *= 3.7
    d2 = field(0.0, scaled)
    np.testing.assert_allclose(d2[:-2], 3.7 * d[:-2], rtol=1e-12)
    np.testing.assert_allclose(d2[-2:], d[-2:], rtol=1e-12)


@pytest.mark.parametrize("train_a", [True, False])
def test_field_skips_blank_inputs_exactly(train_a):
    """An input coordinate that is zero on every point (MNIST's border) is
    skipped in the products: the field equals the autograd path's, and the
    gradient of its weights is exactly zero."""
    ds = D.two_gaussians(15, 4, seed=3)
    X = ds.X.copy()
    X[:, 1] = 0.0
    ds = D.Dataset(X, ds.y, "blank column", "test")
    net = (
        M.TwoLayerNet(4, 3, alpha=0.3, init="balanced", scale=0.7, seed=1)
        if train_a
        else M.TwoLayerNet.fixed_second_layer(4, 2, alpha=0.3, scale=0.7, seed=1)
    )
    oracle = MarginOracle(net, ds)
    assert oracle.live.tolist() == [0, 2, 3]
    field = FlowField(oracle, "mean")
    theta = oracle.flatten()
    state = (
        np.concatenate([theta, [0.0, 0.3]])
        if field.cartesian
        else np.concatenate([theta / np.linalg.norm(theta), [0.4, 0.3]])
    )
    d = field(0.0, state)
    oracle.fast = False  # the autograd path on the same model (needs its L and tensors)
    oracle.L = field.L
    oracle.Xt, oracle.yt = torch.tensor(ds.X), torch.tensor(ds.y)
    d_ref = field(0.0, state)
    np.testing.assert_allclose(d, d_ref, rtol=1e-12, atol=1e-15)
    if field.cartesian:  # the state is θ itself: the blank column's weights stay put
        assert np.all(d[: 4 * len(net.W)].reshape(len(net.W), 4)[:, 1] == 0.0)


def test_fixed_second_layer_is_one_homogeneous():
    ds = D.two_gaussians(20, 2, seed=0)
    net = M.TwoLayerNet.fixed_second_layer(ds.d, 3, alpha=0.2, scale=0.1, seed=0)
    run_gd = F.gd(
        copy.deepcopy(net), ds, lr=1e-3, steps=2000, snapshot_steps=[0, 1000, 2000]
    )
    run_gf = F.gradient_flow(
        net, ds, t_max=2.0, snapshot_times=run_gd.times, rtol=1e-5, atol=1e-8
    )
    assert run_gf.config["homogeneity"] == 1
    assert F.trajectory_distance(run_gf, run_gd).max() < 5e-3
    np.testing.assert_array_equal(run_gf.final["a"], net.a.numpy())


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(t_max=-1.0), "t_max"),
        (dict(t_max=1.0, rtol=0.0), "rtol"),
        (dict(t_max=1.0, atol=-1.0), "atol"),
        (dict(t_max=1.0, reduction="max"), "reduction"),
        (dict(t_max=1.0, method="euler"), "method"),
        (dict(t_max=1.0, n_snapshots=1), "n_snapshots"),
        (dict(t_max=1.0, snapshot_times=[0.5, 2.0]), "t_max"),
        (dict(t_max=1.0, snapshot_times=[-1.0]), "snapshot_times"),
    ],
)
def test_bad_input(tiny, kwargs, word):
    ds, net = tiny
    with pytest.raises(ValueError, match=word):
        F.gradient_flow(net, ds, **kwargs)


def test_bad_data_and_model(tiny):
    ds, net = tiny
    with pytest.raises(ValueError, match="data"):
        F.gradient_flow(net, (ds.X, ds.y), t_max=1.0)
    with pytest.raises(ValueError, match="homogeneous"):
        F.gradient_flow(M.ResidualNet(3, width=4), ds, t_max=1.0)
    with pytest.raises(ValueError, match="snapshots at the same flow times"):
        F.trajectory_distance(
            F.gradient_flow(net, ds, 1.0, n_snapshots=3),
            F.gradient_flow(net, ds, 1.0, n_snapshots=4),
        )


def test_divergence_names_step_and_step_size(tiny):
    ds, net = tiny
    bad = D.Dataset(ds.X.copy(), ds.y.copy(), "bad", "test")
    X = ds.X.copy()
    X[0, 0] = np.nan
    object.__setattr__(bad, "X", X)  # bypass the Dataset's own validation
    with pytest.raises(F.DivergenceError, match=r"step 1 .*step size h=.*NaN"):
        F.gradient_flow(net, bad, t_max=1.0)
