"""Hard-margin SVMs (cvxpy) and KKT checks for the margin problem of two-layer nets.

Shared by the chapters: Phuong's w± are one-class hard-margin SVMs, Sarussi's
PAR limit is an SVM on a feature map, Lyu's w* is the max-margin separator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from ..models import leaky_relu, two_layer_output
from ..validation import as_matrix, as_vector, as_xy


class NotSeparableError(ValueError):
    """The hard-margin problem is infeasible: no ``w`` with ``y_i⟨w, x_i⟩ ≥ 1``
    for all i."""


@dataclass(frozen=True)
class SVMSolution:
    """Solution of ``min ‖w‖² s.t. y_i⟨w, x_i⟩ ≥ 1``: the weights, the dual
    variables ``α_i ≥ 0`` (``w = Σ α_i y_i x_i``) and the support mask."""

    w: np.ndarray
    duals: np.ndarray
    support: np.ndarray

    @property
    def margin(self) -> float:
        """Geometric margin ``1/‖w‖``."""
        return float(1.0 / np.linalg.norm(self.w))


def svm(X, y, tol: float = 1e-6) -> SVMSolution:
    """Hard-margin linear SVM without bias, solved with cvxpy (Clarabel).

    Support examples are the constraints that are tight to ``tol`` (relative).
    Raises :class:`NotSeparableError` if the data are not linearly separable
    through the origin.
    """
    # here, not at the top: ~1 s of import for the pages that never solve
    import cvxpy as cp

    X, y = as_xy(X, y)
    Z = y[:, None] * X
    w = cp.Variable(X.shape[1])
    cons = [Z @ w >= 1]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(w)), cons)
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.SolverError as exc:
        raise NotSeparableError(
            f"SVM solver failed on {X.shape[0]} points: {exc}"
        ) from exc
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE) or w.value is None:
        raise NotSeparableError(
            "data are not linearly separable through the origin: no w with y_i<w, x_i> "
            f">= 1 for all {X.shape[0]} points (solver status {prob.status})"
        )
    wv = np.asarray(w.value, dtype=float)
    duals = np.maximum(np.asarray(cons[0].dual_value, dtype=float) * 0.5, 0.0)
    support = Z @ wv <= 1 + tol * max(1.0, float(np.abs(Z @ wv).max()))
    return SVMSolution(wv, duals, support)


def max_margin(X, y) -> np.ndarray:
    """``w`` solving ``min ‖w‖² s.t. y_i⟨w, x_i⟩ ≥ 1`` (no bias).

    Raises
    ------
    NotSeparableError
        If the data are not linearly separable through the origin.
    ValueError
        On malformed input (shapes, labels not in {±1}, empty data).
    """
    return svm(X, y).w


@dataclass(frozen=True)
class KKTReport:
    """KKT check of a two-layer net for ``min ½‖θ‖² s.t. y_i f_θ(x_i) ≥ 1``
    (Lyu & Li 2020; Phuong Lemma C.1). The net is first rescaled so that its
    smallest margin is 1 (possible since f is 2-homogeneous)."""

    stationarity: float  # ‖θ − Σ λ_i ∇q_i‖ / ‖θ‖ at the best λ ≥ 0
    lambdas: np.ndarray  # multipliers (0 off the tight set)
    tight: np.ndarray  # constraints with q_i ≤ 1 + tol
    min_margin_before: float  # min_i q_i before rescaling
    kinks: np.ndarray | None = None  # rows (k, i, slope): Clarke slopes at exact kinks

    @property
    def complementary_slackness(self) -> float:
        """``max_i λ_i (q_i − 1)``: 0 by construction (λ lives on the tight set)."""
        return 0.0


def margin_gradients(W, a, X, y, alpha):
    """Rows: ``∇_θ q_i`` for ``θ = (W, a)`` flattened, for every example, where
    ``q_i = y_i Σ_j a_j φ(⟨w_j, x_i⟩)`` is the example's margin (the gradients of
    the KKT stationarity condition, Lyu et al. Thm 4.2 / Phuong & Lampert Lemma C.1)."""
    Z = X @ W.T  # (n, m)
    act = leaky_relu(Z, alpha)  # φ(w_j·x_i)
    slope = np.where(Z > 0, 1.0, alpha)  # φ'(w_j·x_i), φ'(0) := α
    gW = (y[:, None] * slope * a[None, :])[:, :, None] * X[:, None, :]  # (n, m, d)
    ga = y[:, None] * act  # (n, m)
    return np.concatenate([gW.reshape(len(X), -1), ga], axis=1)


def kkt_two_layer(
    W,
    a,
    X,
    y,
    alpha: float = 0.0,
    tight_tol: float = 1e-3,
    kink_tol: float | None = None,
) -> KKTReport:
    """How far ``(W, a)`` is from a KKT point of the margin problem.

    Rescales θ so that ``min_i q_i = 1``, takes the constraints within
    ``tight_tol`` of 1 as tight, and finds multipliers ``λ ≥ 0`` on them by
    non-negative least squares for ``θ = Σ λ_i ∇_θ q_i``. Returns the relative
    stationarity residual (0 at an exact KKT point).

    By default ``φ'(0) := α``. With ``kink_tol``, a tight point ``x_i`` with
    ``|w_k·x_i| ≤ kink_tol ‖w_k‖‖x_i‖`` sits on neuron k's kink, where Clarke's
    subdifferential of ``q_i`` (the one in Lyu & Li 2020's KKT conditions) lets
    the slope be any ``D_ik ∈ [α, 1]``, one per (neuron, point): the check then
    solves ``min ‖θ − Σ λ_i g_i(D)‖`` over ``λ ≥ 0`` and those slopes (a convex QP
    in ``λ`` and ``ν_ik = λ_i (D_ik − α) ∈ [0, (1−α)λ_i]``, cvxpy), and reports
    the slopes in ``kinks``.
    """
    X, y = as_xy(X, y)
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    q = y * two_layer_output(W, a, X, alpha)
    qmin = float(q.min())
    if qmin <= 0:
        raise ValueError(
            "the network does not classify every point correctly (min margin "
            f"{qmin:.3g})"
        )
    c = 1.0 / np.sqrt(qmin)
    Ws, as_ = W * c, a * c
    qs = q / qmin
    tight = qs <= 1 + tight_tol
    theta = np.concatenate([Ws.ravel(), as_])
    G = margin_gradients(Ws, as_, X[tight], y[tight], alpha)
    if kink_tol is not None:
        return _kkt_clarke(
            Ws, as_, X[tight], y[tight], alpha, G, theta, tight, qmin, kink_tol
        )
    lam_t, resid = nnls(G.T, theta)
    lam = np.zeros(len(y))
    lam[tight] = lam_t
    return KKTReport(float(resid / np.linalg.norm(theta)), lam, tight, qmin)


def _kkt_clarke(W, a, X, y, alpha, G, theta, tight, qmin, kink_tol) -> KKTReport:
    """:func:`kkt_two_layer` with a free Clarke slope ``D_ik ∈ [α, 1]`` at each
    exact kink."""
    import cvxpy as cp  # here, not at the top (see svm)

    if not kink_tol >= 0:
        raise ValueError(f"kink_tol must be >= 0, got {kink_tol!r}")
    d = W.shape[1]
    Z = X @ W.T
    scale = np.linalg.norm(X, axis=1)[:, None] * np.linalg.norm(W, axis=1)[None, :]
    ii, kk = np.nonzero(np.abs(Z) <= kink_tol * scale)
    E = np.zeros((len(theta), len(ii)))  # ∂q_i/∂w_k per unit of (D_ik − α)
    for j, (i, k) in enumerate(zip(ii, kk)):
        # base slope α at the kink
        G[i, k * d : (k + 1) * d] = y[i] * alpha * a[k] * X[i]
        E[k * d : (k + 1) * d, j] = y[i] * a[k] * X[i]
    lam, nu = cp.Variable(len(X)), cp.Variable(len(ii))
    cons = [lam >= 0, nu >= 0, nu <= (1 - alpha) * lam[ii]] if len(ii) else [lam >= 0]
    obj = cp.sum_squares(theta - G.T @ lam - (E @ nu if len(ii) else 0))
    cp.Problem(cp.Minimize(obj), cons).solve(solver=cp.CLARABEL)
    lam_t = np.maximum(np.asarray(lam.value, dtype=float), 0.0)
    nu_v = (
        np.clip(np.asarray(nu.value, dtype=float), 0.0, None)
        if len(ii)
        else np.zeros(0)
    )
    resid = np.linalg.norm(theta - G.T @ lam_t - E @ nu_v)
    lam_full = np.zeros(len(tight))
    lam_full[tight] = lam_t
    rows = np.flatnonzero(tight)[ii]
    slopes = alpha + nu_v / np.maximum(lam_t[ii], 1e-300)
    kinks = (
        np.column_stack([kk, rows, np.minimum(slopes, 1.0)])
        if len(ii)
        else np.zeros((0, 3))
    )
    return KKTReport(float(resid / np.linalg.norm(theta)), lam_full, tight, qmin, kinks)
