"""Phuong & Lampert (ICLR 2021): the inductive bias of ReLU networks on
orthogonally separable data. Definitions and checks of §2-4 and App. A-C."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..metrics import activation_pattern, row_cosines
from ..validation import as_matrix, as_vector, as_xy
from .margins import NotSeparableError, svm


def is_orthogonally_separable(X, y) -> bool:
    """Orthogonal separability (§2): ``x_i·x_j > 0`` whenever ``y_i = y_j``
    and ``x_i·x_j ≤ 0`` whenever ``y_i ≠ y_j``."""
    X, y = as_xy(X, y)
    G = X @ X.T
    same = np.equal.outer(y, y)
    return bool(np.all(G[same] > 0) and np.all(G[~same] <= 0))


def _class(X, y, sign: int, name: str) -> np.ndarray:
    part = X[y == sign]
    if len(part) == 0:
        raise ValueError(f"y has no {name} examples: both classes are needed")
    return part


def max_margin_directions(X, y) -> tuple[np.ndarray, np.ndarray]:
    """``(w+, w−)`` of eqs. (6)-(7): ``w± = argmin ‖w‖² s.t. w·x_i ≥ 1`` for all
    ``i`` with ``y_i = ±1``.

    Raises :class:`~twolayer.theory.margins.NotSeparableError` if one class does
    not lie in an open half-space through the origin.
    """
    X, y = as_xy(X, y)
    out = []
    for sign, name in ((1, "positive"), (-1, "negative")):
        part = _class(X, y, sign, name)
        try:
            out.append(svm(part, np.ones(len(part))).w)
        except NotSeparableError as exc:
            raise NotSeparableError(f"the {name} examples admit no w with w·x_i >= 1: {exc}") from exc
    return out[0], out[1]


@dataclass(frozen=True)
class SupportInfo:
    """Support examples of w± (tight constraints) and whether each set spans R^d
    (a hypothesis of Theorem 1)."""

    positive: np.ndarray  # indices into X
    negative: np.ndarray
    positive_spans: bool
    negative_spans: bool


def support_examples(X, y, tol: float = 1e-6) -> SupportInfo:
    """Indices of the positive and negative support examples and the span check."""
    X, y = as_xy(X, y)
    info = []
    for sign, name in ((1, "positive"), (-1, "negative")):
        idx = np.flatnonzero(y == sign)
        sol = svm(_class(X, y, sign, name), np.ones(len(idx)), tol=tol)
        sup = idx[sol.support]
        info.append((sup, np.linalg.matrix_rank(X[sup]) == X.shape[1] if len(sup) else False))
    return SupportInfo(info[0][0], info[1][0], bool(info[0][1]), bool(info[1][1]))


def extremal_sectors(X, y) -> tuple[np.ndarray, np.ndarray]:
    """``(σ+, σ−)`` of Lemma 2, integer arrays in {−1, 0, 1}^n.

    ``σ+_j = 1`` if ``y_j = 1``; ``−1`` if ``y_j = −1`` and ``x_j·x_i < 0`` for
    some positive ``i``; ``0`` otherwise. ``σ−`` symmetrically.
    """
    X, y = as_xy(X, y)
    G = X @ X.T
    out = []
    for sign in (1, -1):
        own = y == sign
        _class(X, y, sign, "positive" if sign == 1 else "negative")
        opposed = np.any(G[:, own] < 0, axis=1)
        sigma = np.where(own, 1, np.where(opposed, -1, 0))
        out.append(sigma.astype(int))
    return out[0], out[1]


def G_function(w, X, y) -> float:
    """``G(w) = −Σ_i ℓ'_i(0) ρ(w·x_i)`` on the unit sphere (§4.1). For the
    logistic loss ``ℓ'_i(0) = −y_i/2``, so ``G(w) = ½ Σ_i y_i ρ(ŵ·x_i)``."""
    X, y = as_xy(X, y)
    w = as_vector(w, "w", X.shape[1])
    nw = np.linalg.norm(w)
    if nw == 0:
        raise ValueError("w must be non-zero (G is defined on the sphere)")
    return float(0.5 * y @ np.maximum(X @ (w / nw), 0.0))


def G_ascent(X, y, starts: int = 200, sign: int = 1, steps: int = 400, lr: float = 0.5,
             seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Projected (sub)gradient ascent of ``sign·G`` on the unit sphere from
    ``starts`` uniformly random points, all at once (Lemma 2's multi-start check).

    ``∇G(w) = ½ Σ_i y_i 1[w·x_i > 0] x_i`` for unit ``w``; each step moves along
    the great circle towards the gradient by an angle ``lr/√k`` (never past the
    gradient's own direction, the maximiser of ``G`` on a linear piece), so the
    iterates settle on a maximiser of the piecewise-linear ``G``. Returns
    ``(start points, end points)``, each ``(starts, d)``.
    """
    X, y = as_xy(X, y)
    if sign not in (1, -1):
        raise ValueError(f"sign must be 1 (maximise G) or -1 (minimise), got {sign!r}")
    if int(starts) != starts or starts < 1 or int(steps) != steps or steps < 1:
        raise ValueError(f"starts and steps must be positive integers, got {starts!r}, {steps!r}")
    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((int(starts), X.shape[1]))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    W = W0.copy()
    for k in range(1, int(steps) + 1):
        grad = sign * 0.5 * ((X @ W.T > 0) * y[:, None]).T @ X
        tangent = grad - (grad * W).sum(axis=1, keepdims=True) * W
        t_norm = np.linalg.norm(tangent, axis=1, keepdims=True)
        g_norm = np.maximum(np.linalg.norm(grad, axis=1, keepdims=True), 1e-300)
        # a geodesic step of angle lr/√k, never past the gradient's own direction
        angle = np.minimum(lr / np.sqrt(k), np.arcsin(np.clip(t_norm / g_norm, 0.0, 1.0)))
        W = np.cos(angle) * W + np.sin(angle) * tangent / np.maximum(t_norm, 1e-300)
        W /= np.linalg.norm(W, axis=1, keepdims=True)
    return W0, W


def in_sector(W, X, sigma) -> np.ndarray:
    """For each row ``w_j``: is ``sign(X w_j) == σ`` exactly?"""
    return np.all(activation_pattern(W, X) == np.asarray(sigma)[None, :], axis=1)


@dataclass(frozen=True)
class NeuronGroups:
    """The partition of the proof of Theorem 1: ``J0`` (dead: ``w_j·x_i ≤ 0``
    for all i), ``J+`` (``a_j > 0`` and ``w_j ∈ S_{σ+}``), ``J−`` (``a_j < 0``
    and ``w_j ∈ S_{σ−}``), and ``other`` (none of these yet)."""

    dead: np.ndarray
    plus: np.ndarray
    minus: np.ndarray
    other: np.ndarray


def neuron_groups(W, a, X, y) -> NeuronGroups:
    """Classify each neuron into J0, J+, J− or other (Lemma 1 of §4.1)."""
    X, y = as_xy(X, y)
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    sp, sm = extremal_sectors(X, y)
    pat = activation_pattern(W, X)
    dead = np.all(pat <= 0, axis=1)
    plus = ~dead & (a > 0) & in_sector(W, X, sp)
    minus = ~dead & (a < 0) & in_sector(W, X, sm)
    return NeuronGroups(dead, plus, minus, ~(dead | plus | minus))


def cosines_to_max_margin(W, a, w_plus, w_minus) -> np.ndarray:
    """``cos(w_j, w+)`` for ``a_j > 0`` and ``cos(w_j, w−)`` for ``a_j < 0``
    (Theorem 1: → 1 for every live neuron)."""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    return np.where(a > 0, row_cosines(W, w_plus), row_cosines(W, w_minus))


def balancedness(W, a, a0) -> tuple[int, float]:
    """Lemma A.4 check. Returns the number of neurons whose output-weight sign
    differs from its initial sign, and ``max_j |a_j² − ‖w_j‖²|`` (conserved by
    gradient flow; 0 for a balanced init)."""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    a0 = as_vector(a0, "a0", W.shape[0])
    flips = int(np.sum(np.sign(a) != np.sign(a0)))
    return flips, float(np.max(np.abs(a ** 2 - (W ** 2).sum(axis=1))))


@dataclass(frozen=True)
class LemmaC1:
    """The limit of Lemma C.1 and its KKT residuals."""

    W: np.ndarray
    a: np.ndarray
    lambdas: np.ndarray
    min_margin: float          # feasibility: min_i y_i f(x_i) (should be 1)
    slackness: float           # max_i λ_i |y_i f(x_i) − 1|
    stationarity: float        # ‖θ − Σ λ_i ∇q_i‖ / ‖θ‖


def lemma_c1_check(X, y, u, z) -> LemmaC1:
    """Build ``W̃ = u w+ᵀ + z w−ᵀ``, ``ã = u‖w+‖ − z‖w−‖`` with ``u, z ≥ 0``,
    ``u_j z_j = 0`` rescaled to ``‖u‖ = ‖w+‖^{-1/2}``, ``‖z‖ = ‖w−‖^{-1/2}``,
    and check the KKT conditions of ``min ½‖θ‖² s.t. y_i f_θ(x_i) ≥ 1`` with
    the multipliers ``λ_i = α_i/‖w±‖`` from the SVM duals (Lemma C.1)."""
    from .margins import _margin_gradients

    X, y = as_xy(X, y)
    u, z = np.asarray(u, float), np.asarray(z, float)
    if u.shape != z.shape or u.ndim != 1:
        raise ValueError(f"u and z must be vectors of equal length, got {u.shape} and {z.shape}")
    if np.any(u < 0) or np.any(z < 0) or np.any((u > 0) & (z > 0)):
        raise ValueError("u and z must be non-negative with u_j z_j = 0")
    if np.linalg.norm(u) == 0 or np.linalg.norm(z) == 0:
        raise ValueError("u and z must both be non-zero")
    sols = [svm(_class(X, y, s, n), np.ones(int((y == s).sum()))) for s, n in ((1, "positive"), (-1, "negative"))]
    wp, wm = sols[0].w, sols[1].w
    npn, nmn = np.linalg.norm(wp), np.linalg.norm(wm)
    u = u / np.linalg.norm(u) * npn ** -0.5
    z = z / np.linalg.norm(z) * nmn ** -0.5
    W = np.outer(u, wp) + np.outer(z, wm)
    a = u * npn - z * nmn
    lam = np.zeros(len(y))
    lam[y > 0] = sols[0].duals / npn
    lam[y < 0] = sols[1].duals / nmn
    q = y * (np.maximum(X @ W.T, 0) @ a)
    theta = np.concatenate([W.ravel(), a])
    grad = _margin_gradients(W, a, X, y, 0.0)
    stat = float(np.linalg.norm(theta - lam @ grad) / np.linalg.norm(theta))
    return LemmaC1(W, a, lam, float(q.min()), float(np.max(lam * np.abs(q - 1))), stat)


def early_phase_directions(X, y) -> tuple[np.ndarray, np.ndarray]:
    """``(x̂+, x̂−)``: the normalised sums of the positive and of the negative
    examples. From a near-zero balanced init every neuron first turns towards
    one of them (the early phase, §4): the rival of Theorem 1's ``w±``."""
    X, y = as_xy(X, y)
    out = []
    for sign, name in ((1, "positive"), (-1, "negative")):
        s = _class(X, y, sign, name).sum(axis=0)
        out.append(s / np.linalg.norm(s))
    return out[0], out[1]


def closer_to_limit(W, a, w_plus, w_minus, x_plus, x_minus) -> np.ndarray:
    """Per neuron: is ``w_j`` closer in angle to its Theorem 1 direction
    (``w+`` if ``a_j > 0``, ``w−`` otherwise) than to its early-phase
    direction (``x̂+`` / ``x̂−``)?"""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    to_limit = cosines_to_max_margin(W, a, w_plus, w_minus)
    to_early = cosines_to_max_margin(W, a, x_plus, x_minus)
    return to_limit > to_early


def limit_normalized_margin(w_plus, w_minus) -> float:
    """Normalised margin ``min_i y_i f(x_i)/‖θ‖²`` of Lemma C.1's limit:
    ``1/(2(‖w+‖ + ‖w−‖))`` (``‖u‖² = 1/‖w+‖``, ``‖z‖² = 1/‖w−‖``, min margin 1)."""
    return 1.0 / (2.0 * (np.linalg.norm(w_plus) + np.linalg.norm(w_minus)))
