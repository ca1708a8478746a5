"""Sarussi, Brutzkus & Globerson (ICML 2021): learning linear teachers with a
two-layer leaky-ReLU network whose second layer is fixed.

The network (eq. 1) is ``N(x) = Σ_{i≤k} σ(w_i·x) − Σ_{i≤k} σ(u_i·x)`` with
``σ(z) = max(z, αz)``; in the library it is
:meth:`twolayer.models.TwoLayerNet.fixed_second_layer` (rows ``0..k-1`` of
``W`` are the w's, rows ``k..2k-1`` the u's; see :func:`split_neurons`).

This module holds the paper's definitions and checks:

* §5, Theorem 5.1 — cluster centres ``w̄, ū``, radius ``R``, the linear regime
  ``|(w̄−ū)·x| > 2R‖x‖`` in which ``sign N(x) = sign((w̄−ū)·x)``;
  clustering measures of App. D.3 (``R/‖w̄−ū‖``, the largest angle within a
  cluster).
* §6.1, Definition 6.2 — the Neural Agreement Regime (NAR): neurons of one type
  agree on the sign of every training point (with a margin).
* §6.2, Definition 6.3 — the Perfect Agreement Regime (PAR): every w-neuron
  classifies the training set like the labels, every u-neuron like their
  opposite. Theorem 6.2 — the PAR limit solves an SVM (eq. 8) with the feature
  map ``φ(x) = [x; −αx]`` (y = +1), ``[αx; −x]`` (y = −1) and kernel
  ``(1+α²)x·x'`` (same labels) / ``2α x·x'`` (different labels).

Arrays in and out are NumPy (torch tensors are accepted on input).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import models
from ..validation import as_matrix, as_xy, to_numpy
from .margins import NotSeparableError, svm

# ----------------------------------------------------------------- inputs

_alpha = models.check_alpha


def _margin(margin: float) -> float:
    try:
        m = float(margin)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"margin must be a number >= 0, got {margin!r}") from exc
    if not m >= 0.0:
        raise ValueError(f"margin must be >= 0, got {margin!r}")
    return m


def _pair(W_pos, W_neg) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(W_pos, W_neg)``: two (k, d) matrices with the same shape
    (the paper's network has k neurons of each sign)."""
    P, Q = as_matrix(W_pos, "W_pos"), as_matrix(W_neg, "W_neg")
    if P.shape != Q.shape:
        raise ValueError(
            f"W_pos and W_neg must have the same shape (k, d), got {P.shape} and "
            f"{Q.shape}"
        )
    return P, Q


def _pair_and_points(W_pos, W_neg, X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    P, Q = _pair(W_pos, W_neg)
    X = as_matrix(X, "X")
    if X.shape[1] != P.shape[1]:
        raise ValueError(
            f"X has {X.shape[1]} columns but the neurons have dimension {P.shape[1]}"
        )
    return P, Q, X


def split_neurons(W, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(W_pos, W_neg)``: the w-neurons (rows ``0..k-1``) and u-neurons (rows
    ``k..2k-1``) of a :meth:`~twolayer.models.TwoLayerNet.fixed_second_layer`
    weight matrix (``k`` defaults to half the number of rows)."""
    W = as_matrix(W, "W")
    m = W.shape[0]
    if k is None:
        if m % 2:
            raise ValueError(
                f"W must have an even number of rows (k of each sign), got {m}"
            )
        k = m // 2
    if int(k) != k or not 1 <= k or 2 * k != m:
        raise ValueError(
            f"k must be a positive integer with 2k = {m} rows of W, got {k!r}"
        )
    return W[:k].copy(), W[k:].copy()


# ----------------------------------------------------------------- the network


def network_output(W_pos, W_neg, X, alpha: float) -> np.ndarray:
    """``N(x) = Σ_i σ(w_i·x) − Σ_i σ(u_i·x)`` (eq. 1) for the rows of ``X``."""
    P, Q, X = _pair_and_points(W_pos, W_neg, X)
    a = _alpha(alpha)
    return models.leaky_relu(X @ P.T, a).sum(axis=1) - models.leaky_relu(
        X @ Q.T, a
    ).sum(axis=1)


# ----------------------------------------------------------------- §5: clustering


@dataclass(frozen=True)
class Clusters:
    """Centres ``w̄, ū`` and radius ``R = max(max_i ‖w_i−w̄‖, max_i ‖u_i−ū‖)`` (§5)."""

    w_bar: np.ndarray
    u_bar: np.ndarray
    radius: float

    @property
    def direction(self) -> np.ndarray:
        """``w̄ − ū``: the normal of the linear classifier of Theorem 5.1."""
        return self.w_bar - self.u_bar

    @property
    def ratio(self) -> float:
        """``R/‖w̄−ū‖`` (App. D.3, Fig 7); ``inf`` if ``w̄ = ū``."""
        n = float(np.linalg.norm(self.direction))
        return self.radius / n if n > 0 else float("inf")


def clusters(W_pos, W_neg) -> Clusters:
    """Cluster centres and radius of the w- and u-neurons (§5, before Thm 5.1).
    The two groups may differ in size (a trained second layer splits neurons
    by the sign of their output weight)."""
    P, Q = as_matrix(W_pos, "W_pos"), as_matrix(W_neg, "W_neg")
    if P.shape[1] != Q.shape[1]:
        raise ValueError(
            f"W_pos and W_neg must have the same dimension, got {P.shape} and {Q.shape}"
        )
    wb, ub = P.mean(axis=0), Q.mean(axis=0)
    R = max(
        float(np.linalg.norm(P - wb, axis=1).max()),
        float(np.linalg.norm(Q - ub, axis=1).max()),
    )
    return Clusters(wb, ub, R)


def clustering_ratio(W_pos, W_neg) -> float:
    """``R/‖w̄−ū‖`` (App. D.3, Fig 7): Theorem 5.1's condition reads
    ``|cos(x, w̄−ū)| > 2R/‖w̄−ū‖``, so a ratio below 1/2 makes a cone of
    inputs around ``±(w̄−ū)`` provably linearly classified."""
    return clusters(W_pos, W_neg).ratio


def max_cluster_angle(W) -> float:
    """The largest angle (degrees) between two neurons of one cluster (App. D.3,
    Fig 7). Zero rows have no direction and are skipped; fewer than two
    non-zero rows give 0."""
    W = as_matrix(W, "W")
    norms = np.linalg.norm(W, axis=1)
    U = W[norms > 0] / norms[norms > 0, None]
    if len(U) < 2:
        return 0.0
    cos = np.clip(U @ U.T, -1.0, 1.0)
    return float(np.degrees(np.arccos(cos.min())))


def max_cluster_angles(W_pos, W_neg) -> tuple[float, float]:
    """``(largest angle among the w's, largest angle among the u's)``, degrees."""
    P, Q = _pair(W_pos, W_neg)
    return max_cluster_angle(P), max_cluster_angle(Q)


def linear_regime(W_pos, W_neg, X) -> np.ndarray:
    """Boolean mask of the rows ``x`` of ``X`` satisfying Theorem 5.1's
    condition ``|(w̄−ū)·x| > 2R‖x‖``.

    Theorem 5.1: for these ``x``, ``sign N(x) = sign((w̄−ū)·x)`` whatever α > 0
    (pair ``w_i`` with ``u_i``: σ is increasing, so ``σ(w_i·x) − σ(u_i·x)`` has
    the sign of ``(w_i−u_i)·x``, which differs from ``(w̄−ū)·x`` by at most
    ``2R‖x‖``). The zero input is never in the regime.

    Parameters
    ----------
    W_pos, W_neg
        The w-neurons and u-neurons as rows, both of shape (k, d).
    X
        Inputs, shape (n, d).
    """
    P, Q, X = _pair_and_points(W_pos, W_neg, X)
    c = clusters(P, Q)
    return np.abs(X @ c.direction) > 2.0 * c.radius * np.linalg.norm(X, axis=1)


def fraction_outside_linear_regime(W_pos, W_neg, X) -> float:
    """Fraction of the rows of ``X`` outside Theorem 5.1's linear regime (Fig 2/6)."""
    return float(1.0 - linear_regime(W_pos, W_neg, X).mean())


def linear_prediction(W_pos, W_neg, X) -> np.ndarray:
    """``sign((w̄−ū)·x)``: the linear classifier of Theorem 5.1."""
    P, Q, X = _pair_and_points(W_pos, W_neg, X)
    return np.sign(X @ clusters(P, Q).direction)


# ----------------------------------------------------------------- §6: NAR, PAR


def neuron_votes(W, X, margin: float = 0.0) -> np.ndarray:
    """How each neuron classifies each point: ``sign(w_i·x_j)`` where
    ``|w_i·x_j| > margin·‖w_i‖‖x_j‖``, else 0 (undecided). Shape (k, n).

    The margin is relative (a cosine), so votes do not change when the weights
    are rescaled (Def. 6.2 is stated for the normalized network)."""
    W, X = as_matrix(W, "W"), as_matrix(X, "X")
    if W.shape[1] != X.shape[1]:
        raise ValueError(f"X has {X.shape[1]} columns but W has {W.shape[1]}")
    m = _margin(margin)
    Z = X @ W.T  # (n, k)
    scale = np.linalg.norm(X, axis=1)[:, None] * np.linalg.norm(W, axis=1)[None, :]
    return np.where(np.abs(Z) > m * scale, np.sign(Z), 0.0).T.astype(int)


def pairwise_disagreements(W, X, margin: float = 0.0) -> np.ndarray:
    """``D[i, i'] = #{j : w_i and w_i' vote opposite signs on x_j}``, shape (k, k).

    Votes are taken with relative ``margin`` (:func:`neuron_votes`): a neuron
    within ``margin`` of its kink on ``x_j`` is undecided there and disagrees
    with nobody. With margin 0 only an exact zero abstains."""
    V = neuron_votes(W, X, margin)
    pos, neg = (V > 0).astype(float), (V < 0).astype(float)
    return (pos @ neg.T + neg @ pos.T).astype(int)


def same_type_disagreements(W_pos, W_neg, X, margin: float = 0.0) -> tuple[int, int]:
    """The largest number of training points two neurons of the same type
    classify with opposite signs (votes with relative ``margin``), for the w's
    and for the u's (App. J, Fig 9c). Both are 0 when the network is in an NAR."""
    P, Q, X = _pair_and_points(W_pos, W_neg, X)
    return (
        int(pairwise_disagreements(P, X, margin).max()),
        int(pairwise_disagreements(Q, X, margin).max()),
    )


def _consensus(V: np.ndarray) -> np.ndarray:
    """Majority vote of a type on every point (0 on ties)."""
    return np.sign(V.sum(axis=0)).astype(int)


@dataclass(frozen=True)
class Regime:
    """Membership of each neuron and of the network in a regime (NAR or PAR)."""

    w_neurons: np.ndarray  # bool (k,): w-neuron i is in the regime
    u_neurons: np.ndarray  # bool (k,)

    @property
    def network(self) -> bool:
        """All neurons of both types are in the regime."""
        return bool(self.w_neurons.all() and self.u_neurons.all())

    @property
    def fraction(self) -> float:
        """Fraction of all 2k neurons in the regime (Fig 8)."""
        return float(np.concatenate([self.w_neurons, self.u_neurons]).mean())


def nar_membership(W_pos, W_neg, X, margin: float = 0.0) -> Regime:
    """Neural Agreement Regime (Def. 6.2).

    A neuron is in the NAR when, on every training point, it votes (with
    relative margin ``margin``, see :func:`neuron_votes`) like the majority of
    its type, and that majority is decided. The network is in the NAR when all
    neurons are: then all w's agree on every ``x_j``, and all u's do.
    """
    P, Q, X = _pair_and_points(W_pos, W_neg, X)
    out = []
    for W in (P, Q):
        V = neuron_votes(W, X, margin)
        cons = _consensus(neuron_votes(W, X))
        out.append(np.all((V == cons[None, :]) & (cons[None, :] != 0), axis=1))
    return Regime(out[0], out[1])


def par_membership(W_pos, W_neg, X, y, margin: float = 0.0) -> Regime:
    """Perfect Agreement Regime (Def. 6.3): a w-neuron is in the PAR when it
    votes ``y_j`` on every training point, a u-neuron when it votes ``−y_j``
    (votes with relative margin ``margin``, see :func:`neuron_votes`)."""
    P, Q = _pair(W_pos, W_neg)
    X, y = as_xy(X, y)
    if X.shape[1] != P.shape[1]:
        raise ValueError(
            f"X has {X.shape[1]} columns but the neurons have dimension {P.shape[1]}"
        )
    w_in = np.all(neuron_votes(P, X, margin) == y[None, :], axis=1)
    u_in = np.all(neuron_votes(Q, X, margin) == -y[None, :], axis=1)
    return Regime(w_in, u_in)


# ----------------------------------------------------------------- Thm 6.2: the PAR SVM


def par_features(X, y, alpha: float) -> np.ndarray:
    """The feature map of Theorem 6.2: ``φ(x) = [x; −αx]`` for ``y = +1`` and
    ``[αx; −x]`` for ``y = −1``, shape (n, 2d). Then ``θ = [w; u]`` gives
    ``θ·φ(x) = w·x − α u·x`` on positives and ``α w·x − u·x`` on negatives:
    the output ``N(x)/k`` of a perfectly clustered network in the PAR."""
    X, y = as_xy(X, y)
    a = _alpha(alpha)
    pos = (y > 0)[:, None]
    return np.hstack([np.where(pos, X, a * X), np.where(pos, -a * X, -X)])


def par_kernel(X, y, alpha: float, X2=None, y2=None) -> np.ndarray:
    """The kernel of Theorem 6.2: ``K = (1+α²) x·x'`` for equal labels and
    ``2α x·x'`` for different labels (``φ(x)·φ(x')``)."""
    X, y = as_xy(X, y)
    a = _alpha(alpha)
    if X2 is None:
        X2, y2 = X, y
    else:
        X2, y2 = as_xy(X2, y2)
        if X2.shape[1] != X.shape[1]:
            raise ValueError(f"X2 has {X2.shape[1]} columns but X has {X.shape[1]}")
    same = np.equal.outer(y, y2)
    return np.where(same, 1.0 + a * a, 2.0 * a) * (X @ X2.T)


def par_svm(X, y, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(w, u)``: the PAR limit directions of Theorem 6.2 (eq. 8).

    Solves, with cvxpy, ``min ‖w‖² + ‖u‖²`` subject to ``w·x_j − α u·x_j ≥ 1``
    for ``y_j = +1`` and ``u·x_j − α w·x_j ≥ 1`` for ``y_j = −1``. Under the
    theorem's assumptions gradient flow converges to a perfectly clustered
    network with ``w_i ∝ w`` and ``u_i ∝ u``; its decision boundary is
    ``(w − u)·x = 0``.

    Raises
    ------
    NotSeparableError
        If no ``(w, u)`` meets the constraints.
    ValueError
        On malformed input or ``alpha`` outside ``[0, 1)``.
    """
    X, y = as_xy(X, y)
    d = X.shape[1]
    try:
        theta = svm(par_features(X, y, alpha), y).w
    except NotSeparableError as exc:
        raise NotSeparableError(
            f"the PAR SVM of Theorem 6.2 is infeasible: {exc}"
        ) from exc
    return theta[:d], theta[d:]


@dataclass(frozen=True)
class KernelPARSolution:
    """The dual (kernel) form of the PAR SVM: ``β ≥ 0`` and ``(w, u)``
    recovered as ``w = Σ_{+} β_j x_j − α Σ_{−} β_j x_j``,
    ``u = Σ_{−} β_j x_j − α Σ_{+} β_j x_j``."""

    beta: np.ndarray
    w: np.ndarray
    u: np.ndarray


def par_svm_kernel(X, y, alpha: float) -> KernelPARSolution:
    """The PAR SVM solved in its kernel (dual) form, using only
    :func:`par_kernel`: ``max Σβ − ½ βᵀ(yyᵀ∘K)β`` over ``β ≥ 0``. Equal to
    :func:`par_svm` at the optimum (strong duality)."""
    # here, not at the top: ~1 s of import for the pages that never solve
    import cvxpy as cp

    X, y = as_xy(X, y)
    a = _alpha(alpha)
    Ky = np.outer(y, y) * par_kernel(X, y, a)
    Ky = 0.5 * (Ky + Ky.T)
    beta = cp.Variable(len(y), nonneg=True)
    prob = cp.Problem(
        cp.Maximize(cp.sum(beta) - 0.5 * cp.quad_form(beta, cp.psd_wrap(Ky)))
    )
    prob.solve(solver=cp.CLARABEL)
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or beta.value is None:
        raise NotSeparableError(
            f"the kernel PAR SVM is unbounded or failed (status {prob.status}): "
            "no (w, u) meets the constraints of Theorem 6.2"
        )
    b = np.maximum(np.asarray(beta.value, dtype=float), 0.0)
    sp, sn = (b * (y > 0)) @ X, (b * (y < 0)) @ X
    return KernelPARSolution(b, sp - a * sn, sn - a * sp)


def par_prediction(X, y, alpha: float, X_eval=None) -> np.ndarray:
    """``sign((w−u)·x)``: the decision of the PAR limit network (its boundary is
    ``σ(w·x) = σ(u·x)``, i.e. ``(w−u)·x = 0``) on ``X_eval`` (default ``X``)."""
    w, u = par_svm(X, y, alpha)
    Xe = as_matrix(X if X_eval is None else X_eval, "X_eval")
    if Xe.shape[1] != len(w):
        raise ValueError(f"X_eval has {Xe.shape[1]} columns, expected {len(w)}")
    return np.sign(Xe @ (w - u))


def angle_degrees(u, v) -> float:
    """The angle between two non-zero vectors, in degrees."""
    u, v = np.ravel(to_numpy(u)).astype(float), np.ravel(to_numpy(v)).astype(float)
    if u.shape != v.shape:
        raise ValueError(
            f"vectors must have the same length, got {u.shape} and {v.shape}"
        )
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    if nu == 0 or nv == 0:
        raise ValueError("angle_degrees needs two non-zero vectors")
    return float(np.degrees(np.arccos(np.clip(u @ v / (nu * nv), -1.0, 1.0))))


# ----------------------------------------------------------------- Thm 4.1: SGD


def violating_epochs(step_loss, n: int, eps: float) -> np.ndarray:
    """Theorem 4.1's count: for SGD with batch size 1 and sampling without
    replacement, ``step_loss[t]`` is the loss of the point used at update ``t``
    (before the update). Returns a boolean per epoch (``n`` updates each): does
    the epoch contain a point with loss ``≥ eps``? The theorem bounds the number
    of such epochs (App. B, eq. 20)."""
    s = np.asarray(to_numpy(step_loss), dtype=float)
    if s.ndim != 1:
        raise ValueError(f"step_loss must be 1-D, got shape {s.shape}")
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if not float(eps) > 0:
        raise ValueError(f"eps must be > 0, got {eps!r}")
    if len(s) % int(n):
        raise ValueError(
            f"step_loss has {len(s)} entries, not a whole number of epochs of {n}"
        )
    return (s.reshape(-1, int(n)) >= float(eps)).any(axis=1)


def leading_violating_epochs(bad) -> int:
    """How many epochs in a row, from the first, contain a point with loss
    ``≥ ε`` (``bad`` from :func:`violating_epochs`): the quantity App. B bounds
    (eqs. 18-20 assume a violation in every epoch up to the one they bound)."""
    bad = np.asarray(bad, dtype=bool)
    clean = np.flatnonzero(~bad)
    return int(clean[0]) if clean.size else int(bad.size)


def sgd_epoch_bound(
    n: int,
    k: int,
    alpha: float,
    gamma: float,
    lr: float,
    eps: float,
    radius: float,
    init_norm: float,
) -> float:
    """An upper bound on the number of leading epochs that contain a point with
    loss ``≥ ε`` (Theorem 4.1, the perceptron argument of App. B, eqs. 14-20),
    for SGD with batch 1 and sampling without replacement on the logistic loss.

    The steps are App. B's; the constants are derived here (our text of the
    paper lost the formulas). Write ``g_t = −ℓ'(q_t) ∈ (0, 1)`` for the update
    on point ``(x, y)`` with ``q = yN(x)``, ``S = Σ_t g_t`` over the first ``T``
    epochs (``M = nT`` updates), ``v = (w*,…,w*, −w*,…,−w*)`` with ‖w*‖ = 1 a
    separator of margin ``γ`` and ``F = ⟨W, v⟩``:

    * ``F`` grows by ``η g y w*·x Σσ' ≥ 2kαγη g`` per update (eq. 14), so
      ``F_M ≥ F_0 + aS`` with ``a = 2kαγη``;
    * ``‖W‖²`` grows by ``2ηg q + η²g²‖x‖²Σσ'² ≤ 2ηg log(1/g) + 2kη²B²g``
      (``σ'(z)z = σ(z)``; ``q = log(1/g − 1)``), and by concavity
      ``Σ g log(1/g) ≤ S log(M/S)`` (eqs. 15-16);
    * an epoch with a violating point has one ``g ≥ g_ε = 1 − e^{−ε}``, so
      ``S ≥ T g_ε`` and ``log(M/S) ≤ L = log(n/g_ε)`` (eqs. 17-19);
    * Cauchy–Schwarz ``F ≤ √(2k)‖W‖`` and ``|F_0| ≤ √(2k)‖W_0‖`` leave a
      parabola in ``S`` whose root gives (eq. 20)

      ``T ≤ [ (L + kηB²) / (kα²γ²η) + √2‖W_0‖ / (√k αγη) ] / g_ε``.

    ``radius`` is ``B = max‖x‖``, ``init_norm`` is ``‖W_0‖`` (Frobenius), ``k``
    the number of neurons of each sign."""
    for name, v in (("n", n), ("k", k)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not 0 < alpha < 1:
        raise ValueError(
            "alpha must be in (0, 1) (the bound is infinite for the ReLU), got "
            f"{alpha!r}"
        )
    for name, v in (("gamma", gamma), ("lr", lr), ("eps", eps), ("radius", radius)):
        if not float(v) > 0:
            raise ValueError(f"{name} must be > 0, got {v!r}")
    if not float(init_norm) >= 0:
        raise ValueError(f"init_norm must be >= 0, got {init_norm!r}")
    g_eps = -np.expm1(-float(eps))
    L = np.log(n / g_eps)
    s_max = (L + k * lr * radius**2) / (k * alpha**2 * gamma**2 * lr) + np.sqrt(
        2.0
    ) * init_norm / (np.sqrt(k) * alpha * gamma * lr)
    return float(s_max / g_eps)


# ----------------------------------------------------------------- Thm 6.2: the data
# assumption


@dataclass(frozen=True)
class ReflectionCones:
    """Assumption 4 of Theorem 6.2, point by point: ``neg_inside[j]`` says
    whether ``−x_j`` (a negative point) lies in the convex cone of the positive
    points, ``pos_inside[i]`` whether ``−x_i`` (a positive point) lies in the
    cone of the negative ones. The assumption holds iff all are True."""

    pos_inside: np.ndarray
    neg_inside: np.ndarray

    @property
    def holds(self) -> bool:
        return bool(self.pos_inside.all() and self.neg_inside.all())

    @property
    def violations(self) -> int:
        return int((~self.pos_inside).sum() + (~self.neg_inside).sum())


def _in_cone(G, points, tol: float) -> np.ndarray:
    """``points[j] ∈ cone(rows of G)``, by non-negative least squares (exact
    up to ``tol`` relative to ``‖points[j]‖``)."""
    from scipy.optimize import nnls

    return np.array(
        [nnls(G.T, p)[1] <= tol * max(np.linalg.norm(p), 1e-300) for p in points]
    )


def reflection_cones(X, y, tol: float = 1e-9) -> ReflectionCones:
    """Decide Theorem 6.2's data assumption (Assumption 4) on a training set.

    As used in App. G.1 and Lemma 6.1's proof (App. H), the assumption says that
    no vector ``v`` is positive on every positive point while non-negative on
    some negative point (and the same with the classes swapped): a neuron that
    classifies all positives correctly then classifies all negatives correctly.
    By Farkas' lemma (and a small tilt towards the teacher, which makes ``≥ 0``
    strict) this holds iff every reflected negative point ``−x_j`` lies in the
    convex cone of the positive points, and vice versa — a linear feasibility
    problem per point, solved here by non-negative least squares. Lemma 6.1's
    symmetric sets (``x ∈ S₋ ⇔ −x ∈ S₊``) meet it trivially."""
    X, y = as_xy(X, y)
    P, N = X[y > 0], X[y < 0]
    if not len(P) or not len(N):
        raise ValueError("reflection_cones needs points of both classes")
    return ReflectionCones(
        pos_inside=_in_cone(N, -P, tol), neg_inside=_in_cone(P, -N, tol)
    )


# ----------------------------------------------------------------- Figs 2, 6: along a
# run


def cluster_radii(W_pos, W_neg) -> tuple[float, float]:
    """``(R, R_med)``: the radius of §5 (the farthest neuron from its cluster
    centre) and the median distance of a neuron from its centre. ``R/R_med``
    near 1 means the clusters are uniformly wide; a large ratio means one
    straggler sets ``R`` (and with it Theorem 5.1's certificate)."""
    P, Q = _pair(W_pos, W_neg)
    c = clusters(P, Q)
    dist = np.r_[
        np.linalg.norm(P - c.w_bar, axis=1), np.linalg.norm(Q - c.u_bar, axis=1)
    ]
    return c.radius, float(np.median(dist))


def _series(times, values, name: str) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(to_numpy(times), dtype=float).ravel()
    v = np.asarray(to_numpy(values), dtype=float).ravel()
    if t.shape != v.shape or not t.size:
        raise ValueError(
            f"times and {name} must be non-empty and of equal length, got {t.shape} "
            f"and {v.shape}"
        )
    if np.any(np.diff(t) < 0):
        raise ValueError("times must be non-decreasing")
    return t, v


def first_time(times, condition) -> float:
    """The first snapshot time at which ``condition`` holds (``inf`` if never):
    a horizon defined by the run itself, e.g. the first 100% training accuracy
    or the first loss below ``log 2 / n``."""
    t, c = _series(times, condition, "condition")
    hit = np.flatnonzero(c.astype(bool))
    return float(t[hit[0]]) if hit.size else float("inf")


def lowest_until(times, values, t_stop: float) -> float:
    """The smallest of ``values`` over the snapshots with time ``≤ t_stop``
    (App. D.2: the network *enters* the linear regime "at some point in the
    training process"; ``t_stop`` makes the statement falsifiable)."""
    t, v = _series(times, values, "values")
    keep = t <= float(t_stop)
    if not keep.any():
        raise ValueError(
            f"no snapshot at or before t_stop = {t_stop!r} (first at {t[0]!r})"
        )
    return float(v[keep].min())


def value_at(times, values, t: float) -> float:
    """``values`` at the first snapshot with time ``≥ t`` (a horizon's reading);
    raises if the run ends before ``t``."""
    ts, v = _series(times, values, "values")
    after = np.flatnonzero(ts >= float(t))
    if not after.size:
        raise ValueError(
            f"the run ends at t = {ts[-1]:g}, before the horizon t = {t!r}"
        )
    return float(v[after[0]])


def geometric_gd_stages(
    t_start: float, t_end: float, rel_step: float, stages: int
) -> list[tuple[float, int]]:
    """``[(lr, steps), ...]``: GD from flow time ``t_start`` to ``t_end`` with a
    step proportional to the time, ``lr = rel_step · t`` at the start of each of
    ``stages`` geometric stages (a constant number of steps per decade). In the
    late phase the loss and the curvature fall like ``1/t``, so such steps stay
    a fixed fraction of the stability limit while a constant step would need
    ``(t_end − t_start)/lr`` updates. The stages end exactly at ``t_end``."""
    t0, t1, rho = float(t_start), float(t_end), float(rel_step)
    if not 0 < t0 < t1:
        raise ValueError(f"need 0 < t_start < t_end, got {t_start!r}, {t_end!r}")
    if not 0 < rho < 1:
        raise ValueError(f"rel_step must be in (0, 1), got {rel_step!r}")
    if int(stages) != stages or stages < 1:
        raise ValueError(f"stages must be a positive integer, got {stages!r}")
    edges = np.geomspace(t0, t1, int(stages) + 1)
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        n = max(1, int(np.ceil((b - a) / (rho * a))))
        out.append((float((b - a) / n), n))
    return out


# ----------------------------------------------------------------- Fig 1: the boundary


def departure_from_best_line(
    W_pos, W_neg, X, alpha: float, n_angles: int = 1440
) -> float:
    """The fraction of the points ``X`` (a grid over the data's support) on
    which ``sign N(x)`` differs from the best linear rule through the origin,
    ``min_v mean[sign N(x) ≠ sign(v·x)]`` over ``n_angles`` unit normals ``v``
    in 2-D (Fig 1: how far the learned boundary is from *any* line through
    the origin, not only from the cluster line ``(w̄−ū)·x = 0``)."""
    P, Q, X = _pair_and_points(W_pos, W_neg, X)
    if X.shape[1] != 2:
        raise ValueError(
            f"departure_from_best_line is for 2-D inputs, got dimension {X.shape[1]}"
        )
    if int(n_angles) != n_angles or n_angles < 4:
        raise ValueError(f"n_angles must be an integer >= 4, got {n_angles!r}")
    s = np.sign(network_output(P, Q, X, alpha))
    B = int(n_angles)
    # the points by polar angle, binned: a normal at bin j calls +1 the half-plane of
    # the
    # B/2 bins centred on j (a point's side is decided to the bin width, 2π/B)
    phi = np.mod(np.arctan2(X[:, 1], X[:, 0]), 2 * np.pi)
    b = np.minimum((phi / (2 * np.pi) * B).astype(int), B - 1)
    pos = np.bincount(b, weights=(s > 0), minlength=B)
    neg = np.bincount(b, weights=(s < 0), minlength=B)
    zero = np.count_nonzero(s == 0)  # never agrees with a side
    start = np.arange(B) - B // 4 + B  # window of bins, tripled

    def cum(w):
        return np.r_[0.0, np.cumsum(np.tile(w, 3))]

    cp, cn = cum(pos), cum(neg)
    end = start + B // 2
    wrong = (cn[end] - cn[start]) + (pos.sum() - (cp[end] - cp[start]))
    return float((wrong.min() + zero) / len(X))


def regime_record(W, X, alpha: float, margin: float = 0.0) -> dict:
    """Theorem 5.1's measurements of one network ``W`` (a
    :meth:`~twolayer.models.TwoLayerNet.fixed_second_layer` weight matrix) on
    the points ``X``: the fraction ``outside`` the linear regime, the radius
    ``R`` and median radius ``R_med`` (:func:`cluster_radii`), the ``ratio``
    ``R/‖w̄−ū‖``, the fraction ``off_line`` where ``sign N ≠ sign((w̄−ū)·x)``,
    ``violations`` (points inside the regime classified against the linear
    rule: 0 by the theorem) and the largest same-type disagreement
    ``disagree`` at vote margin ``margin`` (0 in an NAR, Def. 6.2)."""
    W = np.asarray(to_numpy(W), dtype=float)
    P, Q = split_neurons(W)
    X = as_matrix(X, "X")
    if X.shape[1] != W.shape[1]:
        raise ValueError(
            f"X has {X.shape[1]} columns but the neurons have dimension {W.shape[1]}"
        )
    k, a, m = len(P), _alpha(alpha), _margin(margin)
    Z = X @ W.T  # every pre-activation, computed once
    xn = np.linalg.norm(X, axis=1)
    c = clusters(P, Q)
    proj = Z[:, :k].mean(axis=1) - Z[:, k:].mean(axis=1)  # (w̄−ū)·x
    inside = np.abs(proj) > 2.0 * c.radius * xn  # Theorem 5.1's condition
    act = np.where(Z > 0, Z, a * Z)
    sign_n = np.sign(act[:, :k].sum(axis=1) - act[:, k:].sum(axis=1))
    lin = np.sign(proj)
    votes = np.where(
        np.abs(Z) > m * xn[:, None] * np.linalg.norm(W, axis=1)[None, :],
        np.sign(Z),
        0.0,
    )  # as neuron_votes, (n, 2k)
    disagree = 0
    for V in (votes[:, :k], votes[:, k:]):  # as pairwise_disagreements
        pos, neg = (V > 0).astype(float), (V < 0).astype(float)
        disagree = max(disagree, int((pos.T @ neg + neg.T @ pos).max()))
    R, R_med = cluster_radii(P, Q)
    return dict(
        outside=float(1.0 - inside.mean()),
        R=R,
        R_med=R_med,
        ratio=c.ratio,
        off_line=float(np.mean(sign_n != lin)),
        violations=int(np.sum(sign_n[inside] != lin[inside])),
        disagree=disagree,
        sign=sign_n,
    )


def staged_gd(nets, data, stages) -> list[dict]:
    """Full-batch GD of several networks on the same data (one stacked tensor,
    :func:`twolayer.flows.gd_many`) through ``stages`` ``[(lr, steps,
    snapshot_steps), ...]`` run one after the other, each from where the last
    ended: a fine step for the early phase, a coarser one after, steps growing
    with ``t`` in the late phase (:func:`geometric_gd_stages`). Returns one dict
    per network: flow ``times`` (``Σ lr·steps``), ``loss`` and ``W`` at every
    snapshot (each stage's initial snapshot is the previous one's last and is
    kept once)."""
    from .. import flows  # here: flows imports the models this module checks

    nets = list(nets)
    out = [dict(times=[], loss=[], W=[]) for _ in nets]
    t0 = 0.0
    for i, (lr, steps, marks) in enumerate(stages):
        marks = sorted(
            set(int(m) for m in marks) | {int(steps)} | ({0} if i == 0 else set())
        )
        trajs = flows.gd_many(
            nets, data, lr=float(lr), steps=int(steps), snapshot_steps=marks
        )
        for rec, tr in zip(out, trajs):
            for st, snap, loss in zip(tr.steps, tr.snapshots, tr.loss):
                if i > 0 and st == 0:
                    continue
                rec["times"].append(t0 + float(lr) * int(st))
                rec["loss"].append(float(loss))
                rec["W"].append(np.asarray(snap["W"], dtype=float))
        t0 += float(lr) * int(steps)
    return [
        dict(times=np.array(r["times"]), loss=np.array(r["loss"]), W=r["W"])
        for r in out
    ]


def sgd_orders(n: int, epochs: int, seeds) -> np.ndarray:
    """The visiting orders of :func:`twolayer.flows.sgd` with batch size 1:
    a fresh permutation of the ``n`` points each epoch from ``torch``'s
    generator seeded with each seed; shape (len(seeds), epochs·n)."""
    import torch

    out = []
    for sd in seeds:
        gen = torch.Generator().manual_seed(int(sd))
        out.append(
            np.concatenate(
                [
                    torch.randperm(int(n), generator=gen).numpy()
                    for _ in range(int(epochs))
                ]
            )
        )
    return np.array(out, dtype=int)


def sgd_batch1(W0, X, y, alpha: float, lr, orders) -> tuple[np.ndarray, np.ndarray]:
    """SGD with batch size 1 on the mean logistic loss of eq. (1)'s network
    (second layer fixed to ``+1`` on the first ``k`` rows, ``−1`` on the
    rest), for ``R`` runs at once: the setting of Theorem 4.1.

    ``W0`` (R, 2k, d) initial first layers; ``X`` (R, n, d) and ``y`` (R, n)
    each run's data (or one (n, d), (n,) set for all); ``lr`` a number or one
    per run; ``orders`` (R, T) the point visited at each update
    (:func:`sgd_orders`). Returns ``(step_loss, W)``: the loss of the visited
    point before each update (R, T) — the quantity App. B counts — and the
    final weights. Equal to :func:`twolayer.flows.sgd` run by run, to rounding."""
    W = np.array(W0, dtype=float)
    if W.ndim != 3 or W.shape[1] % 2:
        raise ValueError(f"W0 must be (R, 2k, d), got shape {W.shape}")
    R, m, d = W.shape
    X = np.asarray(to_numpy(X), dtype=float)
    y = np.asarray(to_numpy(y), dtype=float)
    if X.ndim == 2:
        X, y = np.broadcast_to(X, (R,) + X.shape), np.broadcast_to(y, (R,) + y.shape)
    if X.shape[0] != R or X.shape[2] != d or y.shape != X.shape[:2]:
        raise ValueError(
            f"X must be (R, n, {d}) and y (R, n) with R = {R}, got {X.shape}, {y.shape}"
        )
    a = _alpha(alpha)
    eta = np.broadcast_to(np.asarray(lr, dtype=float), (R,))
    orders = np.asarray(orders, dtype=int)
    if orders.ndim != 2 or orders.shape[0] != R:
        raise ValueError(f"orders must be (R, T) with R = {R}, got {orders.shape}")
    from scipy.special import expit

    signs = np.r_[np.ones(m // 2), -np.ones(m // 2)]
    rows = np.arange(R)
    loss = np.empty(orders.shape)
    for t in range(orders.shape[1]):
        x, yt = X[rows, orders[:, t]], y[rows, orders[:, t]]  # (R, d), (R,)
        z = np.einsum("rmd,rd->rm", W, x)
        q = yt * (signs * np.where(z > 0, z, a * z)).sum(axis=1)
        loss[:, t] = np.logaddexp(0.0, -q)
        g = expit(-q)  # −ℓ'(q)
        W += (
            (eta * g * yt)[:, None, None]
            * (signs * np.where(z > 0, 1.0, a))[:, :, None]
            * x[:, None, :]
        )
    if not np.isfinite(W).all():
        raise FloatingPointError("sgd_batch1 diverged: lower the step size")
    return loss, W


def run_rows(run: dict, train, test, alpha: float, margin: float = 0.0) -> list[dict]:
    """One row per snapshot of a :func:`staged_gd` run: flow time ``t``, training
    ``loss``, training and test accuracy (``acc``, ``test_acc``), the fractions
    ``outside`` the linear regime on the training and test points, ``R``,
    ``spread`` ``= R/R_med``, ``ratio``, the largest within-cluster ``angle``
    (App. D.3), ``off_line`` and ``disagree`` on the training points
    (:func:`regime_record`) and the count of Theorem 5.1 ``violations`` on both."""
    rows = []
    for t, loss, W in zip(run["times"], run["loss"], run["W"]):
        tr = regime_record(W, train.X, alpha, margin)
        te = regime_record(W, test.X, alpha)
        rows.append(
            dict(
                t=float(t),
                loss=float(loss),
                acc=float(np.mean(tr["sign"] == train.y)),
                test_acc=float(np.mean(te["sign"] == test.y)),
                outside=tr["outside"],
                outside_test=te["outside"],
                R=tr["R"],
                spread=tr["R"] / tr["R_med"],
                ratio=tr["ratio"],
                angle=max(max_cluster_angles(*split_neurons(W))),
                off_line=tr["off_line"],
                disagree=tr["disagree"],
                violations=tr["violations"] + te["violations"],
                n=train.n,
            )
        )
    return rows


def par_entry_time(times, weights, X, y, margin: float = 0.0) -> float:
    """The flow time of the first snapshot from which the network stays in the
    PAR (Def. 6.3) up to the last one: 0 if it is in the PAR throughout, ``nan``
    if it is not in the PAR at the last snapshot. ``weights`` are the
    :meth:`~twolayer.models.TwoLayerNet.fixed_second_layer` matrices ``W`` at
    ``times``."""
    t = np.asarray(to_numpy(times), dtype=float).ravel()
    weights = list(weights)
    if len(weights) != len(t) or not len(t):
        raise ValueError(
            f"times and weights must be non-empty and of equal length, got {len(t)} "
            f"and {len(weights)}"
        )
    inside = np.array(
        [par_membership(*split_neurons(W), X, y, margin).network for W in weights]
    )
    if not inside[-1]:
        return float("nan")
    out = np.flatnonzero(~inside)
    return float(t[out.max() + 1]) if out.size else 0.0


def par_svm_in_par(X, y, alpha: float) -> float:
    """The fraction of training points on which the PAR SVM's own directions
    ``(w, u)`` (:func:`par_svm`) vote as the PAR requires: ``sign(w·x_j) = y_j``
    and ``sign(u·x_j) = −y_j``. A property of the data alone (one convex
    program). Theorem 6.2 assumes the flow stays in the PAR and concludes that
    its directions tend to ``(w, u)``; both can hold only if ``(w, u)`` lies in
    the (closed) PAR, so a value below 1 means the theorem's trajectory
    hypothesis cannot be met on this set (up to ties on a kink)."""
    X, y = as_xy(X, y)
    w, u = par_svm(X, y, alpha)
    return float(np.mean((np.sign(X @ w) == y) & (np.sign(X @ u) == -y)))


def regime_history(weights, clock, X, y, alpha: float, margin: float = 0.0) -> list:
    """One row per snapshot (``weights``: the fixed-second-layer matrices ``W``;
    ``clock``: their steps or flow times) of the §6 measures: the clustering
    ratio ``R/‖w̄−ū‖`` and radius ``R``, the largest angle within each cluster,
    the fractions of w- and u-neurons in the PAR and of all neurons, NAR and PAR
    membership of the network, the largest same-type disagreements and the
    training accuracy (votes at relative margin ``margin``). A list of dicts
    (a DataFrame's rows)."""
    rows = []
    for step, W in zip(clock, weights):
        P, Q = split_neurons(W)
        par = par_membership(P, Q, X, y, margin)
        dw, du = same_type_disagreements(P, Q, X, margin)
        aw, au = max_cluster_angles(P, Q)
        cl = clusters(P, Q)
        out = np.sign(network_output(P, Q, X, alpha))
        rows.append(
            dict(
                step=step,
                ratio=cl.ratio,
                radius=cl.radius,
                angle_w=aw,
                angle_u=au,
                par_w=float(par.w_neurons.mean()),
                par_u=float(par.u_neurons.mean()),
                par=par.fraction,
                in_nar=nar_membership(P, Q, X, margin).network,
                in_par=par.network,
                disagree_w=dw,
                disagree_u=du,
                accuracy=float(np.mean(out == np.asarray(to_numpy(y)))),
            )
        )
    return rows


# ----------------------------------------------------------------- App. J: Fig 9


def outlier_cosines(W, x) -> np.ndarray:
    """``|cos(w_i, x)|`` for every row ``w_i`` of ``W``: 0 when the neuron sits on
    its kink at ``x`` (App. J, Fig 9: the u-neurons' approach to the outlier)."""
    W = as_matrix(W, "W")
    x = np.asarray(to_numpy(x), dtype=float).ravel()
    if x.shape != (W.shape[1],):
        raise ValueError(f"x must be a vector of length {W.shape[1]}, got {x.shape}")
    return np.abs(W @ x) / (np.linalg.norm(W, axis=1) * np.linalg.norm(x))


def agreement_run(history, W_first, W_last, outlier) -> dict:
    """One GD run of App. J (Fig 9) summarised from its :func:`regime_history`
    rows (votes at the history's margin): ``nar_snaps``, the snapshots after the
    first in an NAR (Def. 6.2); ``nar_not_par_snaps``, those in an NAR, not in
    the PAR (Def. 6.3), at 100% training accuracy (Fig 9's state);
    ``split_w_fit``, the smallest same-type disagreement of the w-neurons over
    the snapshots at 100% training accuracy after the first (≥ 1: they never
    all agree while the set is fitted; −1 if it is never fitted); at the first and last
    snapshot the largest same-type disagreement ``disagree_init`` /
    ``disagree``; at the last, ``w_off_par`` (w-neurons not in the PAR, Fig 9d),
    ``in_nar``, ``in_par``; and the largest ``|cos(u_i, x_o)|`` at the first and
    last snapshot (``cos_u_init``, ``cos_u``: :func:`outlier_cosines`)."""
    rows = list(history)
    if len(rows) < 2:
        raise ValueError(f"history needs at least two snapshots, got {len(rows)}")
    later = rows[1:]
    k = len(split_neurons(W_last)[0])

    def worst(r):
        return int(max(r["disagree_w"], r["disagree_u"]))

    return dict(
        nar_snaps=sum(bool(r["in_nar"]) for r in later),
        nar_not_par_snaps=sum(
            bool(r["in_nar"]) and not r["in_par"] and r["accuracy"] == 1.0
            for r in later
        ),
        split_w_fit=min(
            (int(r["disagree_w"]) for r in later if r["accuracy"] == 1.0), default=-1
        ),
        disagree_init=worst(rows[0]),
        disagree=worst(rows[-1]),
        w_off_par=int(round(k * (1.0 - rows[-1]["par_w"]))),
        in_nar=bool(rows[-1]["in_nar"]),
        in_par=bool(rows[-1]["in_par"]),
        cos_u_init=float(outlier_cosines(split_neurons(W_first)[1], outlier).max()),
        cos_u=float(outlier_cosines(split_neurons(W_last)[1], outlier).max()),
    )


def par_run(history) -> dict:
    """One flow of Figs 7–8 summarised from its :func:`regime_history` rows:
    the PAR entrance ``par_entry`` (clock of the first snapshot in the PAR,
    ``inf`` if never) and its row ``entry`` (the last row if never); the PAR
    fraction, clustering ratio and largest within-cluster angle at the first and
    last snapshot (``*_init``, ``*_end``); and ``radius_drift``, the relative
    range of ``R`` from the entrance on (0 in the PAR: Thm 6.1's proof, all
    neurons of a type get the same gradient)."""
    rows = list(history)
    if not rows:
        raise ValueError("history needs at least one snapshot")
    inside = [bool(r["in_par"]) for r in rows]
    entry = inside.index(True) if any(inside) else len(rows) - 1
    radius = np.array([r["radius"] for r in rows[entry:]], dtype=float)

    def angle(r):
        return float(max(r["angle_w"], r["angle_u"]))

    return dict(
        entry=entry,
        par_entry=float(rows[entry]["step"]) if any(inside) else float("inf"),
        par_init=float(rows[0]["par"]),
        par_end=float(rows[-1]["par"]),
        ratio_init=float(rows[0]["ratio"]),
        ratio_end=float(rows[-1]["ratio"]),
        angle_init=angle(rows[0]),
        angle_end=angle(rows[-1]),
        radius_drift=float(np.ptp(radius) / radius[0]),
    )


# ----------------------------------------------------------------- Thm 4.1: the grid


def runs_at(table, alpha: float, init_scale: float, mode: str):
    """The rows of a Thm 4.1 run table (columns ``alpha``, ``init_scale``,
    ``mode``) at one leaky slope, init scale and step mode (``"η"``, ``"η/k"``)."""
    sel = (table.alpha == alpha) & (table.init_scale == init_scale)
    return table[sel & (table["mode"] == mode)]


def log_log_slope(x, y) -> float:
    """The least-squares slope of ``log y`` against ``log x`` (eq. 20's width
    dependence: −1 for a count ∝ 1/k, 0 for a k-independent one)."""
    x = np.asarray(to_numpy(x), dtype=float).ravel()
    y = np.asarray(to_numpy(y), dtype=float).ravel()
    if x.shape != y.shape or x.size < 2 or (x <= 0).any() or (y <= 0).any():
        raise ValueError(
            f"x and y must be positive, of equal length >= 2: {x.shape}, {y.shape}"
        )
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


# ----------------------------------------------------------------- Thm 5.1: horizons


HORIZON_COLUMNS = ("outside", "outside_test", "R", "spread", "ratio", "off_line",
                   "disagree", "angle")  # fmt: skip


def run_horizons(run, t_mid: float) -> dict:
    """The stated horizons of one MNIST run (``run``: :func:`run_rows` of one
    network as a DataFrame): ``t_fit`` (first 100% training accuracy) and
    ``t_ll`` (first loss below ``log 2 / n``, Lyu & Li's late phase), ``inf``
    if not reached; ``entered`` / ``entered_test``, the smallest fraction
    outside the regime over ``t ≤ min(t_fit, end)`` (App. D.2's "at some
    point"); and every :data:`HORIZON_COLUMNS` value at ``fit``, ``ll`` and
    ``mid`` (``t_mid``), each read at the horizon or at the run's end if it
    comes first."""
    t = run.t.to_numpy()
    t_fit = first_time(t, run.acc.to_numpy() == 1.0)
    t_ll = first_time(t, run.loss.to_numpy() < np.log(2) / run.n.iloc[0])
    stop = min(t_fit, t[-1])
    out = dict(
        t_fit=t_fit,
        t_ll=t_ll,
        entered=lowest_until(t, run.outside, stop),
        entered_test=lowest_until(t, run.outside_test, stop),
    )
    for name, when in (("fit", t_fit), ("ll", t_ll), ("mid", t_mid)):
        for col in HORIZON_COLUMNS:
            out[f"{col}@{name}"] = value_at(t, run[col], min(when, t[-1]))
    return out


def mnist_schedule(
    lr_early: float,
    t_early: float,
    n_early_snapshots: int,
    rel_step: float,
    horizons,
    stages: int,
    t_start: float | None = None,
    rel_start: float | None = None,
) -> list:
    """The :func:`staged_gd` plan of the MNIST runs (Figs 2, 6): GD with step
    ``lr_early`` up to flow time ``t_early`` with ``n_early_snapshots``
    log-spaced snapshots (the early phase, resolved), then from ``t_early`` to
    each of ``horizons`` in turn :func:`geometric_gd_stages` with ``stages``
    stages of step ``rel_step · t``, one snapshot at the end of each.

    With ``t_start`` and ``rel_start`` the start is *resolved*: one Euler step
    of size ``t_start`` (chosen below the init scale over the gradient's norm,
    so the first update does not dwarf the init), then steps growing with the
    time, ``rel_start · t``, until they reach ``lr_early`` (at
    ``t = lr_early / rel_start``; ``n_early_snapshots`` geometric stages with
    one snapshot each), then ``lr_early`` up to ``t_early``. Every update then
    moves a neuron by a fixed small fraction of its norm, which grows like
    ``t`` from a small init: the discretisation of the small-init gradient
    flow. Halving ``rel_start`` and ``lr_early`` checks it."""
    if not lr_early > 0 or not t_early > 0:
        raise ValueError(f"need lr_early, t_early > 0, got {lr_early!r}, {t_early!r}")
    if (t_start is None) != (rel_start is None):
        raise ValueError("give both t_start and rel_start, or neither")
    if t_start is None:
        early = int(round(t_early / lr_early))
        marks = np.geomspace(1, early, n_early_snapshots).round()
        plan = [(float(lr_early), early, marks)]
    else:
        t_cap = float(lr_early) / float(rel_start)
        if not 0 < t_start < t_cap < t_early:
            raise ValueError(
                f"need 0 < t_start < lr_early / rel_start < t_early, got t_start = "
                f"{t_start!r}, lr_early / rel_start = {t_cap!r}, t_early = {t_early!r}"
            )
        plan = [(float(t_start), 1, [1])]
        ramp = geometric_gd_stages(t_start, t_cap, rel_start, n_early_snapshots)
        plan += [(lr, n, [n]) for lr, n in ramp]
        rest = int(round((t_early - t_cap) / lr_early))
        marks = np.geomspace(1, rest, max(2, n_early_snapshots // 4)).round()
        plan.append((float(lr_early), rest, marks))
    edges = [float(t_early), *map(float, horizons)]
    for a, b in zip(edges[:-1], edges[1:]):
        plan += [(lr, n, [n]) for lr, n in geometric_gd_stages(a, b, rel_step, stages)]
    return plan


def mnist_pair_rows(
    pair,
    setting: str,
    inits,
    plan,
    k: int,
    alpha: float,
    margin: float = 0.0,
    dtype: str = "float32",
) -> list[dict]:
    """Train the networks ``inits`` ``[(label, init_scale, seed), ...]`` on the
    embedded MNIST pair ``(positive, negative)`` through ``plan``
    (:func:`mnist_schedule`, one stacked tensor of ``dtype``) with the inputs
    ``"centred"`` (minus the training mean image) or ``"uncentred"`` (raw), and
    return :func:`run_rows` of every run tagged with ``pair``, ``setting``,
    ``init`` and ``seed`` (Figs 2 and 6, Thm 5.1)."""
    import torch

    from .. import data

    if setting not in ("centred", "uncentred"):
        raise ValueError(f"setting must be 'centred' or 'uncentred', got {setting!r}")
    pos, neg = pair
    raw_train, raw_test = (data.mnist_pair(pos, neg, p) for p in ("train", "test"))
    mean = raw_train.X.mean(axis=0) if setting == "centred" else 0.0
    train, test = (
        d.with_data(d.X - mean, d.y, note=setting) for d in (raw_train, raw_test)
    )
    nets = [
        models.TwoLayerNet.fixed_second_layer(
            train.d, k, alpha, init_scale=sc, seed=s, dtype=getattr(torch, dtype)
        )
        for _, sc, s in inits
    ]
    rows = []
    for (init, _, s), run in zip(inits, staged_gd(nets, train, plan)):
        tag = dict(pair=f"{pos} vs {neg}", setting=setting, init=init, seed=s)
        rows += [{**tag, **r} for r in run_rows(run, train, test, alpha, margin)]
    return rows


# ----------------------------------------------------------------- Figs 1, 3, 4


def boundary_record(W_pos, W_neg, grid, alpha: float) -> dict:
    """Fig 1 on a grid of the data's support: the fraction ``departure`` off
    the best line through the origin (:func:`departure_from_best_line`), the
    fraction ``outside`` Thm 5.1's linear regime, the clustering ``ratio``."""
    P, Q = _pair(W_pos, W_neg)
    return dict(
        departure=departure_from_best_line(P, Q, grid, alpha),
        outside=float(1 - linear_regime(P, Q, grid).mean()),
        ratio=clustering_ratio(P, Q),
    )


def linear_fit_residual(X, values) -> float:
    """The relative residual ``‖v − Xβ‖/‖v‖`` of the least-squares linear fit
    (through the origin) of ``values`` on the points ``X`` (Fig 3: 0 exactly
    when ``N`` is linear on ``X``)."""
    X = as_matrix(X, "X")
    v = np.asarray(to_numpy(values), dtype=float).ravel()
    if v.shape != (len(X),):
        raise ValueError(f"values must have one entry per row of X, got {v.shape}")
    beta, *_ = np.linalg.lstsq(X, v, rcond=None)
    return float(np.linalg.norm(v - X @ beta) / np.linalg.norm(v))


def par_angles(W, w, u) -> dict:
    """Thm 6.2 / Fig 4: the angles (degrees) between a network's cluster centres
    and the PAR SVM's directions ``(w, u)``: ``w`` (w̄ vs w), ``u`` (ū vs u) and
    ``boundary`` (w̄−ū vs w−u)."""
    c = clusters(*split_neurons(W))
    w, u = np.asarray(w, dtype=float), np.asarray(u, dtype=float)
    return dict(
        w=angle_degrees(c.w_bar, w),
        u=angle_degrees(c.u_bar, u),
        boundary=angle_degrees(c.direction, w - u),
    )


def sgd_run_record(step_loss, W, X, y, alpha: float, eps: float) -> dict:
    """One SGD run of Theorem 4.1 (:func:`sgd_batch1`): ``curve``, the largest
    visited loss of each epoch; the ``leading`` epochs in a row from the start
    that contain a point with loss ``≥ eps`` (App. B's count,
    :func:`leading_violating_epochs`), the ``last`` such epoch (1-based, 0 if
    none) and the ``final_loss``, the mean logistic loss of the final weights
    ``W`` on ``(X, y)``."""
    X, y = as_xy(X, y)
    loss = np.asarray(step_loss, dtype=float).ravel()
    n = len(X)
    if loss.size % n:
        raise ValueError(f"step_loss has {loss.size} entries, not whole epochs of {n}")
    bad = violating_epochs(loss, n, eps)
    P, Q = split_neurons(W)
    q = y * network_output(P, Q, X, alpha)
    return dict(
        curve=loss.reshape(-1, n).max(axis=1),
        leading=leading_violating_epochs(bad),
        last=int(np.flatnonzero(bad).max()) + 1 if bad.any() else 0,
        final_loss=float(np.logaddexp(0, -q).mean()),
    )


def fig4_gaussians(n_per_class: int, mu_pos, mu_neg, std: float, seed: int):
    """Fig 4's data: ``n_per_class`` points of ``N(mu_pos, std² I)`` (label +1,
    drawn with ``seed``) and of ``N(mu_neg, std² I)`` (label −1, ``seed + 1``),
    the classes of :func:`twolayer.data.two_gaussians`; deliberately not mirror
    images, so that the PAR SVM (Thm 6.2) differs from the linear SVM."""
    from .. import data

    pos = data.two_gaussians(
        2 * n_per_class, 2, mean=np.array(mu_pos), std=std, seed=seed
    ).positives
    neg = data.two_gaussians(
        2 * n_per_class, 2, mean=-np.array(mu_neg), std=std, seed=seed + 1
    ).negatives
    return data.Dataset(
        np.vstack([pos, neg]),
        np.r_[np.ones(len(pos)), -np.ones(len(neg))],
        "two 2-D Gaussians",
        f"N({list(mu_pos)}, {std}²I) vs N({list(mu_neg)}, {std}²I), seeds {seed}, "
        f"{seed + 1}",
    )


def disk_grid(size: int) -> np.ndarray:
    """The points of the regular ``size × size`` grid of ``[−1, 1]²`` that lie in
    the closed unit disk, the origin left out (Figs 1, 3, 5: the data's support,
    on which fractions of the disk are measured)."""
    if int(size) != size or size < 2:
        raise ValueError(f"size must be an integer >= 2, got {size!r}")
    g = np.linspace(-1, 1, int(size))
    GX, GY = np.meshgrid(g, g)
    grid = np.c_[GX.ravel(), GY.ravel()]
    r = np.linalg.norm(grid, axis=1)
    return grid[(r <= 1) & (r > 0)]


def sign_agreement(W_pos, W_neg, X, alpha: float) -> dict:
    """Cor. 6.1 / Fig 5 on the points ``X``: the fraction ``mismatch`` where
    ``sign N(x)`` differs from the linear rule ``sign((w̄−ū)·x)``
    (:func:`linear_prediction`) and the fraction ``zero`` where ``N(x) = 0``
    exactly (no decision: the boundary itself and, for the ReLU ``alpha = 0``,
    the cone where every neuron is off)."""
    N = network_output(W_pos, W_neg, X, alpha)
    lin = linear_prediction(W_pos, W_neg, X)
    return dict(mismatch=float(np.mean(np.sign(N) != lin)), zero=float(np.mean(N == 0)))


def nar_not_par_rows(history):
    """The snapshots of a :func:`regime_history` (a DataFrame) at Fig 9's state
    (App. J): in an NAR (Def. 6.2), not in the PAR (Def. 6.3), at 100% training
    accuracy."""
    h = history
    return h[h.in_nar & ~h.in_par & (h.accuracy == 1.0)]


def par_svm_kernel_gap(X, y, alpha: float) -> float:
    """How far the kernel (dual) form of the PAR SVM (:func:`par_svm_kernel`)
    is from its primal form (:func:`par_svm`, eq. 8): the largest entry of
    ``|w_dual − w| , |u_dual − u|`` relative to ``‖(w, u)‖`` (0 at the optimum by
    strong duality; the solvers' tolerance in practice)."""
    w, u = par_svm(X, y, alpha)
    kernel = par_svm_kernel(X, y, alpha)
    gap = max(np.abs(kernel.w - w).max(), np.abs(kernel.u - u).max())
    return float(gap / np.linalg.norm(np.r_[w, u]))


def gd_batch(W0, X, y, alpha: float, lr, steps: int, snapshot_steps, mask=None):
    """Full-batch GD on the mean logistic loss of eq. (1)'s network (second
    layer ``+1`` on the first ``k`` rows, ``−1`` on the rest) for ``R`` runs at
    once, each on its own data set: App. J's runs over data draws (Fig 9).

    ``W0`` (R, 2k, d) initial first layers; ``X`` (R, n, d), ``y`` (R, n) each
    run's points; ``mask`` (R, n) bool, the points a run uses (default all: sets
    of different sizes are padded, and the mean is over a run's own points);
    ``lr`` a number or one per run. Returns the weights at ``snapshot_steps``
    (a list of (R, 2k, d) arrays, in ascending order). Equal to
    :func:`twolayer.flows.gd` run by run, to rounding."""
    from scipy.special import expit

    W = np.array(to_numpy(W0), dtype=float)
    if W.ndim != 3 or W.shape[1] % 2:
        raise ValueError(f"W0 must be (R, 2k, d), got shape {W.shape}")
    R, m, d = W.shape
    X = np.asarray(to_numpy(X), dtype=float)
    y = np.asarray(to_numpy(y), dtype=float)
    if X.shape[0] != R or X.ndim != 3 or X.shape[2] != d or y.shape != X.shape[:2]:
        raise ValueError(
            f"X must be (R, n, {d}) and y (R, n) with R = {R}, got {X.shape}, {y.shape}"
        )
    mask = np.ones(y.shape, bool) if mask is None else np.asarray(mask, bool)
    if mask.shape != y.shape or not mask.any(axis=1).all():
        raise ValueError(f"mask must be (R, n) = {y.shape} with a point in every run")
    weight = mask / mask.sum(axis=1, keepdims=True)  # the mean over a run's points
    a = _alpha(alpha)
    eta = np.broadcast_to(np.asarray(lr, dtype=float), (R,))
    marks = sorted(set(int(s) for s in snapshot_steps))
    if not marks or marks[0] < 0:
        raise ValueError(f"snapshot_steps must be non-negative, got {snapshot_steps!r}")
    signs = np.r_[np.ones(m // 2), -np.ones(m // 2)]
    out, want = [], iter(marks)
    nxt = next(want)
    for t in range(int(steps) + 1):
        while nxt is not None and nxt == t:
            out.append(W.copy())
            nxt = next(want, None)
        if t == int(steps) or nxt is None:
            if nxt is None:
                break
            continue
        Z = X @ W.transpose(0, 2, 1)  # (R, n, m)
        slope = np.where(Z > 0, 1.0, a)
        q = y * ((Z * slope) @ signs)
        g = weight * y * expit(-q)  # −∂L/∂N(x_j), per run and point
        W += eta[:, None, None] * (
            (slope * (signs * g[:, :, None])).transpose(0, 2, 1) @ X
        )
    if not np.isfinite(W).all():
        raise FloatingPointError("gd_batch diverged: lower the step size")
    return out
