"""Gradient flow to any horizon (``gradient_flow(..., log10_t_max=...)``): bad
input, agreement with the ``t_max`` integrator up to 1e300, an independent solver
of the late flow, and laws known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp
from scipy.special import expi

from twolayer import flows as F
from twolayer import models as M
from twolayer.data import Dataset

LN10 = math.log(10.0)


def _ds(X, y, name="toy") -> Dataset:
    return Dataset(np.asarray(X, float), np.asarray(y, float), name, "test")


@pytest.fixture(scope="module")
def small():
    """A two-layer net (both layers trained, leaky α = ½) of width 3 on 8 points of
    R², symmetric (x, −x with opposite labels), linearly separable."""
    rng = np.random.default_rng(3)
    Xp = rng.normal([1.0, 0.3], 0.4, size=(4, 2))
    X = np.vstack([Xp, -Xp])
    y = np.r_[np.ones(4), -np.ones(4)]
    ds = _ds(X / np.linalg.norm(X, axis=1).max(), y, "symmetric 8 points")
    net = M.TwoLayerNet(2, 3, alpha=0.5, init="gaussian", init_scale=0.3, seed=1)
    return ds, net


def _direction(snap) -> np.ndarray:
    v = np.concatenate([np.ravel(snap["W"]), np.ravel(snap["a"])])
    return v / np.linalg.norm(v)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(t_max=1e10, log10_t_max=10.0), "t_max"),
        (dict(), "log10_t_max"),
        (dict(t_max=-1.0), "t_max"),
        (dict(t_max=float("nan")), "t_max"),
        (dict(t_max=float("inf")), "t_max"),
        (dict(t_max=True), "t_max"),
        (dict(log10_t_max=-3.0), "log10_t_max"),
        (dict(log10_t_max=float("nan")), "log10_t_max"),
        (dict(log10_t_max=float("inf")), "log10_t_max"),
        (dict(log10_t_max="1e6"), "log10_t_max"),
        (dict(log10_t_max=10.0, snapshot_log10_times=[1.0, 11.0]), "snapshot_log10"),
        (dict(log10_t_max=10.0, snapshot_log10_times=[1.0, np.nan]), "snapshot_log10"),
        (dict(log10_t_max=10.0, snapshot_log10_times=[1], snapshot_times=[1]), "snap"),
        (dict(log10_t_max=10.0, late_method="RK45"), "late_method"),
        (dict(log10_t_max=10.0, max_steps=0), "max_steps"),
    ],
)
def test_bad_input_is_one_line_value_error_before_any_work(
    small, monkeypatch, kwargs, name
):
    ds, net = small
    from twolayer.flows import integrator

    def no_work(*a, **k):  # the integrator must not have started
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(integrator, "MarginOracle", no_work)
    with pytest.raises(ValueError) as err:
        F.gradient_flow(net, ds, **kwargs)
    msg = str(err.value)
    assert name in msg and "\n" not in msg


def test_positional_t_max_still_works(small):
    ds, net = small
    run = F.gradient_flow(net, ds, 10.0, n_snapshots=3)
    assert set(run.snapshots[-1]) >= {"W", "a", "log10_t"}
    assert run.times[-1] == pytest.approx(10.0)
    np.testing.assert_allclose(run.log10_times[1:], np.log10(run.times[1:]))
    assert run.log10_times[0] == -np.inf and run.snapshots[-1]["log10_t"] == 1.0
    assert "log10_t_max" not in run.config


# ---------------------------------------------------- the t_max integrator


def test_agrees_with_the_t_max_integrator_up_to_1e300(small):
    """The late phase (clock −log L, Radau) continues the early one (RK23 in the
    clock τ): at t = 1e100, 1e200, 1e300 both give the same direction, scale and
    loss to the integrators' tolerances, with both runs at rtol = 1e-8."""
    ds, net = small
    kw = dict(rtol=1e-8, atol=1e-11)
    old = F.gradient_flow(net, ds, 1e300, snapshot_times=[1e100, 1e200, 1e300], **kw)
    new = F.gradient_flow(
        net, ds, log10_t_max=300, snapshot_log10_times=[100, 200, 300], **kw
    )
    assert new.config["late_from_log10_t"] < 100  # the late phase did the work
    assert new.config["late_steps"] > 0
    np.testing.assert_array_equal(new.log10_times, [100.0, 200.0, 300.0])
    np.testing.assert_allclose(new.times, old.times, rtol=1e-9)
    for a, b in zip(old.snapshots, new.snapshots):
        assert np.linalg.norm(_direction(a) - _direction(b)) < 1e-6
    np.testing.assert_allclose(
        new.record("log_scale"), old.record("log_scale"), rtol=1e-7
    )
    np.testing.assert_allclose(
        new.record("log_loss"), old.record("log_loss"), rtol=1e-6
    )
    # and a log10_t_max run that never reaches the late phase is the t_max run
    early = F.gradient_flow(net, ds, log10_t_max=0.5, n_snapshots=4)
    same = F.gradient_flow(net, ds, 10**0.5, snapshot_times=early.times)
    for a, b in zip(early.snapshots, same.snapshots):
        np.testing.assert_allclose(_direction(a), _direction(b), rtol=1e-9, atol=1e-12)
    assert early.config["late_from_log10_t"] is None


# -------------------------------------------------- an independent solver


def _late_rhs_torch(X, y, alpha):
    """The late flow's right-hand side, written from its definition with torch
    autograd: λ = −log L(θ), dθ/dλ = −∇log L/‖∇log L‖², d(log(1+t) − λ)/dλ =
    1/(‖∇log L‖² e^{log(1+t) − λ}) − 1. θ = (W (m, d), a (m,))."""
    Xt, yt = torch.tensor(X), torch.tensor(y)
    m = None

    def log_loss(theta):
        nonlocal m
        d = Xt.shape[1]
        m = theta.numel() // (d + 1)
        W, a = theta[: m * d].reshape(m, d), theta[m * d :]
        Q = yt * (torch.nn.functional.leaky_relu(Xt @ W.T, alpha) @ a)
        # log softplus(−Q): log log1p(e^{−Q}), = −Q − e^{−Q}/2 + … for large Q
        lsp = torch.where(
            Q > 30,
            -Q,
            torch.log(torch.nn.functional.softplus(-torch.clamp(Q, max=30.0))),
        )
        return torch.logsumexp(lsp, 0) - math.log(len(y))

    def rhs(lam, state):
        theta = torch.tensor(state[:-1], requires_grad=True)
        (g,) = torch.autograd.grad(log_loss(theta), theta)
        g = g.numpy()
        n2 = g @ g
        return np.r_[-g / n2, math.exp(min(-state[-1] - math.log(n2), 700)) - 1]

    return rhs, log_loss


def test_late_flow_matches_an_independent_radau_solver(small):
    """From the engine's state at t = 1e30, the test's own late flow (torch
    gradient, scipy Radau, the horizon found by an event) reaches the same
    direction at t = 10^1000 and 10^(10^4) as the engine."""
    ds, net = small
    run = F.gradient_flow(
        net, ds, log10_t_max=1e4, snapshot_log10_times=[30, 1000, 1e4], rtol=1e-8
    )
    rhs, log_loss = _late_rhs_torch(ds.X, ds.y, 0.5)
    start = run.snapshots[0]
    theta0 = np.r_[start["W"].ravel(), start["a"]]
    lam0 = -float(log_loss(torch.tensor(theta0)))
    state = np.r_[theta0, run.record("log1p_time")[0] - lam0]
    for k, x in enumerate([1000, 1e4], start=1):
        target = x * LN10  # log(1+t) at t = 10^x (1 is negligible)

        def reach(lam, st, target=target):
            return lam + st[-1] - target

        reach.terminal = True
        sol = solve_ivp(
            rhs,
            (lam0, 10 * target),
            state,
            method="Radau",
            rtol=1e-8,
            atol=1e-11,
            events=reach,
        )
        assert sol.status == 1, sol.message
        lam0, state = float(sol.t_events[0][0]), sol.y_events[0][0]
        theta = state[:-1]
        mine = _direction(run.snapshots[k])
        assert np.linalg.norm(theta / np.linalg.norm(theta) - mine) < 1e-6
        # the scale agrees too (‖θ‖² ~ log t): 1e-7 of it
        np.testing.assert_allclose(
            np.linalg.norm(theta),
            np.exp(run.record("log_scale")[k]),
            rtol=1e-7,
        )


# ------------------------------------------------------ closed-form laws


class _Linear(torch.nn.Module):
    """``f(x) = ⟨w, x⟩``: 1-homogeneous (the torch-autograd path)."""

    homogeneity = 1

    def __init__(self, w):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(w, dtype=torch.float64))

    def forward(self, X):
        return X @ self.w


def _u_linear(x: float, c: float) -> float:
    """``u`` with ``u + e^u = t + c`` at ``t = 10^x``, in log space:
    ``u = log t + log(1 + (c − u)/t)``."""
    lt = x * LN10
    u = lt
    for _ in range(60):
        u = lt + math.log1p((c - u) * math.exp(-lt)) if lt < 700 else lt
    return u


def test_linear_two_points_closed_form_to_a_million_decades():
    """Logistic flow of ``⟨w, x⟩`` on x = ±e1 (labels ±1), mean loss: the margin
    ``u = w1`` solves ``u + e^u = t + u0 + e^{u0}``, ``w2`` never moves, so the
    direction error is ``atan(w2/u) ≈ w2/log t`` — checked at t = 10^3 … 10^(10^6)
    to 1e-7 (the rest of log t)."""
    ds = _ds([[1.0, 0.0], [-1.0, 0.0]], [1.0, -1.0], "two points")
    u0, v0 = 0.2, 1.5
    xs = [3, 30, 300, 3000, 1e5, 1e6]
    run = F.gradient_flow(
        _Linear([u0, v0]), ds, log10_t_max=1e6, snapshot_log10_times=xs, rtol=1e-8
    )
    c = u0 + math.exp(u0)
    for snap, x in zip(run.snapshots, xs):
        u, v = snap["w"]
        assert u == pytest.approx(_u_linear(x, c), rel=1e-7)
        assert v == pytest.approx(v0, abs=1e-9)
        angle = math.atan2(v, u)
        assert angle == pytest.approx(math.atan2(v0, _u_linear(x, c)), rel=1e-6)
    # the direction error decays like 1/log t: angle · log t → v0
    assert math.atan2(*run.snapshots[-1]["w"][::-1]) * 1e6 * LN10 == pytest.approx(
        v0, rel=1e-5
    )


def _z_neuron(x: float, c: float) -> float:
    """``z = a·w`` of one balanced neuron on one point at ``t = 10^x``: ``ln z +
    Ei(z) = 2t + c``, in log space (``Ei(z) = e^z/z·(1 + 1/z + 2/z² + …)``)."""
    rhs = math.log(2.0) + x * LN10  # log(2t + c − ln z), t ≫ c
    z = rhs
    for _ in range(100):
        series = math.log1p(1 / z + 2 / z**2 + 6 / z**3 + 24 / z**4 + 120 / z**5)
        z = rhs + math.log(z) - series
    return z


def test_one_neuron_closed_form_and_balance():
    """One ReLU neuron, both layers trained, on x = 1, y = +1 from a balanced start
    a = w: z = a·w solves ``ln z + Ei(z) = 2t + const`` (t = 10^1000 … 10^(10^6)),
    and ``a² − w²`` stays 0 (gradient flow conserves it neuron by neuron)."""
    ds = _ds([[1.0]], [1.0], "one point")
    r0 = 0.5
    net = M.TwoLayerNet.from_weights([[r0]], [r0])
    xs = [1000, 1e4, 1e5, 1e6]
    run = F.gradient_flow(net, ds, log10_t_max=1e6, snapshot_log10_times=xs, rtol=1e-9)
    z0 = r0 * r0
    c = math.log(z0) + float(expi(z0))
    for snap, x in zip(run.snapshots, xs):
        w, a = float(snap["W"][0, 0]), float(snap["a"][0])
        assert w * a == pytest.approx(_z_neuron(x, c), rel=1e-7)
        assert abs(a * a - w * w) <= 1e-7 * (a * a + w * w)


def test_balance_is_conserved_per_neuron_to_a_million_decades(small):
    """``a_k² − ‖w_k‖²`` is constant along gradient flow for every neuron (ReLU
    homogeneity); at t = 10^(10^6) it still equals its initial value to 1e-5 of
    ``‖θ‖²``, which has grown by a factor ~10^6."""
    ds, net = small
    run = F.gradient_flow(
        net, ds, log10_t_max=1e6, snapshot_log10_times=[-np.inf, 1e6], rtol=1e-7
    )
    bal = [s["a"] ** 2 - (s["W"] ** 2).sum(1) for s in run.snapshots]
    norm2 = (run.snapshots[-1]["a"] ** 2).sum() + (run.snapshots[-1]["W"] ** 2).sum()
    assert norm2 > 1e5
    assert np.abs(bal[1] - bal[0]).max() <= 1e-5 * norm2
    assert run.config["clock_drift"] < 1.0


# ------------------------------------------------ helpers for limit claims


def test_horizon_grid_and_trend():
    np.testing.assert_allclose(
        F.horizon_grid(300, 1e6), [300, 3000, 3e4, 3e5, 1e6], rtol=1e-12
    )
    np.testing.assert_allclose(F.horizon_grid(300, 1000), [300, 1000])
    with pytest.raises(ValueError, match="first"):
        F.horizon_grid(-1, 10)
    ds = _ds([[1.0, 0.0], [-1.0, 0.0]], [1.0, -1.0], "two points")
    xs, angle = F.trend(
        _Linear([0.2, 1.5]),
        ds,
        [30, 300, 3000],
        lambda s: math.atan2(s["w"][1], s["w"][0]),
        rtol=1e-8,
    )
    np.testing.assert_array_equal(xs, [30, 300, 3000])
    c = 0.2 + math.exp(0.2)
    expected = [math.atan2(1.5, _u_linear(x, c)) for x in xs]
    np.testing.assert_allclose(angle, expected, rtol=1e-6)
    with pytest.raises(ValueError, match="log10_ts"):
        F.trend(_Linear([0.2, 1.5]), ds, [np.nan], lambda s: 0.0)


def test_fixed_second_layer_agrees_at_1e300_and_clusters_like_1_over_log_t():
    """L = 1 (Sarussi et al.'s fixed ±1 second layer, the Cartesian early phase):
    the log-time run agrees with the ``t_max`` run at 1e300, and the clustering
    ratio of Thm 6.1 then falls like c/log t (ratio · log10 t constant to
    0.5 % from 10^300 to 10^(10^6))."""
    from twolayer import data as D
    from twolayer.theory import sarussi2021

    ds = D.antipodal_gaussians(60, 10, mean=1.0, std=0.5, seed=0)
    net = M.TwoLayerNet.fixed_second_layer(10, 5, alpha=0.2, init_scale=1e-3, seed=0)

    def ratio(s):
        return sarussi2021.clustering_ratio(*sarussi2021.split_neurons(s["W"], 5))

    kw = dict(rtol=1e-7, atol=1e-10)
    old = F.gradient_flow(net, ds, 1e300, n_snapshots=2, **kw)
    xs, r = F.trend(net, ds, [300, 3000, 3e4, 1e6], ratio, **kw)
    assert r[0] == pytest.approx(ratio(old.final), rel=1e-5)
    c = r * xs
    assert np.ptp(c) <= 5e-3 * c.mean() and np.all(np.diff(r) < 0)
