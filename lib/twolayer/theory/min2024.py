"""Min, Mallada & Vidal (ICLR 2024): early neuron alignment under small initialization.

Net ``f(x) = Σ_j v_j σ(w_j·x)`` (ReLU, no biases), sum loss ``L = Σ_i ℓ(y_i f(x_i))``.

* **Assumption 1** — ``μ = min_{i,j} ⟨x_i y_i, x_j y_j⟩/(‖x_i‖‖x_j‖) > 0``:
  :func:`separability`.
* **Cones** ``S+ = {w: w·x_i > 0 ⇔ y_i = +1}``, ``S− = {w: w·x_i > 0 ⇔ y_i = −1}``,
  ``S_dead = {w: w·x_i ≤ 0 ∀i}``: :func:`cone_membership`, :func:`membership_record`.
* **Direction field** ``x_a(w) = Σ_{i: w·x_i > 0} y_i x_i`` (§3.3, eq. 6):
  :func:`direction_field`.
* **Lemma 1 / Lemma 4** (App. C) — along gradient flow,
  ``‖d/dt(w_j/‖w_j‖) − sign(v_j) P_{w_j} x_a(w_j)‖`` is small while the network output
  is small: :func:`lemma1_error` measures it, :func:`lemma4_bound` and
  :func:`lemma1_bound` are the paper's bounds.
* **Theorem 1 (i)** — alignment time ``t1`` (:func:`alignment_time`) and its
  order ``log n/√μ`` (:func:`t1_order`); **(ii)** trapping (:func:`cone_exits`),
  stable rank (reuse :func:`twolayer.metrics.stable_rank`).
* **Eqs. 7–8** — activation-pattern monotonicity: :func:`monotonicity_violations`.
* **App. A.5 (Figs 12–13)** — changes of neuron norms vs directions:
  :func:`norm_direction_changes`.

Loss normalisation. The paper's analysis (App. C) uses ``ℓ(q) = 2 log(1 + e^{−q})``
(so that ``−ℓ'(0) = 1``); the book's trainer (:mod:`twolayer.flows`) uses
``log(1 + e^{−q})``. The two flows trace the same path, the book's at half the
speed: book time ``t = steps·lr`` equals paper time ``t/2`` (``t/(2n)`` for the
mean loss): :func:`paper_time`, :func:`book_time`. The functions below take
``loss_weight`` (2 = the paper's normalisation, the default) so that
velocities are in the paper's time unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..metrics import row_cosines
from ..validation import as_matrix, as_vector, as_xy, positive, to_numpy

#: Cone codes used by :func:`cone_membership` and :func:`membership_record`.
S_PLUS, S_MINUS, S_DEAD, S_NONE = 1, -1, 0, 2
CONE_NAMES = {S_PLUS: "S+", S_MINUS: "S−", S_DEAD: "S_dead", S_NONE: "in transit"}

#: Images per digit in the standard MNIST training set (LeCun et al.), used to
#: keep ``η·n`` at the paper's value when the sum loss is run on a subset.
MNIST_TRAIN_COUNTS = {
    0: 5923,
    1: 6742,
    2: 5958,
    3: 6131,
    4: 5842,
    5: 5421,
    6: 5918,
    7: 6265,
    8: 5851,
    9: 5949,
}


def _unit_rows(X: np.ndarray, name: str) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1)
    if np.any(norms == 0):
        raise ValueError(
            f"{name} has zero rows (indices "
            f"{np.flatnonzero(norms == 0)[:5].tolist()}); "
            "cosines to them are undefined"
        )
    return X / norms[:, None]


def separability(X, y) -> float:
    """``μ`` of Assumption 1: ``min_{i,j} ⟨x_i y_i, x_j y_j⟩ / (‖x_i‖ ‖x_j‖)``.

    ``μ > 0`` means orthogonal separability with a margin (same-label points at
    acute angles, opposite-label points at obtuse ones); ``μ ≤ 0`` means
    Assumption 1 fails. The diagonal (``i = j``) contributes 1, so ``μ ≤ 1``.

    Raises
    ------
    ValueError
        If ``X`` is not a finite (n, d) matrix, ``y`` is not in {±1}^n, or a row of
        ``X`` is zero.
    """
    X, y = as_xy(X, y)
    Z = _unit_rows(X, "X") * y[:, None]
    return float((Z @ Z.T).min())


def aggregate_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    """``x+ = Σ_{y_i=+1} x_i`` and ``x− = Σ_{y_i=−1} x_i`` (Assumption 2, Thm 1)."""
    X, y = as_xy(X, y)
    return X[y > 0].sum(axis=0), X[y < 0].sum(axis=0)


def _wx(W, X, y=None):
    W = as_matrix(W, "W")
    if y is None:
        X = as_matrix(X, "X")
    else:
        X, y = as_xy(X, y)
    if W.shape[1] != X.shape[1]:
        raise ValueError(
            f"W has {W.shape[1]} columns but X has {X.shape[1]}: both must be (·, d)"
        )
    return W, X, y


def cone_membership(W, X, y) -> np.ndarray:
    """Which cone each neuron (row of ``W``) is in: an int array of codes
    :data:`S_PLUS`, :data:`S_MINUS`, :data:`S_DEAD` or :data:`S_NONE` (none of the
    three).

    Activation is strict (``w·x_i > 0``), the paper's subgradient ``σ'(0) = 0``.
    """
    W, X, y = _wx(W, X, y)
    active = (W @ X.T) > 0
    pos = y > 0
    codes = np.full(W.shape[0], S_NONE, dtype=int)
    codes[np.all(active == pos[None, :], axis=1)] = S_PLUS
    codes[np.all(active == ~pos[None, :], axis=1)] = S_MINUS
    codes[~active.any(axis=1)] = S_DEAD
    return codes


def membership_record(Ws, X, y) -> np.ndarray:
    """:func:`cone_membership` of every snapshot: ``Ws`` of shape (T, h, d) → codes
    (T, h)."""
    Ws = np.asarray(to_numpy(Ws), dtype=float)
    if Ws.ndim != 3:
        raise ValueError(
            "Ws must be a stack of weight matrices of shape (T, h, d), got shape "
            f"{Ws.shape}"
        )
    return np.stack([cone_membership(W, X, y) for W in Ws])


def direction_field(W, X, y, alpha: float = 0.0) -> np.ndarray:
    """``x_a(w_j) = Σ_{i: w_j·x_i > 0} y_i x_i + α Σ_{i: w_j·x_i ≤ 0} y_i x_i``
    for every row ``w_j`` of ``W`` (Lemma 1; α > 0 is the leaky version of App. C).
    Returns shape (h, d)."""
    W, X, y = _wx(W, X, y)
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha!r}")
    act = (W @ X.T) > 0
    coef = np.where(act, 1.0, alpha) * y[None, :]
    return coef @ X


def _projected(W: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``P_{w_j} V_j = V_j − (w_j·V_j) w_j/‖w_j‖²`` row by row."""
    n2 = (W**2).sum(axis=1)
    if np.any(n2 == 0):
        raise ValueError("W has zero rows: the direction w/‖w‖ is undefined")
    return V - ((W * V).sum(axis=1) / n2)[:, None] * W


def _wv(W, v, X, y):
    W, X, y = _wx(W, X, y)
    v = as_vector(v, "v", W.shape[0])
    return W, v, X, y


def weighted_gradients(
    W, v, X, y, loss_weight: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """``(−∇_W L, −∇_v L)`` of ``L = c Σ_i log(1 + e^{−y_i f(x_i)})`` with
    ``c = loss_weight``
    (ReLU). Row ``j`` of the first is ``v_j Σ_i c σ(−q_i) y_i 1[w_j·x_i>0] x_i``."""
    W, v, X, y = _wv(W, v, X, y)
    positive(loss_weight, "loss_weight")
    Z = X @ W.T
    H = np.maximum(Z, 0.0)
    q = y * (H @ v)
    g = loss_weight * y / (1.0 + np.exp(np.clip(q, -700, 700)))  # c σ(−q_i) y_i
    gW = v[:, None] * (((Z > 0) * g[:, None]).T @ X)
    gv = H.T @ g
    return gW, gv


def direction_velocity(W, v, X, y, loss_weight: float = 2.0) -> np.ndarray:
    """``d/dt (w_j/‖w_j‖) = P_{w_j} ẇ_j / ‖w_j‖`` under gradient flow, every row
    (h, d)."""
    W, v, X, y = _wv(W, v, X, y)
    gW, _ = weighted_gradients(W, v, X, y, loss_weight)
    return _projected(W, gW) / np.linalg.norm(W, axis=1)[:, None]


def lemma1_error(W, v, X, y, loss_weight: float = 2.0) -> np.ndarray:
    """Per neuron, ``‖d/dt(w_j/‖w_j‖) − sign(v_j) P_{w_j} x_a(w_j)‖`` (Lemma 1, eq. 6).

    The time derivative is the exact gradient-flow one at the state ``(W, v)``
    (paper's time unit for the default ``loss_weight=2``; see the module docstring).
    Dead neurons (``x_a = 0``, no gradient) have error 0.
    """
    W, v, X, y = _wv(W, v, X, y)
    field = _projected(W, np.sign(v)[:, None] * direction_field(W, X, y))
    return np.linalg.norm(direction_velocity(W, v, X, y, loss_weight) - field, axis=1)


def lemma4_bound(W, v, X) -> float:
    """Lemma 4 (App. C, eq. 11): whenever ``max_i |f(x_i)| < 1`` and the net is
    balanced, the Lemma 1 error is at most ``2 n X_max max_i |f(x_i)|``.
    Returns ``inf`` when ``max_i |f(x_i)| ≥ 1`` (the lemma says nothing)."""
    W, X, _ = _wx(W, X)
    v = as_vector(v, "v", W.shape[0])
    fmax = float(np.abs(np.maximum(X @ W.T, 0.0) @ v).max())
    if fmax >= 1.0:
        return float("inf")
    return 2.0 * X.shape[0] * float(np.linalg.norm(X, axis=1).max()) * fmax


@dataclass(frozen=True)
class Lemma1Bound:
    """Lemma 1 (App. C): for ``ε ≤ eps_max`` and ``t ≤ horizon``, the error is
    ``≤ error``."""

    error: float
    horizon: float
    eps_max: float
    eps: float

    @property
    def applies(self) -> bool:
        """Whether ``ε`` is small enough for the lemma."""
        return self.eps <= self.eps_max


def lemma1_bound(X, W_init, eps: float) -> Lemma1Bound:
    """The explicit constants of Lemma 1 (App. C) for ``W(0) = ε W0``.

    ``W_max = max_j ‖w_j(0)‖/ε`` (largest neuron of ``W0``), ``X_max = max_i ‖x_i‖``:
    error ``≤ 4 ε n √h X_max² W_max²`` for ``t ≤ T = log(1/(√h ε)) / (4 n X_max)``,
    provided ``ε ≤ 1/(4 √h X_max W_max²)``. Times are in the paper's unit.
    """
    X = as_matrix(X, "X")
    W_init = as_matrix(W_init, "W_init")
    eps = positive(eps, "eps")
    if W_init.shape[1] != X.shape[1]:
        raise ValueError(f"W_init has {W_init.shape[1]} columns but X has {X.shape[1]}")
    n, h = X.shape[0], W_init.shape[0]
    x_max = float(np.linalg.norm(X, axis=1).max())
    w_max = float(np.linalg.norm(W_init, axis=1).max()) / eps
    error = 4.0 * eps * n * np.sqrt(h) * x_max**2 * w_max**2
    horizon = max(0.0, float(np.log(1.0 / (np.sqrt(h) * eps)))) / (4.0 * n * x_max)
    eps_max = 1.0 / (4.0 * np.sqrt(h) * x_max * w_max**2)
    return Lemma1Bound(float(error), horizon, float(eps_max), eps)


def _record(record) -> np.ndarray:
    r = np.asarray(to_numpy(record))
    if r.ndim != 2:
        raise ValueError(
            f"record must be a (T, h) array of cone codes, got shape {r.shape}"
        )
    if not np.isin(r, list(CONE_NAMES)).all():
        raise ValueError(f"record must contain only cone codes {sorted(CONE_NAMES)}")
    return r.astype(int)


def alignment_time(times, record, signs=None) -> float:
    """``t1``: the first snapshot time at which every neuron is in ``S+ ∪ S− ∪ S_dead``
    (Thm 1 (i)); ``inf`` if that never happens.

    With ``signs`` (``sign v_j``), a neuron counts as aligned only in its own cone
    or dead: ``S+``/``S_dead`` for ``v_j > 0``, ``S−``/``S_dead`` for ``v_j < 0``, as in
    Thm 1.
    """
    r = _record(record)
    t = as_vector(times, "times", r.shape[0])
    ok = r != S_NONE
    if signs is not None:
        s = np.sign(as_vector(signs, "signs", r.shape[1]))
        own = np.where(s > 0, S_PLUS, S_MINUS)[None, :]
        ok = (r == own) | (r == S_DEAD)
    done = np.flatnonzero(ok.all(axis=1))
    return float(t[done[0]]) if done.size else float("inf")


def cone_exits(record, start: int = 0) -> int:
    """How many times, from snapshot ``start`` on, a neuron in ``S+``, ``S−`` or
    ``S_dead`` is found in a different cone at the next snapshot (Thm 1 (ii): 0)."""
    r = _record(record)
    if not 0 <= int(start) < r.shape[0]:
        raise ValueError(
            f"start must be a snapshot index in [0, {r.shape[0]}), got {start!r}"
        )
    r = r[int(start) :]
    prev, nxt = r[:-1], r[1:]
    return int(((prev != S_NONE) & (nxt != prev)).sum())


def own_class_active(W, signs, X, y) -> np.ndarray:
    """Thm 1 (i)'s split of the neurons at initialisation: ``True`` where neuron
    ``j`` is active on some point of its own class (``y_i = sign v_j``) — those
    must reach ``S+`` / ``S−`` by ``t1``; the others end in their cone or in
    ``S_dead``."""
    X, y = as_xy(X, y)
    W = np.asarray(to_numpy(W), dtype=float)
    s = np.sign(as_vector(signs, "signs", W.shape[0]))
    active = W @ X.T > 0
    return (active & (s[:, None] == y[None, :])).any(axis=1)


def monotonicity_violations(Ws, signs, X, y) -> np.ndarray:
    """Violations of eqs. 7–8 between consecutive snapshots, per neuron.

    A neuron with ``v_j > 0`` must never lose activation on a positive point and
    never gain activation on a negative one; a neuron with ``v_j < 0`` the
    reverse. ``Ws`` is (T, h, d); ``signs`` is (h,) or (T, h) (``sign v_j``
    at each snapshot). Returns the count of violating (point, step) pairs for
    each neuron, shape (h,).
    """
    Ws = np.asarray(to_numpy(Ws), dtype=float)
    if Ws.ndim != 3:
        raise ValueError(f"Ws must have shape (T, h, d), got {Ws.shape}")
    X, y = as_xy(X, y)
    if Ws.shape[2] != X.shape[1]:
        raise ValueError(f"Ws has d={Ws.shape[2]} but X has {X.shape[1]} columns")
    s = np.sign(np.asarray(to_numpy(signs), dtype=float))
    if s.shape == (Ws.shape[1],):
        s = np.broadcast_to(s, Ws.shape[:2])
    if s.shape != Ws.shape[:2]:
        raise ValueError(
            f"signs must have shape (h,) or (T, h) = {Ws.shape[:2]}, got {s.shape}"
        )
    act = (Ws @ X.T) > 0  # (T, h, n), one BLAS product per snapshot
    before, after = act[:-1], act[1:]
    same = (s[:-1, :, None] * y[None, None, :]) > 0  # the neuron's own class
    lost_own = same & before & ~after
    gained_other = ~same & ~before & after
    return (lost_own | gained_other).sum(axis=(0, 2))


def t1_order(X, y) -> float:
    """``log n / √μ``, the order of the alignment-time bound of Thm 1 (i)
    (the hidden constant depends on data and initialisation)."""
    mu = separability(X, y)
    if mu <= 0:
        raise ValueError(
            f"Assumption 1 fails (μ = {mu:.3g} ≤ 0): Thm 1 gives no bound on t1"
        )
    n = as_matrix(X, "X").shape[0]
    return float(np.log(max(n, 2)) / np.sqrt(mu))


@dataclass(frozen=True)
class Alignment:
    """``cos(w̄±, x±)`` (mean neuron of ``V±`` vs aggregate data) with min/max over
    ``V±``
    (Fig 5, second plot). NaN where ``V±`` is empty."""

    mean_plus: float
    min_plus: float
    max_plus: float
    mean_minus: float
    min_minus: float
    max_minus: float


def alignment(W, v, X, y) -> Alignment:
    """Alignment of the positive neurons (``v_j > 0``) with ``x+`` and of the negative
    ones with ``x−`` (Fig 5); ``sign v_j`` is taken at the given state (the
    paper's convention for its non-balanced init)."""
    W, v, X, y = _wv(W, v, X, y)
    xp, xm = aggregate_data(X, y)
    out = []
    for mask, ref in ((v > 0, xp), (v < 0, xm)):
        if not mask.any():
            out += [np.nan] * 3
            continue
        c = row_cosines(W[mask], ref)
        out += [
            float(row_cosines(W[mask].mean(axis=0, keepdims=True), ref)[0]),
            float(c.min()),
            float(c.max()),
        ]
    return Alignment(out[0], out[1], out[2], out[3], out[4], out[5])


def norm_direction_changes(W, v, X, y, loss_weight: float = 1.0) -> tuple[float, float]:
    """App. A.5 (Figs 12–13): ``Σ_j |d/dt ‖w_j‖|`` and ``Σ_j ‖d/dt (w_j/‖w_j‖)‖``
    under a full gradient step of ``L = c Σ ℓ`` (``c = loss_weight``; 1 = the book's
    loss).

    Pass ``v`` as the fixed second layer when only ``W`` is trained (its gradient
    is then irrelevant: only ``−∇_W L`` enters)."""
    W, v, X, y = _wv(W, v, X, y)
    gW, _ = weighted_gradients(W, v, X, y, loss_weight)
    norms = np.linalg.norm(W, axis=1)
    live = norms > 0
    d_norm = np.abs((W[live] * gW[live]).sum(axis=1)) / norms[live]
    d_dir = np.linalg.norm(_projected(W[live], gW[live]), axis=1) / norms[live]
    return float(d_norm.sum()), float(d_dir.sum())


def paper_time(
    book_time, reduction: str = "sum", n: int | None = None, loss_weight: float = 2.0
) -> np.ndarray:
    """Min et al.'s clock from the book's flow time (module docstring, App. C).

    The paper's loss is ``Σ_i 2 log(1 + e^{−q_i})`` (``loss_weight`` 2, so that
    ``−ℓ'(0) = 1``); the book's trainers use ``log(1 + e^{−q})`` summed
    (``reduction="sum"``) or averaged over ``n`` points (``"mean"``). The flows
    trace the same path; the paper's is faster by ``loss_weight`` (and by ``n``
    for the mean), so paper time = book time / loss_weight (/ n).
    """
    return np.asarray(book_time, dtype=float) / _time_factor(reduction, n, loss_weight)


def book_time(
    paper_t, reduction: str = "sum", n: int | None = None, loss_weight: float = 2.0
) -> np.ndarray:
    """The inverse of :func:`paper_time`: the book's flow time of a paper time."""
    return np.asarray(paper_t, dtype=float) * _time_factor(reduction, n, loss_weight)


def _time_factor(reduction: str, n: int | None, loss_weight: float) -> float:
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', got {reduction!r}")
    if reduction == "mean" and (n is None or int(n) != n or n < 1):
        raise ValueError(f"the mean loss needs the number of points n >= 1, got {n!r}")
    return positive(loss_weight, "loss_weight") * (n if reduction == "mean" else 1)


def equivalent_step(lr: float, n_paper: int, n: int) -> float:
    """Step size that keeps ``η·n`` at the paper's value on an ``n``-point subset
    (sum loss: the gradient scales with ``n``) — **(choice)**, PAPERS.md §3."""
    lr = positive(lr, "lr")
    for name, val in (("n_paper", n_paper), ("n", n)):
        if int(val) != val or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    return lr * n_paper / n


def per_example_step(lr_paper: float, n: int, loss_weight: float = 2.0) -> float:
    """The book's GD step on ``Σ_i log(1 + e^{−q_i})`` over ``n`` points that
    makes one book iteration one iteration of the paper's Fig 5 clock —
    **(choice)** the paper's GD at step ``lr_paper`` on the *mean* over its data
    of the per-example loss ``loss_weight · log(1 + e^{−q})`` (App. C's
    normalisation ``−ℓ'(0) = 1``, so ``loss_weight = 2``):
    ``θ ← θ − lr_paper · (loss_weight / n) ∇Σℓ``. The mean's gradient does not
    grow with the data size, so the clock carries over from the paper's full
    training set to the book's sample; checked against the paper's 0/1 landmarks
    (alignment by ~2,000 iterations, loss decreasing after ~3,000).
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return positive(lr_paper, "lr_paper") * positive(loss_weight, "loss_weight") / n


def mnist_paper_size(digits: Sequence[int]) -> int:
    """Number of MNIST training images of the given digits (the paper's ``n``)."""
    try:
        return int(sum(MNIST_TRAIN_COUNTS[int(d)] for d in digits))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"digits must be integers 0-9, got {digits!r}") from exc


@dataclass(frozen=True)
class Track:
    """Thm 1's quantities along a trajectory, one entry per snapshot."""

    times: np.ndarray
    alignment: np.ndarray  # (T, 6): the fields of :class:`Alignment`
    stable_rank: np.ndarray
    spectral_norm_sq: np.ndarray
    membership: np.ndarray  # (T, h) cone codes

    def cos(self, which: str) -> np.ndarray:
        """One column of :attr:`alignment` by field name, e.g. ``"mean_plus"``."""
        fields = list(Alignment.__dataclass_fields__)
        if which not in fields:
            raise ValueError(f"which must be one of {fields}, got {which!r}")
        return self.alignment[:, fields.index(which)]


def track(times, Ws, vs, X, y, cones: bool = True) -> Track:
    """Alignment (:func:`alignment`), stable rank and ``‖W‖_2²`` (reusing
    :mod:`twolayer.metrics`) and cone membership at every snapshot (``cones=False``:
    an empty (T, 0) record, saving a ``W Xᵀ`` per snapshot).
    ``Ws`` (T, h, d), ``vs`` (T, h) — e.g. ``traj.param("W")``, ``traj.param("a")``."""
    from .. import metrics

    Ws = np.asarray(to_numpy(Ws), dtype=float)
    vs = np.asarray(to_numpy(vs), dtype=float)
    if Ws.ndim != 3 or vs.shape != Ws.shape[:2]:
        raise ValueError(
            f"Ws must be (T, h, d) and vs (T, h); got {Ws.shape} and {vs.shape}"
        )
    times = as_vector(times, "times", Ws.shape[0])
    X, y = as_xy(X, y)
    al = np.array(
        [list(alignment(W, v, X, y).__dict__.values()) for W, v in zip(Ws, vs)]
    )
    sr = np.array([metrics.stable_rank(W) for W in Ws])
    sn = np.array([metrics.spectral_norm_sq(W) for W in Ws])
    rec = membership_record(Ws, X, y) if cones else np.zeros((len(Ws), 0), int)
    return Track(times, al, sr, sn, rec)


# ------------------------------------------------------------------------------
# Fig 5: what a linear network cannot do, and the two phases read off a run.


def live_cosines(W, v, X, y) -> np.ndarray:
    """``cos(w_j, x±)`` of every live neuron (active on some point) with the
    aggregate of its own class (``x+`` for ``v_j > 0``, ``x−`` for ``v_j < 0``)."""
    W, v, X, y = _wv(W, v, X, y)
    return _live_cos(W, v, X, *aggregate_data(X, y))


def _live_cos(W, v, X, xp, xm) -> np.ndarray:
    # validated inputs; w·x± > 0 means w·x_i > 0 for some i of the class: live
    # without the full product, so only the other rows need W X^T (the cost of
    # Fig 5's read-outs)
    cos = np.where(v > 0, row_cosines(W, xp), row_cosines(W, xm))
    live = cos > 1e-9
    rest = ~live
    if rest.any():
        live[rest] = ((W[rest] @ X.T) > 0).any(axis=1)
    return cos[live]


def band(W, v, X, y, level: float = 0.9) -> float:
    """Fraction of the live neurons at ``cos(w_j, x±) ≥ level`` with their own
    class's aggregate (Fig 5's shaded band, Thm 1 (i) for every neuron);
    NaN when no neuron is live."""
    W, v, X, y = _wv(W, v, X, y)
    return _band(W, v, X, *aggregate_data(X, y), level)


def _band(W, v, X, xp, xm, level: float) -> float:
    cos = _live_cos(W, v, X, xp, xm)
    return float((cos >= level).mean()) if cos.size else float("nan")


def pattern_accuracy(W, signs, X, y) -> np.ndarray:
    """Per neuron, the fraction of points on which its activation pattern is its
    own class's: ``1[w_j·x_i > 0] = 1[y_i = sign v_j]`` (1 in ``S+``/``S−``)."""
    W, X, y = _wx(W, X, y)
    s = np.sign(as_vector(signs, "signs", W.shape[0]))
    own = y[None, :] == s[:, None]
    return ((W @ X.T > 0) == own).mean(axis=1)


def activation_match(W, v, X, y, tol: float = 0.01) -> float:
    """Thm 1 (i) where only ReLU can pass it: the fraction of live neurons whose
    activation pattern matches their own class on at least ``acc± − tol`` of the
    points, ``acc±`` the same fraction for the direction ``x±`` itself (the best an
    aligned neuron can do when Assumption 1 fails). A linear network has no
    activation pattern; a neuron pointing anywhere but ``x±`` matches ≈ half."""
    W, v, X, y = _wv(W, v, X, y)
    xp, xm = aggregate_data(X, y)
    ref = pattern_accuracy(np.stack([xp, xm]), [1.0, -1.0], X, y)
    acc = pattern_accuracy(W, v, X, y)
    live = ((W @ X.T) > 0).any(axis=1)
    if not live.any():
        return float("nan")
    need = np.where(v > 0, ref[0], ref[1]) - tol
    return float((acc[live] >= need[live]).mean())


def max_output(W, v, X) -> float:
    """``max_i |f(x_i)|``: Lemma 4's small-output condition is that it is < 1."""
    W, X, _ = _wx(W, X)
    v = as_vector(v, "v", W.shape[0])
    return float(np.abs(np.maximum(X @ W.T, 0.0) @ v).max())


def small_output_end(Ws, vs, X) -> int:
    """Index of the last snapshot before ``max_i |f(x_i)|`` first reaches 1 (the
    end of the alignment phase where Lemma 4 bounds the direction error)."""
    Ws = np.asarray(to_numpy(Ws), dtype=float)
    X = as_matrix(X, "X")  # validated once, not per snapshot
    vs = np.asarray(to_numpy(vs), dtype=float)
    if Ws.ndim != 3 or Ws.shape[2] != X.shape[1] or vs.shape != Ws.shape[:2]:
        raise ValueError(
            f"Ws {Ws.shape}, vs {vs.shape} and X {X.shape} must be (T, h, d), (T, h), "
            "(n, d)"
        )
    fmax = np.array(
        [np.abs(np.maximum(X @ W.T, 0.0) @ v).max() for W, v in zip(Ws, vs)]
    )
    over = np.flatnonzero(fmax >= 1.0)
    return int(over[0] - 1) if over.size else len(fmax) - 1


def first_index(values, level: float) -> int | None:
    """First index at which ``values ≥ level``, or None."""
    hit = np.flatnonzero(np.asarray(values, dtype=float) >= level)
    return int(hit[0]) if hit.size else None


def halving_index(loss) -> int | None:
    """First snapshot at which the loss is at most half its initial value, or None."""
    loss = np.asarray(loss, dtype=float)
    hit = np.flatnonzero(loss <= 0.5 * loss[0])
    return int(hit[0]) if hit.size else None


def linear_gd(
    W, v, X, y, lr: float, steps: int, snapshot_steps
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GD on the sum loss ``Σ log(1 + e^{−y_i f(x_i)})`` of the **linear** two-layer
    network ``f(x) = Σ_j v_j w_j·x`` (the rival with no activation pattern: every
    neuron sees every point, so ``x_a = x+ − x−`` for all of them). Returns
    ``(steps, Ws, vs)`` at ``snapshot_steps``; float64 NumPy, cheap (rank-one
    updates)."""
    W, v, X, y = _wv(W, v, X, y)
    W, v = W.copy(), v.copy()
    marks = set(int(k) for k in snapshot_steps)
    kept, Ws, vs = [], [], []
    for k in range(int(steps) + 1):
        if k in marks:
            kept.append(k)
            Ws.append(W.copy())
            vs.append(v.copy())
        if k == steps:
            break
        u = W.T @ v  # f(x) = u·x
        g = y / (1.0 + np.exp(np.clip(y * (X @ u), -700, 700)))  # σ(−q_i) y_i
        r = X.T @ g  # −∇_u L
        W, v = W + lr * np.outer(v, r), v + lr * (W @ r)
    return np.array(kept), np.array(Ws), np.array(vs)


# ------------------------------------------------------------------------------
# Figs 7-9 and the μ sweep: the per-neuron flow law of two positive points.


def entry_angle(W, x1, x2) -> np.ndarray:
    """For neurons active on exactly one of two points: the angle ``φ0`` between
    the neuron and the point it is active on (NaN for the others). With the field
    ``x_a = x_k`` of Lemma 1 such a neuron turns towards ``x_k``: it enters ``S+``
    when ``φ`` falls to the angle ``θ = π/2 − ∠(x1, x2)`` (:func:`entry_time`)."""
    W = as_matrix(W, "W")
    x1, x2 = as_vector(x1, "x1", W.shape[1]), as_vector(x2, "x2", W.shape[1])
    a1, a2 = W @ x1 > 0, W @ x2 > 0
    c1, c2 = row_cosines(W, x1), row_cosines(W, x2)
    phi = np.where(
        a1 & ~a2,
        np.arccos(np.clip(c1, -1, 1)),
        np.where(a2 & ~a1, np.arccos(np.clip(c2, -1, 1)), np.nan),
    )
    return phi


def entry_time(phi0, theta: float) -> np.ndarray:
    """The per-neuron flow law (Lemma 1's field on two unit positive points at angle
    ``π/2 − θ``, balanced neuron, paper time): ``tan(φ/2) = tan(φ0/2) e^{−t}``, so a
    neuron at angle ``φ0`` from the point it is active on enters ``S+`` at
    ``t = ln(tan(φ0/2)/tan(θ/2))`` (0 if ``φ0 ≤ θ``). ``t1 ≈ log(1/μ)`` for small
    ``μ = sin θ``, not ``1/√μ``."""
    if not 0 < theta < np.pi / 2:
        raise ValueError(f"theta must be in (0, pi/2), got {theta!r}")
    phi0 = np.asarray(phi0, dtype=float)
    return np.maximum(np.log(np.tan(phi0 / 2) / np.tan(theta / 2)), 0.0)


def entry_times(times, Ws, X, y) -> np.ndarray:
    """Per neuron, the first snapshot time at which it is in ``S+`` (inf if never)."""
    rec = membership_record(Ws, X, y)
    t = as_vector(times, "times", rec.shape[0])
    inside = rec == S_PLUS
    first = np.argmax(inside, axis=0)
    return np.where(inside.any(axis=0), t[first], np.inf)


def point_cosine(W, X) -> np.ndarray:
    """Per neuron, ``max_i cos(w_j, x_i)``: 1 for a neuron settled on a data point
    (Fig 9: on ``x1`` or ``x2``)."""
    W, X, _ = _wx(W, X)
    return np.max([row_cosines(W, x) for x in X], axis=0)


# ------------------------------------------------------------------------------
# Lemma 1 / 4 at balanced states; Thm 1's ε condition; the long flow.


def rebalanced(W, v) -> tuple[np.ndarray, np.ndarray]:
    """The balanced state with the same network: ``w_j ← w_j √(|v_j|/‖w_j‖)``,
    ``v_j ← sign(v_j) √(|v_j| ‖w_j‖)`` (each ``v_j w_j`` unchanged, so ``f`` is),
    ``|v_j| = ‖w_j‖`` as the flow from (3) keeps it (Lemma 3's proof)."""
    W = as_matrix(W, "W")
    v = as_vector(v, "v", W.shape[0])
    n = np.linalg.norm(W, axis=1)
    if np.any(n == 0):
        raise ValueError("W has zero rows: a zero neuron cannot be rebalanced")
    r = np.sqrt(np.abs(v) / n)
    return W * r[:, None], np.sign(v) * np.sqrt(np.abs(v) * n)


def lemma4_ratio(W, v, X, y) -> float:
    """Max over neurons of the Lemma 1 error over Lemma 4's bound
    ``2 n X_max max_i|f(x_i)|`` at the state (NaN if ``max|f| ≥ 1``). At an
    exactly balanced state it is at most 1/4: the error is
    ``‖P_w Σ_i (2σ(−q_i) − 1) y_i x_i 1[·]‖ ≤ Σ_i tanh(|q_i|/2) X_max``
    ``≤ n X_max max|f|/2``."""
    b = lemma4_bound(W, v, X)
    if not np.isfinite(b):
        return float("nan")
    return float(lemma1_error(W, v, X, y).max() / b)


def thm1_eps_condition(X, y, width: int) -> float:
    """The scale of Thm 1's initialisation condition,
    ``ε ≲ exp(−n log n/√μ)/√h`` (constants hidden by the O(·)); ``0`` below
    double precision. Raises if Assumption 1 fails."""
    mu = separability(X, y)
    if mu <= 0:
        raise ValueError(
            f"Assumption 1 fails (mu = {mu:.3g} <= 0): Thm 1 has no eps condition"
        )
    n = as_matrix(X, "X").shape[0]
    return float(np.exp(-n * np.log(n) / np.sqrt(mu)) / np.sqrt(width))


def loss_rate_ratio(times, loss, t2: float) -> float:
    """``sup_{t ≥ t2} t L(t) / (t2 L(t2))`` (Thm 1 (ii): ``L(t) = O(1/t)`` after
    ``t2``, so bounded along the flow); ``t2`` is taken at the first time ≥ ``t2``."""
    t = np.asarray(times, dtype=float)
    L = np.asarray(loss, dtype=float)
    k = int(np.searchsorted(t, t2))
    if k >= len(t):
        raise ValueError(f"t2 = {t2!r} is after the last time {t[-1]!r}")
    tl = t[k:] * L[k:]
    return float(tl.max() / tl[0])


@dataclass(frozen=True)
class PhaseSummary:
    """Fig 5's two phases read off one run (iterations, no clock needed):
    ``t_half`` the first snapshot where the loss has halved, ``t_band`` the first
    where :func:`band` reaches ``level`` (``inf`` if never in the run), the best
    ``cos(w̄±, x±)`` up to ``t_half``, :func:`activation_match` and :func:`band` at
    ``t_half``, and the run's last iteration ``end``."""

    t_half: int
    t_band: float
    cos_plus: float
    cos_minus: float
    act: float
    band: float
    end: int

    @property
    def band_before_fit(self) -> float:
        """``t_band / t_half`` (< 1: alignment before fitting); a band never reached
        counts as the run's end, so the ratio is then a lower bound."""
        return min(self.t_band, self.end) / self.t_half


def phase_summary(
    steps, loss, Ws, vs, X, y, level: float = 0.9, tol: float = 0.01
) -> PhaseSummary:
    """:class:`PhaseSummary` of a run with snapshots at ``steps``; raises if the loss
    never halves (the run is too short)."""
    steps = np.asarray(steps)
    k = halving_index(loss)
    if k is None:
        raise ValueError(
            f"the loss never halves within {int(steps[-1])} iterations: run longer"
        )
    Ws, vs = (
        np.asarray(to_numpy(Ws), dtype=float),
        np.asarray(to_numpy(vs), dtype=float),
    )
    X, y = as_xy(X, y)  # validated once: the loops below run over every snapshot
    xp, xm = aggregate_data(X, y)
    kb = None  # the first snapshot where the band reaches the level
    for i, (W, v) in enumerate(zip(Ws, vs)):
        if np.nan_to_num(_band(W, v, X, xp, xm, level), nan=0.0) >= level:
            kb = i
            break
    al = np.array([_mean_cos(W, v, xp, xm) for W, v in zip(Ws[: k + 1], vs[: k + 1])])
    return PhaseSummary(
        int(steps[k]),
        float(steps[kb]) if kb is not None else float("inf"),
        float(np.nanmax(al[:, 0])),
        float(np.nanmax(al[:, 1])),
        activation_match(Ws[k], vs[k], X, y, tol),
        _band(Ws[k], vs[k], X, xp, xm, level),
        int(steps[-1]),
    )


def _mean_cos(W, v, xp, xm) -> tuple[float, float]:
    # Alignment.mean_plus / mean_minus of validated inputs
    out = []
    for mask, ref in ((v > 0, xp), (v < 0, xm)):
        mean = W[mask].mean(axis=0, keepdims=True) if mask.any() else None
        out.append(np.nan if mean is None else float(row_cosines(mean, ref)[0]))
    return out[0], out[1]


def join_runs(first, second) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(steps, loss, Ws, vs)`` of a run continued from the end of another
    (``second`` started where ``first`` stopped; its step 0 is dropped)."""
    off = int(first.steps[-1])
    return (
        np.r_[first.steps, second.steps[1:] + off],
        np.r_[first.loss, second.loss[1:]],
        np.concatenate([first.param("W"), second.param("W")[1:]]),
        np.concatenate([first.param("a"), second.param("a")[1:]]),
    )


@dataclass(frozen=True)
class ConeReport:
    """Thm 1 (i)–(ii) read off one run: the alignment time ``t1`` (inf if never) and
    its snapshot ``k1`` (the last if never), cone exits after ``t1``, eqs. 7–8
    violations, neurons active on their own class at init that are not in their
    cone at ``t1`` (``missed``), neurons in ``S_dead`` at ``t1``, and the fraction of
    neurons in their own cone or dead at the end (``in_cone``)."""

    t1: float
    k1: int
    exits: int
    mono: int
    missed: int
    dead: int
    in_cone: float


def cone_report(times, Ws, vs, signs, X, y, W_init) -> ConeReport:
    """:class:`ConeReport` of a run (``Ws`` (T, h, d), ``signs`` = ``sign v_j(0)``)."""
    X, y = as_xy(X, y)
    rec = membership_record(Ws, X, y)
    s = np.sign(as_vector(signs, "signs", rec.shape[1]))
    t1 = alignment_time(times, rec, s)
    k1 = (
        int(np.searchsorted(np.asarray(times, dtype=float), t1))
        if np.isfinite(t1)
        else rec.shape[0] - 1
    )
    own = np.where(s > 0, S_PLUS, S_MINUS)
    active = own_class_active(W_init, s, X, y)
    ok_end = (rec[-1] == own) | (rec[-1] == S_DEAD)
    return ConeReport(
        float(t1),
        k1,
        cone_exits(rec, k1) if np.isfinite(t1) else 0,
        int(monotonicity_violations(Ws, s, X, y).sum()),
        int((active & (rec[k1] != own)).sum()),
        int((rec[k1] == S_DEAD).sum()),
        float(ok_end.mean()),
    )


def alignment_escape(times, Ws, vs, X, y) -> tuple[float, float, int]:
    """``(t1, t_esc, mono)`` of a run: the alignment time with the signs of ``v`` at
    the end (a GD step can flip a tiny ``v_j``; balance is exact only for the flow),
    the first time ``max_i |f(x_i)| ≥ 1`` (the end of the alignment phase; inf if
    never) and the eqs. 7–8 violations along the run."""
    Ws, vs = (
        np.asarray(to_numpy(Ws), dtype=float),
        np.asarray(to_numpy(vs), dtype=float),
    )
    t = np.asarray(times, dtype=float)
    t1 = alignment_time(t, membership_record(Ws, X, y), np.sign(vs[-1]))
    k = small_output_end(Ws, vs, X)
    t_esc = float(t[k + 1]) if k + 1 < len(t) else float("inf")
    return t1, t_esc, int(monotonicity_violations(Ws, np.sign(vs), X, y).sum())


def lemma3_ratios(times, Ws, vs, X, W_init, eps: float) -> tuple[float, float, float]:
    """Lemma 3 (App. B.2, eq. 10) along a balanced run: for
    ``t ≤ T = log(1/(√h ε))/(4 n X_max)`` (paper time), ``max_j ‖w_j‖² ≤ 2 ε W_max²/√h``
    and ``max_i |f(x_i)| ≤ 2 ε √h X_max W_max²``. Returns the largest measured/bound
    ratio of each on ``[0, T]`` and ``T``."""
    X = as_matrix(X, "X")
    lb = lemma1_bound(X, W_init, eps)
    n_h = as_matrix(W_init, "W_init").shape[0]
    x_max = float(np.linalg.norm(X, axis=1).max())
    w_max2 = (
        float(np.linalg.norm(as_matrix(W_init, "W_init"), axis=1).max()) / eps
    ) ** 2
    t = np.asarray(times, dtype=float)
    keep = np.flatnonzero(t <= lb.horizon)
    Ws, vs = (
        np.asarray(to_numpy(Ws), dtype=float),
        np.asarray(to_numpy(vs), dtype=float),
    )
    norm2 = max(float((Ws[k] ** 2).sum(axis=1).max()) for k in keep)
    fmax = max(max_output(Ws[k], vs[k], X) for k in keep)
    return (
        norm2 / (2 * eps * w_max2 / np.sqrt(n_h)),
        fmax / (2 * eps * np.sqrt(n_h) * x_max * w_max2),
        lb.horizon,
    )


def two_point_summary(Ws, vs, X, y, k_mid: int) -> dict:
    """Figs 7–9 read off one run on positive points (``Ws`` (T, h, d), ``vs`` (T, h)):
    live positive neurons are those with ``v_j > 0`` and not in ``S_dead`` at the end.
    ``in_plus`` the fraction of them in ``S+`` at each snapshot; ``n_out`` how many are
    outside ``S+`` at the end; ``settled`` / ``settled_init`` the smallest
    :func:`point_cosine` of those at the end / at the start (NaN if none);
    ``entered`` the fraction of the ones outside ``S+`` at snapshot ``k_mid`` that
    are in ``S+`` at the end (NaN if none); ``flips`` how many live positive
    neurons started with ``v_j(0) < 0`` (a sign change: impossible from the
    balanced init (3), possible from an iid one)."""
    Ws, vs = (
        np.asarray(to_numpy(Ws), dtype=float),
        np.asarray(to_numpy(vs), dtype=float),
    )
    rec = membership_record(Ws, X, y)
    live = (vs[-1] > 0) & (rec[-1] != S_DEAD)
    out = live & (rec[-1] != S_PLUS)
    out_mid = live & (rec[k_mid] != S_PLUS)

    def low(W):
        return float(point_cosine(W[out], X).min()) if out.any() else float("nan")

    entered = (rec[-1, out_mid] == S_PLUS).mean() if out_mid.any() else np.nan
    return dict(
        rec=rec,
        in_plus=(rec[:, live] == S_PLUS).mean(axis=1),
        n_out=int(out.sum()),
        settled=low(Ws[-1]),
        settled_init=low(Ws[0]),
        entered=float(entered),
        flips=int((live & (vs[0] < 0)).sum()),
    )


def entry_law_row(theta: float, W0, v0, times, Ws, X, y) -> dict:
    """The per-neuron law (:func:`entry_time`) on one run on two positive points at
    angle ``π/2 − θ``: over the positive neurons active on one point only at
    initialisation, the last measured entry into ``S+`` (``t1_measured``, times as
    given), the law's (``t1_law``), and the worst neuron's ``|log(measured/law)|``
    among those the law does not put at 0 (law > 0.1)."""
    W0 = as_matrix(W0, "W0")
    v0 = as_vector(v0, "v0", W0.shape[0])
    X = as_matrix(X, "X")
    phi0 = entry_angle(W0, X[0], X[1])
    one = (v0 > 0) & ~np.isnan(phi0)
    if not one.any():
        raise ValueError("no positive neuron is active on exactly one point")
    t_in = entry_times(times, Ws, X, y)[one]
    law = entry_time(phi0[one], theta)
    return dict(
        theta=theta,
        mu=float(np.sin(theta)),
        neurons=int(one.sum()),
        t1_measured=float(t_in.max()),
        t1_law=float(law.max()),
        worst_neuron=float(np.abs(np.log(t_in / law))[law > 0.1].max()),
    )


# ------------------------------------------------------------------------------
# Read-outs moved out of the pages (Fig 5's escape time, the long flow of Fig 6).


def late_max(times, values, decades: float = 3.0) -> float:
    """``max values(t)`` over the last ``decades`` decades of a log-time run,
    ``t ≥ t_end / 10**decades`` (a finite-horizon ``limsup``)."""
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.shape != v.shape or t.size == 0:
        raise ValueError(f"times {t.shape} and values {v.shape} must match, non-empty")
    return float(v[t >= t[-1] / 10.0**decades].max())


def max_from(times, values, t_from: float) -> float:
    """``max values(t)`` over ``t ≥ t_from``: Thm 1 (ii)'s stable-rank bound
    ``‖W‖_F² ≤ 2‖W‖_2² + O(ε)`` read from ``t_from = t2`` on, where the loss has
    fallen and ``‖W‖² ≫ ε`` (the theorem states it as ``t → ∞``)."""
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.shape != v.shape or t.size == 0:
        raise ValueError(f"times {t.shape} and values {v.shape} must match, non-empty")
    if not t_from <= t[-1]:
        raise ValueError(f"t_from = {t_from} is after the last time {t[-1]}")
    return float(v[t >= t_from].max())


def long_flow_summary(times, loss, Ws, early: float = 30.0) -> dict:
    """Thm 1 (ii) along one long flow (paper times): the stable rank of every
    snapshot (``srank``), ``t2`` where the loss first halves, the ratio
    :func:`loss_rate_ratio` from ``t2`` (``rate``) and from ``t2/early`` inside the
    plateau (``rate_early``), and the last-three-decades stable rank (``late``)."""
    t = np.asarray(times, dtype=float)
    k = halving_index(loss)
    if k is None:
        raise ValueError("the loss never halves along the flow: no t2")
    from ..metrics import stable_rank

    srank = np.array([stable_rank(W) for W in Ws])
    return dict(
        t=t,
        loss=np.asarray(loss, dtype=float),
        srank=srank,
        t2=float(t[k]),
        rate=loss_rate_ratio(t, loss, t[k]),
        rate_early=loss_rate_ratio(t, loss, t[k] / early),
        late=late_max(t, srank),
    )


def escape_iterations(lr: float, x_plus, x_minus, f0: float) -> float:
    """Iterations for an aligned neuron's output to grow from ``f0`` to 1 under GD
    at step ``lr`` on the sum of ``log(1+e^{-q})``: ``|v_j| ‖w_j‖`` grows like
    ``exp(2 r k)`` with ``r = lr max(‖x+‖, ‖x−‖) / 2`` (``−ℓ'(0) = 1/2``), so
    ``ln(1/f0) / (2 r)``."""
    if not 0 < f0 < 1:
        raise ValueError(f"f0 = {f0!r} must be in (0, 1): the output starts small")
    r = lr * max(np.linalg.norm(x_plus), np.linalg.norm(x_minus)) / 2
    return float(np.log(1 / f0) / (2 * r))


def logistic_loss(W, v, X, y, linear: bool = False) -> float:
    """``Σ_i log(1 + e^{−y_i f(x_i)})`` of the two-layer net (ReLU, or the linear
    net ``f(x) = Σ_j v_j w_j·x`` with ``linear=True``)."""
    W, X, y = _wx(W, X, y)
    v = as_vector(v, "v", W.shape[0])
    Z = W @ X.T
    f = v @ (Z if linear else np.maximum(Z, 0))
    return float(np.logaddexp(0, -y * f).sum())


def run_cones(run, W_init, v_init, X, y) -> ConeReport:
    """:func:`cone_report` of a GD trajectory of the book's loss (``run.times`` in
    book steps·η, converted by :func:`paper_time`; parameters ``"W"``, ``"a"``),
    started at ``(W_init, v_init)``."""
    return cone_report(
        paper_time(run.times),
        run.param("W"),
        run.param("a"),
        np.sign(as_vector(v_init, "v_init")),
        X,
        y,
        W_init=W_init,
    )


def loss_and_growth(traj, step: int) -> tuple[float, float]:
    """Figs 12–13 at iteration ``step`` of a trajectory with snapshots there and at
    0: the loss over the initial loss, and ``log10(‖W‖_F / ‖W(0)‖_F)``."""
    hits = np.flatnonzero(np.asarray(traj.steps) == step)
    if hits.size == 0:
        raise ValueError(f"no snapshot at iteration {step}")
    k = int(hits[0])
    norms = [float(np.linalg.norm(to_numpy(traj.snapshots[i]["W"]))) for i in (0, k)]
    return float(traj.loss[k] / traj.loss[0]), float(np.log10(norms[1] / norms[0]))


def change_ratio(traj, step: int) -> float:
    """Figs 12–13's statistic at iteration ``step`` of a trajectory recording
    :func:`norm_direction_changes` (``"changes"``): ``log10`` of the summed rate of
    change of the neuron norms over that of their directions. App. A.5: in the
    alignment phase "only neuron directions are changing while neurons' norms do
    not grow" (very negative); with the first layer only there is no such phase."""
    hits = np.flatnonzero(np.asarray(traj.steps) == step)
    if hits.size == 0:
        raise ValueError(f"no snapshot at iteration {step}")
    norms, dirs = np.asarray(traj.record("changes"), dtype=float)[int(hits[0])]
    if not (norms > 0 and dirs > 0):
        raise ValueError(f"rates at iteration {step} must be > 0, got {norms}, {dirs}")
    return float(np.log10(norms / dirs))


def escape_slope(eps, t_esc, rate: float) -> float:
    """Least-squares slope of the end of the alignment phase ``t_esc`` in
    ``log(1/ε)``, times ``rate = max(‖x+‖, ‖x−‖)``: 1 when an aligned neuron grows
    like ``exp(rate·t)`` (paper time), so the phase ends after ``log(1/ε)/rate``."""
    x = np.log(1 / np.asarray(eps, dtype=float))
    t = np.asarray(t_esc, dtype=float)
    if x.shape != t.shape or x.size < 2:
        raise ValueError("eps and t_esc must match, with at least two scales")
    return float(np.polyfit(x, t, 1)[0] * rate)


# ------------------------------------------------------------------------------
# Read-outs over seeds (the pages' per-seed loops).


def lemma1_along(Ws, vs, X, y, rebalance: bool = False) -> dict:
    """Lemma 1 and Lemma 4 (App. C) at every state ``(Ws[k], vs[k])`` of a run:
    ``error`` the largest :func:`lemma1_error` over the neurons, ``bound``
    :func:`lemma4_bound`, ``ratio`` the largest :func:`lemma4_ratio` (at most 1/4
    at a balanced state) and ``drift`` the largest ``| |v_j|/‖w_j‖ − 1 |`` (0 when
    balanced, as the flow from a balanced init keeps it). With ``rebalance`` the
    ratio is taken at :func:`rebalanced` states (the same network, exactly
    balanced)."""
    states = list(zip(np.asarray(to_numpy(Ws), float), np.asarray(to_numpy(vs), float)))
    if not states:
        raise ValueError("Ws and vs must hold at least one state")
    at = [rebalanced(W, v) for W, v in states] if rebalance else states
    return dict(
        error=np.array([lemma1_error(W, v, X, y).max() for W, v in states]),
        bound=np.array([lemma4_bound(W, v, X) for W, v in states]),
        ratio=float(np.nanmax([lemma4_ratio(W, v, X, y) for W, v in at])),
        drift=float(
            max(
                np.abs(np.abs(v) / np.linalg.norm(W, axis=1) - 1).max()
                for W, v in states
            )
        ),
    )


def two_point_runs(trajs, X, y, k_mid: int) -> dict:
    """Figs 7–9 over seeds: :func:`two_point_summary` of every run of ``trajs``
    (trajectories with ``steps`` and parameters ``"W"``, ``"a"``), each key a
    per-seed array (``in_plus`` of shape (seeds, snapshots)), with the first run's
    snapshots (``steps``, ``Ws``, ``vs``, cone record ``rec``), the data and its
    separability ``mu``."""
    trajs = list(trajs)
    if not trajs:
        raise ValueError("trajs must hold at least one run")
    per = [two_point_summary(t.param("W"), t.param("a"), X, y, k_mid) for t in trajs]
    keys = ("in_plus", "n_out", "settled", "settled_init", "entered", "flips")
    out = {key: np.array([p[key] for p in per], dtype=float) for key in keys}
    first = trajs[0]
    return out | dict(
        X=np.asarray(X, float),
        y=np.asarray(y, float),
        mu=separability(X, y),
        steps=np.asarray(first.steps),
        Ws=first.param("W"),
        vs=first.param("a"),
        rec=per[0]["rec"],
    )


def entry_law_fit(seeds, mu, t1_measured, t1_law, n: int = 2) -> dict:
    """The μ sweep (rows: one per seed and angle) against two shapes of ``t1``: the
    per-neuron law (``t1_law``, :func:`entry_law_row`) and Thm 1's order
    ``C log n/√μ`` with ``C`` fitted per seed at its largest ``μ`` (``t1_shape``,
    per row). ``law_err`` and ``shape_err`` are, per seed (sorted), the largest
    ``|log(t1_measured / shape)|`` over its angles."""
    seeds, mu, t1m, law = (np.asarray(a) for a in (seeds, mu, t1_measured, t1_law))
    if not seeds.shape == mu.shape == t1m.shape == law.shape or seeds.ndim != 1:
        raise ValueError("seeds, mu, t1_measured and t1_law must be equal-length 1-D")
    order = np.log(n) / np.sqrt(mu)
    shape = np.empty_like(t1m, dtype=float)
    law_err, shape_err = [], []
    for s in np.unique(seeds):
        rows = seeds == s
        top = np.flatnonzero(rows)[np.argmax(mu[rows])]
        shape[rows] = order[rows] * (t1m[top] / order[top])
        law_err.append(np.abs(np.log(t1m[rows] / law[rows])).max())
        shape_err.append(np.abs(np.log(t1m[rows] / shape[rows])).max())
    return dict(
        t1_shape=shape, law_err=np.array(law_err), shape_err=np.array(shape_err)
    )


def changes_callback(X, y):
    """A trainer callback ``fn(model)`` returning :func:`norm_direction_changes`
    of the model's ``(W, v)`` on ``(X, y)`` (Figs 12–13, at every snapshot)."""
    X, y = as_xy(X, y)

    def changes(model) -> tuple[float, float]:
        W, v = model.weights()
        return norm_direction_changes(W, v, X, y)

    return changes


def random_signs(width: int, seed: int) -> np.ndarray:
    """``v_j = ±1`` with probability 1/2 each, from ``seed`` (the fixed second layer
    of Fig 13's first-layer-only scheme)."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(int(width)) < 0.5, 1.0, -1.0)


def phase_summaries(trajs, X, y, level: float = 0.9) -> list[PhaseSummary]:
    """:func:`phase_summary` of every run of ``trajs`` (steps, loss, "W", "a")."""
    return [
        phase_summary(t.steps, t.loss, t.param("W"), t.param("a"), X, y, level)
        for t in trajs
    ]


def phase_ranges(small: Sequence[PhaseSummary], large: Sequence[PhaseSummary]) -> dict:
    """``{name: (min, max)}`` over seeds of Fig 5's read-outs: the small init's
    ``t_half``, ``t_band``, ``ratio`` (band before fit), ``cos_plus``, ``cos_minus``,
    ``act``; the large init's ``l_t_half``, ``l_cos`` (the better side) and
    ``l_act``."""
    values = dict(
        t_half=[p.t_half for p in small],
        t_band=[p.t_band for p in small],
        ratio=[p.band_before_fit for p in small],
        cos_plus=[p.cos_plus for p in small],
        cos_minus=[p.cos_minus for p in small],
        act=[p.act for p in small],
        l_t_half=[p.t_half for p in large],
        l_cos=[max(p.cos_plus, p.cos_minus) for p in large],
        l_act=[p.act for p in large],
    )
    return {k: (min(v), max(v)) for k, v in values.items()}


def alignment_drop(
    it, mean_plus, mean_minus, t_half: float, tol: float = 0.02
) -> tuple[bool, float, float]:
    """Whether the mean neurons' alignment drops after the loss halving: the best
    ``cos(w̄±, x±)`` up to ``t_half`` minus the last one exceeds ``tol`` on both
    sides. Returns ``(drops, last cos+, last cos−)``."""
    it = np.asarray(it)
    cp, cm = np.asarray(mean_plus, float), np.asarray(mean_minus, float)
    k = int(np.searchsorted(it, t_half))
    drops = min(cp[: k + 1].max() - cp[-1], cm[: k + 1].max() - cm[-1]) > tol
    return bool(drops), float(cp[-1]), float(cm[-1])


def literal_step(traj, X, y) -> tuple[int, float]:
    """The literal sum-loss step's run (Fig 5's choice (ii)): the iteration where its
    loss first halves and the mean positive neuron's ``cos(w̄+, x+)`` there."""
    k = halving_index(traj.loss)
    if k is None:
        raise ValueError("the loss never halves in the literal-step run: run longer")
    W, v = traj.param("W")[k], traj.param("a")[k]
    return int(traj.steps[k]), alignment(W, v, X, y).mean_plus


def report_ranges(reports, prefix: str = "") -> dict:
    """``{prefix + field + "_min" / "_max": value}`` over a list of per-seed
    dataclass reports (e.g. :class:`ConeReport`): the ranges a page quotes."""
    reports = list(reports)
    if not reports:
        raise ValueError("reports must hold at least one report")
    out = {}
    for name in reports[0].__dataclass_fields__:
        values = [getattr(r, name) for r in reports]
        out[f"{prefix}{name}_min"] = min(values)
        out[f"{prefix}{name}_max"] = max(values)
    return out


def linear_rival(
    W, v, X, y, lr: float, steps: int, snapshot_steps, level: float = 0.9
) -> tuple[PhaseSummary, int, float]:
    """Fig 5's linear rival: :func:`linear_gd` from ``(W, v)`` (the first seed's
    init), its :func:`phase_summary`, the iteration where its loss first halves and
    the stable rank ``‖W‖_F²/‖W‖_2²`` there."""
    it, Ws, vs = linear_gd(W, v, X, y, lr, steps, snapshot_steps)
    loss = [logistic_loss(Wk, vk, X, y, linear=True) for Wk, vk in zip(Ws, vs)]
    summary = phase_summary(it, loss, Ws, vs, X, y, level)  # raises if no halving
    k = halving_index(loss)
    from ..metrics import stable_rank

    return summary, int(it[k]), float(stable_rank(Ws[k]))


def alignment_phase_stats(it, Ws, vs, X, y, lr: float) -> dict:
    """Fig 5's small-output phase of one run (snapshots at iterations ``it``): its
    last iteration ``phase_it`` (:func:`small_output_end`), the eqs. 7–8 violations
    there as a percentage of the (neuron, point, snapshot) transitions
    (``mono_frac``) and the neurons with any (``mono_neurons``), the initial output
    scale ``f0 = max_i |f(x_i)|`` and the escape-time estimate ``t_esc``
    (:func:`escape_iterations`) at step ``lr``."""
    Ws = np.asarray(to_numpy(Ws), dtype=float)
    vs = np.asarray(to_numpy(vs), dtype=float)
    X, y = as_xy(X, y)
    k = small_output_end(Ws, vs, X)
    mono = monotonicity_violations(Ws[: k + 1], np.sign(vs[: k + 1]), X, y)
    f0 = max_output(Ws[0], vs[0], X)
    return dict(
        phase_it=int(np.asarray(it)[k]),
        mono_frac=100 * mono.sum() / (k * Ws.shape[1] * X.shape[0]),
        mono_neurons=int((mono > 0).sum()),
        f0=f0,
        t_esc=escape_iterations(lr, *aggregate_data(X, y), f0),
    )


# ------------------------------------------------------------------------------
# ReLU against linear where x+ != -x-, and Thm 1 (ii) by its eps-scaling.


def cone_overshoot(W, v, X, y) -> float:
    """How far the mean neuron of each class leaves its class's data cone, in
    degrees: ``max_c [∠(w̄_c, x_c) − max_{i: y_i = c} ∠(x_i, x_c)]`` over
    ``c = ±1`` (``w̄_c`` the mean row with ``sign v_j = c``, ``x_c = Σ_{y_i=c} x_i``).

    Thm 1 (i): a neuron in ``S_c`` is moved only by the points of class ``c``
    (its gradient is ``v_j Σ_{i: w_j·x_i>0} ℓ'_i y_i x_i``), and one in
    ``S_dead`` not at all, so from a small init ``w̄_c`` stays in the cone of
    the class-``c`` points: the overshoot is ``≤ 0``. A linear network moves every
    neuron along ``±(x+ − x−)``, outside both cones when ``x+ ≠ −x−``."""
    W, v, X, y = _wv(W, v, X, y)
    worst = -np.inf
    for c in (1.0, -1.0):
        pts, rows = X[y == c], W[np.sign(v) == c]
        if len(pts) == 0 or len(rows) == 0:
            raise ValueError(f"class {c:+g} needs points and neurons with sign v = c")
        xc = pts.sum(axis=0)
        edge = np.degrees(np.arccos(np.clip(row_cosines(pts, xc), -1, 1))).max()
        mean_row = rows.mean(axis=0, keepdims=True)
        off = np.degrees(np.arccos(np.clip(row_cosines(mean_row, xc)[0], -1, 1)))
        worst = max(worst, float(off - edge))
    return float(worst)


def class_excess(W, v) -> float:
    """Thm 1 (ii)'s per-class excess ``max_c (‖W_c‖_F² − ‖W_c‖_2²)`` over the two
    classes of neurons (``W_c`` the rows with ``sign v_j = c``): ``O(ε)`` for
    ``t ≥ t1`` (App. C, proof of Thm 1 (ii)); the whole ``W`` has the excess
    ``‖W‖_F² − ‖W‖_2²`` of a second rank-one block, which does not scale with ε
    (:func:`total_excess`)."""
    W = as_matrix(to_numpy(W), "W")
    v = as_vector(to_numpy(v), "v")
    out = []
    for c in (1.0, -1.0):
        rows = W[np.sign(v) == c]
        if len(rows) == 0:
            raise ValueError(f"no neuron with sign v = {c:+g}")
        s = np.linalg.svd(rows, compute_uv=False)
        out.append(float((s**2).sum() - s[0] ** 2))
    return max(out)


def total_excess(W) -> float:
    """``‖W‖_F² − ‖W‖_2²`` of the whole first layer (both classes)."""
    s = np.linalg.svd(as_matrix(to_numpy(W), "W"), compute_uv=False)
    return float((s**2).sum() - s[0] ** 2)


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log10 y`` against ``log10 x`` (≥ 2 positive
    points): the exponent ``p`` of ``y ∝ x^p``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.size < 2 or (x <= 0).any() or (y <= 0).any():
        raise ValueError(f"x {x.shape} and y {y.shape} must match, ≥ 2, positive")
    return float(np.polyfit(np.log10(x), np.log10(y), 1)[0])


def all_in_from(steps, fractions) -> np.ndarray:
    """Per run (rows of ``fractions``, one column per snapshot at ``steps``), the
    first snapshot's step from which the fraction of live positive neurons in
    ``S+`` stays 1 to the end (Fig 8's "all neurons have reached S+"); the last
    step where it never does (a lower bound)."""
    steps = np.asarray(steps, dtype=float)
    f = np.atleast_2d(np.asarray(fractions, dtype=float))
    if f.shape[1] != steps.size:
        raise ValueError(f"fractions {f.shape} need one column per step ({steps.size})")
    out = []
    for row in f:
        bad = np.flatnonzero(row < 1.0)
        k = 0 if bad.size == 0 else bad[-1] + 1
        out.append(steps[min(k, steps.size - 1)])
    return np.array(out)


# ------------------------------------------------------------------------------
# Fig 6's two loss drops (App. A.1): one class of neurons escapes at a time.


def class_losses(Ws, vs, X, y, linear: bool = False) -> np.ndarray:
    """Per snapshot, the loss ``Σ_{i: y_i = c} log(1 + e^{−y_i f(x_i)})`` of the
    positive (column 0) and the negative points (column 1), shape (k, 2), along
    snapshots ``Ws`` (k, h, d) and ``vs`` (k, h) of the ReLU net (or of the linear
    two-layer net ``f(x) = Σ_j v_j w_j·x`` with ``linear=True``)."""
    Ws = np.asarray(to_numpy(Ws), dtype=float)
    vs = np.asarray(to_numpy(vs), dtype=float)
    X, y = as_xy(X, y)
    if Ws.ndim != 3 or vs.shape != Ws.shape[:2] or Ws.shape[2] != X.shape[1]:
        raise ValueError("Ws (k, h, d) and vs (k, h) must match X (n, d)")
    Z = np.einsum("kjd,nd->kjn", Ws, X)
    f = np.einsum("kj,kjn->kn", vs, Z if linear else np.maximum(Z, 0))
    L = np.logaddexp(0, -y * f)
    return np.stack([L[:, y > 0].sum(axis=1), L[:, y < 0].sum(axis=1)], axis=1)


def class_halving_times(times, losses) -> tuple[float, float]:
    """The first of ``times`` at which each class's loss (columns of
    :func:`class_losses`) is at most half its value at ``times[0]``: ``(t+, t−)``
    (NaN if never)."""
    t = np.asarray(times, dtype=float)
    L = np.asarray(losses, dtype=float)
    if L.shape != (t.size, 2):
        raise ValueError(f"losses must have shape ({t.size}, 2), got {L.shape}")
    out = []
    for c in range(2):
        hit = np.flatnonzero(L[:, c] <= L[0, c] / 2)
        out.append(float(t[hit[0]]) if hit.size else float("nan"))
    return out[0], out[1]


def drop_separation(t_plus: float, t_minus: float, X, y) -> float:
    """How far apart the two classes' loss drops are, as a fraction of what the
    per-class escape predicts: ``ln(t−/t+) / ln(‖x+‖/‖x−‖)``.

    A neuron in ``S_c`` grows like ``exp(‖x_c‖ t)`` (paper time, ``−ℓ'(0) = 1``)
    while the output is small (Thm 1 (i): it is moved by its class's points only),
    so class ``c`` is fitted after ``≈ ln(1/ε)/‖x_c‖``: the ratio of the two
    halving times is ``‖x+‖/‖x−‖`` and the fraction is 1, two separate drops when
    ``‖x+‖ ≠ ‖x−‖``. A linear network moves every neuron along ``±(x+ − x−)`` and
    fits both classes at once: 0."""
    X, y = as_xy(X, y)
    xp = np.linalg.norm(X[y > 0].sum(axis=0))
    xm = np.linalg.norm(X[y < 0].sum(axis=0))
    if not (t_plus > 0 and t_minus > 0) or np.isclose(xp, xm):
        raise ValueError(
            "halving times must be > 0 (a class that never halves its loss: run "
            "longer) and ||x+|| != ||x-||"
        )
    return float(np.log(t_minus / t_plus) / np.log(xp / xm))
