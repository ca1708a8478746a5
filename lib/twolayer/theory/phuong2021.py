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
            raise NotSeparableError(
                f"the {name} examples admit no w with w·x_i >= 1: {exc}"
            ) from exc
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
        info.append(
            (sup, np.linalg.matrix_rank(X[sup]) == X.shape[1] if len(sup) else False)
        )
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


def G_ascent(
    X,
    y,
    starts: int = 200,
    sign: int = 1,
    steps: int = 400,
    lr: float = 0.5,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
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
        raise ValueError(
            f"starts and steps must be positive integers, got {starts!r}, {steps!r}"
        )
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
        angle = np.minimum(
            lr / np.sqrt(k), np.arcsin(np.clip(t_norm / g_norm, 0.0, 1.0))
        )
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
    return flips, float(np.max(np.abs(a**2 - (W**2).sum(axis=1))))


@dataclass(frozen=True)
class LemmaC1:
    """The limit of Lemma C.1 and its KKT residuals."""

    W: np.ndarray
    a: np.ndarray
    lambdas: np.ndarray
    min_margin: float  # feasibility: min_i y_i f(x_i) (should be 1)
    slackness: float  # max_i λ_i |y_i f(x_i) − 1|
    stationarity: float  # ‖θ − Σ λ_i ∇q_i‖ / ‖θ‖


def lemma_c1_check(X, y, u, z) -> LemmaC1:
    """Build ``W̃ = u w+ᵀ + z w−ᵀ``, ``ã = u‖w+‖ − z‖w−‖`` with ``u, z ≥ 0``,
    ``u_j z_j = 0`` rescaled to ``‖u‖ = ‖w+‖^{-1/2}``, ``‖z‖ = ‖w−‖^{-1/2}``,
    and check the KKT conditions of ``min ½‖θ‖² s.t. y_i f_θ(x_i) ≥ 1`` with
    the multipliers ``λ_i = α_i/‖w±‖`` from the SVM duals (Lemma C.1)."""
    from .margins import margin_gradients

    X, y = as_xy(X, y)
    u, z = np.asarray(u, float), np.asarray(z, float)
    if u.shape != z.shape or u.ndim != 1:
        raise ValueError(
            f"u and z must be vectors of equal length, got {u.shape} and {z.shape}"
        )
    if np.any(u < 0) or np.any(z < 0) or np.any((u > 0) & (z > 0)):
        raise ValueError("u and z must be non-negative with u_j z_j = 0")
    if np.linalg.norm(u) == 0 or np.linalg.norm(z) == 0:
        raise ValueError("u and z must both be non-zero")
    sols = [
        svm(_class(X, y, s, n), np.ones(int((y == s).sum())))
        for s, n in ((1, "positive"), (-1, "negative"))
    ]
    wp, wm = sols[0].w, sols[1].w
    npn, nmn = np.linalg.norm(wp), np.linalg.norm(wm)
    u = u / np.linalg.norm(u) * npn**-0.5
    z = z / np.linalg.norm(z) * nmn**-0.5
    W = np.outer(u, wp) + np.outer(z, wm)
    a = u * npn - z * nmn
    lam = np.zeros(len(y))
    lam[y > 0] = sols[0].duals / npn
    lam[y < 0] = sols[1].duals / nmn
    q = y * (np.maximum(X @ W.T, 0) @ a)
    theta = np.concatenate([W.ravel(), a])
    grad = margin_gradients(W, a, X, y, 0.0)
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


def relative_progress(statistic, early_level) -> np.ndarray:
    """Where a cosine statistic stands between the early phase and Theorem 1's
    limit: ``(statistic − early_level) / (1 − early_level)``, 0 for a network
    whose neurons sit at ``x̂±`` (``early_level = cos(x̂±, w±)``), 1 for one at
    the limit ``w±`` (cosine 1). Element-wise; ``early_level`` must be < 1."""
    stat = np.asarray(statistic, float)
    early = np.asarray(early_level, float)
    if np.any(early >= 1):
        raise ValueError(f"early_level must be < 1, got {early.max()!r}")
    return (stat - early) / (1 - early)


def limit_network(W, a, w_plus, w_minus) -> np.ndarray:
    """Theorem 1's limit of the network ``(W, a)``: each row ``w_j`` replaced by
    ``‖w_j‖ w±/‖w±‖`` (``w+`` if ``a_j > 0``, ``w−`` otherwise), eq. (8) with
    the neuron's own norm."""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    dirs = np.where(
        (a > 0)[:, None],
        np.asarray(w_plus, float) / np.linalg.norm(w_plus),
        np.asarray(w_minus, float) / np.linalg.norm(w_minus),
    )
    return np.linalg.norm(W, axis=1, keepdims=True) * dirs


def limit_normalized_margin(w_plus, w_minus) -> float:
    """Normalised margin ``min_i y_i f(x_i)/‖θ‖²`` of Lemma C.1's limit:
    ``1/(2(‖w+‖ + ‖w−‖))`` (``‖u‖² = 1/‖w+‖``, ``‖z‖² = 1/‖w−‖``, min margin 1)."""
    return 1.0 / (2.0 * (np.linalg.norm(w_plus) + np.linalg.norm(w_minus)))


def support_ranks(X, y, tol: float = 1e-6) -> tuple[int, int]:
    """Ranks of the positive and of the negative support examples of ``w±``.
    Theorem 1 assumes each equals ``d`` (the support examples span R^d)."""
    X, y = as_xy(X, y)
    info = support_examples(X, y, tol=tol)
    return (
        int(np.linalg.matrix_rank(X[info.positive])) if len(info.positive) else 0,
        int(np.linalg.matrix_rank(X[info.negative])) if len(info.negative) else 0,
    )


def fraction_aligned(W, a, w_plus, w_minus, level: float = 0.9) -> float:
    """Fig. 1c's statistic: the fraction of all neurons whose cosine with their
    own max-margin direction (``w+`` if ``a_j > 0``, ``w−`` otherwise) exceeds
    ``level`` (the paper: "above 0.9 for most neurons", 100 neurons in total)."""
    return float(np.mean(cosines_to_max_margin(W, a, w_plus, w_minus) > level))


def fraction_aligned_closest(W, w_plus, w_minus, level: float = 0.9) -> float:
    """Fig. 2g's statistic: the fraction of rows of ``W`` whose cosine with the
    closer of ``w±`` exceeds ``level`` (no output sign to choose one)."""
    W = as_matrix(W, "W")
    return float(
        np.mean(np.maximum(row_cosines(W, w_plus), row_cosines(W, w_minus)) > level)
    )


def _angle(W, ref) -> np.ndarray:
    return np.arccos(np.clip(row_cosines(W, ref), -1.0, 1.0))


def geodesic_progress(W, a, w_plus, w_minus, x_plus, x_minus) -> np.ndarray:
    """Per neuron, how far along the great circle from its early-phase direction
    (``x̂±``) to its Theorem 1 direction (``w±``) it sits:
    ``s_j = (∠(w_j, x̂) − ∠(w_j, w) + ∠(x̂, w)) / (2∠(x̂, w))``.

    On the geodesic ``s`` is the fraction of the angle travelled (0 at ``x̂±``,
    1 at ``w±``); off it, ``s`` is the point of the geodesic the neuron is
    equidistant-shifted to. ``s_j > ½`` iff ``w_j`` is closer in angle to ``w±``
    than to ``x̂±`` (:func:`closer_to_limit`)."""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    out = np.empty(W.shape[0])
    for sign, w, x in ((1, w_plus, x_plus), (-1, w_minus, x_minus)):
        rows = (a > 0) if sign > 0 else ~(a > 0)
        if not rows.any():
            continue
        base = float(_angle(np.asarray(x, float)[None, :], w)[0])
        if base == 0:
            raise ValueError("x̂ and w coincide: the geodesic has length 0")
        out[rows] = (_angle(W[rows], x) - _angle(W[rows], w) + base) / (2 * base)
    return out


@dataclass(frozen=True)
class TwoDirectionFit:
    """``W/‖W‖_F ≈ u w+ᵀ + z w−ᵀ`` with ``u, z ≥ 0``, ``u_j z_j = 0`` (Theorem 1's
    form), fitted by non-negative least squares; residuals of both statements."""

    u: np.ndarray
    z: np.ndarray
    W_residual: float  # ‖W/‖W‖_F − (u w+ᵀ + z w−ᵀ)‖_F
    a_residual: float  # ‖a/‖a‖ − (u‖w+‖ − z‖w−‖)‖


def fit_two_directions(W, a, w_plus, w_minus) -> TwoDirectionFit:
    """Test Theorem 1's two statements without reading ``u, z`` off the network.

    Each row ``ŵ_j`` of ``W/‖W‖_F`` is fitted by ``u_j w+`` or by ``z_j w−``
    (``u_j z_j = 0``), whichever leaves the smaller residual, with the
    non-negative coefficient of least squares (the exact solution of the NNLS
    problem with complementarity, row by row). Theorem 1 says the Frobenius
    residual → 0 and, with the same ``u, z``, ``a/‖a‖ − (u‖w+‖ − z‖w−‖) → 0``."""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    nW, na = np.linalg.norm(W), np.linalg.norm(a)
    if nW == 0 or na == 0:
        raise ValueError("W and a must be non-zero")
    Wn = W / nW
    wp, wm = np.asarray(w_plus, float), np.asarray(w_minus, float)
    cu = np.maximum(Wn @ wp / (wp @ wp), 0.0)
    cz = np.maximum(Wn @ wm / (wm @ wm), 0.0)
    ru = np.linalg.norm(Wn - np.outer(cu, wp), axis=1)
    rz = np.linalg.norm(Wn - np.outer(cz, wm), axis=1)
    use_u = ru <= rz
    u, z = np.where(use_u, cu, 0.0), np.where(use_u, 0.0, cz)
    W_res = float(np.linalg.norm(Wn - np.outer(u, wp) - np.outer(z, wm)))
    a_res = float(
        np.linalg.norm(a / na - (u * np.linalg.norm(wp) - z * np.linalg.norm(wm)))
    )
    return TwoDirectionFit(u, z, W_res, a_res)


def balanced_net_at(W, a, x_plus, x_minus) -> tuple[np.ndarray, np.ndarray]:
    """The rival network: every neuron of ``(W, a)`` keeps its norm and its
    sign but points at ``x̂+`` (``a_j > 0``) or ``x̂−`` (``a_j < 0``); balanced
    (``a_j = ±‖w_j‖``, Lemma A.4). Dead neurons (``w_j = 0``) stay 0."""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    norms = np.linalg.norm(W, axis=1)
    dirs = np.where(
        (a > 0)[:, None], np.asarray(x_plus, float), np.asarray(x_minus, float)
    )
    dirs = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    return norms[:, None] * dirs, np.sign(a) * norms


def sector_exits(snapshots, X, y) -> int:
    """Lemma 3: the number of (neuron, consecutive-snapshot) events where a
    neuron in ``J+ ∪ J−`` at one snapshot is not at the next."""
    X, y = as_xy(X, y)
    inside = []
    for s in snapshots:
        g = neuron_groups(s["W"], s["a"], X, y)
        inside.append(g.plus | g.minus)
    inside = np.stack(inside)
    return int(np.sum(inside[:-1] & ~inside[1:]))


def lemma_b1_violations(W0, a0, snapshots, X, y) -> tuple[int, int]:
    """Lemma B.1 checked per (neuron, example) pair: a pair with ``a_j(0) > 0``,
    ``y_i = +1`` (or ``a_j(0) < 0``, ``y_i = −1``) active at ``t = 0`` must stay
    active. Returns ``(pairs found inactive at some snapshot, pairs covered)``."""
    X, y = as_xy(X, y)
    act0 = activation_pattern(W0, X) > 0
    kept = act0 & (np.sign(np.asarray(a0, float))[:, None] == y[None, :])
    lost = np.zeros_like(kept)
    for s in snapshots:
        lost |= kept & ~(activation_pattern(s["W"], X) > 0)
    return int(lost.sum()), int(kept.sum())


def imbalance(W, a) -> float:
    """Lemma A.4 per neuron: ``max_j ||a_j| − ‖w_j‖| / ‖w_j‖`` (0 for a balanced
    network; gradient flow conserves ``a_j² − ‖w_j‖²``, so a balanced start stays
    balanced, and a neuron that never moves keeps its initial imbalance)."""
    W = as_matrix(W, "W")
    a = as_vector(a, "a", W.shape[0])
    norms = np.linalg.norm(W, axis=1)
    if np.any(norms == 0):
        raise ValueError("every w_j must be non-zero (the ratio is per neuron)")
    return float(np.max(np.abs(np.abs(a) - norms) / norms))


def settling_time(times, values, level: float) -> float:
    """The time from which ``values`` stays ``≥ level``: the last upward crossing,
    linearly interpolated in ``log10 t`` between the bracketing snapshots;
    ``times[0]`` if it never drops below, ``inf`` if it ends below. ``times`` must be
    positive and increasing."""
    t = np.asarray(times, float)
    v = np.asarray(values, float)
    if t.shape != v.shape or t.ndim != 1 or np.any(t <= 0) or np.any(np.diff(t) <= 0):
        raise ValueError(
            "times must be positive and increasing, values of the same length"
        )
    below = np.flatnonzero(v < level)
    if len(below) == 0:
        return float(t[0])
    k = int(below[-1])
    if k == len(t) - 1:
        return float("inf")
    lt0, lt1 = np.log10(t[k]), np.log10(t[k + 1])
    frac = (level - v[k]) / (v[k + 1] - v[k])
    return float(10 ** (lt0 + frac * (lt1 - lt0)))


def two_cluster_data(
    n: int = 500,
    d: int = 20,
    angle_deg: float = 120.0,
    noise: float = 0.15,
    seed: int = 0,
):
    """Linearly but not orthogonally separable data (Lemma 2's rival): positives
    in two clusters around unit directions ``angle_deg`` apart, negatives around
    the opposite of their mean; Gaussian noise of std ``noise`` per coordinate.
    Returns a :class:`~twolayer.data.Dataset`."""
    from ..data import Dataset

    if int(n) != n or n < 3 or int(d) != d or d < 2:
        raise ValueError(f"n >= 3 and d >= 2 must be integers, got {n!r}, {d!r}")
    rng = np.random.default_rng(seed)
    half = np.deg2rad(angle_deg) / 2
    c1 = np.zeros(d)
    c1[0], c1[1] = np.cos(half), np.sin(half)
    c2 = np.zeros(d)
    c2[0], c2[1] = np.cos(half), -np.sin(half)
    cn = -(c1 + c2) / np.linalg.norm(c1 + c2)
    k = rng.integers(0, 3, size=int(n))
    centres = np.stack([c1, c2, cn])[k]
    X = centres + noise * rng.standard_normal((int(n), d))
    y = np.where(k < 2, 1.0, -1.0)
    return Dataset(
        X,
        y,
        f"two positive clusters {angle_deg:g}° apart",
        f"twolayer.theory.phuong2021.two_cluster_data(n={n}, d={d}, seed={seed})",
    )


# -- App. D: representations of a trained network -------------------------------------
def _unit_rows(R) -> np.ndarray:
    R = as_matrix(R, "R")
    norms = np.linalg.norm(R, axis=1, keepdims=True)
    return R / np.where(norms > 0, norms, 1.0)


def cosine_quantiles(R, y, q=(0.05, 0.5, 0.95)) -> dict[str, np.ndarray]:
    """Quantiles ``q`` of the cosines between representation rows, for
    cross-class pairs (``"cross"``) and same-class pairs (``"same"``, ``i < j``),
    and the largest cross-class cosine (``"cross_max"``). Orthogonal
    separability (§2) needs every cross-class cosine ≤ 0 (``cross_max ≤ 0``)
    and every same-class one > 0."""
    U = _unit_rows(R)
    y = as_vector(y, "y", U.shape[0])
    cross = (U[y > 0] @ U[y < 0].T).ravel()
    same = np.concatenate(
        [
            (lambda C: C[np.triu_indices(len(C), 1)])(U[y == s] @ U[y == s].T)
            for s in (1, -1)
        ]
    )
    return dict(
        cross=np.quantile(cross, q),
        same=np.quantile(same, q),
        cross_max=float(cross.max()),
    )


def unit_counts(R, y) -> dict[str, int]:
    """Units (columns of ``R``) that are dead (never > 0), class-specific
    (active on images of one class only) or shared (active on both). After a
    ReLU, orthogonal separability needs no shared unit."""
    active = as_matrix(R, "R") > 0
    y = as_vector(y, "y", active.shape[0])
    pos, neg = active[y > 0].any(0), active[y < 0].any(0)
    return dict(
        dead=int((~pos & ~neg).sum()),
        specific=int((pos ^ neg).sum()),
        shared=int((pos & neg).sum()),
    )


def pattern_change(R_a, R_b) -> float:
    """Fraction of (example, unit) entries whose activity (``> 0``) differs between
    two representations of the same examples (0: the activation pattern is frozen)."""
    A, B = as_matrix(R_a, "R_a") > 0, as_matrix(R_b, "R_b") > 0
    if A.shape != B.shape:
        raise ValueError(
            f"R_a and R_b must have the same shape, got {A.shape} and {B.shape}"
        )
    return float(np.mean(A != B))


# -- statistics of the Fig. 1 page, per network --------------------------------------
def flow_statistics(W, a, X, y, w_pm, x_pm, level: float = 0.9) -> dict[str, float]:
    """Theorem 1's statistics of one network ``(W, a)`` over its live neurons:
    ``closer`` (fraction nearer in angle to ``w±`` than to ``x̂±``),
    ``min_progress`` (least :func:`geodesic_progress`), ``gap`` (worst
    ``1 − cos(w_j, w±)``), ``aligned`` (Fig. 1c: fraction of all neurons with
    ``cos > level``) and ``rank`` (``σ3/σ1`` of ``W``). ``w_pm = (w+, w−)``,
    ``x_pm = (x̂+, x̂−)``."""
    from ..metrics import rank_ratio

    (wp, wm), (xp, xm) = w_pm, x_pm
    live = ~neuron_groups(W, a, X, y).dead
    if not live.any():
        raise ValueError("every neuron is dead: no live neuron to measure")
    prog = geodesic_progress(W, a, wp, wm, xp, xm)[live]
    cos = cosines_to_max_margin(W, a, wp, wm)[live]
    return dict(
        closer=float(np.mean(prog > 0.5)),
        min_progress=float(prog.min()),
        gap=float(1 - cos.min()),
        aligned=fraction_aligned(W, a, wp, wm, level),
        rank=rank_ratio(W, 2),
    )


def log_time_rate(times, gaps, t_from: float) -> float:
    """``β`` of ``gap ≈ C (log t)^(−β)`` fitted by least squares in
    ``log gap`` against ``log log t`` over ``t ≥ t_from`` (> e)."""
    t, g = np.asarray(times, float), np.asarray(gaps, float)
    late = t >= t_from
    if t_from <= np.e or late.sum() < 2 or np.any(g[late] <= 0):
        raise ValueError("need t_from > e and >= 2 positive gaps from t_from on")
    return float(-np.polyfit(np.log(np.log(t[late])), np.log(g[late]), 1)[0])


def construction_residual(W, a, X, y) -> float:
    """Lemma C.1's construction from a network's split of its neurons
    (``u_j = ‖w_j‖`` on ``J+``, ``z_j = ‖w_j‖`` on ``J−``): the relative
    stationarity residual of the constructed limit (0 up to the QP tolerance)."""
    groups = neuron_groups(W, a, X, y)
    norms = np.linalg.norm(as_matrix(W, "W"), axis=1)
    u = np.where(groups.plus, norms, 0.0)
    z = np.where(groups.minus, norms, 0.0)
    return lemma_c1_check(X, y, u, z).stationarity


def lemma2_ascent(X, y, starts: int = 200, seed: int = 0) -> tuple[float, float]:
    """Lemma 2 by :func:`G_ascent` of ``+G`` and ``−G`` from ``starts`` random
    points: ``(largest distance of an end point to the mean of its sign's end
    points, rounded to 1e-12; smallest fraction of the examples on which an end
    point's activation sign matches σ±)``. One maximiser and one minimiser, in
    ``σ+`` and ``σ−``: ``(0, 1)``."""
    sp, sm = extremal_sectors(X, y)
    spread, agree = [], []
    for sign, sector in ((1, sp), (-1, sm)):
        _, ends = G_ascent(X, y, starts=starts, sign=sign, seed=seed)
        spread.append(np.linalg.norm(ends - ends.mean(0), axis=1).max())
        match = activation_pattern(ends, X) == np.asarray(sector)[None, :]
        agree.append(match.mean(axis=1).min())
    return float(np.round(max(spread), 12)), float(min(agree))


def network_statistics(W, a, X, y, w_pm, x_pm) -> dict[str, float]:
    """The Fig. 1 page's statistics of one trained network: ``aligned`` (median
    over all neurons of ``cos(w_j, w_sign(a_j))``, Fig. 1c), ``rank``
    (``σ3/σ1``), over the live neurons ``progress`` (median
    :func:`geodesic_progress` x̂± → w±), ``closer`` (fraction past ½) and
    ``in_sector`` (fraction in ``J+ ∪ J−``), ``dead`` (count) and
    :func:`imbalance`."""
    from ..metrics import rank_ratio

    (wp, wm), (xp, xm) = w_pm, x_pm
    groups = neuron_groups(W, a, X, y)
    live = ~groups.dead
    if not live.any():
        raise ValueError("every neuron is dead: no live neuron to measure")
    progress = geodesic_progress(W, a, wp, wm, xp, xm)[live]
    return dict(
        aligned=float(np.median(cosines_to_max_margin(W, a, wp, wm))),
        rank=rank_ratio(W, 2),
        progress=float(np.median(progress)),
        closer=float(np.mean(progress > 0.5)),
        dead=int(groups.dead.sum()),
        in_sector=float(np.mean((groups.plus | groups.minus)[live])),
        imbalance=imbalance(W, a),
    )


def limit_statistics(W, a, X, y, w_pm, kkt_tight: float = 0.05) -> dict[str, float]:
    """Theorem 1 and Lemma C.1 at the end of a flow, for one network: ``W_res``
    and ``a_res`` (:func:`fit_two_directions`), ``kkt`` (relative stationarity
    residual, constraints within ``kkt_tight`` of the smallest margin tight) and
    ``margin`` (``|γ/γ* − 1|`` with ``γ* = 1/(2(‖w+‖ + ‖w−‖))``, the limit's
    normalised margin). All 0 at the limit."""
    from ..metrics import normalized_margin, parameter_norm
    from ..models import two_layer_output
    from .margins import kkt_two_layer

    wp, wm = w_pm
    fit = fit_two_directions(W, a, wp, wm)
    gamma = normalized_margin(
        two_layer_output(W, a, X), y, parameter_norm(W, a), homogeneity=2
    )
    return dict(
        W_res=fit.W_residual,
        a_res=fit.a_residual,
        kkt=kkt_two_layer(W, a, X, y, tight_tol=kkt_tight).stationarity,
        margin=abs(gamma / limit_normalized_margin(wp, wm) - 1),
    )


# -- the pages' measurements, one seed at a time -----------------------------------
def data_geometry(X, y) -> dict:
    """What Theorem 1 needs to know about one draw of the data: ``w`` (``(w+, w−)``
    of eqs. (6)-(7)), ``x`` (the early-phase ``(x̂+, x̂−)``), ``early_cos``
    (``[cos(x̂+, w+), cos(x̂−, w−)]``: how close the early phase already is to the
    limit), ``span`` (:func:`support_ranks`: Theorem 1 assumes ``d`` for both)
    and ``orth`` (:func:`is_orthogonally_separable`, §2)."""
    from ..metrics import cosine

    w = max_margin_directions(X, y)
    x = early_phase_directions(X, y)
    return dict(
        w=w,
        x=x,
        early_cos=np.array([cosine(x[0], w[0]), cosine(x[1], w[1])]),
        span=np.array(support_ranks(X, y)),
        orth=is_orthogonally_separable(X, y),
    )


def sgd_statistics(snapshots, X, y, w_pm, x_pm) -> dict[str, float]:
    """The Fig. 1 page's statistics of one training run, from its snapshots
    (``[{"W", "a"}, ...]``, the first at initialisation, the last at the end):
    :func:`network_statistics` of the end network; ``exits`` (Lemma 3,
    :func:`sector_exits`), ``b1`` (Lemma B.1 pairs lost,
    :func:`lemma_b1_violations`) and ``flips`` (output weights whose sign differs
    from the initial one, Lemma A.4) along the run; ``init_aligned`` and
    ``init_in_sector``: the same statistics at initialisation (the rivals that
    start the run)."""
    first, last = snapshots[0], snapshots[-1]
    end = network_statistics(last["W"], last["a"], X, y, w_pm, x_pm)
    init = network_statistics(first["W"], first["a"], X, y, w_pm, x_pm)
    flips = np.sign(np.asarray(last["a"])) != np.sign(np.asarray(first["a"]))
    return end | dict(
        exits=sector_exits(snapshots, X, y),
        b1=lemma_b1_violations(first["W"], first["a"], snapshots, X, y)[0],
        flips=int(np.sum(flips)),
        init_aligned=init["aligned"],
        init_in_sector=init["in_sector"],
    )


def flow_curves(snapshots, X, y, w_pm, x_pm) -> dict[str, np.ndarray]:
    """:func:`flow_statistics` at every snapshot of a flow, one array per
    statistic (Theorem 1's quantities against time)."""
    if len(snapshots) == 0:
        raise ValueError("snapshots is empty: a flow has at least one snapshot")
    stats = [flow_statistics(s["W"], s["a"], X, y, w_pm, x_pm) for s in snapshots]
    return {key: np.array([s[key] for s in stats]) for key in stats[0]}


def limit_tests(W, a, X, y, w_pm, x_pm, kkt_tight: float = 0.05) -> dict[str, float]:
    """:func:`limit_statistics` of the network ``(W, a)`` and, with the suffix
    ``_x``, of its early-phase rival (:func:`balanced_net_at`: the same neurons
    turned to ``x̂±``): Theorem 1 eqs. (8)-(9) and Lemma C.1 against the early
    phase."""
    out = limit_statistics(W, a, X, y, w_pm, kkt_tight)
    rival = balanced_net_at(W, a, *x_pm)
    x_stats = limit_statistics(*rival, X, y, w_pm, kkt_tight)
    return out | {key + "_x": value for key, value in x_stats.items()}


def first_layer_statistics(W1, X, y, level: float = 0.9) -> dict[str, float]:
    """§5.2 / Fig. 2g for the first layer ``W1`` of a residual net: ``aligned``
    (median over rows of the cosine with the closer of ``w±``), ``fraction``
    (:func:`fraction_aligned_closest` at ``level``), ``closer`` (the share of
    ``‖W1‖_F²`` in rows closer to ``w±`` than to ``x̂±``) and ``x_cos`` (the
    early-phase directions' own level, ``min cos(x̂±, w±)``)."""
    from ..metrics import cosine, neuron_norms

    W1 = as_matrix(W1, "W1")
    wp, wm = max_margin_directions(X, y)
    xp, xm = early_phase_directions(X, y)
    cos = np.maximum(row_cosines(W1, wp), row_cosines(W1, wm))
    early = np.maximum(row_cosines(W1, xp), row_cosines(W1, xm))
    norms2 = neuron_norms(W1) ** 2
    return dict(
        aligned=float(np.median(cos)),
        fraction=fraction_aligned_closest(W1, wp, wm, level),
        closer=float((norms2 * (cos > early)).sum() / norms2.sum()),
        x_cos=min(cosine(xp, wp), cosine(xm, wm)),
    )


def hidden_rank_ratios(Ws) -> np.ndarray:
    """§5.2 / Fig. 2a–c: ``σ3/σ1`` of each hidden layer ``W_1 … W_{L−1}`` of a
    residual net's weight matrices ``Ws`` ("the weight matrices are all rank
    two"; ``W_L``, a row, is left out)."""
    from ..metrics import rank_ratio

    if len(Ws) < 2:
        raise ValueError(f"Ws must hold at least two matrices, got {len(Ws)}")
    return np.array([rank_ratio(W, 2) for W in Ws[:-1]])


# -- App. D: the MNIST runs and their 7th layer -------------------------------------
def appd_run(
    seed: int,
    *,
    init_scale: float,
    epochs: int,
    n_epochs: int,
    digits: tuple[int, int] = (0, 1),
    channels: tuple[int, int] = (16, 32),
    max_per_class: int | None = 300,
    batch_size: int = 128,
    lr: float = 1e-3,
    all_layers: bool = False,
) -> dict:
    """App. D's run: :class:`~twolayer.models.ConvNet`, its FC weights
    × ``init_scale``, trained by Adam on MNIST ``digits`` (label +1 the first)
    for ``n_epochs`` epochs, with snapshots at initialisation, after ``epochs``
    and at the end.

    Returns ``train`` (the images), ``traj``, ``per_epoch`` (steps), ``reps``
    (per snapshot, the representations of the training images: the input at 0
    and layer 7 at 7; every layer at the middle snapshot if ``all_layers``),
    ``pre7`` (per snapshot, layer 7 before its ReLU, ``W7 ρ(f⁶) + b7``: the
    paper's ``f⁷_θ``, whose notation (§5.2) puts ``ρ`` between the layers),
    ``errors`` (misclassified training images after ``epochs``), ``W7`` (per
    snapshot) and ``W8`` (after ``epochs``)."""
    import torch

    from .. import flows  # here: flows imports the models this module uses
    from ..data import mnist_pair
    from ..models import ConvNet

    if not 1 <= epochs <= n_epochs:
        raise ValueError(f"epochs must be in [1, n_epochs], got {epochs}, {n_epochs}")
    train = mnist_pair(*digits, "train", max_per_class=max_per_class, seed=seed)
    net = ConvNet(tuple(channels), fc_scale=init_scale, seed=seed)
    per_epoch = -(-train.n // batch_size)
    traj = flows.adam(
        net,
        train,
        lr=lr,
        epochs=n_epochs,
        batch_size=batch_size,
        seed=seed,
        snapshot_steps=[0, epochs * per_epoch, n_epochs * per_epoch],
    )
    X = torch.tensor(train.X, dtype=torch.float32)
    reps, pre7 = [], []
    for i, s in enumerate(traj.snapshots):
        model = flows.load_state(net, s)
        with torch.no_grad():
            model.eval()
            T = model.representations(X)
            R = [r.numpy().astype(float) for r in T]
            pre7.append(model.fc7(T[6]).numpy().astype(float))
            if i == 1:
                errors = int((model(X).numpy() * train.y <= 0).sum())
        reps.append(R if all_layers and i == 1 else [R[0], *[None] * 6, R[7]])
    return dict(
        train=train,
        traj=traj,
        reps=reps,
        pre7=pre7,
        per_epoch=per_epoch,
        errors=errors,
        W7=[s["fc7.weight"].astype(float) for s in traj.snapshots],
        W8=traj.snapshots[1]["fc8.weight"].astype(float).ravel(),
    )


def cosine_quantile_rows(reps, y) -> list[dict[str, float]]:
    """App. D Fig. 3 as a table: per layer, the 5/50/95% quantiles of the
    cross-class cosines, their maximum, and the same-class quantiles
    (:func:`cosine_quantiles`)."""
    rows = []
    for layer, R in enumerate(reps):
        q = cosine_quantiles(R, y)
        cross = {f"cross {p}": v for p, v in zip(("5%", "50%", "95%"), q["cross"])}
        same = {f"same {p}": v for p, v in zip(("5%", "50%", "95%"), q["same"])}
        rows.append({"layer": layer, **cross, "cross max": q["cross_max"], **same})
    return rows


def layer7_statistics(R7, R0, y) -> dict:
    """App. D at layer 7 (representations ``R7``; the input ``R0``): ``cross_max``
    and ``cross_median`` (largest and median cross-class cosine: orthogonal
    separability needs ``cross_max ≤ 0``), ``same_median``, :func:`unit_counts`
    (``dead``, ``specific``, ``shared``) and ``sep``: the gain in
    :func:`~twolayer.metrics.class_separation` from the input to layer 7."""
    from ..metrics import class_separation

    q = cosine_quantiles(R7, y)
    return dict(
        cross_max=q["cross_max"],
        cross_median=float(q["cross"][1]),
        same_median=float(q["same"][1]),
        **unit_counts(R7, y),
        sep=class_separation(R7, y) - class_separation(R0, y),
    )


def significant_singular_values(W, level: float = 0.1) -> int:
    """App. D Fig. 4: the number of singular values of ``W`` above ``level``
    times the largest ("perhaps five or ten" for ``W7``)."""
    from ..metrics import singular_values

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    s = singular_values(W)
    return int(np.sum(s > level * s[0]))


def energy_beyond(W, k: int = 10) -> float:
    """The share of ``‖W‖_F²`` carried beyond the ``k`` largest singular values
    (App. D Fig. 4's "few significant singular values" as a fraction)."""
    from ..metrics import singular_values

    if int(k) != k or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    e = singular_values(W) ** 2
    return float(e[int(k) :].sum() / e.sum())


def limit_function(X, w_plus, w_minus) -> np.ndarray:
    """Cor. 1 with Lemma C.1's scale (``‖u‖²‖w+‖ = ‖z‖²‖w−‖ = 1``):
    ``f_θ/‖θ‖² → c·(ρ(w+·x) − ρ(w−·x))``; returns ``ρ(w+·x) − ρ(w−·x)``."""
    X = np.asarray(X, float)
    return np.maximum(X @ w_plus, 0) - np.maximum(X @ w_minus, 0)


def scaled_distance(f, g) -> float:
    """``min_c ‖c·f − g‖ / ‖g‖``: how far the shape of ``f`` is from ``g``
    when the overall scale (which the limit theorems leave free) is fitted."""
    f, g = np.asarray(f, float), np.asarray(g, float)
    c = (f @ g) / max(f @ f, 1e-300)
    return float(np.linalg.norm(c * f - g) / np.linalg.norm(g))


def best_two_ray_distance(r_plus, r_minus, X, g) -> float:
    """The rival model ``c+ρ(r+·x) − c−ρ(r−·x)`` with both coefficients fitted
    to ``g`` by least squares (the most favourable scale for the rival):
    relative distance ``‖model − g‖/‖g‖`` on ``X``."""
    X, g = np.asarray(X, float), np.asarray(g, float)
    A = np.c_[np.maximum(X @ r_plus, 0), -np.maximum(X @ r_minus, 0)]
    coef, *_ = np.linalg.lstsq(A, g, rcond=None)
    return float(np.linalg.norm(A @ coef - g) / np.linalg.norm(g))
