"""The four theories' predictions measured on one trajectory (book/synthesis).

:func:`prediction_gaps` turns a snapshot ``(W, a)`` into the distance to each
paper's limit; :func:`flow_point` runs one gradient flow
(:func:`twolayer.flows.gradient_flow`) and returns the gaps at the end, for the
parallel sweeps of :mod:`twolayer.sweeps`. The predictions come from the
theory modules (``theory.phuong2021``, ``theory.min2024``, ``theory.lyu2021``,
``theory.sarussi2021``); hypotheses that fail on a dataset give NaN.
"""
from __future__ import annotations

import numpy as np

from . import metrics
from .data import Dataset, antipodal_gaussians
from .models import TwoLayerNet
from .theory import lyu2021, min2024, phuong2021, sarussi2021
from .theory.margins import NotSeparableError


def hypotheses(data: Dataset) -> dict[str, float]:
    """Which papers' data hypotheses hold: orthogonal separability (Phuong),
    ``μ`` (Min Assumption 1, > 0 required), symmetry (Lyu Assumption 4.1),
    linear separability (Sarussi, Lyu)."""
    X, y = data.X, data.y
    try:
        lyu2021.max_margin_separator(X, y)
        separable = 1.0
    except NotSeparableError:
        separable = 0.0
    return dict(orthogonal=float(phuong2021.is_orthogonally_separable(X, y)),
                mu=min2024.separability(X, y), symmetric=float(lyu2021.is_symmetric(X, y)),
                separable=separable)


def direction_clustering(W, a) -> float:
    """Sarussi's ``R/‖w̄ − ū‖`` (Thm 5.1, App. D.3) on the unit directions of the
    neurons with ``a_j > 0`` (w's) and ``a_j < 0`` (u's): with a trained second
    layer the norms differ, so clustering is a statement about directions."""
    W = np.asarray(W, float)
    a = np.asarray(a, float)
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    U = np.where(norms > 0, W / np.where(norms > 0, norms, 1), 0)
    if not (a > 0).any() or not (a < 0).any():
        return float("nan")
    return sarussi2021.clustering_ratio(U[a > 0], U[a < 0])


def prediction_gaps(W, a, data: Dataset, alpha: float, X_eval: np.ndarray | None = None,
                    w_pm: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, float]:
    """Distance of a snapshot to each paper's predicted limit.

    ``phuong``: max over live neurons of ``1 − cos(w_j, w±)`` (Phuong & Lampert
    Thm 1); ``stable_rank`` (Min et al. Thm 1: ≤ 2); ``lyu``: sup over
    ``X_eval`` of ``|f_{θ/‖θ‖} − (1+α)/4⟨w*, x⟩|`` relative to the limit's sup
    (Lyu et al. Thm 4.3); ``sarussi``: :func:`direction_clustering`;
    ``margin``: normalised margin (Lyu et al. Thm 4.2 compares it with
    ``(1+α)/4 γ_lin``).
    """
    X, y = data.X, data.y
    X_eval = X if X_eval is None else X_eval
    out = dict(stable_rank=metrics.stable_rank(W), sarussi=direction_clustering(W, a),
               margin=lyu2021.normalized_margin(W, a, X, y, alpha), phuong=np.nan, lyu=np.nan)
    live = ~metrics.dead_neurons(W, X)
    if w_pm is not None and live.any():
        cos = phuong2021.cosines_to_max_margin(W, a, *w_pm)
        out["phuong"] = float((1 - cos[live]).max())
    try:
        w_star = lyu2021.max_margin_separator(X, y)
    except NotSeparableError:
        return out
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    out["lyu"] = lyu2021.limit_error(W, a, X_eval, target, alpha)
    return out


def max_margin_pair(data: Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """``(w+, w−)`` of Phuong & Lampert eqs. (6)-(7), or None if a class admits none."""
    try:
        return phuong2021.max_margin_directions(data.X, data.y)
    except NotSeparableError:
        return None


def synthesis_data(n: int = 40, d: int = 5, mean: float = 3.0, std: float = 0.5, seed: int = 0,
                   hinted: bool = False) -> Dataset:
    """Antipodal Gaussians scaled to ``‖x‖ ≤ 1``: symmetric (Lyu Assumption 4.1),
    linearly separable (Sarussi), and — for ``std`` small against ``mean`` —
    orthogonally separable with ``μ > 0`` (Phuong, Min Assumption 1).
    ``hinted=True`` appends Lyu et al.'s three hint points (Def. 6.1, with
    H=5, K=5, ε=0.05), which breaks the symmetry."""
    ds = antipodal_gaussians(n, d, mean=mean, std=std, seed=seed)
    X = ds.X / np.linalg.norm(ds.X, axis=1).max()
    ds = ds.with_data(X, ds.y, note="scaled to max norm 1")
    if not hinted:
        return ds
    w_star = lyu2021.max_margin_separator(ds.X, ds.y)
    e = np.eye(d)[np.argmin(np.abs(w_star))]
    w_perp = e - (e @ w_star) * w_star
    w_perp /= np.linalg.norm(w_perp)
    X2, y2 = lyu2021.hinted_dataset(ds.X, ds.y, H=5.0, K=5.0, eps=0.05, w_perp=w_perp)
    return ds.with_data(X2 / np.linalg.norm(X2, axis=1).max(), y2, name=ds.name + " + hints",
                        note="Lyu Def. 6.1 hints (H=K=5, eps=0.05), rescaled to max norm 1")


def flow_point(std: float = 0.5, alpha: float = 0.0, scale: float = 1e-3, width: int = 20,
               hinted: bool = False, t_max: float = 1e100, n: int = 40, d: int = 5, seed: int = 0,
               rtol: float = 1e-5, atol: float = 1e-8) -> dict[str, float]:
    """One sweep point: data, balanced init, gradient flow to ``t_max``, and the
    final :func:`prediction_gaps` plus the data hypotheses and the wall time."""
    from .flows import gradient_flow

    data = synthesis_data(n, d, std=std, seed=seed, hinted=hinted)
    net = TwoLayerNet(d, width, alpha=alpha, init="balanced", scale=scale, seed=seed)
    run = gradient_flow(net, data, t_max, rtol=rtol, atol=atol, n_snapshots=3, max_steps=200_000)
    gaps = prediction_gaps(run.final["W"], run.final["a"], data, alpha, w_pm=max_margin_pair(data))
    return dict(std=std, alpha=alpha, scale=scale, width=width, hinted=hinted, **hypotheses(data), **gaps,
                wall=run.wall_time, steps=run.config["steps"])


def early_phase(Ws, As, times, data: Dataset, alpha: float) -> dict[str, np.ndarray]:
    """Min's cones, Lyu's phase-I direction and Sarussi's regimes along one trajectory.

    ``Ws`` (T, m, d) and ``As`` (T, m) are the snapshots, ``times`` their flow
    times (book time, mean loss). Returns, per snapshot:

    * ``in_cones`` — fraction of neurons in their own cone or dead (Min et al.
      Thm 1 (i): ``S+``/``S_dead`` for ``a_j > 0``, ``S−``/``S_dead`` for ``a_j < 0``),
      from :func:`theory.min2024.membership_record`;
    * ``mu_cos`` — mean over neurons of ``sign(a_k) cos(w_k, μ̄)``, ``μ̄`` the unit
      :func:`theory.lyu2021.mu` (Lyu et al. Lemma 5.2: ``w_k ≈ r b̄_k μ̄``, ``sign b̄_k = sign a_k``
      for the balanced init);
    * ``nar``, ``par`` — fraction of neurons in Sarussi et al.'s NAR / PAR
      (Defs 6.2, 6.3), the neurons grouped by the sign of ``a_j`` (``a_j > 0``:
      the w's, ``a_j < 0``: the u's) since here the second layer is trained.
    """
    Ws = np.asarray(Ws, float)
    As = np.asarray(As, float)
    X, y = data.X, data.y
    signs = np.sign(As)
    record = min2024.membership_record(Ws, X, y)
    own = np.where(signs > 0, min2024.S_PLUS, min2024.S_MINUS)
    in_cones = ((record == own) | (record == min2024.S_DEAD)).mean(axis=1)
    mbar = lyu2021.mu(X, y)
    mbar = mbar / np.linalg.norm(mbar)
    norms = np.linalg.norm(Ws, axis=2)
    cos = np.divide(Ws @ mbar, norms, out=np.zeros_like(norms), where=norms > 0)
    mu_cos = (signs * cos).mean(axis=1)
    nar, par = [], []
    for W, s in zip(Ws, signs):
        pos, neg = W[s > 0], W[s < 0]
        if len(pos) == 0 or len(neg) == 0:
            nar.append(np.nan)
            par.append(np.nan)
            continue
        nar.append(_split_fraction(sarussi2021.nar_membership, pos, neg, X))
        par.append(_split_fraction(sarussi2021.par_membership, pos, neg, X, y))
    return dict(t=np.asarray(times, float), in_cones=in_cones, mu_cos=mu_cos, nar=np.array(nar),
                par=np.array(par), record=record, signs=signs)


def _split_fraction(fn, pos: np.ndarray, neg: np.ndarray, *args) -> float:
    """Fraction of neurons in a Sarussi regime when the two groups may differ in size.

    Sarussi's functions take two (k, d) groups of equal size, but a neuron's
    NAR/PAR membership depends only on its own group and the data, so each group
    is passed as both arguments: the w-verdicts of ``fn(pos, pos)`` and the
    u-verdicts of ``fn(neg, neg)``."""
    w_in = fn(pos, pos, *args).w_neurons
    u_in = fn(neg, neg, *args).u_neurons
    return float((w_in.sum() + u_in.sum()) / (len(w_in) + len(u_in)))


def phuong_limit_function(X, w_plus, w_minus) -> np.ndarray:
    """Phuong & Lampert Cor. 1 with Lemma C.1's scale (``‖u‖²‖w+‖ = ‖z‖²‖w−‖ = 1``):
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
