"""Experiments of the Min, Mallada & Vidal chapter (``book/min2024``).

Each function trains the networks of one figure over seeds and settings through
:mod:`twolayer.flows` (the same calls, in the same order, as the pages made, so
the stored runs are reused and the numbers do not move) and returns what the
page measures of them, with the definitions of :mod:`twolayer.theory.min2024`.
Times are the paper's (:func:`~twolayer.theory.min2024.paper_time`): the book's
sum of ``log(1 + e^{-q})`` runs at half the speed of the paper's
``2 log(1 + e^{-q})`` (App. C).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from .. import data, flows, models, prose
from ..theory import min2024 as theory

#: The angles of Figs 7–9 (App. A.2–A.3): ``θ`` of the second point, ``None`` for
#: orthogonal points (``μ = sin θ``).
TWO_POINT_CASES = {"0.1": 0.1, "0.001": 0.001, "orthogonal": None}


# ------------------------------------------------------------------------------
# Figs 7–9: two points.


def two_points(
    seeds: Sequence[int],
    width: int,
    init_scale: float,
    lr: float,
    steps: int,
    snapshot_every: int,
    k_mid: int,
    cases: dict | None = None,
    init: str = "gaussian",
) -> dict[str, dict]:
    """Figs 7–9 (App. A.2–A.3): GD on both layers, sum loss, from an iid Gaussian
    init of std ``init_scale`` (the paper's; ``init="balanced"``: Thm 1's init (3)
    of scale ``init_scale``), on two positive points at each angle of ``cases``
    (default :data:`TWO_POINT_CASES`), every seed as one stacked tensor.

    Returns ``{case: theory.two_point_runs(...)}``: per-seed arrays (``in_plus`` of
    shape (seeds, snapshots), ``n_out``, ``settled``, ``settled_init``,
    ``entered``; ``k_mid`` the snapshot of the paper's middle iteration) and the
    first seed's snapshots.
    """
    cases = TWO_POINT_CASES if cases is None else cases
    every = range(0, steps + 1, snapshot_every)
    spec = dict(init=init, init_scale=init_scale)
    runs = {}
    for name, theta in cases.items():
        ds = data.two_point_set(theta)
        nets = [models.TwoLayerNet(2, width, seed=s, **spec) for s in seeds]
        kw = dict(lr=lr, steps=steps, reduction="sum", snapshot_steps=every)
        trajs = flows.gd_many(nets, ds, **kw)
        runs[name] = theory.two_point_runs(trajs, ds.X, ds.y, k_mid)
    return runs


def linear_settled(
    seeds: Sequence[int],
    width: int,
    init_scale: float,
    lr: float,
    steps: int,
    theta: float | None = None,
    init: str = "gaussian",
) -> np.ndarray:
    """Fig 9's rival: per seed, the linear two-layer network
    (:func:`~twolayer.theory.min2024.linear_gd`) from the same init as
    :func:`two_points` on the points at ``theta`` (orthogonal for None), GD at step
    ``lr`` for ``steps`` steps; the smallest
    :func:`~twolayer.theory.min2024.point_cosine` of its neurons with ``v_j > 0``.
    Every linear neuron moves along ``x1 + x2``, so it cannot settle on one point."""
    ds = data.two_point_set(theta)
    out = []
    for s in seeds:
        net = models.TwoLayerNet(2, width, seed=s, init=init, init_scale=init_scale)
        W0, v0 = net.weights()
        _, Ws, vs = theory.linear_gd(W0, v0, ds.X, ds.y, lr, steps, [steps])
        pos = vs[-1] > 0
        out.append(float(theory.point_cosine(Ws[-1][pos], ds.X).min()))
    return np.array(out)


# ------------------------------------------------------------------------------
# Figs 12–13: both layers against the first layer only.


def two_phases(
    ds: data.Dataset,
    seeds: Sequence[int],
    width: int,
    init_scale: float,
    lr: float,
    batch: int,
    epochs: int,
    epochs_first: int,
    early_epoch: int,
    snapshot_every: int,
) -> tuple[list, list]:
    """Figs 12–13 (App. A.5): SGD (batch ``batch``, step ``lr`` on the summed batch
    loss) from an iid Gaussian init of std ``init_scale`` (float32), with both
    layers trained and with the first layer only (``v_j = ±1`` fixed,
    :func:`~twolayer.theory.min2024.random_signs`), recording
    :func:`~twolayer.theory.min2024.norm_direction_changes` at every snapshot.

    The first seed runs ``epochs`` (both layers) and ``epochs_first`` (first layer
    only) epochs, the others to ``early_epoch``; snapshots every
    ``snapshot_every`` epochs and at epochs 1 and ``early_epoch``. Returns the
    trajectories ``(both, first)``, one per seed each.
    """
    spec = dict(init="gaussian", init_scale=init_scale, dtype=torch.float32)
    changes = theory.changes_callback(ds.X, ds.y)  # norm and direction rates
    sgd = dict(lr=lr, batch_size=batch, reduction="sum", callbacks={"changes": changes})
    per_epoch = -(-ds.n // batch)
    both, first = [], []
    for s in seeds:
        for runs, fixed, n_ep in ((both, False, epochs), (first, True, epochs_first)):
            n_ep = n_ep if s == seeds[0] else early_epoch  # the first seed runs on
            fix = dict(fixed_signs=theory.random_signs(width, s)) if fixed else {}
            net = models.TwoLayerNet(ds.d, width, seed=s, **spec, **fix)
            marks = np.r_[np.arange(0, n_ep + 1, snapshot_every), 1, early_epoch]
            snaps = np.unique(marks) * per_epoch
            runs.append(
                flows.sgd(net, ds, epochs=n_ep, seed=s, snapshot_steps=snaps, **sgd)
            )
    return both, first


# ------------------------------------------------------------------------------
# Fig 5 (and 10, 11): two MNIST digits.

_F32 = dict(dtype=torch.float32, init="gaussian")


@dataclass
class Fig5Runs:
    """Fig 5's GD runs: ``runs`` every seed to ``seed_steps`` (snapshots every 20
    iterations), and the first seed's whole run joined with its continuation
    (``it``, ``loss``, ``Ws``, ``vs``)."""

    runs: list
    it: np.ndarray
    loss: np.ndarray
    Ws: np.ndarray
    vs: np.ndarray


def fig5_runs(
    ds: data.Dataset,
    seeds: Sequence[int],
    width: int,
    init_scale: float,
    lr: float,
    seed_steps: int,
    iterations: int,
    n_snapshots: int,
) -> Fig5Runs:
    """Fig 5 (Thm 1 on MNIST): full-batch GD on both layers, sum loss, step ``lr``,
    from an iid Gaussian init of std ``init_scale`` (float32): every seed to
    ``seed_steps`` as one stacked tensor, then the first seed alone to
    ``iterations`` (``n_snapshots`` snapshots, 30% log-spaced)."""
    kw = dict(lr=lr, reduction="sum")
    nets = [
        models.TwoLayerNet(ds.d, width, init_scale=init_scale, seed=s, **_F32)
        for s in seeds
    ]
    every20 = range(0, seed_steps + 1, 20)  # every seed, as one stacked tensor
    runs = flows.gd_many(nets, ds, steps=seed_steps, snapshot_steps=every20, **kw)
    rest = max(iterations - seed_steps, 1)  # the first seed goes on alone
    marks = flows.snapshot_schedule(rest, n_snapshots, log_fraction=0.3)
    tail = flows.gd(nets[0], ds, steps=rest, snapshot_steps=marks, **kw)
    return Fig5Runs(runs, *theory.join_runs(runs[0], tail))


def fig5_large(
    ds: data.Dataset, seeds: Sequence[int], width: int, lr: float, steps: int
) -> list:
    """Fig 5's large-initialisation rival: ``W ~ N(0, 1/d)``, ``v ~ N(0, 1/h)``,
    the same GD (step ``lr``, sum loss, float32) for ``steps`` iterations,
    snapshots every 5, every seed as one stacked tensor."""
    big = dict(init_scale=ds.d**-0.5, second_layer_scale=(ds.d / width) ** 0.5, **_F32)
    big_nets = [models.TwoLayerNet(ds.d, width, seed=s, **big) for s in seeds]
    every5 = range(0, steps + 1, 5)
    kw = dict(lr=lr, reduction="sum")
    return flows.gd_many(big_nets, ds, steps=steps, snapshot_steps=every5, **kw)


def fig5_literal(
    ds: data.Dataset,
    width: int,
    init_scale: float,
    seed: int,
    lr_sum: float,
    steps: int,
) -> tuple[int, float] | str:
    """Fig 5's choice (ii), the literal reading: GD on the sum loss at the step
    ``lr_sum`` (``η·n`` = the paper's ``η·n_paper``) from the first seed's init,
    ``steps`` iterations. Returns :func:`~twolayer.theory.min2024.literal_step`
    (the iteration where the loss first halves, the mean positive neuron's
    ``cos(w̄+, x+)`` there), or the divergence message if GD diverges."""
    net = models.TwoLayerNet(ds.d, width, init_scale=init_scale, seed=seed, **_F32)
    marks = range(0, steps + 1, max(1, steps // 20))
    kw = dict(lr=lr_sum, steps=steps, reduction="sum", snapshot_steps=marks)
    try:
        return theory.literal_step(flows.gd(net, ds, **kw), ds.X, ds.y)
    except flows.DivergenceError as exc:
        return str(exc)


def literal_reading(result: tuple[int, float] | str, level: float) -> str:
    """The sentence Fig 5's page says of :func:`fig5_literal`'s ``result``: where
    the loss halves and whether the neurons were aligned (cosine ``>= level``)
    by then, or that GD diverges."""
    if isinstance(result, str):
        at = re.search(r"at step (\d+)", result)
        when = f"by iteration {at.group(1)}" if at else "within the run"
        return (
            f"GD diverges {when}: the loss overflows, so the literal step leaves the "
            "small-initialisation regime at once"
        )
    k, c = result
    text = f"the loss halves by iteration {k}, when the mean positive neuron's "
    text += f"cosine with x+ is {c:.3f}: "
    if c < level:
        return text + "the network fits the data before the neurons align"
    return text + (
        "aligning and fitting happen in the same few steps, with no separate "
        "alignment phase (the small-output regime lasts less than one step)"
    )


def drop_reading(it, track: theory.Track, t_half: float) -> str:
    """The sentence Fig 5's page says after the loss halving
    (:func:`~twolayer.theory.min2024.alignment_drop` of the mean neurons' cosines
    along the first seed's run ``track``, snapshots at iterations ``it``)."""
    cp, cm = track.cos("mean_plus"), track.cos("mean_minus")
    drops, end_p, end_m = theory.alignment_drop(it, cp, cm, t_half)
    at_end = f"{end_p:.3f} / {end_m:.3f} at iteration {np.asarray(it)[-1]}"
    if not drops:
        return f"the alignment stays (mean cosines {at_end})"
    return (
        f"the alignment *drops* (to {at_end}): as the paper conjectures for its 0/1 "
        "run, since Assumption 1 fails, neurons must also fit points for which x± "
        "is not the best direction"
    )


# ------------------------------------------------------------------------------
# Fig 6: the 2-D toy set, Lemma 1, the dead branch, the long flows.


@dataclass
class Lemma1Runs:
    """Lemma 1 on one toy set: the initial ``(W0, v0)``; the gradient flow (paper
    times ``t_gf``, snapshots ``Ws_gf``, ``vs_gf``, read-outs ``gf`` of
    :func:`~twolayer.theory.min2024.lemma1_along` at rebalanced states); GD at the
    paper's step (``t_gd``, ``Ws``, ``vs``, ``loss`` every step, read-outs ``gd``
    every 10th step)."""

    W0: np.ndarray
    v0: np.ndarray
    t_gf: np.ndarray
    Ws_gf: np.ndarray
    vs_gf: np.ndarray
    gf: dict
    t_gd: np.ndarray
    Ws: np.ndarray
    vs: np.ndarray
    loss: np.ndarray
    gd: dict


def lemma1_runs(
    ds: data.Dataset,
    width: int,
    init_scale: float,
    seed: int,
    t_flow: float,
    lr: float,
    steps: int,
) -> Lemma1Runs:
    """Fig 6 / Lemma 1 (App. C): from the balanced init (3) of scale
    ``init_scale``, gradient flow to paper time ``t_flow`` (201 even snapshots,
    rtol 1e-9), then GD at step ``lr`` for ``steps`` steps (every step kept), sum
    loss, and Lemma 1's error and Lemma 4's bound along both."""
    net = models.TwoLayerNet(
        2, width, init="balanced", init_scale=init_scale, seed=seed
    )
    W0, v0 = net.weights()
    t_book = float(theory.book_time(t_flow))  # the paper's t_flow on the book's clock
    grid = np.linspace(0, t_book, 201)
    kw = dict(snapshot_times=grid, reduction="sum", rtol=1e-9, atol=1e-12)
    gf = flows.gradient_flow(net, ds, t_book, **kw)
    Ws_gf, vs_gf = gf.param("W"), gf.param("a")
    lem_gf = theory.lemma1_along(Ws_gf, vs_gf, ds.X, ds.y, rebalance=True)
    every = range(steps + 1)
    run = flows.gd(net, ds, lr=lr, steps=steps, reduction="sum", snapshot_steps=every)
    Ws, vs = run.param("W"), run.param("a")
    lem_gd = theory.lemma1_along(Ws[::10], vs[::10], ds.X, ds.y)  # every 10th step
    return Lemma1Runs(
        W0,
        v0,
        theory.paper_time(gf.times),
        Ws_gf,
        vs_gf,
        lem_gf,
        theory.paper_time(run.times),
        Ws,
        vs,
        np.asarray(run.loss),
        lem_gd,
    )


def toy_cones(
    sets: Sequence[data.Dataset],
    seeds: Sequence[int],
    width: int,
    init_scale: float,
    rival_scale: float,
    lr: float,
    steps: int,
) -> tuple[list, list]:
    """Fig 6 / Thm 1 (i) over seeds: on each set (with its seed) GD at step ``lr``
    for ``steps`` steps (snapshots every 5, sum loss) from the balanced init of
    scale ``init_scale`` and of ``rival_scale``, the pair as one stacked tensor.
    Returns ``(cones, f0_rival)``: per seed ``[small, rival]``
    :class:`~twolayer.theory.min2024.ConeReport`, and the rival's largest output
    ``max_i |f(x_i)|`` at initialisation."""
    cones, f0_rival = [], []
    for s, d in zip(seeds, sets):
        spec = dict(init="balanced", seed=s)
        pair = [
            models.TwoLayerNet(2, width, init_scale=e, **spec)
            for e in (init_scale, rival_scale)
        ]
        inits = [p.weights() for p in pair]
        f0_rival.append(np.abs(models.two_layer_output(*inits[1], d.X)).max())
        every5 = range(0, steps + 1, 5)
        kw = dict(lr=lr, steps=steps, reduction="sum", snapshot_steps=every5)
        runs = flows.gd_many(pair, d, **kw)
        cones.append(
            [theory.run_cones(r, W, v, d.X, d.y) for r, (W, v) in zip(runs, inits)]
        )
    return cones, f0_rival


@dataclass
class DeadBranch:
    """Fig 6's dead branch on one run: the data ``ds``, paper times ``t``,
    snapshots ``Ws``, ``vs``, the cone record ``membership``, the
    :class:`~twolayer.theory.min2024.ConeReport` ``report``, the neurons active
    on no point of their own class at initialisation (``inactive``) and the dead
    neurons at ``t1`` that had been active on their class (``dead_own``)."""

    ds: data.Dataset
    t: np.ndarray
    Ws: np.ndarray
    vs: np.ndarray
    membership: np.ndarray
    report: theory.ConeReport
    inactive: int
    dead_own: int


def dead_branch(
    n: int,
    gap_angle: float,
    half_angle: float,
    width: int,
    init_scale: float,
    seed: int,
    lr: float,
    steps: int,
) -> DeadBranch:
    """Thm 1 (i)'s dead branch: two cones ``gap_angle`` apart (half-angle
    ``half_angle``, ``n`` points, ``data.two_cones``), GD at step ``lr`` for
    ``steps`` steps (every step kept, sum loss) from the balanced init of scale
    ``init_scale``."""
    gap = data.two_cones(n, gap_angle, half_angle, seed=seed)
    net = models.TwoLayerNet(
        2, width, init="balanced", init_scale=init_scale, seed=seed
    )
    W0, v0 = net.weights()
    kw = dict(lr=lr, steps=steps, reduction="sum", snapshot_steps=range(steps + 1))
    run = flows.gd(net, gap, **kw)
    Ws, vs = run.param("W"), run.param("a")
    report = theory.run_cones(run, W0, v0, gap.X, gap.y)
    membership = theory.membership_record(Ws, gap.X, gap.y)
    dead = membership[report.k1] == theory.S_DEAD
    own = theory.own_class_active(W0, np.sign(v0), gap.X, gap.y)
    t = theory.paper_time(run.times)
    inactive, dead_own = int((~own).sum()), int((own & dead).sum())
    return DeadBranch(gap, t, Ws, vs, membership, report, inactive, dead_own)


def long_flows(
    seeds: Sequence[int],
    n: int,
    d: int,
    half_angle: float,
    width: int,
    scales: dict[str, float],
    t_long: float,
) -> dict[str, list[dict]]:
    """Thm 1 (ii) along gradient flow to book time ``t_long`` (80 log-spaced
    snapshots from 1e-3, sum loss) on two opposite cones in ``d`` dimensions
    (``n`` points, a draw per seed), from the balanced init of each scale of
    ``scales``. Returns ``{name: [theory.long_flow_summary per seed]}`` (paper
    times), each with Thm 1 (ii)'s per-class excess ``excess``
    (:func:`~twolayer.theory.min2024.class_excess`) and the whole ``W``'s
    ``total_excess`` at ``t_long``."""
    longs = {name: [] for name in scales}
    for s in seeds:
        ds = data.opposite_cones(n, d, half_angle, seed=s)
        for name, eps in scales.items():
            net = models.TwoLayerNet(d, width, init="balanced", init_scale=eps, seed=s)
            kw = dict(n_snapshots=80, t_min=1e-3, reduction="sum")
            f = flows.gradient_flow(net, ds, t_long, **kw)
            t = theory.paper_time(f.times)
            W, v = f.param("W"), f.param("a")
            summary = theory.long_flow_summary(t, f.loss, W)
            summary["excess"] = theory.class_excess(W[-1], v[-1])  # at t_end
            summary["excess0"] = theory.class_excess(W[0], v[0])  # at init
            summary["total_excess"] = theory.total_excess(W[-1])
            longs[name].append(summary)
    return longs


def excess_slopes(
    longs: dict[str, list[dict]], scales: dict[str, float], eps_grid: Sequence[float]
) -> tuple[list[float], list[float]]:
    """Thm 1 (ii)'s ε-scaling from :func:`long_flows` run at every ε of
    ``eps_grid`` (each a value of ``scales``): per seed, the log-log slope
    (:func:`~twolayer.theory.min2024.loglog_slope`) of the per-class excess
    against ε, and the same slope of the whole ``W``'s excess."""
    names = {eps: name for name, eps in scales.items()}
    missing = [e for e in eps_grid if e not in names]
    if missing or len(eps_grid) < 2:
        raise ValueError(f"eps_grid needs >= 2 scales of the flows, missing {missing}")
    runs = [longs[names[e]] for e in eps_grid]
    per_seed = list(zip(*runs))  # per seed: its summary at every eps
    return (
        [theory.loglog_slope(eps_grid, [r["excess"] for r in rs]) for rs in per_seed],
        [
            theory.loglog_slope(eps_grid, [r["total_excess"] for r in rs])
            for rs in per_seed
        ],
    )


def relu_vs_linear(
    seeds: Sequence[int],
    n: int,
    gap_angle: float,
    half_angle: float,
    width: int,
    init_scale: float,
    lr: float,
    steps: int,
) -> pd.DataFrame:
    """Thm 1 (i)'s ReLU content where ``x+ ≠ −x−``: per seed, two 2-D cones
    ``gap_angle`` apart (``data.two_cones``, a draw per seed), GD at step ``lr``
    for ``steps`` steps (sum loss) of the ReLU network from the balanced init of
    scale ``init_scale`` and of the linear two-layer network from the same init
    (:func:`~twolayer.theory.min2024.linear_gd`). One row per seed: the
    :func:`~twolayer.theory.min2024.cone_overshoot` (degrees), the cosine of the
    mean positive neuron with ``x+``, the neurons in ``S_dead`` and the loss, of
    each network at the end; ``attrs["first"]`` the first seed's data ``X``,
    ``y`` and end states ``relu``, ``linear`` (each ``(W, v)``)."""
    rows = []
    for s in seeds:
        ds = data.two_cones(n, gap_angle, half_angle, seed=s)
        net = models.TwoLayerNet(
            2, width, init="balanced", init_scale=init_scale, seed=s
        )
        W0, v0 = net.weights()
        run = flows.gd(
            net, ds, lr=lr, steps=steps, reduction="sum", snapshot_steps=[0, steps]
        )
        _, Wl, vl = theory.linear_gd(W0, v0, ds.X, ds.y, lr, steps, [steps])
        row = dict(seed=s)
        ends = {
            "relu": (run.param("W")[-1], run.param("a")[-1]),
            "linear": (Wl[-1], vl[-1]),
        }
        for name, (W, v) in ends.items():
            row[f"{name}_overshoot"] = theory.cone_overshoot(W, v, ds.X, ds.y)
            row[f"{name}_cos_plus"] = theory.alignment(W, v, ds.X, ds.y).mean_plus
            row[f"{name}_dead"] = int(
                (theory.cone_membership(W, ds.X, ds.y) == theory.S_DEAD).sum()
            )
            row[f"{name}_loss"] = theory.logistic_loss(
                W, v, ds.X, ds.y, linear=name == "linear"
            )
        rows.append(row)
        if s == seeds[0]:  # the first seed's data and ends, for the figure
            first = dict(X=ds.X, y=ds.y, **ends)
    table = pd.DataFrame(rows)
    table.attrs["first"] = first
    return table


# ------------------------------------------------------------------------------
# Beyond the paper: t1 against mu and n, and the initialisation scale.


def entry_law_sweep(
    thetas: Sequence[float],
    seeds: Sequence[int],
    width: int,
    init_scale: float,
    lr: float,
    every: int,
) -> pd.DataFrame:
    """``t1`` against ``μ = sin θ`` (App. A.2's two points, eq. ``eq-min-enter`` of
    the sweep page): per angle, GD at step ``lr`` (sum loss, balanced init of
    scale ``init_scale``, snapshots every ``every`` steps) until the slowest
    neuron's entry time plus 1 (paper time), every seed as one stacked tensor.
    One row per (angle, seed): ``seed`` and
    :func:`~twolayer.theory.min2024.entry_law_row`."""
    rows = []
    for theta in thetas:
        ds = data.two_point_set(theta)
        t_need = theory.entry_time(np.pi / 2, theta) + 1.0  # the slowest neuron, + 1
        n_steps = int(np.ceil(theory.book_time(t_need) / lr))
        spec = dict(init="balanced", init_scale=init_scale)
        nets = [models.TwoLayerNet(2, width, seed=s, **spec) for s in seeds]
        inits = [net.weights() for net in nets]
        kw = dict(lr=lr, steps=n_steps, snapshot_steps=range(0, n_steps + 1, every))
        runs = flows.gd_many(nets, ds, reduction="sum", **kw)
        for s, (W0, v0), run in zip(seeds, inits, runs):
            t = theory.paper_time(run.times)
            row = theory.entry_law_row(theta, W0, v0, t, run.param("W"), ds.X, ds.y)
            rows.append(dict(seed=s, **row))
    return pd.DataFrame(rows)


def n_sweep(
    ns: Sequence[int],
    n_ref: int,
    half_angle: float,
    width: int,
    init_scale: float,
    lr: float,
    steps: int,
    seed: int,
) -> pd.DataFrame:
    """``t1`` against the data size (two opposite cones, one seed): GD (sum loss,
    balanced init) for the same flow time ``steps·lr``, with the step shrunk like
    ``n_ref/n`` above ``n_ref`` (snapshots every 5 steps at ``n_ref``). One row per
    ``n``: ``n``, ``mu``, ``t1`` and the eqs. 7–8 violations ``mono``
    (:func:`~twolayer.theory.min2024.alignment_escape`)."""
    rows = []
    for n in ns:
        ds = data.opposite_cones(n, 2, half_angle, seed=seed)
        shrink = max(1, n / n_ref)  # same flow time, a step small enough for the sum
        n_steps, ev = int(steps * shrink), int(5 * shrink)
        net = models.TwoLayerNet(
            2, width, init="balanced", init_scale=init_scale, seed=seed
        )
        kw = dict(
            lr=lr / shrink, steps=n_steps, snapshot_steps=range(0, n_steps + 1, ev)
        )
        run = flows.gd(net, ds, reduction="sum", **kw)
        t, W, v = theory.paper_time(run.times), run.param("W"), run.param("a")
        t1, _, mono = theory.alignment_escape(t, W, v, ds.X, ds.y)
        rows.append(dict(n=n, mu=theory.separability(ds.X, ds.y), t1=t1, mono=mono))
    return pd.DataFrame(rows)


def eps_sweep(
    eps_grid: Sequence[float],
    seeds: Sequence[int],
    n: int,
    half_angle: float,
    width: int,
    lr: float,
    steps: int,
) -> pd.DataFrame:
    """The initialisation scale against the alignment (Thm 1's ε hypothesis): per
    seed, two opposite cones (``n`` points, a draw per seed), GD at step ``lr`` for
    ``steps`` steps (sum loss, snapshots every 5) from the balanced init of every
    scale of ``eps_grid`` as one stacked tensor. One row per (seed, ε): ``t1``,
    the end ``t_esc`` of the alignment phase, ``mono``
    (:func:`~twolayer.theory.min2024.alignment_escape`), ``rate = max‖x±‖`` and
    ``t1 - t_esc`` (a ``t1`` never reached counts as the run's end)."""
    rows = []
    for s in seeds:
        d = data.opposite_cones(n, 2, half_angle, seed=s)
        spec = dict(init="balanced", seed=s)
        nets = [models.TwoLayerNet(2, width, init_scale=e, **spec) for e in eps_grid]
        kw = dict(lr=lr, steps=steps, snapshot_steps=range(0, steps + 1, 5))
        runs = flows.gd_many(nets, d, reduction="sum", **kw)
        rate = max(np.linalg.norm(x) for x in theory.aggregate_data(d.X, d.y))
        for e, run in zip(eps_grid, runs):
            t, W, v = theory.paper_time(run.times), run.param("W"), run.param("a")
            t1, t_esc, mono = theory.alignment_escape(t, W, v, d.X, d.y)
            rows.append(dict(seed=s, eps=e, t1=t1, t_esc=t_esc, mono=mono, rate=rate))
    table = pd.DataFrame(rows)
    t_end = float(theory.paper_time(steps * lr))
    table["t1 - t_esc"] = np.minimum(table.t1, t_end) - table.t_esc
    return table


# ------------------------------------------------------------------------------
# Fig 6's two loss drops (App. A.1), where they can occur: ||x+|| != ||x-||.


def unbalanced_cones(
    n_pos: int, n_neg: int, half_angle: float, seed: int
) -> data.Dataset:
    """Two opposite 2-D cones (``data.opposite_cones`` of the seed) with ``n_pos``
    positive and ``n_neg`` negative points, so ``‖x+‖ ≠ ‖x−‖`` (Assumption 1 holds
    as on the balanced set)."""
    full = data.opposite_cones(2 * max(n_pos, n_neg), 2, half_angle, seed=seed)
    pos, neg = np.flatnonzero(full.y > 0), np.flatnonzero(full.y < 0)
    if n_pos < 1 or n_neg < 1:
        raise ValueError(f"n_pos and n_neg must be >= 1, got {n_pos}, {n_neg}")
    keep = np.r_[pos[:n_pos], neg[:n_neg]]
    name = f"unbalanced-cones({n_pos}+/{n_neg}-, half_angle={half_angle:g})"
    return data.Dataset(full.X[keep], full.y[keep], name, full.provenance)


def two_drops(
    seeds: Sequence[int],
    counts: Sequence[int],
    half_angle: float,
    width: int,
    init_scale: float,
    lr: float,
    steps: int,
) -> pd.DataFrame:
    """Fig 6's "two sharp loss decreases" (App. A.1, after Boursier et al. 2022)
    where they can occur: per seed, :func:`unbalanced_cones` with ``counts =
    (n_pos, n_neg)``, GD at step ``lr`` for ``steps`` steps (sum loss, snapshots
    every 10) of the ReLU network from the balanced init of scale ``init_scale``
    and of the linear two-layer network from the same init. One row per seed:
    each class's loss-halving time (paper time) and the
    :func:`~twolayer.theory.min2024.drop_separation` of each network;
    ``attrs["first"]`` the first seed's paper times and per-class losses."""
    rows, marks = [], range(0, steps + 1, 10)
    for s in seeds:
        ds = unbalanced_cones(*counts, half_angle, s)
        net = models.TwoLayerNet(
            2, width, init="balanced", init_scale=init_scale, seed=s
        )
        W0, v0 = net.weights()
        run = flows.gd(
            net, ds, lr=lr, steps=steps, reduction="sum", snapshot_steps=marks
        )
        k, Wl, vl = theory.linear_gd(W0, v0, ds.X, ds.y, lr, steps, marks)
        paths = {
            "relu": (theory.paper_time(run.times), run.param("W"), run.param("a")),
            "linear": (theory.paper_time(k * lr), Wl, vl),
        }
        row = dict(seed=s)
        for name, (t, Ws, vs) in list(paths.items()):
            lin = name == "linear"
            losses = theory.class_losses(Ws, vs, ds.X, ds.y, linear=lin)
            tp, tm = theory.class_halving_times(t, losses)
            row |= {f"{name}_t_plus": tp, f"{name}_t_minus": tm}
            row[f"{name}_sep"] = theory.drop_separation(tp, tm, ds.X, ds.y)
            paths[name] = (t, losses)
        rows.append(row)
        if s == seeds[0]:
            first = paths
    table = pd.DataFrame(rows)
    table.attrs["first"] = first
    return table


# ------------------------------------------------------------------------------
# The clock of Figs 5, 10, 11 tested out of sample.


def escape_estimates(trajs, ds: data.Dataset, lr: float) -> np.ndarray:
    """Per run, the escape-time estimate ``ln(1/f0)/(2r)`` in iterations
    (:func:`~twolayer.theory.min2024.escape_iterations`) from the run's first
    snapshot (``f0 = max_i |f(x_i)|`` at initialisation) at step ``lr``."""
    xs = theory.aggregate_data(ds.X, ds.y)
    out = []
    for t in trajs:
        f0 = theory.max_output(t.param("W")[0], t.param("a")[0], ds.X)
        out.append(theory.escape_iterations(lr, *xs, f0))
    return np.array(out)


@dataclass
class Clock:
    """Fig 5's clock calibrated on one digit pair: the pair, the seeds, each
    seed's loss-halving iteration ``t_half`` and escape estimate ``t_esc``, and the
    calibrated factor ``factor`` = mean of ``t_half / t_esc``."""

    pair: tuple[int, int]
    seeds: list
    t_half: np.ndarray
    t_esc: np.ndarray

    @property
    def factor(self) -> float:
        return float(np.mean(self.t_half / self.t_esc))

    def predict(self, t_esc) -> np.ndarray:
        """The calibrated clock's halving iteration for escape estimates ``t_esc``."""
        return self.factor * np.asarray(t_esc, dtype=float)


def clock_calibration(
    pair: Sequence[int],
    seeds: Sequence[int],
    width: int,
    init_scale: float,
    lr_paper: float,
    steps: int,
) -> Clock:
    """Fig 5's clock on the digit pair ``pair`` (centred, the book's step
    :func:`~twolayer.theory.min2024.per_example_step`): the runs of
    :func:`fig5_runs` for ``seeds`` to ``steps`` iterations (every seed must
    halve its loss by then), their halving iterations and escape estimates."""
    ds = data.mnist_pair(*pair).centered()
    lr = theory.per_example_step(lr_paper, ds.n)
    nets = [
        models.TwoLayerNet(ds.d, width, init_scale=init_scale, seed=s, **_F32)
        for s in seeds
    ]
    every20 = range(0, steps + 1, 20)
    runs = flows.gd_many(
        nets, ds, lr=lr, steps=steps, snapshot_steps=every20, reduction="sum"
    )
    t_half = [theory.phase_summaries([r], ds.X, ds.y)[0].t_half for r in runs]
    return Clock(
        tuple(pair),
        list(seeds),
        np.array(t_half, float),
        escape_estimates(runs, ds, lr),
    )


def clock_errors(clock: Clock, t_half, t_esc) -> tuple[np.ndarray, np.ndarray]:
    """Per seed of another pair (its halving iterations ``t_half`` and escape
    estimates ``t_esc``): ``|ln(t_half / clock.predict(t_esc))|``, and the same
    for the calibration pair's mean halving carried over unchanged (the rival: a
    clock that ignores the pair's growth rate and initial output)."""
    t_half = np.asarray(t_half, dtype=float)
    err = np.abs(np.log(t_half / clock.predict(t_esc)))
    rival = np.abs(np.log(t_half / clock.t_half.mean()))
    return err, rival


def clock_reading(
    pair: Sequence[int], t_half, t_esc, clock: Clock | None = None
) -> str:
    """The sentences Fig 5's page says of its clock: on the calibration pair
    (``clock`` None) how the halving compares with the escape estimate; on another
    pair the calibrated prediction against the measured halving, and the
    calibration pair's halving carried over unchanged."""
    t_half, t_esc = np.asarray(t_half, float), np.asarray(t_esc, float)
    ratio = prose.span(t_half / t_esc, digits=3)
    if clock is None:
        return (
            f"On this pair, which calibrates the clock, the loss halves at "
            f"{ratio} times the escape estimate (seeds of this page); the pages of the "
            "paper's Figs. 10 and 11 test the calibrated clock on other digits."
        )
    err, rival = clock_errors(clock, t_half, t_esc)
    cal = "/".join(str(d) for d in clock.pair)
    seeds = prose.span(clock.seeds[0], clock.seeds[-1], digits=6)
    return (
        f"**The clock out of sample.** Calibrated on digits {cal} (seeds {seeds}: "
        f"halving at iterations {prose.span(clock.t_half, digits=4)}, "
        f"{clock.factor:.3f} times the escape estimate), the clock predicts this "
        f"pair's halving at iterations {prose.span(clock.predict(t_esc), digits=4)} "
        f"from this pair's escape estimates alone; the runs halve at "
        f"{prose.span(t_half, digits=4)}: |ln(measured/predicted)| at most "
        f"{err.max():.3f}. Carried over unchanged, the {cal} halving "
        f"({clock.t_half.mean():.0f}) misses by {prose.span(rival, digits=2)} in ln."
    )
