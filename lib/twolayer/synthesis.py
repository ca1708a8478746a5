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


def max_margin_pair(data: Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """``(w+, w−)`` of Phuong & Lampert eqs. (6)-(7), or None if a class admits none."""
    try:
        return phuong2021.max_margin_directions(data.X, data.y)
    except NotSeparableError:
        return None


def synthesis_data(
    n: int = 40,
    d: int = 5,
    mean: float = 3.0,
    std: float = 0.5,
    seed: int = 0,
    hinted: bool = False,
) -> Dataset:
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
    return ds.with_data(
        X2 / np.linalg.norm(X2, axis=1).max(),
        y2,
        name=ds.name + " + hints",
        note="Lyu Def. 6.1 hints (H=K=5, eps=0.05), rescaled to max norm 1",
    )


def flow_point(
    std: float = 0.5,
    alpha: float = 0.0,
    scale: float = 1e-3,
    width: int = 20,
    hinted: bool = False,
    t_max: float = 1e100,
    n: int = 40,
    d: int = 5,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> dict[str, float]:
    """One sweep point: data, balanced init, gradient flow to ``t_max``, and the
    final :func:`prediction_gaps` plus the data hypotheses and the wall time."""
    from .flows import gradient_flow

    data = synthesis_data(n, d, std=std, seed=seed, hinted=hinted)
    net = TwoLayerNet(d, width, alpha=alpha, init="balanced", scale=scale, seed=seed)
    run = gradient_flow(
        net, data, t_max, rtol=rtol, atol=atol, n_snapshots=3, max_steps=200_000
    )
    gaps = prediction_gaps(
        run.final["W"], run.final["a"], data, alpha, w_pm=max_margin_pair(data)
    )
    return dict(
        std=std,
        alpha=alpha,
        scale=scale,
        width=width,
        hinted=hinted,
        **hypotheses(data),
        **gaps,
        wall=run.wall_time,
        steps=run.config["steps"],
    )


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
    and Cor. 1's function distance (:func:`scaled_distance`) on ``n_held_out``
    fresh points at the end; the early-phase rival ``x̂±`` (its gap and its best
    two-ray model's distance)."""
    from .data import orthant_data
    from .flows import gradient_flow

    ds = orthant_data(n, d, seed=seed)
    w_plus, w_minus = phuong2021.max_margin_directions(ds.X, ds.y)
    x_plus, x_minus = phuong2021.early_phase_directions(ds.X, ds.y)
    net = TwoLayerNet(d, width, init="balanced", scale=init_scale, seed=seed)
    flow = gradient_flow(
        net, ds, t_max, rtol=rtol, atol=atol, n_snapshots=n_snapshots, t_min=1e-1
    )
    gap = np.array(
        [live_gap(s["W"], s["a"], ds.X, w_plus, w_minus) for s in flow.snapshots]
    )
    rank3 = np.array([metrics.rank_ratio(s["W"], 2) for s in flow.snapshots])
    held_out = orthant_data(n_held_out, d, seed=10_000 + seed).X
    limit_f = phuong_limit_function(held_out, w_plus, w_minus)
    from .models import two_layer_output

    learned = two_layer_output(flow.final["W"], flow.final["a"], held_out)
    return dict(
        log10_t=np.log10(np.maximum(flow.times, 1e-300)),
        gap=gap,
        rank3=rank3,
        stable=metrics.stable_rank(flow.final["W"]),
        f_dist=scaled_distance(learned, limit_f),
        early_gap=max(
            1 - metrics.cosine(x_plus, w_plus), 1 - metrics.cosine(x_minus, w_minus)
        ),
        f_dist_early=best_two_ray_distance(x_plus, x_minus, held_out, limit_f),
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
    sigma: float,
    *,
    width: int = 10,
    alpha: float = 0.5,
    t_max: float = 1e300,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    n_snapshots: int = 60,
) -> dict:
    """Lyu et al. Thm 4.3 / 4.2 on symmetric data (draw ``seed``,
    :func:`twolayer.regimes.lyu_data`), Gaussian init of scale ``sigma``: the relative
    sup gap to ``(1+α)/4⟨w*, x⟩`` and the normalised margin over the global maximum
    along the flow; phase I's rival ``μ̄``."""
    from .flows import gradient_flow
    from .regimes import lyu_data

    sym, X_eval = lyu_data(seed)
    w_star = lyu2021.max_margin_separator(sym.X, sym.y)
    mu_bar = lyu2021.mu(sym.X, sym.y)
    mu_bar = mu_bar / np.linalg.norm(mu_bar)
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    net = TwoLayerNet(
        sym.d, width, alpha=alpha, init="gaussian", scale=sigma, seed=seed
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
    return dict(
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
    scale: float,
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
    from .regimes import sarussi_data

    anti = sarussi_data(seed)
    net = TwoLayerNet.fixed_second_layer(anti.d, k, alpha=alpha, scale=scale, seed=seed)
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

    data = synthesis_data(n, d, std=std, seed=seed)
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
    net = TwoLayerNet(d, width, alpha=alpha, init=init, scale=init_scale, seed=seed)
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
    unit = TwoLayerNet(d, width, alpha=alpha, init="balanced", scale=1.0, seed=seed)
    W_bar, a_bar = unit.weights()
    sigma = r**3 / (np.sqrt(width) * lyu2021.m_norm(W_bar, a_bar))
    lam0 = lyu2021.lambda0(data.X, data.y, alpha)
    T1 = lyu2021.phase1_time(r, sigma, W_bar, a_bar, lam0)
    mu_bar = lyu2021.mu(data.X, data.y)
    mu_bar = mu_bar / np.linalg.norm(mu_bar)
    out = dict(T1=T1, sigma=sigma, lam0=lam0)
    for key, scale in (("small", sigma), ("large", large_scale)):
        net = TwoLayerNet(
            d, width, alpha=alpha, init="balanced", scale=scale, seed=seed
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


def nonsymmetric_data(
    n: int = 40, d: int = 5, std: float = 0.5, seed: int = 0
) -> Dataset:
    """Two Gaussian classes that are *not* mirror images: positives ``N(3e1, s²I)``,
    negatives ``N(−3e1 + 1.5e2, s²I)``, scaled to ``‖x‖ ≤ 1``. Unlike
    :func:`synthesis_data`, ``w−`` is not ``−w+`` and neither is along ``w*``, so
    a move of ``μ`` (through ``std``) can break Phuong's and Min's predictions."""
    from .data import Dataset as _Dataset

    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    centres = np.zeros((2, d))
    centres[0, 0], centres[1, 0], centres[1, 1] = 3.0, -3.0, 1.5
    X = np.where(y[:, None] > 0, centres[0], centres[1]) + std * rng.standard_normal(
        (n, d)
    )
    X = X / np.linalg.norm(X, axis=1).max()
    return _Dataset(
        X,
        y,
        f"non-symmetric Gaussians (n={n}, d={d}, std={std:g})",
        f"positives N(3e1, s²I), negatives N(−3e1 + 1.5e2, s²I), s = {std:g}, "
        f"seed {seed}, scaled to max norm 1",
    )


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
        scale=init_scale,
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


# ------------------------------------------------------------ the limits page's figures


def _runs(ax, runs, key, color, label, start=2.0, log=True):
    """One line per run of ``run[key]`` against ``log10 t`` (from ``log10 t >=
    start``), labelled once."""
    for i, r in enumerate(runs):
        late = r["log10_t"] >= start
        draw = ax.semilogy if log else ax.plot
        draw(
            r["log10_t"][late],
            r[key][late],
            "-",
            color=color,
            lw=1,
            label=label if i == 0 else None,
        )


def plot_phuong_limit(axes, small, large, init_scale, large_scale, threshold=1e-3):
    """The limits page's Phuong figure: the worst live neuron's gap per run against
    the early-phase direction's (left), σ3/σ1 of ``W`` for both inits (right)."""
    _runs(axes[0], small, "gap", "C0", "small init")
    for i, r in enumerate(small):
        axes[0].axhline(
            r["early_gap"],
            color="C3",
            ls="--",
            lw=0.8,
            label="early phase $\\hat x_\\pm$" if i == 0 else None,
        )
    _runs(axes[1], small, "rank3", "C0", f"init scale {init_scale:g}")
    _runs(axes[1], large, "rank3", "C1", f"init scale {large_scale:g}")
    for ax, title, ylabel in (
        (axes[0], "directions", "$1-\\cos(w_j, w_\\pm)$"),
        (axes[1], "rank ≤ 2", "$\\sigma_3/\\sigma_1$ of $W$"),
    ):
        ax.axhline(threshold, color="k", ls=":", label=f"threshold {threshold:g}")
        ax.set(xlabel="$\\log_{10} t$", ylabel=ylabel, title=title)
        ax.legend(loc="center right", fontsize=8)


def plot_gd_check(ax, check, lr):
    """The GF/GD figure: the distance to GD at two steps and the moved-init rival."""
    t = check["times"][1:]
    ax.loglog(t, check["dist"][1:], "o-", label=f"GD, $\\eta$ = {lr:g}")
    ax.loglog(t, check["dist_half"][1:], "s-", label=f"GD, $\\eta$ = {lr / 2:g}")
    ax.loglog(
        t, check["rival_dist"][1:], "^--", color="C3", label="flow from a 1% moved init"
    )
    ax.set(xlabel="flow time $t$", ylabel="relative distance to GD ($\\eta$)")
    ax.legend()


def plot_lyu_limit(axes, runs, phase1_gap, big_margin, large_sigma, threshold=0.05):
    """The Lyu figure: the relative sup gap per run against phase I's (left), the
    normalised margin over the global maximum against the large init's (right)."""
    from matplotlib.ticker import NullFormatter

    _runs(axes[0], runs, "err", "C0", "learned")
    _runs(axes[1], runs, "margin", "C0", "learned", log=False)
    axes[0].axhline(
        phase1_gap, color="C3", ls="--", label="phase I: $\\bar\\mu$ (best seed)"
    )
    axes[0].axhline(threshold, color="k", ls=":", label=f"threshold {threshold:g}")
    axes[0].set(
        xlabel="$\\log_{10} t$", ylabel="relative sup gap", title="function (Thm 4.3)"
    )
    axes[0].yaxis.set_minor_formatter(NullFormatter())
    axes[1].axhline(
        big_margin, color="C1", ls="--", label=f"init scale {large_sigma:g} (best seed)"
    )
    axes[1].axhline(0.99, color="k", ls=":", label="threshold 0.99")
    axes[1].set(
        xlabel="$\\log_{10} t$", ylabel="margin / global max", title="margin (Thm 4.2)"
    )
    for ax in axes:
        ax.legend(loc="best", fontsize=8)


def plot_sarussi_limit(
    ax, small, large, small_scale, large_scale, c_large, threshold=1e-3
):
    """The Sarussi figure: the clustering ratio per run for both inits, the
    late-phase rate ``c/log10 t`` with the large init's mean ``c`` and the
    threshold asked at the last time."""
    _runs(ax, small, "ratio", "C0", f"init scale {small_scale:g}", start=-100)
    _runs(ax, large, "ratio", "C1", f"init scale {large_scale:g}", start=-100)
    lt = np.linspace(50, 300, 20)
    ax.semilogy(lt, c_large / lt, "k--", lw=1, label="$c/\\log_{10} t$, large-init $c$")
    ax.axhline(threshold, color="k", ls=":", label=f"threshold {threshold:g}")
    ax.set(xlabel="$\\log_{10} t$", ylabel="$R/\\|\\bar w-\\bar u\\|$")
    ax.legend(fontsize=8)


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
        data.d, width, alpha=alpha, init="balanced", scale=init_scale, seed=seed
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
    """Width 2 on Lyu's symmetric data (:func:`twolayer.regimes.lyu_data`, draw
    ``seed``), a balanced init with the output signs forced to ``signs``: the relative
    sup gap to ``(1+α)/4⟨w*, x⟩`` at ``t = 1e300``. With one neuron of each sign
    Lemma 5.4's event (``b̄`` of one sign: for a balanced init ``sign b̄_k =
    sign a_k``) cannot occur."""
    from .flows import gradient_flow
    from .regimes import lyu_data

    data, X_eval = lyu_data(seed)
    w_star = lyu2021.max_margin_separator(data.X, data.y)
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    net = TwoLayerNet(
        data.d,
        2,
        alpha=alpha,
        init="balanced",
        scale=init_scale,
        seed=seed,
        signs=np.asarray(signs, float),
    )
    run = gradient_flow(net, data, 1e300, rtol=1e-5, atol=1e-8, n_snapshots=3)
    return lyu2021.limit_error(run.final["W"], run.final["a"], X_eval, target, alpha)


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
    """The smaller rank of the two classes' support examples (Phuong & Lampert
    Thm 1 asks that they span ``R^d``)."""
    s = phuong2021.support_examples(data.X, data.y)
    return int(
        min(
            np.linalg.matrix_rank(data.X[s.positive]),
            np.linalg.matrix_rank(data.X[s.negative]),
        )
    )


def plot_overlay(axes, runs, bigs, init_scale, large_scale, threshold=1e-3):
    """The overlay figure: the three papers' gaps along each run, small init (top)
    and large init (bottom)."""
    labels = {
        "phuong": "Phuong: max $1-\\cos(w_j, w_\\pm)$",
        "lyu": "Lyu: rel. sup gap to $\\frac{1+\\alpha}{4}\\langle w^*,x\\rangle$",
        "sarussi": "Sarussi: $R/\\|\\bar w-\\bar u\\|$ (directions)",
    }
    for ax, rs, scale in ((axes[0], runs, init_scale), (axes[1], bigs, large_scale)):
        for i, o in enumerate(rs):
            late = o["gaps"][o["gaps"].log10_t >= 0]
            for j, (key, label) in enumerate(labels.items()):
                ax.semilogy(
                    late.log10_t,
                    late[key],
                    color=f"C{j}",
                    lw=1,
                    label=label if i == 0 else None,
                )
        ax.axhline(threshold, color="k", ls=":", lw=1)
        ax.set(ylabel="gap to the limit", title=f"init scale {scale:g}", ylim=(1e-6, 3))
    axes[1].set(xlabel="$\\log_{10} t$")
    axes[0].legend(loc="lower left", fontsize=8)


def plot_min_overlay(axes, runs, bigs, init_scale, large_scale):
    """Min et al. on the overlay runs: the fraction in own cone or dead (left) and the
    stable rank (right) against ``log10 t``, with the first draw's ``log n/√μ``."""
    for rs, color, scale in ((runs, "C0", init_scale), (bigs, "C1", large_scale)):
        for i, o in enumerate(rs):
            lt = np.log10(np.maximum(o["run"].times, 1e-1))
            lab = f"scale {scale:g}" if i == 0 else None
            axes[0].plot(lt, o["early"]["in_cones"], "-", color=color, lw=1, label=lab)
            axes[1].plot(lt, o["ranks"], "-", color=color, lw=1, label=lab)
    check = np.log10(runs[0]["t_scale"])
    for ax, ylabel, title in (
        (axes[0], "in own cone or dead", "Min Thm 1 (i): alignment"),
        (axes[1], "stable rank", "Min Thm 1: stable rank"),
    ):
        ax.axvline(
            check, color="k", ls=":", lw=1, label="$\\log n/\\sqrt{\\mu}$ (first seed)"
        )
        ax.set(ylabel=ylabel, title=title, xlim=(-1, 4), xlabel="$\\log_{10} t$")
    axes[1].axhline(2, color="C3", ls="--", lw=1, label="bound 2")
    for ax in axes:
        ax.legend(loc="best", fontsize=8)
