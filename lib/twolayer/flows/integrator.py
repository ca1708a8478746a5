"""Gradient flow proper: an adaptive integrator that reaches the late phase
(``t`` up to ``1e300``; with ``log10_t_max``, any horizon through
:mod:`.logtime`), where the papers' limits live."""

from __future__ import annotations

import copy
import math
import time
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from ..data import Dataset
from ..models import two_layer_output
from ..validation import positive
from .logtime import (
    LATE_FROM,
    LATE_METHODS,
    LateField,
    late_flow,
    log1p_to_log10,
    log10_to_log1p,
)
from .memo import remembered
from .steps import REDUCTIONS, live_columns, model_state
from .trajectory import DivergenceError, Trajectory

# ---------------------------------------------------------------------------
# Gradient flow proper: an adaptive integrator that reaches the late phase.
# ---------------------------------------------------------------------------
#
# The four papers' theorems are about gradient flow ``dθ/dt = -∇L(θ)`` and about
# ``t → ∞``. Late in training the loss is ~e^{-‖θ‖²γ}, its gradient underflows in
# float64 long before the direction θ/‖θ‖ has converged (the angle to the limit
# decays like 1/log t). The integrator below therefore never forms the raw
# gradient. For an L-homogeneous model (``q_i(cθ) = c^L q_i(θ)``) write
# ``θ = e^s φ̂`` with ``φ̂ = φ/‖φ‖`` (the norm of the stored ``φ`` is a pure gauge)
# and ``g_i = -ℓ'(Q_i) = σ(-Q_i)``, ``Q_i = e^{Ls} q_i(φ̂)``. Then exactly
#
#     dθ/dt = e^{(L-1)s} c Σ_i g_i ∇q_i(φ̂),      c = 1/n ("mean") or 1 ("sum"),
#
# and with the log-domain weights ``ω_i = exp(log g_i − max_j log g_j) ∈ (0, 1]``,
# ``G = c·max_j g_j`` and the new clock ``dτ = e^{(L-2)s} G dt``:
#
#     dφ/dτ  = ‖φ‖ P_φ̂ V,    ds/dτ = ⟨φ̂, V⟩ = L Σ ω_i q_i(φ̂),   V = Σ ω_i ∇q_i(φ̂),
#     d log(1+t)/dτ = exp(−(L−2)s − log c − max_j log g_j − log(1+t)).
#
# Every quantity is O(1) however small the loss: nothing underflows, and the
# flow time is carried as log(1+t). Between steps φ is renormalised to the unit
# sphere, which changes no θ (the gauge invariance tested in the unit tests).


def _exp(x: float) -> float:
    """``e^x`` of a float, ``inf`` beyond float64's range (as ``np.exp``, without its
    call cost)."""
    return math.exp(x) if x < 709.0 else math.inf


def _log_expit(x: np.ndarray) -> np.ndarray:
    """``log σ(x)``, stable for all x (scipy's ufunc, imported when first used)."""
    from scipy.special import log_expit

    return log_expit(x)


def _log_logistic_loss(Q: np.ndarray, reduction: str) -> float:
    """``log(Σ or mean softplus(−Q_i))`` without underflow (softplus(−Q) ≈ e^{−Q})."""
    # log softplus(-Q) = log log1p(e^{-Q}); for large Q it is
    # -Q + log1p(-e^{-Q}/2 ...) ≈ -Q
    with np.errstate(divide="ignore"):
        lsp = np.where(Q > 30.0, -Q, np.log(np.log1p(np.exp(-np.minimum(Q, 30.0)))))
    top = lsp.max()
    total = top + np.log(np.exp(lsp - top).sum())
    return float(total - (np.log(len(Q)) if reduction == "mean" else 0.0))


class MarginOracle:
    """``q(φ̂)`` and ``Σ ω_i ∇q_i(φ̂)`` for the trainable parameters of a model.

    A NumPy fast path for :class:`~twolayer.models.TwoLayerNet` (both layers, or
    the first one under a fixed second layer); a torch-autograd path for any
    other model that declares ``homogeneity`` (its degree in the trainable
    parameters).
    """

    def __init__(self, model: nn.Module, data: Dataset) -> None:
        from ..models import TwoLayerNet

        self.model = model
        self.names = [k for k, p in model.named_parameters() if p.requires_grad]
        if not self.names:
            raise ValueError("model has no trainable parameters")
        self.params = dict(model.named_parameters())
        self.shapes = [tuple(self.params[k].shape) for k in self.names]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.X = np.asarray(data.X, float)
        self.y = np.asarray(data.y, float)
        self.fast = isinstance(model, TwoLayerNet)
        if self.fast:
            self.alpha = model.alpha
            self.train_a = model.trains_second_layer
            self.L = 2 if self.train_a else 1
            self.a_fixed = (
                None if self.train_a else model.a.detach().cpu().numpy().astype(float)
            )
            self.m, self.d = self.shapes[0]
            # skip the input coordinates that are zero on every point (MNIST's
            # blank border): they add nothing to Z and receive a zero gradient
            live = live_columns(torch.tensor(self.X))
            self.live = None if live is None else live.numpy()
            self.X_live = (
                self.X if live is None else np.ascontiguousarray(self.X[:, self.live])
            )
        else:
            L = getattr(model, "homogeneity", None)
            if L is None or int(L) != L or L < 1:
                raise ValueError(
                    "gradient_flow needs a positively homogeneous model: set "
                    "model.homogeneity to its degree in the trainable parameters"
                )
            self.L = int(L)
            dtype = next(model.parameters()).dtype
            self.Xt = torch.tensor(self.X, dtype=dtype)
            self.yt = torch.tensor(self.y, dtype=dtype)

    def flatten(self) -> np.ndarray:
        return np.concatenate(
            [
                self.params[k].detach().cpu().numpy().astype(float).ravel()
                for k in self.names
            ]
        )

    def unflatten(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        out, i = {}, 0
        for k, shape, size in zip(self.names, self.shapes, self.sizes):
            out[k] = flat[i : i + size].reshape(shape)
            i += size
        return out

    def _Wa(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m, d = self.shapes[0]
        W = phi[: m * d].reshape(m, d)
        a = phi[m * d :] if self.train_a else self.a_fixed
        return W, a

    def margins(self, phi: np.ndarray) -> np.ndarray:
        """``q_i(φ) = y_i f_φ(x_i)``."""
        if self.fast:
            W, a = self._Wa(phi)
            return self.y * two_layer_output(W, a, self.X, self.alpha)
        with torch.no_grad():
            self._load(phi)
            return (self.yt * self.model(self.Xt)).cpu().numpy().astype(float)

    def weighted_gradient(
        self, phi: np.ndarray, omega: np.ndarray, q: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(q(φ), Σ_i ω_i ∇q_i(φ))`` by autograd (the path of models other than
        :class:`TwoLayerNet`, which use :meth:`two_layer_gradient`); if ``omega``
        is a callable it maps q to ω."""
        self._load(phi)
        for p in self.model.parameters():
            p.grad = None
        qt = self.yt * self.model(self.Xt)
        q = qt.detach().cpu().numpy().astype(float)
        w = omega(q) if callable(omega) else omega
        (qt @ torch.as_tensor(w, dtype=qt.dtype)).backward()
        grad = np.concatenate(
            [
                self.params[k].grad.detach().cpu().numpy().astype(float).ravel()
                for k in self.names
            ]
        )
        return q, grad

    def two_layer_gradient(
        self, phi: np.ndarray, scale: float
    ) -> tuple[np.ndarray, float]:
        """The fast path's ``(V, top)``: ``V = Σ_i ω_i ∇q_i(φ)`` with the log-domain
        weights ``ω_i = exp(log σ(−scale·q_i) − top)``,
        ``top = max_j log σ(−scale·q_j)`` (module comment above; ``scale = e^{Ls}``
        turns the margins of ``φ̂`` into those of ``θ``). The same quantity as
        :meth:`weighted_gradient` with that ``ω``, in a third of the NumPy calls: the
        integrator's steps are dominated by this call on the books' small networks."""

        def weigh(out: np.ndarray) -> tuple[np.ndarray, float]:
            lg = _log_expit(out * (self.y * -scale))  # log σ(−Q_i), Q_i = scale·q_i
            top = float(lg.max())
            return np.exp(lg - top), top

        return self.two_layer_weighted(phi, weigh)

    def two_layer_weighted(
        self, phi: np.ndarray, weigh: Callable[[np.ndarray], tuple[np.ndarray, Any]]
    ) -> tuple[np.ndarray, Any]:
        """``(Σ_i ω_i ∇q_i(φ), extra)`` on the fast path, with
        ``(ω, extra) = weigh(f_φ(X))`` (the outputs, not yet times ``y``): the one
        NumPy gradient of :meth:`two_layer_gradient` and of the late phase
        (:class:`~twolayer.flows.logtime.LateField`)."""
        md = self.m * self.d
        W = phi[:md].reshape(self.m, self.d)
        if self.live is not None:
            W = W[:, self.live]
        Z = self.X_live @ W.T
        slope = np.where(Z > 0, 1.0, self.alpha)
        act = Z * slope  # = leaky_relu(Z, α), bit for bit
        a = phi[md:] if self.train_a else self.a_fixed
        w, extra = weigh(act @ a)
        wy = w * self.y
        gW = (slope * np.multiply.outer(wy, a)).T @ self.X_live
        if self.live is not None:
            full = np.zeros((self.m, self.d))
            full[:, self.live] = gW
            gW = full
        if not self.train_a:
            return gW.ravel(), extra
        return np.concatenate((gW.ravel(), act.T @ wy)), extra

    def _load(self, phi: np.ndarray) -> None:
        with torch.no_grad():
            for k, v in self.unflatten(phi).items():
                self.params[k].copy_(torch.as_tensor(v))


class FlowField:
    """The right-hand side of the reparametrised flow (see the comment above)."""

    def __init__(self, oracle: MarginOracle, reduction: str) -> None:
        self.o = oracle
        self.P = sum(oracle.sizes)
        self.L = oracle.L
        self.log_c = -np.log(len(oracle.y)) if reduction == "mean" else 0.0
        self.evals = 0
        # L = 1: polar coordinates are singular at θ = 0, which the flow may
        # cross; integrate θ itself (it grows only like log t) with the same
        # log-domain weights and the clock dτ = G dt.
        self.cartesian = self.L == 1

    def theta(self, state: np.ndarray) -> np.ndarray:
        phi = state[: self.P]
        return (
            phi.copy()
            if self.cartesian
            else np.exp(state[self.P]) * phi / np.linalg.norm(phi)
        )

    def __call__(self, tau: float, state: np.ndarray) -> np.ndarray:
        self.evals += 1
        P = self.P
        lt = float(state[P + 1])
        if self.cartesian:
            V, top = self._gradient(state[:P], 1.0)
            out = np.zeros_like(state)
            out[:P] = V
            out[P + 1] = _exp(-self.log_c - top - lt)
            return self._finite(out)
        L, phi, s = self.L, state[:P], float(state[P])
        r = math.sqrt(phi @ phi)  # = np.linalg.norm(phi), without its checks
        phat = phi / r
        V, top = self._gradient(phat, _exp(L * s))
        radial = float(phat @ V)
        out = np.empty_like(state)
        out[:P] = (V - radial * phat) * r
        out[P] = radial
        out[P + 1] = _exp(-(L - 2) * s - self.log_c - top - lt)
        return self._finite(out)

    def _gradient(self, phi: np.ndarray, scale: float) -> tuple[np.ndarray, float]:
        """``(V, top)`` of :meth:`MarginOracle.two_layer_gradient`, for any model
        (other models through autograd, with the same log-domain weights)."""
        if self.o.fast:
            return self.o.two_layer_gradient(phi, scale)
        cache = {}

        def omega(q: np.ndarray) -> np.ndarray:
            lg = _log_expit(-scale * q)  # log σ(−Q_i)
            cache["top"] = float(lg.max())
            return np.exp(lg - cache["top"])

        _, V = self.o.weighted_gradient(phi, omega)
        return V, cache["top"]

    @staticmethod
    def _finite(out: np.ndarray) -> np.ndarray:
        if not math.isfinite(out.sum()) and not np.all(np.isfinite(out)):
            raise _NonFinite("the gradient-flow vector field is not finite")
        return out


class _NonFinite(FloatingPointError):
    """Raised inside the vector field; turned into a DivergenceError naming the step."""


def log_time_grid(t_max: float, n: int, t_min: float | None = None) -> np.ndarray:
    """``0`` followed by ``n − 1`` log-spaced flow times from ``t_min`` to ``t_max``."""
    t_max = positive(t_max, "t_max")
    if int(n) != n or n < 2:
        raise ValueError(f"n_snapshots must be an integer >= 2, got {n!r}")
    t_min = min(1e-2, t_max) if t_min is None else positive(t_min, "t_min")
    if t_min > t_max:
        raise ValueError(f"t_min={t_min:g} must be <= t_max={t_max:g}")
    if int(n) == 2:  # np.logspace with one point returns the start, not t_max
        return np.array([0.0, t_max])
    return np.concatenate(
        [[0.0], np.logspace(np.log10(t_min), np.log10(t_max), int(n) - 1)]
    )


def _power10(x: float) -> float:
    """``10^x``, ``inf`` beyond float64's range."""
    return 10.0**x if x < 308.0 else math.inf


def _number(value, name: str) -> float:
    """``value`` as a float; a one-line ValueError naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{name} must be a number, got NaN")
    return v


def _horizon(t_max, log10_t_max) -> tuple[float | None, float]:
    """The validated horizon: ``(t_max or None, log10 t_max)``."""
    if t_max is None and log10_t_max is None:
        raise ValueError("gradient_flow needs a horizon: give t_max or log10_t_max")
    if t_max is not None and log10_t_max is not None:
        raise ValueError(
            "give exactly one of t_max and log10_t_max, got both "
            f"(t_max={t_max!r}, log10_t_max={log10_t_max!r})"
        )
    if t_max is not None:
        v = _number(t_max, "t_max")
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(
                f"t_max must be a finite flow time > 0, got {t_max!r} "
                "(horizons beyond 1e308: log10_t_max)"
            )
        return v, math.log10(v)
    v = _number(log10_t_max, "log10_t_max")
    if not (v >= 0 and math.isfinite(v)):
        raise ValueError(
            f"log10_t_max must be finite and >= 0 (t >= 1), got {log10_t_max!r}"
        )
    return None, v


def _snapshot_grid(
    t_max: float | None,
    log10_max: float,
    n_snapshots: int,
    snapshot_times,
    snapshot_log10_times,
    t_min,
) -> tuple[np.ndarray, np.ndarray]:
    """The snapshot targets as ``(log(1+t), log10 t)``, both increasing."""
    if snapshot_times is not None and snapshot_log10_times is not None:
        raise ValueError("give snapshot_times or snapshot_log10_times, not both")
    if snapshot_log10_times is not None:
        try:
            x = np.unique(np.asarray(list(snapshot_log10_times), dtype=float))
        except (TypeError, ValueError) as exc:
            raise ValueError(
                "snapshot_log10_times must be numbers (log10 of flow times)"
            ) from exc
        if x.size == 0 or np.isnan(x).any() or np.isposinf(x).any():
            raise ValueError(
                "snapshot_log10_times must be non-empty, not NaN, not +inf "
                "(-inf is t = 0)"
            )
        if x[-1] > log10_max * (1 + 1e-15):
            raise ValueError(
                f"snapshot_log10_times go beyond the horizon log10 t = {log10_max:g}"
            )
        return log10_to_log1p(x), x
    if t_max is not None or snapshot_times is not None:
        if snapshot_times is None:
            grid = log_time_grid(t_max, n_snapshots, t_min)
        else:
            grid = np.unique(np.asarray(list(snapshot_times), dtype=float))
            if grid.size == 0 or not np.all(np.isfinite(grid)) or grid[0] < 0:
                raise ValueError(
                    "snapshot_times must be finite, non-negative flow times"
                )
            if t_max is not None and grid[-1] > t_max:
                raise ValueError(f"snapshot_times go beyond t_max={t_max:g}")
            if t_max is None and np.log10(grid[-1]) > log10_max:
                raise ValueError(f"snapshot_times go beyond log10_t_max={log10_max:g}")
        with np.errstate(divide="ignore"):
            return np.log1p(grid), np.log10(grid)
    # log10_t_max with the default grid: t = 0, then n − 1 points evenly spaced in
    # log10 t from log10 t_min (default min(-2, log10_t_max))
    if int(n_snapshots) != n_snapshots or n_snapshots < 2:
        raise ValueError(f"n_snapshots must be an integer >= 2, got {n_snapshots!r}")
    lo = (
        min(-2.0, log10_max)
        if t_min is None
        else math.log10(positive(_number(t_min, "t_min"), "t_min"))
    )
    if lo > log10_max:
        raise ValueError(f"t_min={t_min:g} must be <= 10^log10_t_max")
    x = np.concatenate(
        [[-np.inf], np.linspace(lo, log10_max, int(n_snapshots) - 1)]
        if n_snapshots > 2
        else [[-np.inf], [log10_max]]
    )
    return log10_to_log1p(x), x


@remembered(moves_model=False)
def gradient_flow(
    model: nn.Module,
    data: Dataset,
    t_max: float | None = None,
    *,
    log10_t_max: float | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    n_snapshots: int = 60,
    snapshot_times: Iterable[float] | None = None,
    snapshot_log10_times: Iterable[float] | None = None,
    t_min: float | None = None,
    callbacks: Mapping[str, Callable[[nn.Module], Any]] | None = None,
    reduction: str = "mean",
    method: str = "RK23",
    late_method: str = "Radau",
    max_steps: int = 1_000_000,
    progress: bool = False,
) -> Trajectory:
    """Integrate gradient flow ``dθ/dt = −∇L(θ)`` of the logistic loss up to flow time
    ``t_max``, or to ``t = 10^log10_t_max`` (any horizon, e.g. ``log10_t_max=1e6``).

    The flow of an L-homogeneous model (two-layer nets: L = 2; with a fixed
    second layer, L = 1 in the trained layer) is integrated in the coordinates
    ``θ = e^s φ̂`` with log-domain loss weights and the clock
    ``dτ = e^{(L−2)s}·c·max_i σ(−Q_i)·dt`` (module comment above), by an
    explicit embedded Runge–Kutta pair with error control (scipy's
    ``DOP853``/``RK45``/``RK23``). Nothing underflows, so the late phase
    ``t ≥ 1e8`` — where the papers' limits (Phuong & Lampert Thm 1, Lyu et al.
    Thm 4.3, Sarussi et al. Thm 6.1, Min et al. Thm 1) live — is reached in a
    few hundred to a few thousand steps. The model is not modified.

    With ``log10_t_max`` the run continues, once the loss is below
    ``e^{-20}`` (:data:`~twolayer.flows.logtime.LATE_FROM`), in the log-time clock
    ``λ = −log L`` of :mod:`twolayer.flows.logtime` (``θ`` Cartesian, ``log(1+t) −
    λ`` carried as a state, an implicit/stiff solver ``late_method``): ``t`` is
    never formed, and ``t = 10^(10^6)`` takes seconds on the books' small nets.

    Parameters
    ----------
    model
        A :class:`~twolayer.models.TwoLayerNet` (fast NumPy path) or any torch
        module with attribute ``homogeneity`` (degree in its trainable parameters).
    data
        The training set.
    t_max
        Final flow time (may be astronomically large, e.g. ``1e300``); integrated
        exactly as before ``log10_t_max`` existed.
    log10_t_max
        Instead of ``t_max``: ``log10`` of the final flow time (finite, ``>= 0``).
        Exactly one of ``t_max`` and ``log10_t_max``.
    rtol, atol
        Local error tolerances of the integrator on ``(φ, s, log(1+t))`` (late
        phase: on ``(θ, log(1+t) − λ)``).
    n_snapshots
        Number of snapshots on the default grid (0, then log-spaced from
        ``t_min`` (default ``min(1e-2, t_max)``) to ``t_max``; with
        ``log10_t_max``: evenly spaced in ``log10 t`` from ``log10 t_min`` to it).
    snapshot_times
        Explicit flow times to snapshot at (e.g. a GD run's ``times``), instead.
    snapshot_log10_times
        Explicit ``log10`` flow times to snapshot at (``-inf`` is ``t = 0``),
        instead; e.g. ``[300, 1000, 1e4, 1e5, 1e6]`` for a limit's trend.
    callbacks
        ``name -> fn(model)`` evaluated at every snapshot (on a copy of ``model``
        holding the snapshot parameters).
    reduction
        ``"mean"`` or ``"sum"`` of the per-example losses.
    method
        scipy Runge–Kutta pair; the low-order ``"RK23"`` (default) copes best
        with the kinks of ReLU (the field is only piecewise smooth).
    late_method
        With ``log10_t_max``: the late phase's implicit solver, ``"Radau"``
        (default; the only one of the three that keeps long steps through
        ``log10 t ≈ 10^4 … 10^6`` on the books' two-neuron flows), ``"LSODA"`` or
        ``"BDF"``.
    max_steps
        Safety cap on integrator steps (error when exceeded).
    progress
        Show a progress bar over log(1 + t).

    Returns
    -------
    Trajectory
        ``times`` are flow times (``inf`` beyond float64's range),
        ``log10_times`` (``records["log10_t"]``, also the key ``"log10_t"`` of
        every snapshot) their ``log10`` (``-inf`` at ``t = 0``), ``steps`` the
        integrator steps taken, ``loss`` the loss (may underflow to 0;
        ``records["log_loss"]`` does not), ``records["log1p_time"]`` the
        ``log(1+t)`` and ``records["log_scale"]`` the ``s = log‖θ‖`` of each
        snapshot. With ``log10_t_max``, ``config`` also holds ``late_steps``,
        ``late_from_log10_t`` (where the late phase began; ``None``: not reached)
        and ``clock_drift`` (the largest ``|−log L(θ) − λ|`` at a snapshot: the
        uncertainty of a late snapshot's ``log t``).

    Raises
    ------
    ValueError
        Bad arguments (both or neither horizon, negative, NaN, ...), before any
        work; the message names the argument.
    DivergenceError
        If the vector field becomes NaN/inf or the step size collapses; the
        message names the step and the step size.
    """
    from scipy import integrate

    t_max, log10_max = _horizon(t_max, log10_t_max)
    logtime = log10_t_max is not None
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not isinstance(data, Dataset):
        raise ValueError(
            f"data must be a twolayer.data.Dataset, got {type(data).__name__}"
        )
    methods = {
        "RK45": integrate.RK45,
        "RK23": integrate.RK23,
        "DOP853": integrate.DOP853,
    }
    if method not in methods:
        raise ValueError(f"method must be one of {sorted(methods)}, got {method!r}")
    if late_method not in LATE_METHODS:
        raise ValueError(
            f"late_method must be one of {list(LATE_METHODS)}, got {late_method!r}"
        )
    rtol, atol = positive(rtol, "rtol"), positive(atol, "atol")
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    targets, labels = _snapshot_grid(
        t_max, log10_max, n_snapshots, snapshot_times, snapshot_log10_times, t_min
    )

    oracle = MarginOracle(model, data)
    field_ = FlowField(oracle, reduction)
    P, L = field_.P, field_.L
    theta0 = oracle.flatten()
    norm0 = np.linalg.norm(theta0)
    if not np.isfinite(norm0) or norm0 == 0:
        raise ValueError("model parameters must be finite and not all zero")
    state = (
        np.concatenate([theta0, [0.0, 0.0]])
        if field_.cartesian
        else np.concatenate([theta0 / norm0, [np.log(norm0), 0.0]])
    )
    callbacks = dict(callbacks or {})
    probe = copy.deepcopy(model)
    config = dict(
        optimizer="gradient_flow",
        method=method,
        rtol=rtol,
        atol=atol,
        t_max=t_max if t_max is not None else _power10(log10_max),
        reduction=reduction,
        homogeneity=L,
        n=data.n,
    )
    if logtime:
        config.update(log10_t_max=log10_max, late_method=late_method)
    traj = Trajectory(
        np.empty(0, int),
        np.empty(0),
        [],
        np.empty(0),
        records={
            "log_loss": [],
            "log1p_time": [],
            "log_scale": [],
            "log10_t": [],
            **{k: [] for k in callbacks},
        },
        config=config,
    )
    steps_at, times, losses = [], [], []
    named = dict(probe.named_parameters())

    def snapshot_theta(theta: np.ndarray, lt: float, step: int) -> None:
        label = float(labels[len(traj.snapshots)])
        s = float(np.log(np.linalg.norm(theta)))
        params = oracle.unflatten(theta)
        with torch.no_grad():
            for k, v in params.items():
                named[k].copy_(torch.as_tensor(v))
        Q = oracle.margins(theta)
        log_loss = _log_logistic_loss(Q, reduction)
        snap = model_state(probe)
        snap["log10_t"] = label
        traj.snapshots.append(snap)
        for name, fn in callbacks.items():
            traj.records[name].append(fn(probe))
        traj.records["log_loss"].append(log_loss)
        traj.records["log1p_time"].append(lt)
        traj.records["log_scale"].append(s)
        traj.records["log10_t"].append(label)
        steps_at.append(step)
        with np.errstate(over="ignore"):
            times.append(float(np.expm1(lt)))
        losses.append(float(np.exp(log_loss)))

    def snapshot(st: np.ndarray, step: int) -> None:
        snapshot_theta(field_.theta(st), float(st[P + 1]), step)

    def late(st: np.ndarray) -> bool:
        return -_log_logistic_loss(oracle.margins(field_.theta(st)), reduction) >= (
            LATE_FROM
        )

    try:  # BLAS threads follow torch's setting (configure_threads); 2 cores are shared
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=torch.get_num_threads())
    except ImportError:  # pragma: no cover
        import contextlib

        limits = contextlib.nullcontext()
    start = time.perf_counter()
    with limits:
        steps, st, k = _integrate(
            solver_cls=methods[method],
            field_=field_,
            state=state,
            targets=targets,
            snapshot=snapshot,
            rtol=rtol,
            atol=atol,
            max_steps=max_steps,
            progress=progress,
            traj=traj,
            stop=late if logtime else None,
        )
        if logtime:
            late_steps, drift, from_ = 0, 0.0, None
            if st is not None:
                lt = float(st[P + 1])
                from_ = float(log1p_to_log10(lt))
                lfield = LateField(oracle)
                bar = tqdm(
                    total=float(targets[-1]),
                    initial=min(lt, float(targets[-1])),
                    disable=not progress,
                    desc="gradient flow (late)",
                    unit="log t",
                    mininterval=1.0,
                )
                late_steps, drift = late_flow(
                    lfield,
                    field_.theta(st),
                    lt,
                    reduction,
                    targets[k:],
                    snapshot_theta,
                    late_method,
                    rtol,
                    atol,
                    max_steps,
                    steps,
                    bar=bar,
                )
                bar.close()
                field_.evals += lfield.evals
            steps += late_steps
            traj.config.update(
                late_steps=late_steps, late_from_log10_t=from_, clock_drift=drift
            )
    traj.wall_time = time.perf_counter() - start
    traj.steps, traj.times, traj.loss = (
        np.array(steps_at),
        np.array(times),
        np.array(losses),
    )
    traj.step_loss = np.empty(0)
    traj.config["steps"] = steps
    traj.config["evaluations"] = field_.evals
    return traj


def _integrate(
    solver_cls,
    field_: "FlowField",
    state: np.ndarray,
    targets: np.ndarray,
    snapshot: Callable,
    rtol: float,
    atol: float,
    max_steps: int,
    progress: bool,
    traj: Trajectory,
    stop: Callable[[np.ndarray], bool] | None = None,
) -> tuple[int, np.ndarray | None, int]:
    """The stepping loop of :func:`gradient_flow`; returns the number of steps,
    and, if ``stop(state)`` became true at the end of a step before the last
    target, that state and the index of the first target not yet snapshotted
    (else ``None`` and ``len(targets)``)."""
    P = field_.P
    start = time.perf_counter()
    k = 0
    while k < len(targets) and targets[k] <= 0.0:
        snapshot(state, 0)
        k += 1
    try:
        solver = solver_cls(field_, 0.0, state, np.inf, rtol=rtol, atol=atol)
    except _NonFinite as exc:
        raise DivergenceError(
            f"gradient_flow: {exc} at step 1 (clock τ=0, step size h=not yet "
            "chosen, t=0): check the data and the parameters for NaN/inf"
        ) from exc
    bar = tqdm(
        total=float(targets[-1]),
        disable=not progress,
        desc="gradient flow",
        unit="log t",
        mininterval=1.0,
    )
    steps = 0
    while k < len(targets):
        if steps >= max_steps:
            raise DivergenceError(
                f"gradient_flow: {max_steps} steps reached at "
                f"log(1+t)={solver.y[P + 1]:.4g} < {targets[-1]:.4g}; "
                "raise max_steps or loosen rtol/atol"
            )
        h = solver.step_size
        try:
            msg = solver.step()
        except _NonFinite as exc:
            raise DivergenceError(
                f"gradient_flow: {exc} at step {steps + 1} (clock τ={solver.t:.6g}, "
                f"step size h={h:g}, log(1+t)={solver.y[P + 1]:.4g})"
            ) from exc
        steps += 1
        if msg is not None or not np.all(np.isfinite(solver.y)):
            h = solver.step_size if h is None else h
            raise DivergenceError(
                f"gradient_flow: integration failed at step {steps} "
                f"(clock τ={solver.t:.6g}, step size h={h:g}, "
                f"log(1+t)={solver.y[P + 1]:.4g}): {msg or 'non-finite state'}"
            )
        if solver.y[P + 1] >= targets[k]:
            dense = solver.dense_output()
            while k < len(targets) and solver.y[P + 1] >= targets[k]:
                tau = _crossing(dense, solver.t_old, solver.t, P + 1, targets[k])
                snapshot(dense(tau), steps)
                k += 1
        # gauge: renormalise φ to the unit sphere (θ unchanged; the stored
        # derivative of φ is 1-homogeneous in φ, rescale it too)
        if not field_.cartesian:
            phi = solver.y[:P]
            r = math.sqrt(
                phi @ phi
            )  # = np.linalg.norm(phi), bit for bit, without its checks
            solver.y[:P] /= r
            if hasattr(solver, "f"):
                solver.f[:P] /= r
        bar.update(float(min(solver.y[P + 1], targets[-1])) - bar.n)
        if stop is not None and k < len(targets) and stop(solver.y):
            bar.close()
            return steps, solver.y.copy(), k
    bar.close()
    traj.wall_time = time.perf_counter() - start
    return steps, None, k


def _crossing(dense, t0: float, t1: float, index: int, target: float) -> float:
    """The clock value τ in [t0, t1] where component ``index`` of the dense
    output equals ``target`` (it is increasing: log(1+t) grows)."""
    from scipy.optimize import brentq

    f = lambda tau: float(dense(tau)[index]) - target  # noqa: E731
    lo, hi = f(t0), f(t1)
    if lo >= 0:
        return t0
    if hi <= 0:
        return t1
    return brentq(f, t0, t1, xtol=1e-14 * max(1.0, abs(t1)), rtol=1e-12)
