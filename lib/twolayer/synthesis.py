"""The four theories' predictions measured on one trajectory (book/synthesis).

:func:`prediction_gaps` turns a snapshot ``(W, a)`` into the distance to each
paper's limit; the page functions run the gradient flows
(:func:`twolayer.flows.gradient_flow`) and return what the pages claim, and the
move functions one draw of a stored grid (:mod:`twolayer.regimes`). The
predictions come from the theory modules (``theory.phuong2021``,
``theory.min2024``, ``theory.lyu2021``, ``theory.sarussi2021``); hypotheses that
fail on a dataset give NaN.
"""

from __future__ import annotations

import numpy as np

from . import metrics
from .data import Dataset
from .limit_data import (  # noqa: F401  (re-exported: the pages' data)
    lyu_data,
    max_margin_pair,
    nonsymmetric_data,
    sarussi_data,
    synthesis_data,
)
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
    return dict(
        orthogonal=float(phuong2021.is_orthogonally_separable(X, y)),
        mu=min2024.separability(X, y),
        symmetric=float(lyu2021.is_symmetric(X, y)),
        separable=separable,
    )


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


def prediction_gaps(
    W,
    a,
    data: Dataset,
    alpha: float,
    X_eval: np.ndarray | None = None,
    w_pm: tuple[np.ndarray, np.ndarray] | None = None,
    w_star: np.ndarray | None = None,
) -> dict[str, float]:
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
    out = dict(
        stable_rank=metrics.stable_rank(W),
        sarussi=direction_clustering(W, a),
        margin=lyu2021.normalized_margin(W, a, X, y, alpha),
        phuong=np.nan,
        lyu=np.nan,
    )
    live = ~metrics.dead_neurons(W, X)
    if w_pm is not None and live.any():
        cos = phuong2021.cosines_to_max_margin(W, a, *w_pm)
        out["phuong"] = float((1 - cos[live]).max())
    if w_star is None:
        try:
            w_star = lyu2021.max_margin_separator(X, y)
        except NotSeparableError:
            return out
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    out["lyu"] = lyu2021.limit_error(W, a, X_eval, target, alpha)
    return out


def early_phase(Ws, As, times, data: Dataset, alpha: float) -> dict[str, np.ndarray]:
    """Min's cones, Lyu's phase-I direction and Sarussi's regimes along one trajectory.

    ``Ws`` (T, m, d) and ``As`` (T, m) are the snapshots, ``times`` their flow
    times (book time, mean loss). Returns, per snapshot:

    * ``in_cones`` — fraction of neurons in their own cone or dead (Min et al.
      Thm 1 (i): ``S+``/``S_dead`` for ``a_j > 0``, ``S−``/``S_dead`` for ``a_j < 0``),
      from :func:`theory.min2024.membership_record`;
    * ``mu_cos`` — mean over neurons of ``sign(a_k) cos(w_k, μ̄)``, ``μ̄`` the unit
      :func:`theory.lyu2021.mu` (Lyu et al. Lemma 5.2: ``w_k ≈ r b̄_k μ̄``,
      ``sign b̄_k = sign a_k`` for the balanced init);
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
    return dict(
        t=np.asarray(times, float),
        in_cones=in_cones,
        mu_cos=mu_cos,
        nar=np.array(nar),
        par=np.array(par),
        record=record,
        signs=signs,
    )


def _split_fraction(fn, pos: np.ndarray, neg: np.ndarray, *args) -> float:
    """Fraction of neurons in a Sarussi regime when the two groups may differ in size.

    Sarussi's functions take two (k, d) groups of equal size, but a neuron's
    NAR/PAR membership depends only on its own group and the data, so each group
    is passed as both arguments: the w-verdicts of ``fn(pos, pos)`` and the
    u-verdicts of ``fn(neg, neg)``."""
    w_in = fn(pos, pos, *args).w_neurons
    u_in = fn(neg, neg, *args).u_neurons
    return float((w_in.sum() + u_in.sum()) / (len(w_in) + len(u_in)))


# ---------------------------------------------------------- per-seed runs of the pages


def live_gap(W, a, X, w_plus, w_minus) -> float:
    """Phuong & Lampert Thm 1's gap: max over live neurons (active on some
    training point) of ``1 − cos(w_j, w_{sign a_j})``; NaN if every neuron is dead."""
    live = ~metrics.dead_neurons(W, X)
    if not live.any():
        return float("nan")
    cos = phuong2021.cosines_to_max_margin(W, a, w_plus, w_minus)
    return float((1 - cos[live]).max())


def phuong_limit_run(
    seed: int,
    init_scale: float,
    *,
    n: int = 500,
    d: int = 20,
    width: int = 100,
    t_max: float = 1e300,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    n_snapshots: int = 60,
    n_held_out: int = 500,
) -> dict:
    """Phuong & Lampert Fig 1's data (draw ``seed``), balanced init, gradient flow
    to ``t_max``: the gap of Thm 1 and ``σ3/σ1`` along the flow, the stable rank
    and Cor. 1's function distance (:func:`.phuong2021.scaled_distance`) on
    ``n_held_out`` fresh points at the end; the early-phase rival ``x̂±`` (its gap
    and its best two-ray model's distance)."""
    from .data import orthant_data
    from .flows import gradient_flow

    ds = orthant_data(n, d, seed=seed)
    w_plus, w_minus = phuong2021.max_margin_directions(ds.X, ds.y)
    x_plus, x_minus = phuong2021.early_phase_directions(ds.X, ds.y)
    net = TwoLayerNet(d, width, init="balanced", init_scale=init_scale, seed=seed)
    flow = gradient_flow(
        net, ds, t_max, rtol=rtol, atol=atol, n_snapshots=n_snapshots, t_min=1e-1
    )
    gap = np.array(
        [live_gap(s["W"], s["a"], ds.X, w_plus, w_minus) for s in flow.snapshots]
    )
    rank3 = np.array([metrics.rank_ratio(s["W"], 2) for s in flow.snapshots])
    held_out = orthant_data(n_held_out, d, seed=10_000 + seed).X
    limit_f = phuong2021.limit_function(held_out, w_plus, w_minus)
    from .models import two_layer_output

    learned = two_layer_output(flow.final["W"], flow.final["a"], held_out)
    return dict(
        log10_t=np.log10(np.maximum(flow.times, 1e-300)),
        gap=gap,
        rank3=rank3,
        stable=metrics.stable_rank(flow.final["W"]),
        f_dist=phuong2021.scaled_distance(learned, limit_f),
        early_gap=max(
            1 - metrics.cosine(x_plus, w_plus), 1 - metrics.cosine(x_minus, w_minus)
        ),
        f_dist_early=phuong2021.best_two_ray_distance(
            x_plus, x_minus, held_out, limit_f
        ),
        wall=flow.wall_time,
        steps=flow.config["steps"],
        net=net,
        data=ds,
    )


def gd_check(
    net,
    data: Dataset,
    *,
    lr: float,
    time: float,
    perturbation: float = 1e-2,
    seed: int = 0,
) -> dict:
    """GD with steps ``lr`` and ``lr/2`` against the integrated flow at matched flow
    times (max relative distance, and the ratio when the step halves: ½ for a
    first-order method converging to the flow). The rival: the flow from the init
    perturbed by ``perturbation`` (relative), a trajectory near but not equal to
    GD's limit — its distance does not halve."""
    import copy

    import torch

    from .flows import gd, gradient_flow, trajectory_distance
    from .models import TwoLayerNet as _Net

    steps = int(round(time / lr))
    marks = np.concatenate(
        [[0], np.unique(np.round(np.geomspace(1, steps, 12)).astype(int))]
    )
    run = gd(copy.deepcopy(net), data, lr=lr, steps=steps, snapshot_steps=marks)
    half = gd(
        copy.deepcopy(net), data, lr=lr / 2, steps=2 * steps, snapshot_steps=2 * marks
    )
    flow = gradient_flow(
        net, data, time, rtol=1e-7, atol=1e-10, method="RK45", snapshot_times=run.times
    )
    W, a = net.weights()
    rng = np.random.default_rng(seed)
    scale = perturbation * np.linalg.norm(np.concatenate([W.ravel(), a]))
    dW = rng.standard_normal(W.shape)
    dW *= scale / np.linalg.norm(dW)
    moved = copy.deepcopy(net)
    with torch.no_grad():
        moved.W.add_(torch.as_tensor(dW, dtype=moved.W.dtype))
    assert isinstance(moved, _Net)
    other = gradient_flow(
        moved,
        data,
        time,
        rtol=1e-7,
        atol=1e-10,
        method="RK45",
        snapshot_times=run.times,
    )
    dist, dist_half = trajectory_distance(flow, run), trajectory_distance(flow, half)
    r_dist, r_half = trajectory_distance(other, run), trajectory_distance(other, half)
    return dict(
        times=run.times,
        dist=dist,
        dist_half=dist_half,
        ratio=dist_half.max() / dist.max(),
        rival_dist=r_dist,
        rival_ratio=r_half.max() / r_dist.max(),
        loss_end=run.loss[-1],
    )


def lyu_limit_run(
    seed: int,
    init_scale: float,
    *,
    width: int = 10,
    alpha: float = 0.5,
    t_max: float = 1e300,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    n_snapshots: int = 60,
) -> dict:
    """Lyu et al. Thm 4.3 / 4.2 on symmetric data (draw ``seed``,
    :func:`twolayer.limit_data.lyu_data`), Gaussian init of scale ``init_scale``: the
    relative sup gap to ``(1+α)/4⟨w*, x⟩`` and the normalised margin over the global
    maximum along the flow; phase I's rival ``μ̄``; whether Lemma 5.4's embedding is
    good (``b̄`` of both signs, :func:`twolayer.theory.lyu2021.is_good_embedding`)."""
    from .flows import gradient_flow

    sym, X_eval = lyu_data(seed)
    w_star = lyu2021.max_margin_separator(sym.X, sym.y)
    mu_bar = lyu2021.mu(sym.X, sym.y)
    mu_bar = mu_bar / np.linalg.norm(mu_bar)
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    net = TwoLayerNet(
        sym.d, width, alpha=alpha, init="gaussian", init_scale=init_scale, seed=seed
    )
    flow = gradient_flow(
        net, sym, t_max, rtol=rtol, atol=atol, n_snapshots=n_snapshots, t_min=1e-1
    )
    best = lyu2021.global_max_margin_symmetric(sym.X, sym.y, alpha)
    err = np.array(
        [
            lyu2021.limit_error(s["W"], s["a"], X_eval, target, alpha)
            for s in flow.snapshots
        ]
    )
    margin = (
        np.array(
            [
                lyu2021.normalized_margin(s["W"], s["a"], sym.X, sym.y, alpha)
                for s in flow.snapshots
            ]
        )
        / best
    )
    W1, a1 = lyu2021.two_neuron_limit(mu_bar)
    b = lyu2021.embedding_vector(*net.weights(), mu_bar)
    return dict(
        good_embedding=lyu2021.is_good_embedding(b),
        log10_t=np.log10(np.maximum(flow.times, 1e-300)),
        err=err,
        margin=margin,
        err_phase1=lyu2021.limit_error(W1, a1, X_eval, target, alpha),
        margin_phase1=float(
            (sym.y * (sym.X @ mu_bar)).min() / lyu2021.linear_margin(sym.X, sym.y)
        ),
        wall=flow.wall_time,
    )


def sarussi_limit_run(
    seed: int,
    init_scale: float,
    *,
    k: int = 10,
    alpha: float = 0.2,
    t_max: float = 1e300,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    n_snapshots: int = 60,
) -> dict:
    """Sarussi et al. Thm 6.1 on antipodal Gaussians (draw ``seed``), fixed ±1
    second layer, ``k`` neurons of each sign: ``R/‖w̄ − ū‖`` along the flow and
    the NAR membership (Def. 6.2) at the end."""
    from .flows import gradient_flow

    anti = sarussi_data(seed)
    net = TwoLayerNet.fixed_second_layer(
        anti.d, k, alpha=alpha, init_scale=init_scale, seed=seed
    )
    flow = gradient_flow(
        net, anti, t_max, rtol=rtol, atol=atol, n_snapshots=n_snapshots, t_min=1e-1
    )
    ratios = np.array(
        [
            sarussi2021.clustering_ratio(*sarussi2021.split_neurons(s["W"], k))
            for s in flow.snapshots
        ]
    )
    Wp, Wn = sarussi2021.split_neurons(flow.final["W"], k)
    return dict(
        log10_t=np.log10(np.maximum(flow.times, 1e-300)),
        ratio=ratios,
        nar=sarussi2021.nar_membership(Wp, Wn, anti.X).fraction,
        wall=flow.wall_time,
    )


def own_cone_exits(record, signs, start: int = 0) -> int:
    """Min et al. Thm 1 (ii) as stated: from snapshot ``start`` on, how many times a
    neuron in its own cone or dead (``S+``/``S_dead`` for ``a_j > 0``,
    ``S−``/``S_dead`` for ``a_j < 0``) is found outside both at the next snapshot."""
    r = np.asarray(record, int)[int(start) :]
    own = np.where(np.sign(signs) > 0, min2024.S_PLUS, min2024.S_MINUS)[None, :]
    ok = (r == own) | (r == min2024.S_DEAD)
    return int((ok[:-1] & ~ok[1:]).sum())


def _overlay_setup(
    seed: int,
    init_scale: float,
    n: int,
    d: int,
    std: float,
    alpha: float,
    width: int,
    init: str = "balanced",
) -> tuple[Dataset, TwoLayerNet]:
    """The overlay's data (:func:`synthesis_data`, draw ``seed``) and network (init
    ``init`` of scale ``init_scale`` from ``seed``), shared by :func:`overlay_run`
    and :func:`overlay_decay_run`."""
    data = synthesis_data(n, d, std=std, seed=seed)
    net = TwoLayerNet(
        d, width, alpha=alpha, init=init, init_scale=init_scale, seed=seed
    )
    return data, net


def overlay_run(
    seed: int,
    init_scale: float,
    *,
    n: int = 40,
    d: int = 5,
    std: float = 0.5,
    alpha: float = 0.0,
    width: int = 20,
    t_max: float = 1e300,
    init: str = "balanced",
) -> dict:
    """The overlay's trajectory on :func:`synthesis_data` (draw ``seed``): the four
    papers' gaps (:func:`prediction_gaps`) per snapshot, dense early snapshots
    (0.1 decade on ``[1e-1, 1e3]``) and Min et al.'s measures: the alignment time
    ``t1``, the aligned fraction at paper time ``log n/√μ`` (Thm 1 (i)), own-cone
    exits after ``t1`` (Thm 1 (ii)), the stable rank's max over
    ``t ∈ [1e100, t_max]`` (the limsup) and at init."""
    import pandas as pd

    from .flows import gradient_flow

    data, net = _overlay_setup(seed, init_scale, n, d, std, alpha, width, init)
    w_pm = max_margin_pair(data)
    w_star = lyu2021.max_margin_separator(data.X, data.y)
    t_scale = float(min2024.book_time(min2024.t1_order(data.X, data.y), "mean", data.n))
    snap_t = np.unique(
        np.concatenate(
            [
                [0.0, t_scale],
                np.logspace(-1, 3, 41),
                np.logspace(3, np.log10(t_max), 45),
            ]
        )
    )
    W0, a0 = net.weights()
    run = gradient_flow(net, data, t_max, rtol=1e-5, atol=1e-8, snapshot_times=snap_t)
    gaps = pd.DataFrame(
        [
            prediction_gaps(s["W"], s["a"], data, alpha, w_pm=w_pm, w_star=w_star)
            for s in run.snapshots
        ]
    )
    gaps["log10_t"] = np.log10(np.maximum(run.times, 1e-300))
    early = early_phase(run.param("W"), run.param("a"), run.times, data, alpha)
    signs = np.sign(run.param("a"))[-1] if init != "balanced" else np.sign(a0)
    t1 = min2024.alignment_time(run.times, early["record"], np.sign(a0))
    i1 = (
        int(np.flatnonzero(run.times == t1)[0])
        if np.isfinite(t1)
        else len(run.times) - 1
    )
    i_scale = int(np.argmin(np.abs(run.times - t_scale)))
    late = run.times >= 1e100
    ranks = np.array([metrics.stable_rank(s["W"]) for s in run.snapshots])
    return dict(
        data=data,
        run=run,
        gaps=gaps,
        early=early,
        ranks=ranks,
        t1=t1,
        t_scale=t_scale,
        aligned_at_scale=float(early["in_cones"][i_scale]),
        exits=own_cone_exits(early["record"], signs, start=i1),
        rank_limsup=float(ranks[late].max()),
        rank_init=float(metrics.stable_rank(W0)),
        signs_kept=bool((np.sign(run.param("a")) == np.sign(a0)).all()),
    )


def phase1_alignment(
    seed: int,
    r: float,
    large_scale: float,
    *,
    n: int = 40,
    d: int = 5,
    std: float = 0.5,
    alpha: float = 0.0,
    width: int = 20,
) -> dict:
    """Lyu et al. Lemma 5.2 at ``T1(r)`` on :func:`synthesis_data` (draw ``seed``):
    with the init scale at the lemma's bound ``σ = r³/(√m ‖θ̄0‖_M)``, the mean of
    ``sign(a_k) cos(w_k, μ̄)`` at ``T1(r)`` (the lemma: ``w_k ≈ r b̄_k μ̄``, and
    ``sign b̄_k = sign a_k`` for a balanced init), and the same mean for the
    same init direction at scale ``large_scale`` at the same flow time."""
    from .flows import gradient_flow

    data = synthesis_data(n, d, std=std, seed=seed)
    unit = TwoLayerNet(
        d, width, alpha=alpha, init="balanced", init_scale=1.0, seed=seed
    )
    W_bar, a_bar = unit.weights()
    sigma = r**3 / (np.sqrt(width) * lyu2021.m_norm(W_bar, a_bar))
    lam0 = lyu2021.lambda0(data.X, data.y, alpha)
    T1 = lyu2021.phase1_time(r, sigma, W_bar, a_bar, lam0)
    mu_bar = lyu2021.mu(data.X, data.y)
    mu_bar = mu_bar / np.linalg.norm(mu_bar)
    out = dict(T1=T1, sigma=sigma, lam0=lam0)
    for key, scale in (("small", sigma), ("large", large_scale)):
        net = TwoLayerNet(
            d, width, alpha=alpha, init="balanced", init_scale=scale, seed=seed
        )
        run = gradient_flow(
            net, data, T1, rtol=1e-7, atol=1e-12, snapshot_times=[0.0, T1]
        )
        W, a = run.final["W"], run.final["a"]
        out[key] = float(np.mean(np.sign(a) * metrics.row_cosines(W, mu_bar)))
    return out


def group_mass_ratio(W, a) -> float:
    """``‖W+‖_F / ‖W−‖_F``: the mass of the neurons with ``a_j > 0`` over that of the
    ``a_j < 0`` ones (Phuong & Lampert Thm 1's ``‖u‖/‖z‖``; 1 on antipodal data,
    where the two linear subnetworks see mirror images of one problem)."""
    W, a = np.asarray(W, float), np.asarray(a, float)
    return float(np.linalg.norm(W[a > 0]) / np.linalg.norm(W[a < 0]))


# ------------------------------------------------------ one hypothesis moved at a time


def move_point(
    data: Dataset,
    *,
    alpha: float = 0.0,
    width: int = 20,
    init_scale: float = 1e-3,
    seed: int = 0,
    t_max: float = 1e300,
    signs=None,
    target: str = "phuong",
) -> dict:
    """One flow for a hypothesis move: balanced init (``signs`` forces the output
    signs), gradient flow to ``t_max``; Phuong's gap (:func:`live_gap`, NaN when a
    class has no max-margin direction), Min's alignment time ``t1`` in paper time and
    ``log n/√μ`` (NaN when ``μ ≤ 0``), and with ``target="hinted"`` the relative sup
    gaps to Lyu's hinted limit ``½φ(⟨w*, x⟩)`` and to the symmetric-data limit
    ``(1+α)/4⟨w*, x⟩`` (``w*`` of the data without the three hint points, the last
    three rows)."""
    from .flows import gradient_flow

    X, y = data.X, data.y
    mu = min2024.separability(X, y)
    t_scale = float(np.log(max(data.n, 2)) / np.sqrt(mu)) if mu > 0 else np.nan
    early = np.logspace(-1, 3, 41)
    late = np.logspace(3, np.log10(t_max), 20)
    net = TwoLayerNet(
        data.d,
        width,
        alpha=alpha,
        init="balanced",
        init_scale=init_scale,
        seed=seed,
        signs=signs,
    )
    W0, a0 = net.weights()
    run = gradient_flow(
        net,
        data,
        t_max,
        rtol=1e-5,
        atol=1e-8,
        snapshot_times=np.unique(np.concatenate([[0.0], early, late])),
    )
    W, a = run.final["W"], run.final["a"]
    out = dict(
        mu=mu,
        t_scale=t_scale,
        orthogonal=bool(phuong2021.is_orthogonally_separable(X, y)),
    )
    pair = max_margin_pair(data)
    out["phuong"] = live_gap(W, a, X, *pair) if pair is not None else np.nan
    record = min2024.membership_record(run.param("W"), X, y)
    t1 = min2024.alignment_time(run.times, record, np.sign(a0))
    out["t1"] = (
        float(min2024.paper_time(t1, "mean", data.n)) if np.isfinite(t1) else np.inf
    )
    if target == "hinted":
        base = lyu2021.max_margin_separator(X[:-3], y[:-3])
        X_eval = np.vstack(
            [
                X,
                np.random.default_rng(seed).standard_normal((200, data.d))
                / np.sqrt(data.d),
            ]
        )
        out["hinted"] = lyu2021.limit_error(
            W, a, X_eval, lyu2021.hinted_limit_function(X_eval, base, alpha), alpha
        )
        out["symmetric"] = lyu2021.limit_error(
            W, a, X_eval, lyu2021.symmetric_limit_function(X_eval, base, alpha), alpha
        )
    return out


# ------------------------------------------------ the moves, measured over many draws


def leaky_move(
    seed: int,
    alpha: float,
    *,
    std: float = 0.5,
    width: int = 20,
    init_scale: float = 1e-3,
    times=(1e100, 1e200, 1e300),
) -> dict:
    """The α move on :func:`nonsymmetric_data` (draw ``seed``, ``μ > 0``): Phuong's gap
    (:func:`live_gap`) at each of ``times``. Under ReLU it decays like ``1/log t``
    (``log10`` gap falls by ``log10 3`` from 1e100 to 1e300); a leaky slope gives the
    neurons another limit, so the gap stalls at a positive value."""
    from .flows import gradient_flow

    data = nonsymmetric_data(std=std, seed=seed)
    pair = max_margin_pair(data)
    net = TwoLayerNet(
        data.d, width, alpha=alpha, init="balanced", init_scale=init_scale, seed=seed
    )
    run = gradient_flow(
        net, data, max(times), rtol=1e-5, atol=1e-8, snapshot_times=[0.0, *times]
    )
    gaps = [live_gap(s["W"], s["a"], data.X, *pair) for s in run.snapshots[1:]]
    return {f"gap_{t:.0e}": float(g) for t, g in zip(times, gaps)}


def mu_move(seed: int, std: float, *, init_scale: float = 1e-3, width: int = 20):
    """The μ move: :func:`move_point` on :func:`nonsymmetric_data` of spread ``std``
    (draw ``seed``): ``μ``, Phuong's gap at ``t = 1e300``, Min's ``t1`` and
    ``log n/√μ`` (paper time)."""
    out = move_point(
        nonsymmetric_data(std=std, seed=seed),
        width=width,
        init_scale=init_scale,
        seed=seed,
    )
    return {k: out[k] for k in ("mu", "phuong", "t1", "t_scale", "orthogonal")}


def width2_move(
    seed: int, signs, *, alpha: float = 0.5, init_scale: float = 1e-4
) -> float:
    """Width 2 on Lyu's symmetric data (:func:`twolayer.limit_data.lyu_data`, draw
    ``seed``), a balanced init with the output signs forced to ``signs``: the relative
    sup gap to ``(1+α)/4⟨w*, x⟩`` at ``t = 1e300``. With one neuron of each sign
    Lemma 5.4's event (``b̄`` of one sign: for a balanced init ``sign b̄_k =
    sign a_k``) cannot occur."""
    from .flows import gradient_flow

    data, X_eval = lyu_data(seed)
    w_star = lyu2021.max_margin_separator(data.X, data.y)
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    net = TwoLayerNet(
        data.d,
        2,
        alpha=alpha,
        init="balanced",
        init_scale=init_scale,
        seed=seed,
        signs=np.asarray(signs, float),
    )
    run = gradient_flow(net, data, 1e300, rtol=1e-5, atol=1e-8, n_snapshots=3)
    return lyu2021.limit_error(run.final["W"], run.final["a"], X_eval, target, alpha)


def hinted_move(
    seed: int,
    hinted: bool,
    *,
    alpha: float = 0.5,
    width: int = 20,
    init_scale: float = 1e-4,
    rtol: float = 1e-3,
    times=(1e100, 1e300),
) -> dict:
    """The hint move: :func:`synthesis_data` (draw ``seed``) with or without Lyu et
    al.'s three hint points (Def. 6.1, H = K = 5, ε = 0.05), leaky ``alpha``, Gaussian
    init of scale ``init_scale`` (Thm 4.3's σ), gradient flow to ``max(times)``.

    Returns the relative sup gaps (over the data and 200 random points) to Thm 4.3's
    symmetric-data limit ``(1+α)/4⟨w*, x⟩`` at each of ``times`` (``lyu_1e+100``, …)
    and to Thm 6.2's hinted limit ``½φ(⟨w*, x⟩)`` at the end (``w*`` of the data
    without the hints), and what else the hints change: :func:`hypotheses`, the
    linear margin ``γ_lin`` and ``shrink``, the largest norm of the original points
    (the hinted set is rescaled to ``‖x‖ ≤ 1``, which for a 2-homogeneous net is an
    init ``√shrink`` times smaller on a clock ``1/shrink`` times slower).

    The flow on the hinted set is stiff (neurons slide along activation kinks):
    ``rtol = 1e-3`` reaches ``t = 1e300`` in about 1e4 steps, and agrees with
    ``rtol = 1e-4`` (about 9e4 steps) to 4 digits on these gaps."""
    from .flows import gradient_flow

    data = synthesis_data(seed=seed, hinted=hinted)
    base = slice(0, data.n - 3 if hinted else data.n)
    w_star = lyu2021.max_margin_separator(data.X[base], data.y[base])
    rng = np.random.default_rng(seed)
    X_eval = np.vstack([data.X, rng.standard_normal((200, data.d)) / np.sqrt(data.d)])
    net = TwoLayerNet(
        data.d, width, alpha=alpha, init="gaussian", init_scale=init_scale, seed=seed
    )
    run = gradient_flow(
        net, data, max(times), rtol=rtol, atol=1e-8, snapshot_times=[0.0, *times]
    )
    linear = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    out = {
        f"lyu_{t:.0e}": lyu2021.limit_error(s["W"], s["a"], X_eval, linear, alpha)
        for t, s in zip(times, run.snapshots[1:])
    }
    W, a = run.final["W"], run.final["a"]
    hint_limit = lyu2021.hinted_limit_function(X_eval, w_star, alpha)
    return dict(
        out,
        thm62=lyu2021.limit_error(W, a, X_eval, hint_limit, alpha),
        **hypotheses(data),
        linear_margin=lyu2021.linear_margin(data.X, data.y),
        shrink=float(np.linalg.norm(data.X[base], axis=1).max()),
        steps=int(run.config["steps"]),
    )


# ------------------------------------------------------------ the overlay page


def mirror_gap(data: Dataset) -> float:
    """``max(‖ŵ+ − ŵ*‖, ‖ŵ− + ŵ*‖)`` over unit vectors: how far Phuong & Lampert's
    directions (eqs. 6-7) are from ``±w*``, Lyu et al.'s linear max-margin direction
    (0 on antipodal data, where the two classes' problems mirror the linear one)."""
    w_plus, w_minus = max_margin_pair(data)
    w_star = lyu2021.max_margin_separator(data.X, data.y)

    def unit(v):
        return v / np.linalg.norm(v)

    return float(
        max(
            np.linalg.norm(unit(w_plus) - unit(w_star)),
            np.linalg.norm(unit(w_minus) + unit(w_star)),
        )
    )


def support_span_rank(data: Dataset) -> int:
    """The smaller rank of the two classes' support examples
    (:func:`twolayer.theory.phuong2021.support_ranks`; Phuong & Lampert Thm 1 asks
    that both span ``R^d``)."""
    return min(phuong2021.support_ranks(data.X, data.y))


# -------------------------------------------- the pages' measurements, over the seeds


def last(runs, key: str) -> np.ndarray:
    """Per run, the final value of ``run[key]`` (its last entry if it is a series)."""
    return np.array([np.ravel(r[key])[-1] for r in runs], dtype=float)


def phuong_limits(seeds, init_scale: float, large_scale: float, **kw) -> dict:
    """The limits page's Phuong & Lampert runs (:func:`phuong_limit_run`) from the
    small and the large init, each seed's final values (``gap``, ``rank3``, ``f_dist``;
    ``big_*`` from the large init; the early-phase rivals ``early_gap``,
    ``f_dist_early``) and the numbers the prose quotes (``quotes``: the worst seed on
    the side each claim is judged, the best of each rival)."""
    small = [phuong_limit_run(s, init_scale, **kw) for s in seeds]
    large = [phuong_limit_run(s, large_scale, n_snapshots=20, **kw) for s in seeds]
    out = dict(small=small, large=large)
    for key in ("gap", "rank3", "f_dist", "early_gap", "f_dist_early", "stable"):
        out[key] = last(small, key)
    for key in ("gap", "rank3", "f_dist", "stable"):
        out[f"big_{key}"] = last(large, key)
    out["quotes"] = dict(
        phuong_gap=out["gap"].max(),
        phuong_early_gap=out["early_gap"].min(),
        phuong_rank3=out["rank3"].max(),
        phuong_big_rank3=out["big_rank3"].min(),
        phuong_big_gap=out["big_gap"].min(),
        phuong_steps=last(small, "steps").max(),
        phuong_wall=last(small, "wall").max(),
        phuong_stable=out["stable"].max(),
        phuong_big_stable=out["big_stable"].max(),
        phuong_f_dist=out["f_dist"].max(),
        phuong_f_dist_early=out["f_dist_early"].min(),
        phuong_big_f_dist=out["big_f_dist"].max(),
    )
    return out


def gd_checks(seeds, init_scale: float, *, lr: float, time: float) -> dict:
    """:func:`gd_check` on each seed's :func:`synthesis_data` (width 20, balanced
    init): the first-order test ``|ratio − ½|`` (``order``) and the moved-init
    rival's (``rival_order``), with the prose's quotes."""
    checks = []
    for s in seeds:
        ds = synthesis_data(seed=s)
        net = TwoLayerNet(ds.d, 20, init="balanced", init_scale=init_scale, seed=s)
        checks.append(gd_check(net, ds, lr=lr, time=time, seed=s))
    ratio, rival = last(checks, "ratio"), last(checks, "rival_ratio")
    return dict(
        checks=checks,
        order=np.abs(ratio - 0.5),
        rival_order=np.abs(rival - 0.5),
        quotes=dict(
            gd_dist=max(c["dist"].max() for c in checks),
            gd_ratio_lo=ratio.min(),
            gd_ratio_hi=ratio.max(),
            gd_rival_lo=rival.min(),
        ),
    )


def lyu_limits(
    seeds, init_scale: float, large_scale: float, n_draws: int = 20, **kw
) -> dict:
    """The limits page's Lyu et al. runs (:func:`lyu_limit_run`): ``n_draws`` draws
    from the first seed (Thm 4.3's probability is over the initialisation; a draw
    whose data are not linearly separable, outside the theorem, is ``skipped``) with
    each draw's final gap ``err``, margin ratio ``margin_all``, phase I's rival
    ``err_phase1`` (``phase1_best``: the best of the first ``len(seeds)``) and
    ``good_embedding``; the first ``len(seeds)`` draws (``runs``, the figure) also
    from the large init, whose final margin ratio is ``big_margin``; with quotes."""
    small, skipped, draw = [], [], seeds[0]
    while len(small) < n_draws:  # Thm 4.3 assumes linearly separable data
        try:
            small.append(lyu_limit_run(draw, init_scale, **kw))
        except NotSeparableError:
            skipped.append(draw)
        draw += 1
    large = [lyu_limit_run(s, large_scale, n_snapshots=3, **kw) for s in seeds]
    runs = small[: len(seeds)]
    err, phase1 = last(small, "err"), last(small, "err_phase1")
    margin, big_margin = last(runs, "margin"), last(large, "margin")
    at_1e8 = [float(np.interp(8, r["log10_t"], r["err"])) for r in runs]
    return dict(
        runs=runs,
        err=err,
        err_200=np.array(
            [float(np.interp(200, r["log10_t"], r["err"])) for r in small]
        ),
        err_phase1=phase1,
        phase1_best=phase1[: len(seeds)].min(),
        good_embedding=last(small, "good_embedding").astype(bool),
        margin_all=last(small, "margin"),
        big_margin=big_margin,
        skipped=skipped,
        quotes=dict(
            lyu_skipped=len(skipped),
            lyu_err=err[: len(seeds)].max(),
            lyu_err_8=max(at_1e8),
            lyu_err_phase1=phase1[: len(seeds)].min(),
            lyu_margin_ratio=margin.min(),
            lyu_big_margin_ratio=big_margin.max(),
            lyu_big_margin_lo=big_margin.min(),
        ),
    )


def sarussi_limits(
    seeds, init_scale: float, large_scale: float, threshold: float, **kw
) -> dict:
    """The limits page's Sarussi et al. runs (:func:`sarussi_limit_run`) from the
    small and the large init: the constant ``c = ratio × log10 t`` of the ``1/log t``
    decay at the last time (``c_small``, ``c_big``), and ``c_threshold``, the
    constant of a ratio at ``threshold`` at ``t_max``; with quotes."""
    small = [sarussi_limit_run(s, init_scale, **kw) for s in seeds]
    large = [sarussi_limit_run(s, large_scale, **kw) for s in seeds]
    c_small, c_big = (last(r, "ratio") * last(r, "log10_t") for r in (small, large))
    c_threshold = threshold * float(np.log10(kw.get("t_max", 1e300)))
    return dict(
        small=small,
        large=large,
        c_small=c_small,
        c_big=c_big,
        c_threshold=c_threshold,
        quotes=dict(
            sar_ratio=last(small, "ratio").max(),
            sar_big_ratio=last(large, "ratio").min(),
            sar_c=c_small.max(),
            sar_big_c_lo=c_big.min(),
            sar_big_c_hi=c_big.max(),
            sar_big_nar=last(large, "nar").min(),
            sar_c_threshold=c_threshold,
        ),
    )


def overlay_limits(seeds, init_scale: float, large_scale: float, **kw) -> dict:
    """The overlay page's flows (:func:`overlay_run`) from the small and the large
    init: each gap at the end (``end``, ``big_end``: phuong, lyu, sarussi), the data
    hypotheses per draw (``hyp``), the overlap of the limits (``mirror``: the largest
    :func:`mirror_gap`; ``mass``: the largest ``|log`` :func:`group_mass_ratio` ``|``
    at the end) and the support examples' rank per draw (``span_rank``); with
    quotes."""
    runs = [overlay_run(s, init_scale, **kw) for s in seeds]
    bigs = [overlay_run(s, large_scale, **kw) for s in seeds]
    keys = ("phuong", "lyu", "sarussi")
    end, big_end = (
        {k: np.array([o["gaps"].iloc[-1][k] for o in rs]) for k in keys}
        for rs in (runs, bigs)
    )
    hyp = {
        k: np.array([hypotheses(o["data"])[k] for o in runs])
        for k in ("orthogonal", "symmetric", "mu")
    }
    finals = [o["run"].final for o in runs]
    masses = np.array([group_mass_ratio(f["W"], f["a"]) for f in finals])
    out = dict(
        runs=runs,
        bigs=bigs,
        end=end,
        big_end=big_end,
        hyp=hyp,
        mirror=max(mirror_gap(o["data"]) for o in runs),
        span_rank=np.array([support_span_rank(o["data"]) for o in runs]),
        mass=float(np.abs(np.log(masses)).max()),
    )
    out["quotes"] = dict(
        **{f"main_{k}": end[k].max() for k in keys},
        **{f"big_{k}": big_end[k].min() for k in keys},
        main_mu=hyp["mu"].min(),
        mirror=out["mirror"],
        span_rank=int(out["span_rank"].max()),
        mass_ratio=out["mass"],
    )
    return out


def overlay_early(runs, bigs, seeds, r: float, large_scale: float, **kw) -> dict:
    """The early phase on the overlay's flows: Min et al.'s aligned fraction at paper
    time ``log n/√μ`` (``aligned``, ``big_aligned``), own-cone exits after ``t1``
    (``exits``, both inits), the stable rank's limsup and initial value, whether
    every output sign was kept (``signs_kept``), and Lyu et al.'s Lemma 5.2 at
    ``T1(r)`` (:func:`phase1_alignment`, ``kw`` its data and net: ``mu_cos``,
    ``big_mu_cos``); with quotes (times in Min's paper time)."""
    n = runs[0]["data"].n
    phase1 = [phase1_alignment(s, r, large_scale, **kw) for s in seeds]
    out = dict(
        aligned=last(runs, "aligned_at_scale"),
        big_aligned=last(bigs, "aligned_at_scale"),
        exits=int(sum(o["exits"] for o in runs + bigs)),
        signs_kept=all(o["signs_kept"] for o in runs + bigs),
        mu_cos=last(phase1, "small"),
        big_mu_cos=last(phase1, "large"),
    )
    out["quotes"] = dict(
        t1_max=max(min2024.paper_time(o["t1"], "mean", n) for o in runs),
        t1_scale_min=min(min2024.paper_time(o["t_scale"], "mean", n) for o in runs),
        aligned=out["aligned"].min(),
        big_aligned=out["big_aligned"].max(),
        exits=out["exits"],
        limsup=last(runs, "rank_limsup").max(),
        big_limsup=last(bigs, "rank_limsup").max(),
        rank_init=last(runs, "rank_init").min(),
        mu_cos=out["mu_cos"].min(),
        big_mu_cos=out["big_mu_cos"].max(),
        T1=float(np.median(last(phase1, "T1"))),
    )
    return out


def lyu_two_neuron_gap(
    seed: int,
    *,
    balanced: bool = False,
    width: int = 10,
    alpha: float = 0.5,
    t_max: float = 1e300,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    r: float = 1e-6,
) -> float:
    """Lyu et al.'s σ → 0 flow of draw ``seed`` (:func:`lyu_limit_run`'s data and
    init direction): the two-neuron flow of Thm 5.5 from ``r θ̂``, Lemma 5.4's
    ``θ̂ = (b̄_+ μ̄, b̄_− μ̄; b̄_+, b̄_−)`` (:func:`twolayer.theory.lyu2021.
    phase2_start`), which by eq. (5) and Lemma 5.3 the m-neuron flow follows through
    ``π_b̄`` once σ is small enough; its relative sup gap to ``(1+α)/4⟨w*, x⟩`` at
    ``t_max``. ``balanced``: from ``(μ̄, −μ̄; 1, −1)`` instead (Thm 5.5's other
    starts, ignoring ``|b̄_+| ≠ |b̄_−|``)."""
    from .flows import gradient_flow

    sym, X_eval = lyu_data(seed)
    w_star = lyu2021.max_margin_separator(sym.X, sym.y)
    mu_bar = lyu2021.mu(sym.X, sym.y)
    mu_bar = mu_bar / np.linalg.norm(mu_bar)
    if balanced:
        W, a = np.stack([mu_bar, -mu_bar]), np.array([1.0, -1.0])
    else:
        net = TwoLayerNet(sym.d, width, alpha=alpha, init="gaussian", seed=seed)
        W, a = lyu2021.phase2_start(
            lyu2021.embedding_vector(*net.weights(), mu_bar), mu_bar
        )
    two = TwoLayerNet.from_weights(r * W, r * a, alpha=alpha)
    flow = gradient_flow(
        two, sym, t_max, rtol=rtol, atol=atol, n_snapshots=2, t_min=1e-1
    )
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    end = flow.snapshots[-1]
    return lyu2021.limit_error(end["W"], end["a"], X_eval, target, alpha)


def lyu_sigma_check(L: dict, first: int, sigmas, tol: float, **kw) -> dict:
    """Thm 4.3's "for small enough σ", on the draws of :func:`lyu_limits` ``L``
    (drawn from ``first``) that miss (gap > ``tol``; none: the draw of largest
    gap): each rerun from the same init direction at every σ in ``sigmas``
    (``gaps``, a table draw × σ, columns ``f"{σ:g}"``; ``"0"``: the σ → 0 flow of
    :func:`lyu_two_neuron_gap`, ``"balanced"``: its balanced rival); on the worst
    of them at the smallest σ, the gap at ``t = 1e200`` (``gap_200``, the horizon)
    and at tolerances ten times smaller (``gap_fine``); ``kw`` as
    :func:`lyu_limit_run`."""
    import pandas as pd

    n = len(L["err"]) + len(L["skipped"])
    draws = np.array([d for d in range(first, first + n) if d not in L["skipped"]])
    miss = draws[L["err"] > tol]
    miss = miss if miss.size else draws[[int(np.argmax(L["err"]))]]
    rows = {}
    for d in miss:
        gaps = {f"{s:g}": lyu_limit_run(int(d), s, **kw)["err"][-1] for s in sigmas}
        gaps["0"] = lyu_two_neuron_gap(int(d), **kw)
        gaps["balanced"] = lyu_two_neuron_gap(int(d), balanced=True, **kw)
        rows[int(d)] = gaps
    gaps = pd.DataFrame.from_dict(rows, orient="index")
    gaps.index.name = "draw"
    worst = int(gaps[f"{min(sigmas):g}"].idxmax())
    run = lyu_limit_run(worst, min(sigmas), **kw)
    fine = dict(kw, rtol=kw.get("rtol", 1e-5) / 10, atol=kw.get("atol", 1e-8) / 10)
    return dict(
        gaps=gaps,
        worst=worst,
        gap_200=float(np.interp(200, run["log10_t"], run["err"])),
        gap_fine=float(lyu_limit_run(worst, min(sigmas), **fine)["err"][-1]),
    )


def lyu_probability_quotes(L: dict, tol: float, width: int) -> dict:
    """Thm 4.3's probability on the draws of :func:`lyu_limits` ``L``, as the prose
    quotes it: the bound ``1 − 2^-(m−1)`` (``lyu_bound``; one miss allowed in
    ``lyu_once = 2^(m−1)`` draws) at width ``m``, the draws, how many miss (gap >
    ``tol``), the worst gap and the largest margin ratio among the misses (1 when
    none misses)."""
    missed = L["err"] > tol
    return dict(
        lyu_bound=1 - 2.0 ** -(width - 1),
        lyu_draws=len(L["err"]),
        lyu_once=2 ** (width - 1),
        lyu_missed=int(missed.sum()),
        lyu_worst_err=L["err"].max(),
        lyu_missed_margin=L["margin_all"][missed].max() if missed.any() else 1.0,
    )


def lyu_sigma_quotes(C: dict, sigmas, tol: float) -> dict:
    """The σ check of :func:`lyu_sigma_check` ``C`` (run at ``sigmas``), as the
    prose quotes it: at the smallest σ how many rerun draws still miss (gap >
    ``tol``) of how many, and on the worst draw the gap at that σ, of the σ → 0
    flow (Thm 5.5 from Lemma 5.4's θ̂) and of its balanced rival, at ``t = 1e200``
    and at tolerances ten times smaller."""
    smallest = min(sigmas)
    small = C["gaps"][f"{smallest:g}"]
    worst = C["gaps"].loc[C["worst"]]
    return dict(
        lyu_sigma_min=smallest,
        lyu_sigma_missed=int((small > tol).sum()),
        lyu_sigma_checked=len(small),
        lyu_worst_draw=C["worst"],
        lyu_sigma_gap=worst[f"{smallest:g}"],
        lyu_zero_gap=worst["0"],
        lyu_balanced_gap=worst["balanced"],
        lyu_gap_200=C["gap_200"],
        lyu_gap_fine=C["gap_fine"],
    )


# ------------------------------------------- Lyu Thm 4.3's misses continued in log time

# horizons (log10 t) at which a continued flow is read, and the horizons it is run to
# in turn (each run stops the continuation once the gap is within tolerance)
LYU_HORIZONS = (200.0, 300.0, 1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 2e6, 3e6, 4e6, 5e6)
LYU_CAPS = (1e3, 1e5, 5e6)


def _mass_ratio(a) -> float:
    """``max(a1²/a2², a2²/a1²)`` of a balanced two-neuron net: the ratio of the two
    neurons' masses (``|a_k| = ‖w_k‖``), 1 at Thm 4.3's limit."""
    q = float((a[0] / a[1]) ** 2)
    return max(q, 1 / q)


def lyu_horizon_run(
    width: int,
    seed: int,
    *,
    data_seed: int | None = None,
    tol: float = 0.05,
    alpha: float = 0.5,
    r: float = 1e-6,
    horizons=LYU_HORIZONS,
    caps=LYU_CAPS,
    event_sigma: float = 1e-4,
) -> dict:
    """One Lyu et al. Thm 4.3 draw continued in the log-time clock
    (:func:`twolayer.flows.gradient_flow` with ``log10_t_max``): data
    :func:`lyu_data` of ``data_seed`` (default ``seed``), Gaussian init of width
    ``width`` from ``seed``. With ``b̄`` of both signs, the σ → 0 flow (Thm 5.5's two
    neurons from Lemma 5.4's ``r θ̂``, as :func:`lyu_two_neuron_gap`), run to each
    horizon of ``caps`` in turn until its gap is within ``tol``; otherwise (Lemma
    5.4's event: the theorem's failure) the width-``width`` net at σ =
    ``event_sigma`` to ``caps[1]``. Per horizon of ``horizons`` reached: the relative
    sup gap to ``(1+α)/4⟨w*, x⟩`` (``gap@h``), the two neurons' mass ratio
    (``mass@h``, :func:`_mass_ratio`) and the normalised margin over the global
    maximum (``margin@h``); ``resolved``: the first horizon with gap ≤ ``tol`` (NaN:
    none), ``reached``: the last horizon run to, ``imbalance``:
    ``max(|b̄+|/|b̄−|, inverse)``, ``kkt@300``: the KKT stationarity residual at
    ``t = 10^300`` (:func:`twolayer.theory.lyu2021.kkt_check`)."""
    from .flows import gradient_flow

    data, X_eval = lyu_data(seed if data_seed is None else data_seed)
    w_star = lyu2021.max_margin_separator(data.X, data.y)
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    best = lyu2021.global_max_margin_symmetric(data.X, data.y, alpha)
    mu_bar = lyu2021.mu(data.X, data.y)
    mu_bar = mu_bar / np.linalg.norm(mu_bar)
    net = TwoLayerNet(data.d, width, alpha=alpha, init="gaussian", seed=seed)
    b = lyu2021.embedding_vector(*net.weights(), mu_bar)
    event = not lyu2021.is_good_embedding(b)
    if event:
        start = TwoLayerNet(
            data.d,
            width,
            alpha=alpha,
            init="gaussian",
            init_scale=event_sigma,
            seed=seed,
        )
        caps, imbalance = caps[:2], np.inf
    else:
        W, a = lyu2021.phase2_start(b, mu_bar)
        start = TwoLayerNet.from_weights(r * W, r * a, alpha=alpha)
        imbalance = _mass_ratio(a) ** 0.5
    out = dict(width=width, seed=seed, event=event, imbalance=imbalance)
    for cap in caps:
        hs = [h for h in horizons if h <= cap]
        flow = gradient_flow(
            start,
            data,
            log10_t_max=cap,
            snapshot_log10_times=hs,
            rtol=1e-5,
            atol=1e-8,
            late_method="Radau",
        )
        snaps = dict(zip(hs, flow.snapshots))
        gaps = {
            h: lyu2021.limit_error(s["W"], s["a"], X_eval, target, alpha)
            for h, s in snaps.items()
        }
        if gaps[hs[-1]] <= tol:
            break
    for h in horizons:
        s = snaps.get(h)
        out[f"gap@{h:g}"] = gaps[h] if s is not None else np.nan
        out[f"mass@{h:g}"] = (
            _mass_ratio(s["a"]) if s is not None and not event else np.nan
        )
        out[f"margin@{h:g}"] = (
            lyu2021.normalized_margin(s["W"], s["a"], data.X, data.y, alpha) / best
            if s is not None
            else np.nan
        )
    hit = [h for h in hs if gaps[h] <= tol]
    end = snaps[300.0]
    kkt = lyu2021.kkt_check(end["W"], end["a"], data.X, data.y, alpha)
    out.update(
        resolved=hit[0] if hit else np.nan,
        reached=hs[-1],
        **{"kkt@300": float(kkt.stationarity)},
    )
    return out


def mass_law_exponent(rho, alpha: float = 0.5):
    """The exponent ``p`` with which the mass ratio ``ρ = P/Q`` of Thm 5.5's two
    neurons falls against ``log t`` (``ρ ∝ (log t)^-p`` locally), while the larger
    neuron's class holds the smallest margins. On symmetric data the two neurons along
    ``±w*`` give that class the margin ``αP + Q`` (``P``, ``Q``: the neurons'
    squared norms, ``|a_k| = ‖w_k‖``), and the flow grows ``ln Q`` ``1/α`` times as
    fast as ``ln P``: ``Q = cP^{1/α}``, so ``ρ = 1/(cP)`` for ``α = ½``. With
    the margin ``αP + cP² ∝ log t``, ``p = d ln P/d ln(αP + cP²) = (α + 1/ρ)/(α +
    2/ρ) = (αρ + 1)/(αρ + 2)``: → 1 (``ρ ∝ 1/log t``) while ``ρ ≫ 1/α``."""
    rho = np.asarray(rho, float)
    if not alpha == 0.5:
        raise ValueError(f"the closed form is for alpha = 0.5, got {alpha!r}")
    return (alpha * rho + 1) / (alpha * rho + 2)


def mass_law_check(rho0, rho1, h0: float, h1: float, alpha: float = 0.5):
    """The mass ratio's measured exponent between the horizons ``log10 t = h0, h1``,
    ``p = −ln(ρ1/ρ0)/ln(h1/h0)``, and :func:`mass_law_exponent` at the geometric
    mean ``√(ρ0 ρ1)``: ``(measured, law)``."""
    rho0, rho1 = np.asarray(rho0, float), np.asarray(rho1, float)
    measured = -np.log(rho1 / rho0) / np.log(h1 / h0)
    return measured, mass_law_exponent(np.sqrt(rho0 * rho1), alpha)


IMBALANCE_HORIZONS = (200.0, 300.0)


def imbalance_law_run(
    width: int,
    seed: int,
    *,
    data_seed: int = 0,
    alpha: float = 0.5,
    r: float = 1e-6,
    horizons=IMBALANCE_HORIZONS,
) -> dict:
    """One Lyu et al. Thm 4.3 initialisation's σ → 0 flow (Thm 5.5's two neurons
    from Lemma 5.4's ``r θ̂``, as :func:`lyu_horizon_run`) to ``10^horizons[-1]``:
    the imbalance ``k = max(|b̄+|/|b̄−|, inverse)``, the mass ratio ``ρ``
    (:func:`_mass_ratio`) at each horizon (``mass@h``), its measured exponent and
    the law's (:func:`mass_law_check`: ``p``, ``p_law``)."""
    from .flows import gradient_flow

    data, _ = lyu_data(data_seed)
    mu_bar = lyu2021.mu(data.X, data.y)
    mu_bar = mu_bar / np.linalg.norm(mu_bar)
    net = TwoLayerNet(data.d, width, alpha=alpha, init="gaussian", seed=seed)
    b = lyu2021.embedding_vector(*net.weights(), mu_bar)
    if not lyu2021.is_good_embedding(b):
        raise ValueError(f"seed {seed}, width {width}: b̄ has one sign (Lemma 5.4)")
    W, a = lyu2021.phase2_start(b, mu_bar)
    flow = gradient_flow(
        TwoLayerNet.from_weights(r * W, r * a, alpha=alpha),
        data,
        log10_t_max=max(horizons),
        snapshot_log10_times=horizons,
        rtol=1e-5,
        atol=1e-8,
        late_method="Radau",
    )
    rho = [_mass_ratio(s["a"]) for s in flow.snapshots]
    p, law = mass_law_check(rho[0], rho[-1], horizons[0], horizons[-1], alpha)
    out = dict(width=width, seed=seed, imbalance=_mass_ratio(a) ** 0.5)
    out.update({f"mass@{h:g}": v for h, v in zip(horizons, rho)})
    return dict(out, p=float(p), p_law=float(law))


def weighted_direction_gap(W, a, w_plus, w_minus) -> float:
    """Phuong & Lampert Thm 1's gap as the theorem weighs neurons, on ``W/‖W‖_F``:
    ``Σ_j ‖w_j‖² (1 − cos(w_j, w_{sign a_j})) / ‖W‖_F²`` — a neuron counts by its
    share of the mass, so a vanishing neuron (which ``W/‖W‖_F`` does not see) does not
    set it, unlike :func:`live_gap`'s max over live neurons."""
    W = np.asarray(W, float)
    mass = (W**2).sum(axis=1)
    cos = phuong2021.cosines_to_max_margin(W, a, w_plus, w_minus)
    return float((mass * (1 - cos)).sum() / mass.sum())


OVERLAY_HORIZONS = (300.0, 3000.0)


def overlay_decay_run(
    seed: int,
    init_scale: float,
    *,
    n: int = 40,
    d: int = 5,
    std: float = 0.5,
    alpha: float = 0.0,
    width: int = 20,
    horizons=OVERLAY_HORIZONS,
) -> dict:
    """The overlay's flow (:func:`overlay_run`'s data and init, draw ``seed``)
    continued in log time to ``10^horizons[-1]``: the weighted Phuong gap
    (:func:`weighted_direction_gap`) and :func:`live_gap` at each horizon
    (``gap@h``, ``live@h``) and the decay ratio ``ratio`` = weighted gap at the
    last horizon over the first (a ``1/log t`` decay from 10^300 to 10^3000: 0.1;
    a stall: 1); the rival, the same weighted gap to the early-phase directions
    ``x̂±`` (normalised class sums, ``xhat@h``) and its ratio ``xhat_ratio``."""
    from .flows import gradient_flow

    data, net = _overlay_setup(seed, init_scale, n, d, std, alpha, width)
    w_plus, w_minus = max_margin_pair(data)
    x_plus, x_minus = phuong2021.early_phase_directions(data.X, data.y)
    run = gradient_flow(
        net,
        data,
        log10_t_max=max(horizons),
        snapshot_log10_times=horizons,
        rtol=1e-5,
        atol=1e-8,
        late_method="Radau",
    )
    out = dict(seed=seed, init_scale=init_scale)
    for h, s in zip(horizons, run.snapshots):
        out[f"gap@{h:g}"] = weighted_direction_gap(s["W"], s["a"], w_plus, w_minus)
        out[f"live@{h:g}"] = live_gap(s["W"], s["a"], data.X, w_plus, w_minus)
        out[f"xhat@{h:g}"] = weighted_direction_gap(s["W"], s["a"], x_plus, x_minus)
    first, end = f"{horizons[0]:g}", f"{horizons[-1]:g}"
    out["ratio"] = out[f"gap@{end}"] / out[f"gap@{first}"]
    out["xhat_ratio"] = out[f"xhat@{end}"] / out[f"xhat@{first}"]
    return out


def overlay_decays(seeds, init_scale: float, **kw) -> dict:
    """:func:`overlay_decay_run` on each seed: the decay ratios of the weighted
    Phuong gap (``ratio``) and of its early-phase rival (``xhat_ratio``), the gaps
    per horizon (``table``); with quotes."""
    import pandas as pd

    table = pd.DataFrame([overlay_decay_run(s, init_scale, **kw) for s in seeds])
    h0, h1 = (f"{h:g}" for h in (OVERLAY_HORIZONS[0], OVERLAY_HORIZONS[-1]))
    return dict(
        table=table,
        ratio=table.ratio.to_numpy(),
        xhat_ratio=table.xhat_ratio.to_numpy(),
        quotes=dict(
            decay_hi=table.ratio.max(),
            decay_lo=table.ratio.min(),
            decay_rival_lo=table.xhat_ratio.min(),
            wgap_300=table[f"gap@{h0}"].max(),
            wgap_3000=table[f"gap@{h1}"].max(),
            live_300=table[f"live@{h0}"].max(),
            live_3000=table[f"live@{h1}"].max(),
        ),
    )
