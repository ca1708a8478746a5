"""Lyu, Li, Wang & Arora (NeurIPS 2021): gradient descent on two-layer leaky
ReLU nets from small initialization — linear max-margin bias on symmetric
data (§4), the three-phase analysis (§5) and its fragility (§6).

Notation follows the paper: ``f_θ(x) = Σ_k a_k φ(w_k·x)``,
``φ(z) = max(z, αz)``; parameters are stored as ``(W, a)`` with ``W`` of
shape ``(m, d)`` (rows ``w_k``) and ``a`` of shape ``(m,)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares, minimize, nnls

from ..data import Dataset, symmetric_augment  # noqa: F401  (re-exported: Assumption 4.1)
from ..metrics import normalized_margin as _normalized_margin
from ..metrics import parameter_norm
from ..metrics import smoothed_margin as _smoothed_margin
from ..models import check_alpha, leaky_relu, two_layer_output
from ..validation import as_matrix, as_vector, as_xy, positive
from .margins import KKTReport, kkt_two_layer, margin_gradients, max_margin

__all__ = [
    "symmetric_augment",
    "is_symmetric",
    "max_margin_separator",
    "linear_margin",
    "hinted_dataset",
    "mu",
    "mu_tilde",
    "lambda0",
    "m_norm",
    "phase1_time",
    "phase1_decomposition",
    "Phase1Decomposition",
    "embedding_vector",
    "is_good_embedding",
    "embed",
    "unembed",
    "phase2_start",
    "normalized_margin",
    "symmetric_limit_function",
    "hinted_limit_function",
    "global_max_margin_symmetric",
    "two_neuron_limit",
    "kkt_check",
    "search_max_margin",
    "MarginSearch",
    "polish_kkt",
    "boundary_nonlinearity",
    "axis_masses",
    "solve_kkt",
    "bent_kkt_example",
    "kkt_system_jacobian",
    "gradient_flow_from_init",
    "hinted_limit_statistics",
    "lemma52_run_statistics",
    "lemma54_coupling",
    "thm55_two_neuron_start",
    "thm55_flow",
    "thm56_local_flow",
]


_alpha = check_alpha


def _wa(W, a) -> tuple[np.ndarray, np.ndarray]:
    W = as_matrix(W, "W")
    return W, as_vector(a, "a", W.shape[0])


# ------------------------------------------------------------ data (§3, §4, §6)


def is_symmetric(X, y, tol: float = 1e-12) -> bool:
    """Assumption 4.1: ``n`` even, ``x_{i+n/2} = −x_i`` and ``y_{i+n/2} = −y_i``
    (the layout :func:`symmetric_augment` produces)."""
    X, y = as_xy(X, y)
    n = len(y)
    if n % 2:
        return False
    h = n // 2
    return bool(
        np.allclose(X[h:], -X[:h], atol=tol, rtol=0) and np.array_equal(y[h:], -y[:h])
    )


def max_margin_separator(X, y) -> np.ndarray:
    """Definition 3.3: the unit-norm ``w*`` maximising ``min_i y_i⟨w, x_i⟩``
    (the hard-margin SVM through the origin, normalised)."""
    w = max_margin(X, y)
    return w / np.linalg.norm(w)


def linear_margin(X, y) -> float:
    """``γ_lin = max_{‖w‖=1} min_i y_i⟨w, x_i⟩ = 1/‖w_svm‖``."""
    return float(1.0 / np.linalg.norm(max_margin(X, y)))


def hinted_dataset(
    X, y, H: float, K: float, eps: float, w_perp
) -> tuple[np.ndarray, np.ndarray]:
    """Definition 6.1: the ``(H, K, ε, w⊥)``-hinted dataset.

    Appends ``(H w*, +1)``, ``(ε w* + K w⊥, +1)``, ``(ε w* − K w⊥, +1)`` to
    ``(X, y)``, where ``w*`` is the max-margin linear separator of ``(X, y)``
    (Def. 3.3) and ``w⊥`` a unit vector perpendicular to it.

    Raises
    ------
    ValueError
        If ``H, K, eps`` are not positive, ``w_perp`` is not a unit vector
        (to 1e-6) or not perpendicular to ``w*`` (to 1e-6).
    NotSeparableError
        If ``(X, y)`` is not linearly separable through the origin.
    """
    X, y = as_xy(X, y)
    H, K, eps = positive(H, "H"), positive(K, "K"), positive(eps, "eps")
    wp = as_vector(w_perp, "w_perp", X.shape[1])
    if abs(np.linalg.norm(wp) - 1) > 1e-6:
        raise ValueError(
            f"w_perp must be a unit vector, got norm {np.linalg.norm(wp):.6g}"
        )
    ws = max_margin_separator(X, y)
    if abs(wp @ ws) > 1e-6:
        raise ValueError(
            f"w_perp must be perpendicular to w* (|<w_perp, w*>| = {abs(wp @ ws):.3g})"
        )
    hints = np.stack([H * ws, eps * ws + K * wp, eps * ws - K * wp])
    return np.vstack([X, hints]), np.concatenate([y, np.ones(3)])


# ------------------------------------------------------------ phase I (§5.1)


def mu(X, y) -> np.ndarray:
    """``μ = (1/n) Σ_i y_i x_i`` (§4.3)."""
    X, y = as_xy(X, y)
    return (y[:, None] * X).mean(axis=0)


def mu_tilde(X, y, alpha: float) -> np.ndarray:
    """The vector with ``G(w) = ⟨w, μ̃⟩`` on symmetric data (§5.1), for the
    mean logistic loss (``−ℓ'(0) = ½``): ``G(w) = (1/2n) Σ_i y_i φ(w·x_i)``.

    Pairing ``x_i`` with ``−x_i`` gives ``G(w) = (1/2n) Σ_{i≤n/2} (1+α) w·x_i
    = (1+α)/4 ⟨w, μ⟩``, so ``μ̃ = (1+α)/4 · μ``. The paper's text prints
    ``μ̃ = (1+α)/2 · μ``, a factor 2 larger than its own derivation gives;
    the measured phase-I growth rate supports ``(1+α)/4`` (book, Phase I).
    """
    return (1 + _alpha(alpha)) / 4 * mu(X, y)


def lambda0(X, y, alpha: float) -> float:
    """``λ0 = ‖μ̃‖``, the top eigenvalue of ``M_μ̃ = [[0, μ̃], [μ̃ᵀ, 0]]`` (§5.1)."""
    return float(np.linalg.norm(mu_tilde(X, y, alpha)))


def m_norm(W, a) -> float:
    """Definition 5.1: ``‖θ‖_M = max_k max(‖w_k‖, |a_k|)``."""
    W, a = _wa(W, a)
    return float(max(np.linalg.norm(W, axis=1).max(), np.abs(a).max()))


def phase1_time(r: float, sigma: float, W_bar, a_bar, lam0: float) -> float:
    """Lemma 5.2: ``T1(r) = (1/λ0) ln(r / (√m σ ‖θ̄0‖_M))`` for the unit-scale
    initialisation ``θ̄0 = (W̄, ā)`` and ``θ0 = σ θ̄0``."""
    r, sigma, lam0 = positive(r, "r"), positive(sigma, "sigma"), positive(lam0, "lam0")
    W_bar, a_bar = _wa(W_bar, a_bar)
    m = W_bar.shape[0]
    return float(np.log(r / (np.sqrt(m) * sigma * m_norm(W_bar, a_bar))) / lam0)


@dataclass(frozen=True)
class Phase1Decomposition:
    """Lemma 5.2: ``w_k = r b̄_k μ̄ + Δw_k``, ``a_k = r b̄_k + Δa_k``."""

    b: np.ndarray  # b̄ (m,)
    dW: np.ndarray  # Δw_k rows (m, d)
    da: np.ndarray  # Δa_k (m,)
    residual_m_norm: float  # ‖Δθ‖_M
    r: float

    @property
    def relative_residual(self) -> float:
        """``‖Δθ‖_M / (r max_k |b̄_k|)``: the error relative to the leading term."""
        return float(self.residual_m_norm / (self.r * np.abs(self.b).max()))


def phase1_decomposition(W, a, W_bar, a_bar, mu_vec, r: float) -> Phase1Decomposition:
    """Lemma 5.2's decomposition of ``θ(T1(r)) = (W, a)`` given the unit-scale
    initialisation ``(W̄, ā)``: ``b̄_k = (⟨w̄_k, μ̄⟩ + ā_k) / (2√m ‖θ̄0‖_M)``."""
    W, a = _wa(W, a)
    W_bar, a_bar = _wa(W_bar, a_bar)
    if W_bar.shape != W.shape:
        raise ValueError(f"W_bar must have the shape of W {W.shape}, got {W_bar.shape}")
    mv = as_vector(mu_vec, "mu_vec", W.shape[1])
    nm = np.linalg.norm(mv)
    if nm == 0:
        raise ValueError("mu_vec must be non-zero")
    r = positive(r, "r")
    mbar = mv / nm
    b = embedding_vector(W_bar, a_bar, mv)
    dW = W - r * b[:, None] * mbar[None, :]
    da = a - r * b
    return Phase1Decomposition(b, dW, da, m_norm(dW, da), r)


def embedding_vector(W_bar, a_bar, mu_vec) -> np.ndarray:
    """Lemma 5.2's ``b̄_k = (⟨w̄_k, μ̄⟩ + ā_k) / (2√m ‖θ̄0‖_M)`` of the unit-scale
    initialisation ``θ̄0 = (W̄, ā)``: where phase I sends neuron ``k``
    (``r b̄_k (μ̄, 1)`` at time ``T1(r)``)."""
    W_bar, a_bar = _wa(W_bar, a_bar)
    mv = as_vector(mu_vec, "mu_vec", W_bar.shape[1])
    nm = np.linalg.norm(mv)
    if nm == 0:
        raise ValueError("mu_vec must be non-zero")
    m = W_bar.shape[0]
    return (W_bar @ (mv / nm) + a_bar) / (2 * np.sqrt(m) * m_norm(W_bar, a_bar))


# ------------------------------------------------------------ embedding (Lemma 5.3)


def is_good_embedding(b) -> bool:
    """§5.2: ``b`` has a positive and a negative entry and no zero entry."""
    b = as_vector(b, "b")
    return bool((b > 0).any() and (b < 0).any() and (b != 0).all())


def _b_parts(b) -> tuple[np.ndarray, float, float]:
    b = as_vector(b, "b")
    if not is_good_embedding(b):
        raise ValueError(
            "b must be a good embedding vector: non-zero entries, at least one of each "
            "sign"
        )
    bp = float(np.sqrt((b[b > 0] ** 2).sum()))
    bm = -float(np.sqrt((b[b < 0] ** 2).sum()))
    return b, bp, bm


def embed(W_hat, a_hat, b) -> tuple[np.ndarray, np.ndarray]:
    """π_b of §5.2: the two-neuron net ``(ŵ1, ŵ2, â1, â2)`` (``â1 > 0 > â2``)
    as an m-neuron net: neuron k is ``(b_k/b_+)(ŵ1, â1)`` if ``b_k > 0`` and
    ``(b_k/b_−)(ŵ2, â2)`` if ``b_k < 0``; ``f`` is unchanged."""
    W_hat, a_hat = _wa(W_hat, a_hat)
    if W_hat.shape[0] != 2:
        raise ValueError(
            f"W_hat must have 2 rows (a two-neuron net), got {W_hat.shape[0]}"
        )
    if not (a_hat[0] > 0 > a_hat[1]):
        raise ValueError(
            f"a_hat must satisfy a_hat[0] > 0 > a_hat[1], got {a_hat.tolist()}"
        )
    b, bp, bm = _b_parts(b)
    c = np.where(b > 0, b / bp, b / bm)  # all > 0
    src = np.where(b > 0, 0, 1)
    return c[:, None] * W_hat[src], c * a_hat[src]


def phase2_start(b, mu_vec) -> tuple[np.ndarray, np.ndarray]:
    """Lemma 5.4's two-neuron direction ``θ̂ = (b̄_+ μ̄, b̄_− μ̄; b̄_+, b̄_−)`` as
    ``(W, a)``: the two-neuron flow from ``r θ̂``, shifted by ``T2(r) = ln(1/r)/λ0``,
    is what the m-neuron flow follows after ``T12`` (eq. 5), through ``π_b̄``."""
    _, bp, bm = _b_parts(b)
    mv = as_vector(mu_vec, "mu_vec")
    mbar = mv / np.linalg.norm(mv)
    return np.stack([bp * mbar, bm * mbar]), np.array([bp, bm])


def unembed(W, a, b) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`embed` on its image:
    ``(ŵ1, â1) = Σ_{b_k>0} (b_k/b_+)(w_k, a_k)``
    (since ``Σ_{b_k>0} b_k²/b_+² = 1``), likewise for neuron 2 with ``b_−``.
    Off the image this is the least-squares projection onto it."""
    W, a = _wa(W, a)
    b, bp, bm = _b_parts(b)
    if len(b) != W.shape[0]:
        raise ValueError(
            f"b must have length {W.shape[0]} (one entry per neuron), got {len(b)}"
        )
    cp_, cm = np.where(b > 0, b / bp, 0.0), np.where(b < 0, b / bm, 0.0)
    return np.stack([cp_ @ W, cm @ W]), np.array([cp_ @ a, cm @ a])


# -------------------------------------------------------- margins (§3, §4.1, §5.3, §6)


def normalized_margin(W, a, X, y, alpha: float) -> float:
    """``γ(θ) = min_i y_i f_θ(x_i) / ‖θ‖²`` (2-homogeneous net)."""
    W, a = _wa(W, a)
    X, y = as_xy(X, y)
    return _normalized_margin(
        two_layer_output(W, a, X, _alpha(alpha)), y, parameter_norm(W, a), homogeneity=2
    )


def symmetric_limit_function(X, w_star, alpha: float) -> np.ndarray:
    """Theorem 4.2 / 4.3: ``f^∞(x) = (1+α)/4 ⟨w*, x⟩`` (unit-norm θ)."""
    X = as_matrix(X, "X")
    w = as_vector(w_star, "w_star", X.shape[1])
    return (1 + _alpha(alpha)) / 4 * (X @ w)


def hinted_limit_function(X, w_star, alpha: float) -> np.ndarray:
    """Theorem 6.2: ``f^∞(x) = ½ φ(⟨w*, x⟩)`` (one leaky-ReLU neuron, unit-norm θ)."""
    X = as_matrix(X, "X")
    w = as_vector(w_star, "w_star", X.shape[1])
    return 0.5 * leaky_relu(X @ w, _alpha(alpha))


def limit_error(W, a, X_eval, limit_values, alpha: float) -> float:
    """Distance of the network's direction to a limit function, relative to the limit:
    ``sup_x |f_{θ/‖θ‖}(x) − f^∞(x)| / sup_x |f^∞(x)|`` over the rows of ``X_eval``,
    with ``f^∞`` given by its values there (Thm 4.3: :func:`symmetric_limit_function`;
    Thm 6.2: :func:`hinted_limit_function`)."""
    Wn, an = unit_direction(W, a)
    X_eval = as_matrix(X_eval, "X_eval")
    target = as_vector(limit_values, "limit_values", X_eval.shape[0])
    scale = np.abs(target).max()
    if scale == 0:
        raise ValueError("the limit function is 0 on every evaluation point")
    return float(np.abs(two_layer_output(Wn, an, X_eval, alpha) - target).max() / scale)


def global_max_margin_symmetric(X, y, alpha: float) -> float:
    """Theorem 4.2: on symmetric separable data the global max normalized margin
    of a width-≥2 leaky net is ``(1+α)/4 · γ_lin``."""
    X, y = as_xy(X, y)
    if not is_symmetric(X, y):
        raise ValueError("X, y must satisfy Assumption 4.1 (use symmetric_augment)")
    return (1 + _alpha(alpha)) / 4 * linear_margin(X, y)


def two_neuron_limit(w_star) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 5.5's limit direction as ``(W, a)``: ``½(w*, −w*, 1, −1)`` —
    unit norm when ``‖w*‖ = 1`` (the ¼ printed in the text has norm ½)."""
    w = as_vector(w_star, "w_star")
    w = w / np.linalg.norm(w)
    return 0.5 * np.stack([w, -w]), np.array([0.5, -0.5])


def kkt_check(
    W, a, X, y, alpha: float, tight_tol: float = 1e-3, kink_tol: float | None = None
) -> KKTReport:
    """KKT-margin check (Lyu & Li 2020, Thm 3.1): delegates to
    :func:`twolayer.theory.margins.kkt_two_layer`, dropping dead zero neurons
    first (``(w_k, a_k) = 0`` contributes nothing and is trivially stationary).
    ``kink_tol`` turns on Clarke's slopes ``[α, 1]`` at exact kinks (see there)."""
    W, a = _wa(W, a)
    keep = (np.linalg.norm(W, axis=1) + np.abs(a)) > 0
    return kkt_two_layer(
        W[keep],
        a[keep],
        X,
        y,
        alpha=_alpha(alpha),
        tight_tol=tight_tol,
        kink_tol=kink_tol,
    )


def bent_kkt_example(h: float, alpha: float):
    """A symmetric set with a KKT-margin direction whose boundary is bent (Fig. 1 left).

    Data: ``(1, ±h)`` labelled +1 and their mirrors ``(−1, ∓h)`` labelled −1
    (Assumption 4.1; max-margin separator ``e1``, linear margin 1). Net: two
    positive neurons along ``u_± = (h, ±1)/ρ``, ``ρ = √(1+h²)``, each of mass
    ``|a_k|‖w_k‖ = ρ/(2h(1+α))``, and one negative neuron along ``−e1`` of mass
    ``1/(1+α)``; every margin is then 1. ``u_+`` is orthogonal to ``(1, −h)`` and
    its mirror — both points sit on its kink — so θ is KKT only in Clarke's sense
    (slopes in ``[α, 1]`` there). Stationarity with multipliers ``λ_P`` on the
    positives and ``λ_N`` on the negatives: the negative neuron gives
    ``2(αλ_P + λ_N) = 1``, a positive neuron ``λ_P + αλ_N = ρ/(2h)`` (its
    component along ``(1, h)``) and, along ``(1, −h)``, a combination of the two
    kink slopes equal to ``(λ_P + αλ_N)(h² − 1)/(h² + 1)``, which lies in
    ``[α, 1]·(λ_P + λ_N)`` for h large enough (``h ≥ 2.1`` at α = ½).
    ``f(0, ±1) = (1−α)/(2h(1+α)) > 0``: the positive region is wider than a
    half-plane by two wedges of angle ``arctan((1−α)/(h(3+α)))``, so the boundary
    is not a line. Its normalized margin is
    ``1/(4(λ_P + λ_N)) < γ* = (1+α)/4`` (Thm 4.2: a bent direction cannot be
    the global max). Returns ``(X, y, W, a)``, balanced neurons.
    """
    alpha = _alpha(alpha)
    h = positive(h, "h")
    rho = np.hypot(h, 1.0)
    X = np.array([[1.0, h], [1.0, -h], [-1.0, -h], [-1.0, h]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    m_pos, m_neg = rho / (2 * h * (1 + alpha)), 1 / (1 + alpha)
    U = np.array([[h, 1.0], [h, -1.0]]) / rho
    W = np.vstack([np.sqrt(m_pos) * U, [-np.sqrt(m_neg), 0.0]])
    a = np.array([np.sqrt(m_pos), np.sqrt(m_pos), -np.sqrt(m_neg)])
    return X, y, W, a


@dataclass(frozen=True)
class MarginSearch:
    """Result of :func:`search_max_margin`. ``best`` is a LOWER BOUND on the
    global max normalized margin (a numerical search, not a certificate)."""

    best: float  # lower bound on max_θ γ(θ) at this width
    W: np.ndarray  # the best net, scaled to min_i q_i = 1
    a: np.ndarray
    margins: np.ndarray  # γ of every converged start (NaN: failed start)
    solutions: list = field(default_factory=list, repr=False)  # (W, a) per start

    @property
    def n_converged(self) -> int:
        return int(np.isfinite(self.margins).sum())


def _solve_margin_problem(X, y, alpha: float, W0, a0, maxiter: int):
    """SLSQP on ``min ½‖θ‖² s.t. y_i f_θ(x_i) ≥ 1`` from ``(W0, a0)``.

    Returns ``(W, a, γ)`` with ``γ = min_i q_i / ‖θ‖²`` (NaN if the solution
    does not separate the data)."""
    m, d = W0.shape

    def split(t):
        return t[: m * d].reshape(m, d), t[m * d :]

    def cons(t):
        return y * two_layer_output(*split(t), X, alpha) - 1.0

    def cons_jac(t):
        return margin_gradients(*split(t), X, y, alpha)

    res = minimize(
        lambda t: 0.5 * t @ t,
        np.r_[W0.ravel(), a0],
        jac=lambda t: t,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
        options={"maxiter": maxiter, "ftol": 1e-12},
    )
    W, a = split(res.x)
    q = y * two_layer_output(W, a, X, alpha)
    gamma = q.min() / (res.x @ res.x) if q.min() > 0 else np.nan
    return W.copy(), a.copy(), float(gamma)


def _start(rng, X, y, m: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """A random start of the margin search: Gaussian, or neurons on data points."""
    d = X.shape[1]
    if kind == "gaussian":
        t = rng.standard_normal(m * (d + 1))
        return t[: m * d].reshape(m, d), t[m * d :]
    idx = rng.choice(len(X), m, replace=len(X) < m)
    scale = rng.uniform(0.5, 2.0, m)
    W = X[idx] * scale[:, None] + 0.1 * rng.standard_normal((m, d))
    return W, y[idx] * scale


def search_max_margin(
    X,
    y,
    alpha: float,
    width: int,
    starts: int = 50,
    seed: int = 0,
    maxiter: int = 400,
    start: str = "gaussian",
) -> MarginSearch:
    """Numerical search for the global max margin of a width-``width`` leaky net.

    From ``starts`` random starts, solves the margin problem
    ``min ½‖θ‖² s.t. y_i f_θ(x_i) ≥ 1`` (the problem (P) of Lyu & Li 2020)
    with SLSQP (analytic gradients); each converged, feasible solution is a
    candidate KKT point with ``γ = 1/‖θ‖²``. Returns the best found — a lower
    bound on the global max. ``start="gaussian"`` draws θ ~ N(0, I);
    ``start="points"`` puts each neuron on a random training point ``x_i``
    with output weight of sign ``y_i`` (starts near nets that dedicate neurons
    to points, where nonlinear KKT directions would sit).
    """
    X, y = as_xy(X, y)
    alpha = _alpha(alpha)
    if int(width) != width or width < 1:
        raise ValueError(f"width must be a positive integer, got {width!r}")
    if int(starts) != starts or starts < 1:
        raise ValueError(f"starts must be a positive integer, got {starts!r}")
    if start not in ("gaussian", "points"):
        raise ValueError(f"start must be 'gaussian' or 'points', got {start!r}")
    rng = np.random.default_rng(seed)
    margins, sols = np.full(starts, np.nan), []
    for s in range(starts):
        W, a, margins[s] = _solve_margin_problem(
            X, y, alpha, *_start(rng, X, y, int(width), start), maxiter
        )
        sols.append((W, a))
    if not np.isfinite(margins).any():
        raise RuntimeError(
            f"no start of the margin search separated the data ({starts} starts)"
        )
    k = int(np.nanargmax(margins))
    W, a = sols[k]
    c = 1 / np.sqrt((y * two_layer_output(W, a, X, alpha)).min())
    return MarginSearch(float(margins[k]), W * c, a * c, margins, sols)


def polish_kkt(
    W, a, X, y, alpha: float, maxiter: int = 400
) -> tuple[np.ndarray, np.ndarray, float]:
    """The KKT point of (P) that SLSQP reaches from the direction ``(W, a)``.

    A direction that gradient flow has not yet brought to a KKT point (Thm 3.1
    only gives convergence as t → ∞, slowly) is rescaled to ``min_i q_i = 1``
    and handed to the solver of :func:`search_max_margin`. Returns
    ``(W, a, γ)``; check the result with :func:`kkt_check`.
    """
    W, a = _wa(W, a)
    X, y = as_xy(X, y)
    alpha = _alpha(alpha)
    q = (y * two_layer_output(W, a, X, alpha)).min()
    if q <= 0:
        raise ValueError(f"the start does not separate the data (min margin {q:.3g})")
    c = 1 / np.sqrt(q)
    return _solve_margin_problem(X, y, alpha, W * c, a * c, maxiter)


def solve_kkt(
    W, a, X, y, alpha: float, tight_tol: float = 1e-2, max_nfev: int = 2000
) -> tuple[np.ndarray, np.ndarray]:
    """A KKT point of (P) near the direction ``(W, a)``, found by solving the KKT
    system itself rather than minimising (Lyu & Li 2020, Thm 3.1's conditions).

    ``θ`` is rescaled to ``min_i q_i = 1``; the constraints within ``tight_tol`` of
    1 are taken as the active set ``T``; then least squares on
    ``θ − Σ_{i∈T} λ_i ∇q_i(θ) = 0``, ``q_i(θ) = 1`` (``i ∈ T``), ``λ ≥ 0``, from
    the NNLS multipliers. A minimiser (:func:`polish_kkt`, :func:`search_max_margin`)
    only finds local minima of (P); this can also land on saddle-type KKT points.
    The solve may fail or leave other constraints violated: check the result with
    :func:`kkt_check`.
    """
    W, a = _wa(W, a)
    X, y = as_xy(X, y)
    alpha = _alpha(alpha)
    q = y * two_layer_output(W, a, X, alpha)
    if q.min() <= 0:
        raise ValueError(
            f"the start does not separate the data (min margin {q.min():.3g})"
        )
    c = 1 / np.sqrt(q.min())
    W, a = W * c, a * c
    T = np.flatnonzero(q / q.min() <= 1 + positive(tight_tol, "tight_tol"))
    m, d = W.shape
    k = m * (d + 1)
    theta0 = np.r_[W.ravel(), a]
    lam0, _ = nnls(margin_gradients(W, a, X[T], y[T], alpha).T, theta0)

    def residual(z):
        Wz, az = z[: m * d].reshape(m, d), z[m * d : k]
        G = margin_gradients(Wz, az, X[T], y[T], alpha)
        return np.r_[
            z[:k] - G.T @ z[k:], y[T] * two_layer_output(Wz, az, X[T], alpha) - 1
        ]

    lower = np.r_[np.full(k, -np.inf), np.zeros(len(T))]
    z = least_squares(
        residual,
        np.r_[theta0, lam0],
        jac=kkt_system_jacobian(X[T], y[T], alpha, m, d),
        bounds=(lower, np.inf),
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
        max_nfev=int(max_nfev),
    ).x
    return z[: m * d].reshape(m, d).copy(), z[m * d : k].copy()


def kkt_system_jacobian(X, y, alpha: float, m: int, d: int):
    """The Jacobian of the KKT system of (P) (Lyu & Li 2020, Thm 3.1's
    conditions), :func:`solve_kkt`'s residual ``(θ − Gᵀλ, q_T(θ) − 1)`` in
    ``z = (θ, λ)``, ``G`` the rows ``∇q_i`` (i ∈ T). Off the kinks (where it is
    defined; ``φ'(0) := α`` as in ``∇q_i``) each ``q_i`` is bilinear in a neuron's
    ``(w_j, a_j)``, so ``Σ λ_i ∇²q_i`` has only the blocks ``∂w_j ∂a_j =
    Σ_i λ_i y_i φ'(w_j·x_i) x_i``: ``J = [[I − Σ λ_i ∇²q_i, −Gᵀ], [G, 0]]``."""
    k = m * (d + 1)
    w_rows, a_cols = np.arange(m * d).reshape(m, d), (m * d + np.arange(m))[:, None]

    def jacobian(z):
        Wz, az, lam = z[: m * d].reshape(m, d), z[m * d : k], z[k:]
        G = margin_gradients(Wz, az, X, y, alpha)
        slope = np.where(X @ Wz.T > 0, 1.0, alpha)  # (|T|, m)
        cross = ((lam * y)[:, None] * slope).T @ X  # (m, d): Σ_i λ_i y_i φ'_ij x_i
        J = np.zeros((k + len(X), k + len(X)))
        J[np.arange(k), np.arange(k)] = 1.0
        J[w_rows, a_cols] = -cross
        J[a_cols, w_rows] = -cross
        J[:k, k:] = -G.T
        J[k:, :k] = G
        return J

    return jacobian


def boundary_nonlinearity(W, a, alpha: float, angles: int = 3600) -> float:
    """How far a 2-D net's decision boundary is from a line through the origin:
    the fraction of the unit disk where ``sign f`` differs from the closest
    half-plane ``sign(u·x)``. ``f`` is positively homogeneous in ``x``, so that is
    the fraction of the unit circle: ``sign f`` at ``angles`` equally spaced
    midpoint angles (none on an axis) against every half-circle of ``angles/2``
    consecutive ones. Resolution ``1/angles``; a line gives at most that."""
    W, a = _wa(W, a)
    if W.shape[1] != 2:
        raise ValueError(
            f"boundary_nonlinearity needs 2-D nets, got dimension {W.shape[1]}"
        )
    n = 2 * max(int(angles) // 2, 2)
    th = 2 * np.pi * (np.arange(n) + 0.5) / n
    pos = (
        two_layer_output(W, a, np.stack([np.cos(th), np.sin(th)], 1), _alpha(alpha)) > 0
    )
    # positives per half
    window = np.convolve(np.r_[pos, pos], np.ones(n // 2, dtype=int), "valid")[:n]
    # disagreement with the half-circle = positives outside it + non-positives inside it
    return float(np.min(pos.sum() - window + (n // 2 - window)) / n)


def axis_masses(W, a, u) -> tuple[float, float]:
    """Output masses ``(c_+, c_−)`` of a net's neurons on the two halves of the axis
    ``u``: ``c_+ = Σ |a_k|‖w_k‖`` over neurons with ``⟨w_k, u⟩ > 0 < a_k``, ``c_−``
    over neurons with ``⟨w_k, u⟩ < 0 > a_k``; other neurons count in neither.

    For a net whose neurons lie on the axis, ``f(x) = c_+ φ(⟨ū, x⟩) − c_− φ(−⟨ū, x⟩)``
    and, balanced (``|a_k| = ‖w_k‖``), ``‖θ‖² = 2(c_+ + c_−)``: the two masses are
    the net (Fig. 1 middle, where phase I puts every neuron on ``±μ̄``)."""
    W, a = _wa(W, a)
    u = as_vector(u, "u", W.shape[1])
    side = W @ u
    mass = np.abs(a) * np.linalg.norm(W, axis=1)
    return float(mass[(side > 0) & (a > 0)].sum()), float(
        mass[(side < 0) & (a < 0)].sum()
    )


def unit_direction(W, a) -> tuple[np.ndarray, np.ndarray]:
    """``θ/‖θ‖`` as ``(W, a)``."""
    W, a = _wa(W, a)
    n = parameter_norm(W, a)
    if n == 0:
        raise ValueError("theta is zero: it has no direction")
    return W / n, a / n


def phase1_objective(X, y, alpha: float, angles) -> np.ndarray:
    """``G(w) = (1/2n) Σ_i y_i φ(w·x_i)`` on the unit circle ``w = (cos a, sin a)``
    (2-D data): the function whose maxima phase I sends the neurons to
    (Lemma 5.2; its local maxima are where neurons can park)."""
    X, y = as_xy(X, y)
    if X.shape[1] != 2:
        raise ValueError(f"phase1_objective needs 2-D data, got dimension {X.shape[1]}")
    angles = np.asarray(angles, float)
    U = np.c_[np.cos(angles), np.sin(angles)]
    return leaky_relu(U @ X.T, _alpha(alpha)) @ y / (2 * len(y))


def local_maxima(values) -> np.ndarray:
    """Indices of the strict local maxima of a periodic 1-D sample (a circle)."""
    v = np.asarray(values, float)
    return np.flatnonzero((v > np.roll(v, 1)) & (v > np.roll(v, -1)))


def first_passage_time(times, sizes, level: float) -> float:
    """The time at which an exponentially growing size first reaches ``level``
    (Lemma 5.2's ``t_r(σ)``): ``log sizes`` interpolated linearly between the two
    samples that bracket ``level`` (exact for pure exponential growth)."""
    t = np.asarray(times, float)
    s = np.asarray(sizes, float)
    if t.shape != s.shape or t.ndim != 1 or len(t) < 2:
        raise ValueError(
            f"times and sizes must be 1-D of one length >= 2, got {t.shape}, {s.shape}"
        )
    level = positive(level, "level")
    above = np.flatnonzero(s >= level)
    if not len(above) or above[0] == 0:
        raise ValueError(f"sizes must start below level {level:g} and reach it")
    j = int(above[0])
    l0, l1 = np.log(s[j - 1]), np.log(s[j])
    return float(t[j - 1] + (np.log(level) - l0) / (l1 - l0) * (t[j] - t[j - 1]))


def phase1_decomposition_at(
    times, Ws, As, W_bar, a_bar, mu_vec, T: float, r: float, rate: float
) -> Phase1Decomposition:
    """Lemma 5.2's decomposition at the snapshot nearest to ``T = T1(r)``, with
    ``r`` moved to that snapshot's time along the growth ``e^{rate t}`` (so that
    a run sampled on a grid is decomposed at its own ``T1``)."""
    t = np.asarray(times, float)
    k = int(np.argmin(np.abs(t - T)))
    r_k = positive(r, "r") * np.exp(rate * (t[k] - T))
    return phase1_decomposition(Ws[k], As[k], W_bar, a_bar, mu_vec, r_k)


def alignment_gap(W, a, u) -> float:
    """``1 − min_k sign(a_k) cos(w_k, u)``: 0 when every neuron points along
    ``sign(a_k) u`` (Lemma 5.2 at ``T1(r)``, ``u = μ̄``); up to 2."""
    W, a = _wa(W, a)
    u = as_vector(u, "u", W.shape[1])
    cos = (W @ u) / (np.linalg.norm(W, axis=1) * np.linalg.norm(u))
    return float(1 - np.min(np.sign(a) * cos))


__all__ += ["first_passage_time", "phase1_decomposition_at", "alignment_gap"]


def neuron_angles(W, a, ref) -> tuple[np.ndarray, np.ndarray]:
    """Signed angles (degrees) of the positive neurons (``a_k > 0``) of a 2-D net to
    the direction ``ref``, and their masses ``|a_k|‖w_k‖`` (Thm 6.2: where phase I
    leaves the neurons that later form the limit), largest mass first."""
    W, a = _wa(W, a)
    if W.shape[1] != 2:
        raise ValueError(f"neuron_angles needs 2-D nets, got dimension {W.shape[1]}")
    u = as_vector(ref, "ref", 2)
    pos = a > 0
    Wp = W[pos]
    ang = np.degrees(np.arctan2(u[0] * Wp[:, 1] - u[1] * Wp[:, 0], Wp @ u))
    mass = a[pos] * np.linalg.norm(Wp, axis=1)
    order = np.argsort(-mass)
    return ang[order], mass[order]


__all__ += ["neuron_angles"]


def axis_tilt(W, u) -> float:
    """How far a net's neurons are off the axis ``u``: ``Σ_k ‖w_k^⊥‖‖w_k‖ / Σ_k ‖w_k‖²``
    (``w_k^⊥`` the part of ``w_k`` orthogonal to ``u``); 0 iff every neuron lies on
    the axis, the net is then a function of ``⟨u, x⟩`` (Fig. 1 middle)."""
    W = as_matrix(W, "W")
    u = as_vector(u, "u", W.shape[1])
    u = u / np.linalg.norm(u)
    perp = np.linalg.norm(W - np.outer(W @ u, u), axis=1)
    norms = np.linalg.norm(W, axis=1)
    return float((perp * norms).sum() / (norms**2).sum())


__all__ += ["axis_tilt"]


def phase1_argmax(
    X, y, alpha: float, w0, restarts: int = 8, seed: int = 0
) -> np.ndarray:
    """The unit vector maximising ``G(w) = (1/2n) Σ_i y_i φ(w·x_i)`` near ``w0`` (any
    dimension): where phase I (Lemma 5.2) sends the neurons of the hinted set
    (Thm 6.2). Nelder–Mead on ``w/‖w‖`` from ``w0`` and ``restarts`` perturbed
    starts."""
    X, y = as_xy(X, y)
    w0 = as_vector(w0, "w0", X.shape[1])
    alpha = _alpha(alpha)
    rng = np.random.default_rng(seed)

    def minus_G(w):
        w = w / np.linalg.norm(w)
        return -float(leaky_relu(X @ w, alpha) @ y) / (2 * len(y))

    starts = [w0] + [
        w0 + 0.05 * np.linalg.norm(w0) * rng.standard_normal(len(w0))
        for _ in range(restarts)
    ]
    opts = dict(xatol=1e-12, fatol=1e-15, maxiter=20000)
    best = min(
        (minimize(minus_G, s, method="Nelder-Mead", options=opts) for s in starts),
        key=lambda r: r.fun,
    )
    return best.x / np.linalg.norm(best.x)


__all__ += ["phase1_argmax"]


def alignment_constant(W, a, u, b, r: float) -> float:
    """Lemma 5.2's alignment at ``T1(r)`` per neuron, in the lemma's units:
    ``max_k c_k √m |b̄_k| / r²`` with ``c_k = ‖w_k/‖w_k‖ − sign(a_k) ū‖`` (the chord
    to ``sign(a_k) ū``, ``= 2 sin(angle/2)``). From ``w_k = r b̄_k μ̄ + Δw_k`` and
    ``‖Δw_k‖ ≤ C r³/√m`` the angle's sine is at most ``C r²/(√m |b̄_k|)``, so this
    is at most about ``C``: a neuron with a small ``|b̄_k|`` (its init nearly
    orthogonal to the top eigenvector) is allowed a proportionally larger angle."""
    W, a = _wa(W, a)
    u = as_vector(u, "u", W.shape[1])
    b = as_vector(b, "b", W.shape[0])
    r = positive(r, "r")
    w_dir = W / np.linalg.norm(W, axis=1, keepdims=True)
    target = np.sign(a)[:, None] * (u / np.linalg.norm(u))[None, :]
    chord = np.linalg.norm(w_dir - target, axis=1)
    return float(np.max(chord * np.sqrt(W.shape[0]) * np.abs(b)) / r**2)


__all__ += ["alignment_constant"]


def direction_distance(W, a, W_ref, a_ref) -> float:
    """``‖θ/‖θ‖ − θ_ref/‖θ_ref‖‖`` for ``θ = (W, a)``: the distance of two
    parameter directions on the unit sphere (Thm 5.5, Thm 5.6)."""
    W, a = _wa(W, a)
    W_ref, a_ref = _wa(W_ref, a_ref)
    u = np.r_[W.ravel(), a] / parameter_norm(W, a)
    v = np.r_[W_ref.ravel(), a_ref] / parameter_norm(W_ref, a_ref)
    if u.shape != v.shape:
        raise ValueError(f"θ and θ_ref differ in shape: {W.shape} and {W_ref.shape}")
    return float(np.linalg.norm(u - v))


def direction_at_distance(W, a, eps: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """A unit direction at distance exactly ``eps`` (``0 < eps ≤ 2``) from
    ``θ/‖θ‖``, turned towards a random direction ``rng`` draws (Thm 5.6's start
    near a local-max-margin direction)."""
    W, a = _wa(W, a)
    eps = positive(eps, "eps")
    if eps > 2:
        raise ValueError(f"eps must be at most 2 (the sphere's diameter), got {eps}")
    u = np.r_[W.ravel(), a] / parameter_norm(W, a)
    xi = rng.standard_normal(u.shape)
    xi -= (xi @ u) * u
    xi /= np.linalg.norm(xi)
    phi = 2 * np.arcsin(eps / 2)  # the chord eps subtends the angle phi
    v = np.cos(phi) * u + np.sin(phi) * xi
    return v[: W.size].reshape(W.shape), v[W.size :]


__all__ += ["direction_distance", "direction_at_distance"]


def axis_share_log10_time(
    c_plus, c_minus, times, x0: float, alpha: float, share: float = 0.01
) -> float:
    """Fig. 1 middle, late phase on the axis: ``log10 t`` at which the share
    ``c_−/(c_+ + c_−)`` of the ``−e1`` neurons falls to ``share``, extrapolated
    from a run's late snapshots (masses ``c_±`` at ``times``, last one latest) by
    the two late-phase laws: ``c_− ∝ c_+^α`` (``D_− = α D_+``) and
    ``ln t = x0 (c_+ + α c_−) + const`` (the margin ``q_*`` of the points
    ``(x0, ±h)`` that carry the loss grows like ``ln t``); the constant is the
    median of ``ln t − q_*`` over the snapshots given."""
    c_plus, c_minus = np.asarray(c_plus, float), np.asarray(c_minus, float)
    times = np.asarray(times, float)
    alpha = _alpha(alpha)
    if not 0 < share < 1:
        raise ValueError(f"share must be in (0, 1), got {share}")
    target = share / (1 - share)  # c_−/c_+ at that share
    ratio_end = c_minus[-1] / c_plus[-1]
    c_p = c_plus[-1] * (ratio_end / target) ** (1 / (1 - alpha))
    offset = np.median(np.log(times) - x0 * (c_plus + alpha * c_minus))
    return float((x0 * c_p * (1 + alpha * target) + offset) / np.log(10))


__all__ += ["axis_share_log10_time"]


def limit_errors(snapshots, X_eval, limit_values, alpha: float) -> np.ndarray:
    """:func:`limit_error` of each snapshot (a mapping with ``"W"``, ``"a"``) of a
    run: the distance of ``θ(t)/‖θ(t)‖`` to a limit function along the flow
    (Thm 4.3, Thm 6.2)."""
    return np.array(
        [limit_error(s["W"], s["a"], X_eval, limit_values, alpha) for s in snapshots]
    )


def normalized_margins(snapshots, X, y, alpha: float) -> np.ndarray:
    """:func:`normalized_margin` of each snapshot (``"W"``, ``"a"``) of a run."""
    return np.array([normalized_margin(s["W"], s["a"], X, y, alpha) for s in snapshots])


def log_time_slope(times, errors) -> float:
    """Least-squares slope of ``log error`` against ``log ln t``: ``−p`` when the
    error decays like ``(ln t)^{−p}`` (Thm 6.2 beyond the plane: a tilt the hint
    points do not pin decays with ``p = ½``). Needs ``t > 1``, errors > 0."""
    t = np.asarray(times, float)
    e = np.asarray(errors, float)
    if t.shape != e.shape or t.ndim != 1 or len(t) < 2:
        raise ValueError(f"times and errors must be 1-D of one length >= 2: {t.shape}")
    if np.any(t <= 1) or np.any(e <= 0):
        raise ValueError("log_time_slope needs times > 1 and errors > 0")
    return float(np.polyfit(np.log(np.log(t)), np.log(e), 1)[0])


__all__ += ["limit_errors", "normalized_margins", "log_time_slope"]


def positive_neuron_paths(snapshots, ref) -> tuple[np.ndarray, np.ndarray]:
    """Thm 6.2 (2-D): the signed angle (degrees) to ``ref`` and the share of the
    positive mass ``Σ_{a_j>0} |a_j|‖w_j‖`` of every positive neuron (``a_k > 0`` at
    the last snapshot; a balanced flow keeps the signs), snapshot by snapshot:
    two arrays ``(snapshots, positive neurons)``, neurons in index order, so a
    neuron can be followed from phase I to the limit."""
    pos = np.asarray(snapshots[-1]["a"]) > 0
    u = as_vector(ref, "ref", 2)
    angles, shares = [], []
    for s in snapshots:
        W = as_matrix(s["W"], "W")[pos]
        if W.shape[1] != 2:
            raise ValueError(f"positive_neuron_paths needs 2-D nets, got {W.shape[1]}")
        angles.append(np.degrees(np.arctan2(u[0] * W[:, 1] - u[1] * W[:, 0], W @ u)))
        mass = np.abs(np.asarray(s["a"])[pos]) * np.linalg.norm(W, axis=1)
        shares.append(mass / mass.sum())
    return np.array(angles), np.array(shares)


def final_split(angles, shares, spread_deg: float, share: float = 0.01):
    """The first snapshot from which on, at every later snapshot, the positive
    neurons that carry more than ``share`` of the positive mass span more than
    ``spread_deg`` degrees (``angles``, ``shares`` from
    :func:`positive_neuron_paths`); ``None`` if the last snapshot does not (the
    run ends with its positive neurons together, as at ½φ of Thm 6.2)."""
    angles, shares = np.asarray(angles, float), np.asarray(shares, float)
    if angles.shape != shares.shape or angles.ndim != 2:
        raise ValueError(f"angles and shares must be 2-D of one shape: {angles.shape}")
    big = shares > share
    hi = np.where(big, angles, -np.inf).max(axis=1)
    lo = np.where(big, angles, np.inf).min(axis=1)
    apart = hi - lo > spread_deg
    if not apart[-1]:
        return None
    together = np.flatnonzero(~apart)
    return int(together[-1] + 1) if len(together) else 0


__all__ += ["positive_neuron_paths", "final_split"]


def phase1_landscape(X, y, alpha: float, ref, n_angles: int = 7200):
    """Phase I's objective ``G`` (Lemma 5.2, :func:`phase1_objective`) on the
    unit circle of 2-D data, measured from ``ref``: the angles to ``ref`` in
    degrees (in ``[−180, 180)``), ``G`` there, and the angles of ``G``'s local
    maxima (where phase I can leave neurons; Thm 6.2's regime is one maximum,
    inside the band ``|angle| ≤ arctan(ε/K)``)."""
    u = as_vector(ref, "ref", 2)
    angles = np.linspace(-np.pi, np.pi, int(n_angles), endpoint=False)
    G = phase1_objective(X, y, alpha, angles)
    offset = np.angle(np.exp(1j * (angles - np.arctan2(u[1], u[0]))))
    return np.degrees(offset), G, np.degrees(offset[local_maxima(G)])


def fitted_smoothed_margins(log_loss, log_scale, n: int) -> np.ndarray:
    """Lyu & Li's smoothed margin (``metrics.smoothed_margin``, 2-homogeneous)
    along a run, from its records ``log_loss`` (log of the *mean* loss) and
    ``log_scale`` (``log‖θ‖``), over the snapshots whose sum loss is below
    ``log 2`` (every point fitted): a non-decreasing lower bound on the limit's
    normalized margin (Thm 6.2's failing runs are certified by it)."""
    log_sum = np.asarray(log_loss, float) + np.log(n)
    fitted = log_sum < np.log(np.log(2))
    scale = np.asarray(log_scale, float)[fitted]
    return _smoothed_margin(log_sum[fitted], scale, homogeneity=2)


def margin_with_side_neurons(w_star, w_perp, signs, share: float, X, y, alpha):
    """The normalized margin of ``½φ(⟨w*, x⟩)`` (one neuron ``(w*/√2, 1/√2)``)
    plus one neuron ``(s·share·w_perp, share)`` per sign ``s`` in ``signs``
    (Thm 6.2: is ½φ a local maximum of the margin?)."""
    w_star = as_vector(w_star, "w_star")
    w_perp = as_vector(w_perp, "w_perp", len(w_star))
    W = np.vstack([w_star / np.sqrt(2)] + [s * share * w_perp for s in signs])
    a = np.r_[2**-0.5, [share] * len(signs)]
    return normalized_margin(W, a, X, y, alpha)


__all__ += ["phase1_landscape", "fitted_smoothed_margins", "margin_with_side_neurons"]


def split_record(
    angles, shares, times, end_phase1: int, split, band_deg: float, share=0.01
) -> dict:
    """One seed's log of Thm 6.2's positive neurons (from
    :func:`positive_neuron_paths`): at the end of phase I (snapshot
    ``end_phase1``) and at the final split (:func:`final_split`, or ``None``) the
    neurons above ``share`` of the positive mass as ``"angle° (share)"``, the share
    of the positive mass outside the band ``|angle| > band_deg`` at the end of
    phase I, and the same at the last snapshot."""
    angles, shares = np.asarray(angles, float), np.asarray(shares, float)

    def shown(k):
        big = np.flatnonzero(shares[k] > share)
        big = big[np.argsort(-shares[k][big])]
        return ", ".join(f"{angles[k, j]:.1f}° ({shares[k, j]:.2f})" for j in big)

    outside = np.abs(angles[end_phase1]) > band_deg
    return {
        "end of phase I": shown(end_phase1),
        "outside the band": float(shares[end_phase1][outside].sum()),
        "split at t": float(np.asarray(times)[split]) if split is not None else np.nan,
        "at the split": shown(split) if split is not None else "",
        "at t_max": shown(-1),
    }


__all__ += ["split_record"]


@dataclass(frozen=True)
class AxisLatePhase:
    """Fig. 1 middle's late phase on the axis ``u`` (:func:`axis_late_phase`)."""

    masses: np.ndarray  # (snapshots, 2): c_+, c_− (axis_masses)
    share: np.ndarray  # c_− / (c_+ + c_−), the −u neurons' share of ‖θ‖²
    late: np.ndarray  # snapshots in the late phase (loss below the level, t > 0)
    exponent: float  # fitted d ln c_− / d ln c_+ over the late snapshots
    law_error: float  # max relative |γ / (γ1 (1 − (1 − α) s)) − 1| there


def axis_late_phase(
    snapshots, losses, times, margins, u, alpha: float, gamma1: float, level=1e-20
) -> AxisLatePhase:
    """Fig. 1 middle (the page derives it): with every neuron on the axis ``u``
    and two points carrying the loss, ``D_− = α D_+`` gives ``c_− ∝ c_+^α``, and
    the normalized margin is ``γ1 (1 − (1 − α) s)`` with ``s`` the share of the
    ``−u`` neurons. ``margins``: the run's normalized margins per snapshot;
    ``late``: snapshots with loss below ``level``."""
    masses = np.array([axis_masses(s["W"], s["a"], u) for s in snapshots])
    share = masses[:, 1] / masses.sum(axis=1)
    late = (np.asarray(losses) < level) & (np.asarray(times) > 0)
    if late.sum() < 2:
        raise ValueError(f"fewer than 2 snapshots with loss below {level:g}")
    exponent = float(np.polyfit(*np.log(masses[late]).T, 1)[0])
    law = np.abs(np.asarray(margins) / (gamma1 * (1 - (1 - _alpha(alpha)) * share)) - 1)
    return AxisLatePhase(masses, share, late, exponent, float(law[late].max()))


__all__ += ["AxisLatePhase", "axis_late_phase"]


def symmetric_limit_gap(W, a, X, y, X_eval, w_star, alpha: float):
    """Thm 4.3 on symmetric data: the relative sup error (on ``X_eval``) of the
    net's direction to ``(1+α)/4 ⟨w*, x⟩`` and its normalized margin over
    Thm 4.2's ``γ*`` (both at the net's own ``α``)."""
    limit = symmetric_limit_function(X_eval, w_star, alpha)
    err = limit_error(W, a, X_eval, limit, alpha)
    gamma = normalized_margin(W, a, X, y, alpha)
    return err, gamma / global_max_margin_symmetric(X, y, alpha)


def search_limit_errors(search, X_eval, limit_values, alpha: float):
    """Thm 4.2 ("the best nets are linear"): :func:`limit_error` of a margin
    search's best net and of its worst converged start."""
    worst = int(np.nanargmin(search.margins))
    return tuple(
        limit_error(W, a, X_eval, limit_values, alpha)
        for W, a in ((search.W, search.a), search.solutions[worst])
    )


__all__ += ["symmetric_limit_gap", "search_limit_errors"]


def phase1_setting(X, y, W_bar, a_bar, alpha: float, lr: float, rs) -> dict:
    """Lemma 5.2's setting for one draw, checked along GD with step ``lr``:
    ``lam0`` (λ0), ``lam_eff`` (GD's rate of the top mode, ``ln(1 + lr λ0)/lr``),
    ``sigma_main`` (``10⁻³ min(r)³ / (√m ‖θ̄0‖_M)``, well inside the lemma's
    ``σ ≤ r³/(√m ‖θ̄0‖_M)``, so the modes that do not grow stay below the ``r³``
    term) and ``T1[(r, c)]`` for each ``r`` on the book's clock (``c = 1``) and on
    the paper's printed one (``c = 2``: λ0 doubled)."""
    W_bar, a_bar = _wa(W_bar, a_bar)
    lam0 = lambda0(X, y, alpha)
    lam_eff = float(np.log1p(lr * lam0) / lr)
    m = W_bar.shape[0]
    sigma = 1e-3 * min(rs) ** 3 / (np.sqrt(m) * m_norm(W_bar, a_bar))
    T1 = {
        (r, c): phase1_time(r, sigma, W_bar, a_bar, c * lam_eff)
        for r in rs
        for c in (1, 2)
    }
    return dict(lam0=lam0, lam_eff=lam_eff, sigma_main=float(sigma), T1=T1)


def lemma52_statistics(
    times, Ws, As, W_bar, a_bar, X, y, T1, rs, r_main: float, lam_eff: float
) -> dict:
    """Lemma 5.2's consequences on one GD run from ``σ θ̄0`` (snapshots
    ``Ws``, ``As`` at ``times``; ``T1`` from :func:`phase1_setting`): the
    residuals ``‖Δθ‖_M`` at ``T1(r)`` for each ``r`` and their log-log slope
    against ``r`` (order 3) on the book's clock and on the printed one, the
    constant ``C = max ‖Δθ‖_M √m / r³``, how many neurons have ``r|b̄_k|`` above
    the residual, and at ``T1(r_main)`` the alignment gap, the alignment in the
    lemma's units (:func:`alignment_constant`; also of ``θ̄0`` and of the same
    neurons turned to ``sign(a_k) w*``), ``√m min|b̄_k|``
    and ``1 − cos(w*, μ̄)``."""
    mu_vec = mu(X, y)

    def residuals(clock):
        return [
            phase1_decomposition_at(
                times, Ws, As, W_bar, a_bar, mu_vec, T1[r, clock], r, clock * lam_eff
            )
            for r in rs
        ]

    book, printed = residuals(1), residuals(2)
    res = np.array([d.residual_m_norm for d in book])
    d = book[list(rs).index(r_main)]
    k = int(np.argmin(np.abs(np.asarray(times) - T1[r_main, 1])))
    m = len(d.b)
    log_r = np.log(rs)
    w_star = max_margin_separator(X, y)  # neurons along ±w* instead of ±μ̄ (a rival)
    on_wstar = np.outer(np.sign(As[k]) * np.linalg.norm(Ws[k], axis=1), w_star)
    return dict(
        residuals=res,
        slope=np.polyfit(log_r, np.log(res), 1)[0],
        slope_printed=np.polyfit(
            log_r, np.log([p.residual_m_norm for p in printed]), 1
        )[0],
        C=float(np.max(res * np.sqrt(m) / np.asarray(rs) ** 3)),
        determined=int(np.sum(d.r * np.abs(d.b) > d.residual_m_norm)),
        gap=alignment_gap(Ws[k], As[k], mu_vec),
        align=alignment_constant(Ws[k], As[k], mu_vec, d.b, d.r),
        align_init=alignment_constant(W_bar, a_bar, mu_vec, d.b, d.r),
        align_wstar=alignment_constant(on_wstar, As[k], mu_vec, d.b, d.r),
        b_min=float(np.sqrt(m) * np.abs(d.b).min()),
        gap_wstar=float(
            1 - max_margin_separator(X, y) @ mu_vec / np.linalg.norm(mu_vec)
        ),
    )


def phase1_time_scale(sweeps, sigmas, r: float, lam0: float):
    """Lemma 5.2's time scale: for runs from ``σ θ̄0`` (``sweeps``: (times,
    ``‖θ‖_M`` per snapshot) per σ), the first time ``t_r`` the norm reaches ``r``
    and ``λ0`` × the slope of ``t_r`` against ``ln(1/σ)`` (1 on the lemma's clock)."""
    t_r = np.array([first_passage_time(t, norms, r) for t, norms in sweeps])
    slope = np.polyfit(np.log(1 / np.asarray(sigmas, float)), t_r, 1)[0]
    return t_r, float(slope * lam0)


__all__ += ["phase1_setting", "lemma52_statistics", "phase1_time_scale"]


def kkt_candidates(X, y, alpha: float, search) -> np.ndarray:
    """Fig. 1 left: ``(γ / best, KKT stationarity residual)`` of every converged
    start of a margin search (:func:`search_max_margin`), one row each."""
    rows = [
        (g / search.best, kkt_check(W, a, X, y, alpha).stationarity)
        for g, (W, a) in zip(search.margins, search.solutions)
        if np.isfinite(g)
    ]
    return np.array(rows)


def kkt_row(W, a, X, y, alpha: float, gamma_ref: float, start: str):
    """Fig. 1 left's table of reachable KKT directions: ``start``, the margin over
    ``gamma_ref``, the KKT stationarity residual and the boundary's nonlinearity
    (:func:`boundary_nonlinearity`) of a net; ``None`` if it does not separate
    the data (a failed start)."""
    if (np.asarray(y) * two_layer_output(W, a, X, alpha)).min() <= 0:
        return None
    return dict(
        start=start,
        ratio=normalized_margin(W, a, X, y, alpha) / gamma_ref,
        stationarity=kkt_check(W, a, X, y, alpha).stationarity,
        nonlinearity=boundary_nonlinearity(W, a, alpha),
    )


def bent_kkt_residual(h: float, alpha: float) -> float:
    """Clarke KKT residual of :func:`bent_kkt_example` at ``h`` (slopes in
    ``[α, 1]`` at its kinks): 0 where the construction is a KKT point."""
    X, y, W, a = bent_kkt_example(h, alpha)
    return kkt_check(W, a, X, y, alpha, kink_tol=1e-9).stationarity


__all__ += ["kkt_candidates", "kkt_row", "bent_kkt_residual"]


_REFLECTIONS = (None, "none", "a_positive", "b_negative")


def gradient_flow_from_init(
    ds,
    width: int,
    alpha: float,
    init_scale: float,
    init_seed: int,
    t_max: float,
    *,
    init: str = "gaussian",
    second_layer_scale: float = 1.0,
    reflect: str | None = None,
    **flow,
):
    """Gradient flow (``flows.gradient_flow``, the paper's §3 dynamics) of a
    ``width``-neuron leaky ReLU net on ``ds`` from a drawn initialisation, to
    ``t_max``; ``flow`` goes to the integrator (``n_snapshots``, ``t_min``,
    ``snapshot_times``, ``rtol``, ...).

    Parameters
    ----------
    init, init_scale, second_layer_scale, init_seed
        The draw of :class:`~twolayer.models.TwoLayerNet` (``init="balanced"``:
        Thm 4.4's balanced init ``a_k = s_k ‖w_k‖``; ``"gaussian"``: Thm 4.3's).
    reflect
        ``None``: the drawn network is trained as it is. Otherwise the network is
        rebuilt from its weights after reflecting ``(w_k, a_k) → −(w_k, a_k)``
        for the neurons the rule names: ``"none"`` (no neuron; the same run,
        stored under another key), ``"a_positive"`` (``a_k > 0``: every
        ``s_k = −1``, the bad event of Thm 4.4/§6) or ``"b_negative"``
        (``b̄_k = sign(<w̄_k, μ> + ā_k) < 0``, Lemma 5.1's embedding vector:
        afterwards every neuron is in the good half).

    Returns
    -------
    The run's :class:`~twolayer.flows.Trajectory`.
    """
    from .. import flows  # here: flows imports the models this module uses
    from ..models import TwoLayerNet

    if reflect not in _REFLECTIONS:
        raise ValueError(f"reflect must be one of {_REFLECTIONS}, got {reflect!r}")
    net = TwoLayerNet(
        ds.X.shape[1],
        width,
        alpha,
        init,
        init_scale=init_scale,
        second_layer_scale=second_layer_scale,
        seed=init_seed,
    )
    if reflect is not None:
        W0, a0 = net.weights()
        if reflect == "b_negative":
            b = np.sign(W0 @ mu(ds.X, ds.y) + a0)
            W0, a0 = W0 * b[:, None], a0 * b
        else:
            s = np.where((reflect == "a_positive") & (a0 > 0), -1.0, 1.0)
            W0, a0 = W0 * s[:, None], a0 * s
        net = TwoLayerNet.from_weights(W0, a0, alpha=alpha)
    return flows.gradient_flow(net, ds, t_max, **flow)


def hinted_limit_statistics(runs, ds, grid, target, alpha: float, eps: float):
    """Thm 4.4/§6 on the hinted set, per run: the error of the final direction to
    the limit ``target`` on ``grid`` (:func:`limit_error`), its normalized margin
    and the fitted smoothed margins along the run (:func:`fitted_smoothed_margins`),
    both in units of ``ε/2`` (the margin of ``½φ(w*·x)``-type limits on the hinted
    set). Returns ``(errors, margins, smoothed)``."""
    eps = positive(eps, "eps")
    ends = [r.snapshots[-1] for r in runs]
    err = np.array([limit_error(e["W"], e["a"], grid, target, alpha) for e in ends])
    ratio = normalized_margins(ends, ds.X, ds.y, alpha) / (eps / 2)
    smooth = [
        fitted_smoothed_margins(r.records["log_loss"], r.records["log_scale"], ds.n)
        / (eps / 2)
        for r in runs
    ]
    return err, ratio, smooth


def lemma52_run_statistics(run: dict, rs, r_main: float, sigmas) -> dict:
    """Lemma 5.2's three consequences on one seed's GD runs: ``run`` holds ``ds``,
    ``W_bar``, ``a_bar``, :func:`phase1_setting`'s entries, ``main`` (the run from
    ``σ_main θ̄0``) and ``sweep`` (one run from ``σ θ̄0`` per ``sigmas``).
    :func:`lemma52_statistics` of the main run, plus ``t_r`` and ``rate``
    (:func:`phase1_time_scale` of the sweep at ``r_main``)."""
    tr, ds = run["main"], run["ds"]
    out = lemma52_statistics(
        tr.times,
        tr.param("W"),
        tr.param("a"),
        run["W_bar"],
        run["a_bar"],
        ds.X,
        ds.y,
        run["T1"],
        rs,
        r_main,
        run["lam_eff"],
    )
    sweeps = [
        (sw.times, [m_norm(s["W"], s["a"]) for s in sw.snapshots])
        for sw in run["sweep"]
    ]
    out["t_r"], out["rate"] = phase1_time_scale(sweeps, sigmas, r_main, run["lam0"])
    return out


def lemma54_coupling(
    ds, m: int, alpha: float, init_seed: int, sigmas, r: float, offsets, lam0, **tol
) -> np.ndarray:
    """Lemma 5.4's coupling on one init: the relative distance of the flow from
    ``σ θ̄0`` at ``T12 + t`` (``T12 = T1 + T2``, :func:`phase1_time`) to the
    embedded two-neuron flow ``π_b̄(θ̃(t))`` (Lemma 5.1, :func:`embed`), started
    at ``r · phase2_start`` and run for ``T2 = ln(1/r)/λ0``. ``θ̄0``: an
    ``m``-neuron Gaussian draw of scale 1, seed ``init_seed``; ``tol`` goes to
    the integrator. Returns an array, rows ``sigmas``, columns ``offsets`` (t)."""
    from .. import flows  # here: flows imports the models this module uses
    from ..models import TwoLayerNet

    offsets = np.asarray(offsets, float)
    mu_vec = mu(ds.X, ds.y)
    W_bar, a_bar = TwoLayerNet(
        ds.X.shape[1], m, alpha=alpha, init="gaussian", init_scale=1.0, seed=init_seed
    ).weights()
    b_bar = embedding_vector(W_bar, a_bar, mu_vec)
    if not is_good_embedding(b_bar):
        raise ValueError(f"seed {init_seed}: the embedding vector b̄ has one sign")
    W_hat, a_hat = phase2_start(b_bar, mu_vec)
    T2 = np.log(1 / r) / lam0
    ref_net = TwoLayerNet.from_weights(r * W_hat, r * a_hat, alpha)
    ref = flows.gradient_flow(
        ref_net, ds, T2 + offsets[-1], snapshot_times=T2 + offsets, **tol
    )
    targets = [embed(s["W"], s["a"], b_bar) for s in ref.snapshots]
    rows = []
    for sig in sigmas:
        T12 = phase1_time(1.0, sig, W_bar, a_bar, lam0)  # T1(r) + T2(r), any r
        net = TwoLayerNet.from_weights(sig * W_bar, sig * a_bar, alpha)
        run = flows.gradient_flow(
            net, ds, T12 + offsets[-1], snapshot_times=T12 + offsets, **tol
        )
        rows.append(
            [
                parameter_norm(s["W"] - Wt, s["a"] - at) / parameter_norm(Wt, at)
                for s, (Wt, at) in zip(run.snapshots, targets)
            ]
        )
    return np.array(rows)


def thm55_two_neuron_start(w_star, init_norm: float, rng):
    """Thm 5.5's start: two neurons of norm ``init_norm`` with random directions,
    ``<w1, w*> > 0 > <w2, w*>``, ``a1 = ‖w1‖``, ``a2 = −‖w2‖`` (balanced).
    ``rng``: a NumPy generator (two standard normal draws of shape (2, d))."""
    w_star = as_vector(w_star, "w_star")
    v = rng.standard_normal((2, len(w_star)))
    v[0] *= np.sign(v[0] @ w_star)
    v[1] *= -np.sign(v[1] @ w_star)
    W0 = positive(init_norm, "init_norm") * v / np.linalg.norm(v, axis=1, keepdims=True)
    a0 = np.array([np.linalg.norm(W0[0]), -np.linalg.norm(W0[1])])
    return W0, a0


def thm55_flow(ds, w_star, alpha: float, init_norm: float, seed: int, t_max: float):
    """Gradient flow to ``t_max`` from :func:`thm55_two_neuron_start` (generator
    ``default_rng(seed)``), 40 log-spaced snapshots from ``t = 0.1``."""
    from .. import flows  # here: flows imports the models this module uses
    from ..models import TwoLayerNet

    W0, a0 = thm55_two_neuron_start(w_star, init_norm, np.random.default_rng(seed))
    net = TwoLayerNet.from_weights(W0, a0, alpha)
    return flows.gradient_flow(net, ds, t_max, n_snapshots=40, t_min=1e-1)


def thm55_unequal_start(w_star, norm: float, ratio: float, rng):
    """Thm 5.5's start with unequal neurons: directions as
    :func:`thm55_two_neuron_start` (``<w1, w*> > 0 > <w2, w*>``, balanced
    ``a1 = ‖w1‖``, ``a2 = −‖w2‖``), ``‖w1‖ = norm`` and ``‖w2‖ = norm / ratio``
    (``ratio > 1``: the positive neuron larger; ``< 1``: the negative one)."""
    ratio = positive(ratio, "ratio")
    W0, a0 = thm55_two_neuron_start(w_star, 1.0, rng)
    scale = positive(norm, "norm") * np.array([1.0, 1.0 / ratio])
    return W0 * scale[:, None], a0 * scale


def norm_imbalance(W, a) -> float:
    """``v = (‖θ1‖² − ‖θ2‖²)/(‖θ1‖² + ‖θ2‖²)`` of a two-neuron net, ``θk = (w_k,
    a_k)``: 0 at Thm 5.5's limit ``½(w*, −w*, 1, −1)``, ±1 when one neuron is 0."""
    W, a = _wa(W, a)
    if W.shape[0] != 2:
        raise ValueError(f"a two-neuron net is needed, got {W.shape[0]} neurons")
    n = np.sum(W**2, axis=1) + a**2
    return float((n[0] - n[1]) / (n[0] + n[1]))


def imbalance_exponent(log10_t, v, lo: float = 1e-6, hi: float = 1e-2) -> float:
    """The equalisation exponent ``d ln|v| / d ln t``: the least-squares slope of
    ``log10|v|`` against ``log10 t`` over the snapshots with ``lo ≤ |v| ≤ hi`` (a
    window above the integrator's resolution); NaN with fewer than 3 there."""
    lt, av = np.asarray(log10_t, float), np.abs(np.asarray(v, float))
    keep = (av >= lo) & (av <= hi) & np.isfinite(lt)
    if keep.sum() < 3:
        return float("nan")
    return float(np.polyfit(lt[keep], np.log10(av[keep]), 1)[0])


__all__ += ["thm55_unequal_start", "norm_imbalance", "imbalance_exponent"]


def thm56_local_flow(
    ds,
    limit,
    m: int,
    alpha: float,
    norm: float,
    eps: float,
    gamma_star: float,
    t_max: float,
    seed: int,
) -> dict:
    """Thm 5.6 on one draw (generator ``default_rng(seed)``): a good embedding
    vector ``b`` (``b_1 > 0 > b_2``, Lemma 5.1) of the two-neuron ``limit``
    (:func:`two_neuron_limit`), the flow to ``t_max`` from norm ``norm`` at
    distance ``eps`` from ``θ̄* = π_b(limit)`` (:func:`direction_at_distance`)
    and from a random direction at the same norm. Returns, per start ``near`` /
    ``random``, the final distance to ``θ̄*`` (:func:`direction_distance`) and
    the normalized margin / ``gamma_star`` at the start (``*_margin0``) and end
    (``*_margin``)."""
    from .. import flows  # here: flows imports the models this module uses
    from ..models import TwoLayerNet

    rng = np.random.default_rng(seed)
    b = rng.standard_normal(m)
    b[0], b[1] = abs(b[0]), -abs(b[1])  # a good embedding vector
    W_t, a_t = embed(*limit, b)
    d = ds.X.shape[1]
    starts = dict(
        near=direction_at_distance(W_t, a_t, eps, rng),
        random=unit_direction(rng.standard_normal((m, d)), rng.standard_normal(m)),
    )
    out = {}
    for name, (W0, a0) in starts.items():
        net = TwoLayerNet.from_weights(norm * W0, norm * a0, alpha)
        end = flows.gradient_flow(net, ds, t_max, n_snapshots=10).final
        out[name] = direction_distance(end["W"], end["a"], W_t, a_t)
        for when, (W, a) in (("0", (W0, a0)), ("", (end["W"], end["a"]))):
            gamma = normalized_margin(W, a, ds.X, ds.y, alpha)
            out[f"{name}_margin{when}"] = gamma / gamma_star
    return out


def one_neuron_net(w) -> tuple[np.ndarray, np.ndarray]:
    """The unit-norm one-neuron net ``(w/√2, 1/√2)`` of a unit vector ``w``; it
    computes ``½φ(⟨w, x⟩)``: Thm 6.2's limit when ``w = w*``, phase I's direction
    (Lemma 5.2) when ``w`` is the argmax of ``G``."""
    w = as_vector(w, "w")
    if not np.isclose(np.linalg.norm(w), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"w must be a unit vector, got norm {np.linalg.norm(w)}")
    return w[None, :] / np.sqrt(2), np.array([2**-0.5])


def symmetric_phase1_gap(X, y, X_eval, limit_values, alpha: float):
    """Thm 4.3's rival on symmetric data: phase I's direction ``μ̄ = μ/‖μ‖``
    (Lemma 5.2) as the net ``½(μ̄, −μ̄, 1, −1)`` (:func:`two_neuron_limit`). Returns
    its :func:`limit_error` to ``limit_values`` on ``X_eval`` and its linear
    margin ``min_i y_i ⟨μ̄, x_i⟩`` over ``γ_lin`` (:func:`linear_margin`), the
    margin ratio of that direction (it computes ``(1+α)/4 ⟨μ̄, x⟩``)."""
    X, y = as_xy(X, y)
    m = mu(X, y)
    mu_bar = m / np.linalg.norm(m)
    err = limit_error(*two_neuron_limit(mu_bar), X_eval, limit_values, alpha)
    return err, float((y * (X @ mu_bar)).min() / linear_margin(X, y))


def max_relative_drop(series) -> float:
    """The largest relative decrease ``(s_k − s_{k+1}) / |s_{k+1}|`` between
    consecutive values over every sequence in ``series`` (0 if none decreases):
    Lyu & Li's smoothed margin is non-decreasing along gradient flow (Thm 6.2's
    certificate), so a drop measures the integrator's error."""
    drops = [np.max(np.r_[0.0, -np.diff(s) / np.abs(s[1:])]) for s in series]
    return float(max(drops, default=0.0))


__all__ += ["one_neuron_net", "symmetric_phase1_gap", "max_relative_drop"]


def bent_kkt_nonlinearity(h: float, alpha: float) -> float:
    """The exact :func:`boundary_nonlinearity` of :func:`bent_kkt_example`'s net:
    its positive region is a half-plane plus two wedges of angle
    ``arctan((1−α)/(h(3+α)))`` each (Fig. 1 left, the construction's docstring),
    so the fraction of the unit circle where its sign differs from the closest
    half-plane is ``arctan((1−α)/(h(3+α)))/π``."""
    alpha = _alpha(alpha)
    h = positive(h, "h")
    return float(np.arctan((1 - alpha) / (h * (3 + alpha))) / np.pi)


__all__ += ["bent_kkt_nonlinearity"]
