"""Gradient flow to any horizon: the late phase in a log-time clock.

:func:`~twolayer.flows.gradient_flow` with ``log10_t_max`` (instead of ``t_max``)
integrates in two phases. The early phase (loss above ``e^{-LATE_FROM}``) is the
integrator of :mod:`.integrator` (clock ``τ``, coordinates ``θ = e^s φ̂``). The
late phase uses the negative log loss as its clock and never forms ``t``:

    λ = −log L(θ),   U = Σ_i σ(−Q_i) ∇Q_i / Σ_j softplus(−Q_j)   (= −∇log L),
    dθ/dλ = U / ‖U‖²,
    ζ = log(1+t) − λ,   dζ/dλ = exp(−ζ − 2 log‖U‖) − 1.

(``dλ/dt = ‖∇L‖²/L = L‖U‖²``, hence ``dθ/dλ = −∇L/(L‖U‖²)`` and
``d e^{log(1+t)}/dλ = e^λ/‖U‖²``.) The weights ``σ(−Q_i)/Σ softplus(−Q_j)`` are
formed from log σ and log softplus, so nothing underflows at margins of 10^6;
``λ ≈ log t`` up to ``O(log log t)``, so a horizon ``t = 10^(10^6)`` is
``λ ≈ 2.3·10^6``, an ordinary float; ``ζ`` is ``O(log log t)``. ``θ`` is kept in
Cartesian coordinates (``‖θ‖ ~ (log t)^{1/L}`` stays small). The late flow is
stiff (the margins of the support points equalise at a rate ``~1`` per unit of
``λ`` while the direction moves on a scale ``~λ``), so it is integrated by an
implicit method (scipy's ``Radau`` by default): its steps
grow with ``λ``, a few hundred steps per horizon decade of ``log t``.

:func:`late_flow` is the stepping loop; :func:`log10_to_log1p` /
:func:`log1p_to_log10` convert horizons between ``log10 t`` and the
``log(1+t)`` the integrators carry.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

LATE_FROM = 20.0
"""The late phase starts once ``−log L ≥ LATE_FROM`` (loss below ``2·10^-9``)."""

LATE_METHODS = ("Radau", "LSODA", "BDF")


def log10_to_log1p(x: np.ndarray | float) -> np.ndarray:
    """``log(1 + 10^x)`` without forming ``10^x`` (``x = −inf`` is ``t = 0``)."""
    return np.logaddexp(0.0, np.asarray(x, float) * math.log(10.0))


def log1p_to_log10(lt: np.ndarray | float) -> np.ndarray:
    """``log10 t`` from ``log(1+t)`` without forming ``t`` (``−inf`` at ``t = 0``)."""
    lt = np.asarray(lt, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (lt + np.log(-np.expm1(-lt))) / math.log(10.0)
    return np.where(lt > 0, out, -np.inf)


def log_softplus_neg(Q: np.ndarray) -> np.ndarray:
    """``log softplus(−Q) = log log(1 + e^{−Q})`` for any ``Q`` (``≈ −Q`` if large)."""
    Q = np.asarray(Q, float)
    small = np.log(np.logaddexp(0.0, -np.minimum(Q, 35.0)))
    with np.errstate(under="ignore"):
        large = -Q - 0.5 * np.exp(-np.maximum(Q, 35.0))
    return np.where(Q > 35.0, large, small)


def log_loss(Q: np.ndarray, reduction: str) -> float:
    """``log L`` of margins ``Q`` (mean or sum of ``softplus(−Q_i)``), in log space."""
    lsp = log_softplus_neg(Q)
    top = float(lsp.max())
    total = top + math.log(float(np.exp(lsp - top).sum()))
    return total - (math.log(len(Q)) if reduction == "mean" else 0.0)


class LateField:
    """Right-hand side of the late flow in the clock ``λ`` (module docstring) on
    the state ``(θ, ζ)``; ``oracle`` is the integrator's :class:`MarginOracle`."""

    def __init__(self, oracle) -> None:
        from scipy.special import log_expit

        self.o = oracle
        self.P = sum(oracle.sizes)
        self.evals = 0
        self._log_expit = log_expit

    def ascent(self, theta: np.ndarray) -> np.ndarray:
        """``U = −∇ log L(θ)`` (the reduction's constant cancels)."""
        o = self.o
        if o.fast:
            return o.two_layer_weighted(
                theta, lambda out: (self._weights(out * o.y), None)
            )[0]
        _, U = o.weighted_gradient(theta, self._weights)
        return U

    def _weights(self, Q: np.ndarray) -> np.ndarray:
        """``σ(−Q_i) / Σ_j softplus(−Q_j)``, from logs."""
        lsp = log_softplus_neg(Q)
        top = float(lsp.max())
        lse = top + math.log(float(np.exp(lsp - top).sum()))
        return np.exp(self._log_expit(-Q) - lse)

    def __call__(self, lam: float, state: np.ndarray) -> np.ndarray:
        self.evals += 1
        P = self.P
        U = self.ascent(state[:P])
        n2 = float(U @ U)
        out = np.empty_like(state)
        if not (n2 > 0.0) or not math.isfinite(n2):
            out[:] = np.nan
            return out
        out[:P] = U / n2
        # clipped: an implicit method's trial state may be far off; the exponent
        # is O(1) on the flow itself
        out[P] = math.exp(min(-float(state[P]) - math.log(n2), 700.0)) - 1.0
        return out


def late_flow(
    field_: LateField,
    theta: np.ndarray,
    log1p_t: float,
    reduction: str,
    targets: np.ndarray,
    snapshot: Callable[[np.ndarray, float, int], None],
    method: str,
    rtol: float,
    atol: float,
    max_steps: int,
    steps_before: int,
    bar=None,
) -> tuple[int, float]:
    """Integrate the late flow from ``θ`` at ``log(1+t) = log1p_t`` until every
    ``log(1+t)`` target (increasing) is passed, calling
    ``snapshot(θ, log(1+t), steps)`` at each. Returns the steps taken and the
    largest drift ``|−log L(θ) − λ|`` seen at a snapshot (the clock's own error;
    ``log t`` of a snapshot is uncertain by about this much)."""
    from scipy import integrate

    from .trajectory import DivergenceError

    solvers = {"LSODA": integrate.LSODA, "Radau": integrate.Radau, "BDF": integrate.BDF}
    P = field_.P
    lam0 = -log_loss(field_.o.margins(theta), reduction)
    state = np.concatenate([theta, [log1p_t - lam0]])
    k, steps, drift = 0, 0, 0.0

    def take(st: np.ndarray, lam: float) -> None:
        nonlocal drift
        drift = max(drift, abs(-log_loss(field_.o.margins(st[:P]), reduction) - lam))
        snapshot(st[:P].copy(), lam + float(st[P]), steps_before + steps)

    while k < len(targets) and targets[k] <= log1p_t:
        take(state, lam0)
        k += 1
    if k == len(targets):
        return 0, drift
    solver = solvers[method](field_, lam0, state, np.inf, rtol=rtol, atol=atol)
    while k < len(targets):
        if steps_before + steps >= max_steps:
            raise DivergenceError(
                f"gradient_flow: {max_steps} steps reached at "
                f"log10 t={float(log1p_to_log10(solver.t + solver.y[P])):.6g}; "
                "raise max_steps or loosen rtol/atol"
            )
        msg = solver.step()
        steps += 1
        y = solver.y
        if msg is not None or not np.all(np.isfinite(y)):
            raise DivergenceError(
                f"gradient_flow: late-phase integration failed at step "
                f"{steps_before + steps} (clock −log L={solver.t:.6g}, "
                f"log10 t={float(log1p_to_log10(solver.t + y[P])):.6g}): "
                f"{msg or 'non-finite state'}"
            )
        lt = solver.t + float(y[P])
        if lt >= targets[k]:
            dense = solver.dense_output()
            while k < len(targets) and lt >= targets[k]:
                lam = _crossing(dense, solver.t_old, solver.t, P, targets[k])
                take(dense(lam), lam)
                k += 1
        if bar is not None:
            bar.update(float(min(lt, targets[-1])) - bar.n)
    return steps, drift


def _crossing(dense, lam0: float, lam1: float, index: int, target: float) -> float:
    """``λ`` in ``[lam0, lam1]`` where ``λ + ζ(λ) = target`` (increasing in λ)."""
    from scipy.optimize import brentq

    f = lambda lam: lam + float(dense(lam)[index]) - target  # noqa: E731
    lo, hi = f(lam0), f(lam1)
    if lo >= 0:
        return lam0
    if hi <= 0:
        return lam1
    return brentq(f, lam0, lam1, xtol=1e-14 * max(1.0, abs(lam1)), rtol=1e-15)


def horizon_grid(first: float, last: float, per_decade: int = 1) -> np.ndarray:
    """Horizons ``log10 t`` from ``first`` to ``last`` (both > 0), evenly spaced in
    ``log10 log10 t`` (``per_decade`` per factor 10 of ``log10 t``; ``last``
    included): the horizons of a limit's trend, e.g. ``horizon_grid(300, 1e6)`` →
    ``300, 3000, 3·10^4, 3·10^5, 10^6``."""
    if not (0 < first <= last and math.isfinite(last)):
        raise ValueError(
            f"horizon_grid needs 0 < first <= last < inf, got first={first!r}, "
            f"last={last!r}"
        )
    if int(per_decade) != per_decade or per_decade < 1:
        raise ValueError(f"per_decade must be a positive integer, got {per_decade!r}")
    n = math.floor(per_decade * math.log10(last / first) + 1e-9)
    x = first * 10.0 ** (np.arange(n + 1) / per_decade)
    return np.unique(np.r_[x[x < last * (1 - 1e-12)], last])


def trend(
    model, data, log10_ts, statistic: Callable[[dict], float], **kwargs
) -> tuple[np.ndarray, np.ndarray]:
    """A limit's trend: ``statistic(snapshot)`` of the gradient flow of ``model`` on
    ``data`` at the horizons ``log10_ts`` (:func:`horizon_grid`), as the pair
    ``(log10_ts, values)`` a ``limit: true`` claim passes as ``trend=``. One
    :func:`~twolayer.flows.gradient_flow` run to ``max(log10_ts)`` (``kwargs``
    passed on; stored and reused like any run)."""
    from .integrator import gradient_flow

    xs = np.unique(np.asarray(list(log10_ts), float))
    if xs.size == 0 or not np.all(np.isfinite(xs)):
        raise ValueError(f"log10_ts must be finite horizons, got {log10_ts!r}")
    run = gradient_flow(
        model, data, log10_t_max=float(xs[-1]), snapshot_log10_times=xs, **kwargs
    )
    return run.log10_times, np.array([float(statistic(s)) for s in run.snapshots])
