"""Measurements shared by several papers: spectra, ranks, cosines, margins,
neuron norms, directions and activation patterns. NumPy in, NumPy out
(torch tensors accepted)."""

from __future__ import annotations

import numpy as np

from .validation import as_matrix, as_vector, to_numpy


def singular_values(W, k: int | None = None) -> np.ndarray:
    """Singular values of ``W`` in decreasing order (the top ``k`` if given)."""
    s = np.linalg.svd(as_matrix(W, "W"), compute_uv=False)
    return s if k is None else s[:k]


def rank_ratio(W, r: int = 2) -> float:
    """``σ_{r+1}/σ_1``: how far ``W`` is from rank ``r`` (0 = exactly rank ≤ r)."""
    s = singular_values(W)
    return float(s[r] / s[0]) if len(s) > r and s[0] > 0 else 0.0


def stable_rank(W) -> float:
    """``‖W‖_F² / ‖W‖_2²`` (Min et al. Thm 1: limsup ≤ 2)."""
    s = singular_values(W)
    return float((s**2).sum() / s[0] ** 2) if s[0] > 0 else 0.0


def spectral_norm_sq(W) -> float:
    """``‖W‖_2²``."""
    return float(singular_values(W, 1)[0] ** 2)


def top_singular_directions(W, k: int = 2) -> np.ndarray:
    """The top ``k`` right singular vectors of ``W`` as rows, shape (k, d)."""
    _, _, Vt = np.linalg.svd(as_matrix(W, "W"), full_matrices=False)
    return Vt[:k]


def cosine(u, v) -> float:
    """``cos(u, v)``; 0 when either vector is zero."""
    u, v = np.ravel(to_numpy(u)).astype(float), np.ravel(to_numpy(v)).astype(float)
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    return float(u @ v / (nu * nv)) if nu > 0 and nv > 0 else 0.0


def row_cosines(W, ref) -> np.ndarray:
    """Cosine of every row of ``W`` with the vector ``ref`` (0 for zero rows)."""
    W = as_matrix(W, "W")
    r = as_vector(ref, "ref", W.shape[1])
    norms = np.linalg.norm(W, axis=1) * np.linalg.norm(r)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = W @ r / norms
    return np.where(norms > 0, c, 0.0)


def neuron_norms(W) -> np.ndarray:
    """``‖w_j‖`` for every row (neuron) of ``W``."""
    return np.linalg.norm(as_matrix(W, "W"), axis=1)


def activation_pattern(W, X) -> np.ndarray:
    """``sign(w_j·x_i)`` as an int array of shape (m, n) (Phuong Def. 1 sectors)."""
    W, X = as_matrix(W, "W"), as_matrix(X, "X")
    if W.shape[1] != X.shape[1]:
        raise ValueError(f"W has {W.shape[1]} columns but X has {X.shape[1]}")
    return np.sign(W @ X.T).astype(int)


def dead_neurons(W, X) -> np.ndarray:
    """Boolean mask of ReLU neurons inactive on every input (``w_j·x_i ≤ 0 ∀i``):
    they receive no gradient and keep their initial direction (Phuong's ``J_0``)."""
    return np.all(activation_pattern(W, X) <= 0, axis=1)


def margins(f_values, y) -> np.ndarray:
    """``q_i = y_i f(x_i)``."""
    return np.asarray(to_numpy(y), float) * np.asarray(to_numpy(f_values), float)


def normalized_margin(f_values, y, param_norm: float, *, homogeneity: int) -> float:
    """``γ(θ) = min_i y_i f_θ(x_i) / ‖θ‖^L`` for an L-homogeneous model: L = 2 for a
    two-layer net training both layers, 1 under a fixed second layer (Sarussi's
    network). No default: pass the model's ``homogeneity``
    (``TwoLayerNet.homogeneity``)."""
    if not (isinstance(homogeneity, int) and homogeneity >= 1):
        raise ValueError(
            f"homogeneity must be a positive integer degree, got {homogeneity!r}"
        )
    if param_norm <= 0:
        raise ValueError(f"param_norm must be > 0, got {param_norm}")
    return float(margins(f_values, y).min() / param_norm**homogeneity)


def smoothed_margin(log_loss_sum, log_norm, *, homogeneity: int):
    """Lyu & Li (2020)'s smoothed normalized margin for the logistic loss,
    ``γ̃(θ) = log(1 / (exp(L) − 1)) / ‖θ‖^L_h`` with ``L = Σ_i log(1 + e^{−q_i})``
    (the *sum* loss) and ``L_h`` the degree of homogeneity, from ``log L`` and
    ``log ‖θ‖`` so that nothing underflows (vectorised over snapshots).

    Along gradient flow, once ``L < log 2`` it is non-decreasing and never above
    the normalized margin, and both have the same limit (Lyu & Li 2020, Thm 4.1
    and Lemma 5.1). So ``γ̃(t)`` is a certified *lower bound* on the limit margin:
    a run whose ``γ̃`` exceeds a KKT direction's margin can no longer converge to
    that direction.
    """
    if not (isinstance(homogeneity, int) and homogeneity >= 1):
        raise ValueError(
            f"homogeneity must be a positive integer degree, got {homogeneity!r}"
        )
    ll = np.asarray(log_loss_sum, float)
    if np.any(ll >= np.log(np.log(2))):
        raise ValueError(
            "the smoothed margin needs a sum loss below log 2 (every point fitted)"
        )
    L = np.exp(ll)
    tiny = L < 1e-8
    top = np.where(tiny, -ll - L / 2, -np.log(np.expm1(np.where(tiny, 1.0, L))))
    return top * np.exp(-homogeneity * np.asarray(log_norm, float))


def parameter_norm(*arrays) -> float:
    """Euclidean norm of all parameters together: ``‖θ‖``."""
    return float(np.sqrt(sum(float((np.asarray(a) ** 2).sum()) for a in arrays)))


def gram_sign_violations(R, y) -> float:
    """Fraction of pairs violating orthogonal separability of representation
    rows ``R``: same-label pairs with ``r_i·r_j ≤ 0`` or different-label pairs
    with ``r_i·r_j > 0`` (Phuong Def.: ``x_i·x_j > 0`` iff ``y_i = y_j``)."""
    R = as_matrix(R, "R")
    y = np.asarray(to_numpy(y), float)
    G = R @ R.T
    same = np.equal.outer(y, y)
    iu = np.triu_indices(len(y), k=1)
    bad = np.where(same, G <= 0, G > 0)[iu]
    return float(bad.mean()) if bad.size else 0.0


def cross_class_positive(R, y) -> float:
    """Fraction of different-class pairs of rows of ``R`` with a positive inner
    product — the pairs that break orthogonal separability (Phuong Def. 1 asks
    for none). After a ReLU it is the fraction of cross-class pairs sharing an
    active unit."""
    R = as_matrix(R, "R")
    y = np.asarray(to_numpy(y), float)
    G = R[y > 0] @ R[y < 0].T
    return float((G > 0).mean()) if G.size else 0.0


def shared_units(R, y) -> float:
    """Fraction of coordinates (units) of ``R`` active (> 0) on some example of
    each class; orthogonal separability after a ReLU needs the two classes to
    use disjoint units."""
    active = as_matrix(R, "R") > 0
    y = np.asarray(to_numpy(y), float)
    return float((active[y > 0].any(0) & active[y < 0].any(0)).mean())


def class_separation(R, y) -> float:
    """Mean cosine of same-class pairs minus mean cosine of different-class
    pairs of representation rows ``R`` (Phuong App. D, Fig 3: grows with depth)."""
    R = as_matrix(R, "R")
    y = np.asarray(to_numpy(y), float)
    norms = np.linalg.norm(R, axis=1)
    U = R / np.where(norms > 0, norms, 1.0)[:, None]
    C = U @ U.T
    same = np.equal.outer(y, y)
    off = ~np.eye(len(y), dtype=bool)
    return float(C[same & off].mean() - C[~same].mean())
