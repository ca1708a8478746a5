"""Experiments of the Sarussi, Brutzkus & Globerson chapter (``book/sarussi2021``).

Each function trains the networks of one figure or theorem over seeds and
settings through :mod:`twolayer.flows` (the same calls as the pages made, so the
stored runs are reused) and returns what the page measures of them, with the
definitions of :mod:`twolayer.theory.sarussi2021`.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from .. import data, flows, models
from ..theory import margins
from ..theory import sarussi2021 as theory

# ----------------------------------------------------------------- Figs 1, 3 (2-D)


def fig1_runs(
    ds: data.Dataset,
    k: int,
    alpha: float,
    init_scales: dict[str, float],
    lr: float,
    steps: int,
    grid: np.ndarray,
    seed: int,
) -> dict[str, dict]:
    """Fig 1 (§5, Thm 5.1): the fixed-second-layer net of width ``2k`` trained
    by full-batch GD (``steps`` steps of ``lr``) from each named init scale of
    ``init_scales`` (e.g. ``{"small": 1e-6, "large": 1.0}``), seed ``seed``.

    Returns
    -------
    dict
        Per name: the neurons ``P`` (w's), ``Q`` (u's), the ``init_scale`` and
        Theorem 5.1's measurements on ``grid``
        (:func:`~twolayer.theory.sarussi2021.regime_record`).
    """
    runs = {}
    for name, sc in init_scales.items():
        net = models.TwoLayerNet.fixed_second_layer(
            2, k, alpha, init_scale=sc, seed=seed
        )
        W = flows.gd(net, ds, lr=lr, steps=steps, n_snapshots=10).final["W"]
        rec = theory.regime_record(W, grid, alpha)
        P, Q = theory.split_neurons(W)
        runs[name] = dict(P=P, Q=Q, init_scale=sc, **rec)
    return runs


def init_scale_sweep(
    ds: data.Dataset,
    k: int,
    alpha: float,
    init_scales: list[float],
    seeds: list[int] | range,
    lr: float,
    steps: int,
    grid: np.ndarray,
) -> pd.DataFrame:
    """Fig 1's contrast and init-scale sweep (§5): the fixed-second-layer net of
    width ``2k`` trained by full-batch GD from every init scale (ascending) and
    seed, all runs stepped at once (:func:`twolayer.flows.gd_many`).

    Returns
    -------
    pandas.DataFrame
        One row per (scale, seed): ``init_scale``, ``seed``, the neurons ``P``,
        ``Q``, the final ``loss`` and the boundary measurements on ``grid``
        (``departure``, ``outside``, ``ratio``:
        :func:`~twolayer.theory.sarussi2021.boundary_record`).
    """
    cases = list(itertools.product(sorted(init_scales), seeds))
    nets = [
        models.TwoLayerNet.fixed_second_layer(2, k, alpha, init_scale=sc, seed=s)
        for sc, s in cases
    ]
    trajs = flows.gd_many(nets, ds, lr=lr, steps=steps, n_snapshots=2)
    rows = []
    for (sc, s), t in zip(cases, trajs):
        P, Q = theory.split_neurons(t.final["W"])
        rec = theory.boundary_record(P, Q, grid, alpha)
        rows.append(
            dict(init_scale=sc, seed=s, P=P, Q=Q, loss=float(t.loss[-1]), **rec)
        )
    return pd.DataFrame(rows)


def sweep_bands(sweep: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """The smallest, median and largest ``outside``, ``departure`` and ``ratio``
    per init scale of an :func:`init_scale_sweep` table (Fig 1's sweep)."""
    stats = sweep.groupby("init_scale")[["outside", "departure", "ratio"]]
    return stats.min(), stats.median(), stats.max()


def sweep_summary(sweep: pd.DataFrame, linear_tol: float = 0.01) -> dict[str, float]:
    """The numbers Fig 1's contrast and sweep quote, from an
    :func:`init_scale_sweep` table: the ``small_scale`` and ``large_scale``;
    the departure from the best line of the worst small-init seed
    (``small_worst``) and the least and largest over the large-init seeds
    (``large_least``, ``large_max``); the largest final
    ``loss``; the fraction outside Thm 5.1's regime on the worst small-init seed
    (``out_small``) and the least large-init one (``out_large``); ``mid_scale``,
    the first scale whose median ratio ``R/‖w̄−ū‖`` exceeds 1/2 (nan: none), and
    its median ``out_mid``; ``linear_until``, the largest scale whose every seed
    departs by at most ``linear_tol`` (nan: none); the median departure at the
    largest scale ``dep_large``."""
    small_scale, large_scale = sweep.init_scale.min(), sweep.init_scale.max()
    small = sweep[sweep.init_scale == small_scale]
    large = sweep[sweep.init_scale == large_scale]
    lo, med, hi = sweep_bands(sweep)
    uncertified = med.index[med.ratio > 0.5]
    mid_scale = float(uncertified.min()) if len(uncertified) else float("nan")
    straight = hi.index[hi.departure <= linear_tol]
    return dict(
        small_scale=float(small_scale),
        large_scale=float(large_scale),
        small_worst=float(small.departure.max()),
        large_least=float(large.departure.min()),
        large_max=float(large.departure.max()),
        loss=float(sweep.loss.max()),
        out_small=float(small.outside.max()),
        out_large=float(large.outside.min()),
        mid_scale=mid_scale,
        out_mid=float(med.outside.get(mid_scale, float("nan"))),
        linear_until=float(straight.max()) if len(straight) else float("nan"),
        dep_large=float(med.departure.iloc[-1]),
    )


def fig3_runs(
    ds: data.Dataset,
    k: int,
    alpha: float,
    init_scale: float,
    seeds: list[int] | range,
    lr: float,
    steps: int,
    grid: np.ndarray,
) -> dict:
    """Fig 3 (§5): the fixed-second-layer net trained by full-batch GD from
    ``init_scale`` and every seed (stepped at once), and how far its function
    ``N`` is from linear on ``grid``.

    Returns
    -------
    dict
        ``ends``: the neurons ``(P, Q)`` of every seed; ``record``: Theorem 5.1's
        measurements of the first seed on ``grid``
        (:func:`~twolayer.theory.sarussi2021.regime_record`); ``beta``: the
        least-squares linear fit of the first seed's ``N`` on ``grid``;
        ``residuals``: per seed, the relative residual of that fit
        (:func:`~twolayer.theory.sarussi2021.linear_fit_residual`); ``linear``:
        the same residual for the same weights with slope 1 (``N`` linear, the
        rival), rounded to 1e-9.
    """
    nets = [
        models.TwoLayerNet.fixed_second_layer(
            2, k, alpha, init_scale=init_scale, seed=s
        )
        for s in seeds
    ]
    trajs = flows.gd_many(nets, ds, lr=lr, steps=steps, n_snapshots=2)
    ends = [theory.split_neurons(t.final["W"]) for t in trajs]
    first = theory.network_output(*ends[0], grid, alpha)
    residuals = [
        theory.linear_fit_residual(grid, theory.network_output(P, Q, grid, alpha))
        for P, Q in ends
    ]
    linear = [
        theory.linear_fit_residual(grid, grid @ (P.sum(0) - Q.sum(0))) for P, Q in ends
    ]
    return dict(
        ends=ends,
        record=theory.regime_record(trajs[0].final["W"], grid, alpha),
        beta=np.linalg.lstsq(grid, first, rcond=None)[0],
        residuals=np.array(residuals),
        linear=np.array(linear).round(9),
    )


# ----------------------------------------------------------------- Figs 7-9 (§6)


def fig7_8_flows(
    ds: data.Dataset,
    k: int,
    alpha: float,
    init_scale: float,
    seeds: list[int] | range,
    t_max: float,
    grid: np.ndarray,
    margin: float = 0.0,
) -> tuple[list[pd.DataFrame], pd.DataFrame]:
    """Figs 7–8 (App. D.3, App. I; Thm 6.1, Lemma 6.1): gradient flow of the
    fixed-second-layer net of width ``2k`` from ``init_scale`` and every seed, to
    ``t_max`` (:func:`twolayer.flows.gradient_flow`, snapshots at the flow times
    ``grid``), measured along the way.

    Returns
    -------
    histories : list of pandas.DataFrame
        Per seed, the §6 measures at every snapshot
        (:func:`~twolayer.theory.sarussi2021.regime_history`, votes at relative
        margin ``margin``).
    table : pandas.DataFrame
        One row per seed: :func:`~twolayer.theory.sarussi2021.par_run` of its
        history and ``ratio_entry``, the clustering ratio ``R/‖w̄−ū‖`` at the
        PAR entrance (row ``entry``).
    """
    histories, rows = [], []
    for s in seeds:
        net = models.TwoLayerNet.fixed_second_layer(
            ds.d, k, alpha, init_scale=init_scale, seed=s
        )
        traj = flows.gradient_flow(net, ds, t_max=t_max, snapshot_times=grid)
        W = [snap["W"] for snap in traj.snapshots]
        h = pd.DataFrame(theory.regime_history(W, grid, ds.X, ds.y, alpha, margin))
        summary = theory.par_run(h.to_dict("records"))
        histories.append(h)
        rows.append(dict(summary, ratio_entry=float(h.ratio[summary["entry"]])))
    return histories, pd.DataFrame(rows)


def outlier_data(
    n: int, mean: float, outlier, seed: int
) -> tuple[data.Dataset, data.Dataset]:
    """App. J's construction (Fig 9): ``n`` 2-D antipodal Gaussians (mean
    ``mean·e_1``, :func:`twolayer.data.antipodal_gaussians`) and the same set
    with the positive ``outlier`` appended (label +1, last row). Raises
    :class:`~twolayer.theory.margins.NotSeparableError` if the outlier breaks
    linear separability through the origin."""
    xo = np.asarray(outlier, dtype=float)
    if xo.shape != (2,):
        raise ValueError(f"outlier must be a 2-D point, got shape {xo.shape}")
    base = data.antipodal_gaussians(n, 2, mean=mean, std=1.0, seed=seed)
    out = data.Dataset(
        np.vstack([base.X, xo]),
        np.r_[base.y, 1.0],
        "antipodal Gaussians + outlier",
        base.provenance + f"; positive outlier at {xo.tolist()}",
    )
    margins.max_margin(out.X, out.y)
    return base, out


DRAW_STRIDE = 1_000_000  # seed offset between the attempts of one data draw


def separable_outlier_data(
    n: int, mean: float, outlier, seed: int, tries: int = 20
) -> tuple[data.Dataset, data.Dataset]:
    """:func:`outlier_data` of the first draw ``seed + j·DRAW_STRIDE`` (j = 0, 1,
    ...) that is linearly separable through the origin with the outlier: App. J's
    setting assumes separable data (Thm 4.1), and about one Gaussian draw in ten
    puts a negative point on the outlier's side. A rule on the data alone,
    applied before any training; distinct seeds never share a draw."""
    for j in range(int(tries)):
        try:
            return outlier_data(n, mean, outlier, int(seed) + j * DRAW_STRIDE)
        except margins.NotSeparableError:
            continue
    raise margins.NotSeparableError(
        f"no separable draw with the outlier in {tries} attempts from seed {seed}"
    )


def _agreement_runs(ds, outlier, cases, lr, steps, n_snapshots, k, alpha, margin):
    """Full-batch GD of the fixed-second-layer nets ``cases = [(init_scale,
    seed), ...]`` on ``ds``, stepped at once, ``n_snapshots`` log-spaced
    snapshots after the initial one; per run its history (DataFrame), its
    weights and its :func:`~twolayer.theory.sarussi2021.agreement_run`."""
    nets = [
        models.TwoLayerNet.fixed_second_layer(ds.d, k, alpha, init_scale=sc, seed=s)
        for sc, s in cases
    ]
    marks = np.r_[0, np.geomspace(1, steps, n_snapshots)].astype(int)
    trajs = flows.gd_many(nets, ds, lr=lr, steps=steps, snapshot_steps=marks)
    runs = []
    for tr in trajs:
        W = [snap["W"] for snap in tr.snapshots]
        h = theory.regime_history(W, tr.steps, ds.X, ds.y, alpha, margin)
        runs.append((pd.DataFrame(h), W, theory.agreement_run(h, W[0], W[-1], outlier)))
    return runs


def _fig9_outcomes(table: pd.DataFrame) -> pd.DataFrame:
    """The yes/no (1/0) outcomes of Fig 9 from the
    :func:`~twolayer.theory.sarussi2021.agreement_run` columns of ``table``."""
    table["passes_nar_not_par"] = (table.nar_not_par_snaps >= 1).astype(int)
    table["never_nar_not_par"] = (table.nar_not_par_snaps == 0).astype(int)
    table["w_split"] = (table.split_w_fit >= 1).astype(int)
    table["off_par_end"] = (table.w_off_par >= 1).astype(int)
    table["not_nar_end"] = (~table.in_nar).astype(int)
    return table


def fig9_runs(
    base: data.Dataset,
    out: data.Dataset,
    init_scales: dict[str, float],
    seeds: list[int] | range,
    lrs: list[float],
    k: int,
    alpha: float,
    steps: int,
    n_snapshots: int,
    margin: float = 0.0,
) -> tuple[pd.DataFrame, dict]:
    """Fig 9 (App. J): GD (``steps`` steps, ``n_snapshots`` log-spaced
    snapshots) of the fixed-second-layer net of width ``2k`` from every named
    init scale of ``init_scales`` and seed, at every step of ``lrs``, on the
    set with the outlier ``out`` and on the same set without it ``base``
    (:func:`outlier_data`; the outlier is ``out``'s last point). Votes at
    relative margin ``margin``.

    Returns
    -------
    table : pandas.DataFrame
        One row per run: ``lr``, ``init`` (the name), ``outlier`` (bool),
        ``seed``, :func:`~twolayer.theory.sarussi2021.agreement_run`, and the
        yes/no (1/0) outcomes of Fig 9: ``passes_nar_not_par`` (some snapshot
        in an NAR, not the PAR, at 100% training accuracy), ``never_nar_not_par``
        (none), ``w_split`` (two w-neurons disagree at every fitted snapshot),
        ``off_par_end`` (a w-neuron outside the PAR at the end), ``not_nar_end``
        (the end state is not in an NAR).
    hists : dict
        ``(lr, init, outlier, seed)`` → (history DataFrame
        (:func:`~twolayer.theory.sarussi2021.regime_history`), weights ``W``
        at every snapshot).
    """
    outlier = out.X[-1]
    rows, hists = [], {}
    for lr, (with_xo, ds) in itertools.product(lrs, ((True, out), (False, base))):
        cases = list(itertools.product(init_scales, seeds))
        scaled = [(init_scales[name], s) for name, s in cases]
        runs = _agreement_runs(
            ds, outlier, scaled, lr, steps, n_snapshots, k, alpha, margin
        )
        for (name, s), (h, W, summary) in zip(cases, runs):
            hists[(lr, name, with_xo, s)] = (h, W)
            rows.append(dict(lr=lr, init=name, outlier=with_xo, seed=s, **summary))
    table = _fig9_outcomes(pd.DataFrame(rows))
    return table, hists


def fig9_all_in_par(
    out: data.Dataset,
    lrs: list[float],
    init_scale: float,
    seeds: list[int] | range,
    k: int,
    alpha: float,
    steps: int,
    n_snapshots: int,
    margin: float = 0.0,
) -> dict[float, np.ndarray]:
    """Fig 9d's end state as a frequency (App. J): the runs of :func:`fig9_runs`
    on the set with the outlier from one init scale, at every step of ``lrs``,
    over ``seeds``. Per step, one bool per seed: every w-neuron is in the PAR
    (Def. 6.3) at the end."""
    cases = [(init_scale, s) for s in seeds]
    return {
        lr: np.array(
            [
                summary["w_off_par"] == 0
                for _, _, summary in _agreement_runs(
                    out, out.X[-1], cases, lr, steps, n_snapshots, k, alpha, margin
                )
            ]
        )
        for lr in lrs
    }


def fig9_draws(
    n: int,
    mean: float,
    outlier,
    seeds: list[int] | range,
    settings: list[tuple[str, float, float, bool]],
    k: int,
    alpha: float,
    steps: int,
    n_snapshots: int,
    margin: float = 0.0,
) -> tuple[pd.DataFrame, dict, dict]:
    """Fig 9 (App. J) over data draws: for every seed ``s`` the data draw ``s``
    (:func:`outlier_data` with ``n``, ``mean``, ``outlier``) and the init seed
    ``s``, every setting ``(init name, init scale, step, rival)`` of
    ``settings`` run by full-batch GD for ``steps`` steps (``n_snapshots``
    log-spaced snapshots) on the set with the outlier and, if ``rival``, on the
    same draw without it (all runs stepped at once,
    :func:`~twolayer.theory.sarussi2021.gd_batch`). Votes at relative margin
    ``margin``.

    Returns
    -------
    table : pandas.DataFrame
        One row per run as :func:`fig9_runs` (``lr``, ``init``, ``outlier``,
        ``seed``, the :func:`~twolayer.theory.sarussi2021.agreement_run` summary
        and the yes/no outcomes), plus ``end_picture`` (the end state is the
        paper's Fig 9 picture: an NAR, not the PAR, at 100% training accuracy),
        ``u_kink`` (a u-neuron ends within ``margin`` of the outlier's kink,
        ``|cos(u_i, x_o)| < margin``) and ``w_split_end`` (two w-neurons
        disagree on a point at the end).
    hists : dict
        ``(lr, init, outlier, seed)`` → (history DataFrame, weights at every
        snapshot), as :func:`fig9_runs`.
    draws : dict
        ``seed`` → ``(base, out)``, the data of that draw.
    """
    draws = {s: separable_outlier_data(n, mean, outlier, s) for s in seeds}
    cases = [
        (s, name, scale, lr, with_xo)
        for s in seeds
        for name, scale, lr, rival in settings
        for with_xo in ((True, False) if rival else (True,))
    ]
    size = max(len(out.X) for _, out in draws.values())
    X = np.zeros((len(cases), size, 2))
    y = np.ones((len(cases), size))
    mask = np.zeros((len(cases), size), bool)
    W0 = []
    for r, (s, name, scale, lr, with_xo) in enumerate(cases):
        ds = draws[s][0 if not with_xo else 1]
        X[r, : ds.n], y[r, : ds.n], mask[r, : ds.n] = ds.X, ds.y, True
        net = models.TwoLayerNet.fixed_second_layer(
            2, k, alpha, init_scale=scale, seed=s
        )
        W0.append(np.asarray(net.weights()[0], dtype=float))
    marks = np.unique(np.r_[0, np.geomspace(1, steps, n_snapshots)].astype(int))
    lrs = [c[3] for c in cases]
    snaps = theory.gd_batch(np.stack(W0), X, y, alpha, lrs, steps, marks, mask=mask)
    rows, hists = [], {}
    for r, (s, name, scale, lr, with_xo) in enumerate(cases):
        ds, xo = draws[s][0 if not with_xo else 1], draws[s][1].X[-1]
        W = [snap[r] for snap in snaps]
        h = pd.DataFrame(theory.regime_history(W, marks, ds.X, ds.y, alpha, margin))
        hists[(lr, name, with_xo, s)] = (h, W)
        summary = theory.agreement_run(h.to_dict("records"), W[0], W[-1], xo)
        last = h.iloc[-1]
        rows.append(
            dict(
                lr=lr,
                init=name,
                outlier=with_xo,
                seed=s,
                **summary,
                end_picture=int(
                    bool(last.in_nar) and not last.in_par and last.accuracy == 1.0
                ),
                u_kink=int(summary["cos_u"] < margin),
                w_split_end=int(last.disagree_w >= 1),
            )
        )
    table = _fig9_outcomes(pd.DataFrame(rows))
    return table, hists, draws


# ----------------------------------------------------------------- Thm 5.1: MNIST


RUN_KEYS = ["pair", "setting", "init", "seed"]


def mnist_runs(
    pairs: list,
    schedules: list,
    inits: list,
    k: int,
    alpha: float,
    margin: float,
    t_mid: float,
    settings=("centred", "uncentred"),
    dtype: str = "float32",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figs 2 and 6 (Thm 5.1, App. D.2): the networks ``inits`` ``[(label,
    init_scale, seed), ...]`` trained on every MNIST pair of ``pairs`` through
    its plan of ``schedules`` (:func:`~twolayer.theory.sarussi2021.mnist_schedule`)
    in every input setting of ``settings``
    (:func:`~twolayer.theory.sarussi2021.mnist_pair_rows`, votes at relative
    margin ``margin``, weights of ``dtype``). Raises if a run's loss is not
    finite or rises between snapshots by more than 1e-3 of its value (the step
    is too large).

    Returns
    -------
    rows : pandas.DataFrame
        One row per snapshot of every run
        (:func:`~twolayer.theory.sarussi2021.run_rows`, tagged with
        :data:`RUN_KEYS`).
    runs : pandas.DataFrame
        One row per run (pair, then setting, then ``inits`` order): its
        :data:`RUN_KEYS` and stated horizons
        (:func:`~twolayer.theory.sarussi2021.run_horizons` with ``t_mid``).
    """
    if len(pairs) != len(schedules):
        raise ValueError(f"need one schedule per pair, got {len(schedules)}")
    rows = []
    for (pair, plan), setting in itertools.product(zip(pairs, schedules), settings):
        rows += theory.mnist_pair_rows(
            pair, setting, inits, plan, k, alpha, margin, dtype
        )
    df = pd.DataFrame(rows)
    rising = df.groupby(RUN_KEYS).loss.apply(
        lambda v: (np.diff(v) > 1e-3 * v.to_numpy()[:-1]).any()
    )
    if df.loss.isna().any() or rising.any():
        raise RuntimeError("the loss rose: lower rel_step")
    runs = [
        dict(zip(RUN_KEYS, key), **theory.run_horizons(run, t_mid))
        for key, run in df.groupby(RUN_KEYS, sort=False)
    ]
    return df, pd.DataFrame(runs)


def read_at(rows: pd.DataFrame, column: str, times) -> np.ndarray:
    """Per seed of ``rows`` (the snapshots of one pair, setting and init of
    :func:`mnist_runs`, ascending seeds), ``column`` read at the flow time
    ``times[seed]`` (:func:`~twolayer.theory.sarussi2021.value_at`): a rival
    measured at the horizon another init reached (Fig 7 on MNIST)."""
    return np.array(
        [
            theory.value_at(g.t.to_numpy(), g[column], times[s])
            for s, g in rows.groupby("seed")
        ]
    )


# ----------------------------------------------------------------- Thm 5.1: stored runs

# The one resolved small-init start of every MNIST run (Figs 2 and 6): one Euler
# step of t_start (a thousandth of the init scale 1e-6), steps growing as
# rel_start * t up to lr_early (at t = 0.2), lr_early up to t_early, then
# rel_step * t; float64. "halved": every step halved (the resolution check).
MNIST_PLANS = {
    "resolved": dict(
        lr_early=0.002,
        t_early=5.0,
        n_early_snapshots=45,
        rel_step=0.002,
        stages=20,
        t_start=1e-9,
        rel_start=0.01,
    ),
    "halved": dict(
        lr_early=0.001,
        t_early=5.0,
        n_early_snapshots=45,
        rel_step=0.001,
        stages=20,
        t_start=5e-10,
        rel_start=0.005,
    ),
}
MNIST_NET = dict(k=5, alpha=0.2, margin=0.01, dtype="float64")
MNIST_STORE = (
    Path(__file__).resolve().parents[3]
    / "data"
    / "sweeps"
    / "sarussi2021_mnist_resolved.parquet"
)


def mnist_plan(plan: str, ends) -> list:
    """The :func:`~twolayer.theory.sarussi2021.mnist_schedule` of the named
    ``plan`` of :data:`MNIST_PLANS` with the horizons ``ends`` (flow times)."""
    if plan not in MNIST_PLANS:
        raise ValueError(f"plan must be one of {sorted(MNIST_PLANS)}, got {plan!r}")
    p = dict(MNIST_PLANS[plan])
    stages = p.pop("stages")
    head = [p.pop(n) for n in ("lr_early", "t_early", "n_early_snapshots", "rel_step")]
    return theory.mnist_schedule(*head, [float(e) for e in ends], stages, **p)


def mnist_code_key() -> str:
    """What the stored MNIST runs were computed with (12 hex digits): the flow
    files (:data:`twolayer.codekey.FLOW_CODE`), the code
    :func:`~twolayer.theory.sarussi2021.mnist_pair_rows` and :func:`mnist_plan`
    call (:func:`twolayer.codekey.source_closure`), the plans and the network
    (:data:`MNIST_PLANS`, :data:`MNIST_NET`) and the data's
    :func:`~twolayer.data.fingerprint`."""
    import hashlib

    from ..codekey import FLOW_CODE, canonical, source_closure

    lib = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in FLOW_CODE:
        h.update(canonical((lib / rel).read_text()))
    h.update(repr(source_closure([theory.mnist_pair_rows, mnist_plan])).encode())
    h.update(
        repr(sorted((k, sorted(v.items())) for k, v in MNIST_PLANS.items())).encode()
    )
    h.update(repr(sorted(MNIST_NET.items())).encode())
    h.update(data.fingerprint().encode())
    return h.hexdigest()[:12]


def _mnist_compute(pair, setting, inits, plan, end) -> pd.DataFrame:
    rows = theory.mnist_pair_rows(
        pair, setting, inits, mnist_plan(plan, _ends(end)), **MNIST_NET
    )
    frame = pd.DataFrame(rows)
    scale_of = {(label, seed): scale for label, scale, seed in inits}
    frame["init_scale"] = [scale_of[key] for key in zip(frame.init, frame.seed)]
    frame["plan"], frame["end"] = plan, float(end)
    return frame


def _ends(end: float) -> list[float]:
    """The horizons of a run to ``end``: t = 150 (a stated horizon), then ``end``."""
    return [150.0] if end <= 150.0 else [150.0, float(end)]


def mnist_stored(pairs, ends, settings, inits, plan: str = "resolved", store=None):
    """The MNIST runs of Figs 2 and 6 from the resolved start (:func:`mnist_plan`):
    every pair of ``pairs`` to its horizon of ``ends``, in every input setting of
    ``settings``, for the networks ``inits`` ``[(label, init_scale, seed), ...]``.
    Read from the store (:data:`MNIST_STORE`, computed by ``python -m
    twolayer.experiments.sarussi2021``) where it holds them at the current
    :func:`mnist_code_key`; the others are computed here (slow: minutes per pair
    and setting) and not stored.

    Returns the snapshot rows (as :func:`mnist_runs`' ``rows``) and the number of
    (pair, setting) groups that had to be computed."""
    path = Path(store or MNIST_STORE)
    have = pd.read_parquet(path) if path.exists() else pd.DataFrame()
    key = mnist_code_key()
    if len(have):
        have = have[(have.code_key == key) & (have.plan == plan)]
    frames, computed = [], 0
    for (pair, end), setting in itertools.product(zip(pairs, ends), settings):
        name = f"{pair[0]} vs {pair[1]}"
        got, missing = [], []
        for init in inits:
            label, scale, seed = init
            sel = (
                have[
                    (have.pair == name)
                    & (have.setting == setting)
                    & (have.end == float(end))
                    & (have.init_scale == float(scale))
                    & (have.seed == int(seed))
                ]
                if len(have)
                else have
            )
            if len(sel):
                got.append(sel.assign(init=label))
            else:
                missing.append(init)
        if missing:
            computed += 1
            got.append(_mnist_compute(pair, setting, missing, plan, end))
        frames.append(pd.concat(got, ignore_index=True))
    rows = pd.concat(frames, ignore_index=True)
    rows = rows.drop(columns=["code_key"], errors="ignore")
    order = {(lab, s): i for i, (lab, _, s) in enumerate(inits)}
    rows["_o"] = [order[(lab, s)] for lab, s in zip(rows.init, rows.seed)]
    rows = rows.sort_values(["_o", "t"], kind="stable").drop(columns="_o")
    rows = pd.concat(
        [g for (_, _), g in rows.groupby(["pair", "setting"], sort=False)],
        ignore_index=True,
    )
    return rows, computed


def mnist_horizons(rows: pd.DataFrame, t_mid: float) -> pd.DataFrame:
    """One row per run of :func:`mnist_stored`'s ``rows``: its :data:`RUN_KEYS`
    and stated horizons (:func:`~twolayer.theory.sarussi2021.run_horizons`).
    Raises if a run's loss is not finite or rises between snapshots by more than
    1e-3 of its value (the step is too large)."""
    rising = rows.groupby(RUN_KEYS).loss.apply(
        lambda v: (np.diff(v) > 1e-3 * v.to_numpy()[:-1]).any()
    )
    if rows.loss.isna().any() or rising.any():
        raise RuntimeError("the loss rose: the steps are too large")
    return pd.DataFrame(
        [
            dict(zip(RUN_KEYS, key), **theory.run_horizons(run, t_mid))
            for key, run in rows.groupby(RUN_KEYS, sort=False)
        ]
    )


def mnist_resolution(
    combos, seeds, init_scale: float, t_mid: float, ends: dict
) -> pd.DataFrame:
    """The resolution check of the MNIST start: for each ``(pair, setting)`` of
    ``combos`` and each of ``seeds`` (init scale ``init_scale``), the
    :func:`mnist_stored` runs of the ``"resolved"`` plan (to ``ends[pair]``)
    and of the ``"halved"`` plan (every step halved, to ``t_mid``) read at the
    same horizons: the smallest training fraction outside the regime up to the
    fit (``entered``), the larger of the train and test fractions at ``t_mid``
    (``outside``) and the first 100% training accuracy (``t_fit``), one row per
    run and plan."""
    out = []
    for plan in ("resolved", "halved"):
        for pair, setting in combos:
            end = ends[tuple(pair)] if plan == "resolved" else t_mid
            inits = [("small", init_scale, s) for s in seeds]
            rows, _ = mnist_stored([pair], [end], [setting], inits, plan=plan)
            for _, r in mnist_horizons(rows, t_mid).iterrows():
                out.append(
                    dict(
                        plan=plan,
                        pair=r.pair,
                        setting=r.setting,
                        seed=r.seed,
                        entered=r.entered,
                        outside=max(r["outside@mid"], r["outside_test@mid"]),
                        t_fit=r.t_fit,
                    )
                )
    return pd.DataFrame(out)


def mnist_table(
    small: pd.DataFrame, end_of: dict, tolerance: float, t_mid: float
) -> pd.DataFrame:
    """The table of the MNIST page: per pair and setting of ``small`` (the
    small-init rows of :func:`mnist_horizons`, indexed by pair, setting and
    seed, with ``outside@end``), the range over the seeds of the first 100%
    training accuracy, and the worst seed's fractions outside the regime: the
    smallest before the fit (train), at the fit (train), at ``t_mid`` and at
    the end of the run ``end_of[pair]`` (the larger of train and test), and
    whether that last one is within ``tolerance`` on every seed."""
    from ..prose import count, number, span

    rows = []
    for (pair, setting), g in small.groupby(level=["pair", "setting"], sort=False):
        mid = np.maximum(g["outside@mid"], g["outside_test@mid"])
        fitted = np.isfinite(g.t_fit)
        fit = span(g.t_fit) if fitted.all() else f"{count(fitted.sum(), len(g))} fit"
        rows.append(
            {
                "pair": pair,
                "inputs": setting,
                "first fit (t)": fit,
                "lowest before fit": number(g.entered.max()),
                "at fit": number(g["outside@fit"].max()),
                f"at t = {number(t_mid)}": number(mid.max()),
                "at the end": number(g["outside@end"].max()),
                "end (t)": number(end_of[pair]),
                "zero at the end": "yes"
                if (g["outside@end"] <= tolerance).all()
                else "no",
            }
        )
    return pd.DataFrame(rows)


def mnist_store(jobs, store=None, scratch: Path | None = None) -> pd.DataFrame:
    """Compute the MNIST runs of ``jobs`` ``[(plan, pair, end, setting, inits),
    ...]`` missing from the store and write the store (:data:`MNIST_STORE`) with
    their :func:`mnist_code_key` after each job. Each finished job is kept in
    ``scratch`` (default ``data/cache/sarussi2021_mnist``) so an interrupted
    command resumes."""
    import time

    path = Path(store or MNIST_STORE)
    key = mnist_code_key()
    scratch = Path(scratch or path.parents[1] / "cache" / "sarussi2021_mnist")
    scratch.mkdir(parents=True, exist_ok=True)
    frames = []
    for plan, pair, end, setting, inits in jobs:
        tag = "-".join(map(str, [plan, *pair, int(end), setting, len(inits)]))
        part = scratch / f"{key}_{tag}_{inits[0][2]}.parquet"
        if not part.exists():
            start = time.time()
            _mnist_compute(pair, setting, inits, plan, end).to_parquet(part)
            print(f"{tag} seed {inits[0][2]}: {time.time() - start:.0f} s", flush=True)
        frames.append(pd.read_parquet(part))
        frame = pd.concat(frames, ignore_index=True)
        frame["code_key"] = key
        tmp = path.with_suffix(".tmp.parquet")
        frame.to_parquet(tmp, index=False)
        tmp.replace(path)
    return frame


MNIST_FIG2 = [((0, 1), 1e4), ((3, 5), 1e4)]
MNIST_FIG6 = [((1, 7), 150.0), ((4, 9), 150.0)]
# the settings whose dip or fit was said to depend on the step (the audit)
MNIST_HALVED = [((3, 5), "centred"), ((3, 5), "uncentred"), ((4, 9), "centred")]


def mnist_jobs(first_seeds=(0,), n_seeds: int = 5, halved: bool = True) -> list:
    """The stored MNIST runs: for each block of ``n_seeds`` seeds from each of
    ``first_seeds``, the small (1e-6) and large (0.05) inits on the Fig 2 pairs
    (to t = 10^4) and the Fig 6 pairs (to t = 150) in both centrings; with
    ``halved``, the small init of the first block again at halved steps to
    t = 150 on :data:`MNIST_HALVED` (the resolution check)."""
    jobs = []
    for first in first_seeds:
        seeds = range(first, first + n_seeds)
        inits = [("small", 1e-6, s) for s in seeds] + [
            ("large", 0.05, s) for s in seeds
        ]
        for (pair, end), setting in itertools.product(
            MNIST_FIG2 + MNIST_FIG6, ("centred", "uncentred")
        ):
            jobs.append(("resolved", pair, end, setting, inits))
        if halved and first == first_seeds[0]:
            for pair, setting in MNIST_HALVED:
                jobs.append(("halved", pair, 150.0, setting, inits[:n_seeds]))
    return jobs


# ----------------------------------------------------------------- Fig 4, Thm 6.2


def par_svm_scan(
    n_per_class: int,
    mu_pos: list[float],
    mu_neg: list[float],
    std: float,
    seeds: list[int] | range,
    alpha: float,
) -> np.ndarray:
    """Thm 6.2's data condition over data draws: for each seed, Fig 4's Gaussians
    (:func:`~twolayer.theory.sarussi2021.fig4_gaussians`) and the fraction of
    their points on which the PAR SVM's own ``(w, u)`` vote as the PAR requires
    (:func:`~twolayer.theory.sarussi2021.par_svm_in_par`; below 1: the theorem's
    trajectory hypothesis cannot hold on that draw)."""
    draws = [theory.fig4_gaussians(n_per_class, mu_pos, mu_neg, std, s) for s in seeds]
    return np.array([theory.par_svm_in_par(d.X, d.y, alpha) for d in draws])


def linear_svm_gap(
    X: np.ndarray, y: np.ndarray, alpha: float, names=("w", "u", "boundary")
) -> float:
    """How far apart Thm 6.2's prediction and the plain linear max-margin
    separator are on one data set: the smallest, over the directions ``names``,
    of the angle (degrees) between the PAR SVM's ``w``, ``u`` or ``w − u``
    (eq. (8), :func:`~twolayer.theory.sarussi2021.par_svm`) and what a network
    converging to the linear SVM ``w_lin`` would have (``w̄ ∝ w_lin``,
    ``ū ∝ −w_lin``, ``w̄ − ū ∝ w_lin``). Below a claim's tolerance no flow can tell
    the two apart on that set."""
    w, u = theory.par_svm(X, y, alpha)
    w_lin = margins.max_margin(X, y)
    gaps = theory.par_angles(np.vstack([w_lin, -w_lin]), w, u)
    return float(min(gaps[n] for n in names))


def discriminating_draw(make, seed: int, alpha: float, min_gap: float, names, tries=50):
    """The first seed ``s >= seed`` whose data set ``make(s)`` has
    :func:`linear_svm_gap` (over ``names``) of at least ``min_gap`` degrees — a
    rule on the data alone, applied before any training — and that set.

    Returns
    -------
    tuple
        ``(s, dataset, skipped)``; ``skipped`` lists ``(seed, gap)`` of the sets
        passed over."""
    if min_gap < 0:
        raise ValueError(f"min_gap must be >= 0 degrees, got {min_gap}")
    skipped = []
    for s in range(seed, seed + tries):
        ds = make(s)
        gap = linear_svm_gap(ds.X, ds.y, alpha, names)
        if gap >= min_gap:
            return s, ds, skipped
        skipped.append((s, gap))
    raise ValueError(f"no data seed in [{seed}, {seed + tries}) has a gap >= {min_gap}")


def par_flow(
    ds: data.Dataset,
    k: int,
    alpha: float,
    init_scale: float,
    seed: int,
    t_max: float,
    w_par: np.ndarray,
    u_par: np.ndarray,
    w_lin: np.ndarray,
) -> dict:
    """Fig 4 / Thm 6.2: gradient flow (:func:`twolayer.flows.gradient_flow`, 40
    snapshots) of the fixed-second-layer net of width ``2k`` from ``init_scale``,
    seed ``seed``, to ``t_max``, measured against the PAR SVM's ``(w_par, u_par)``
    and the linear max-margin separator ``w_lin``.

    Returns
    -------
    dict
        ``P``, ``Q``: the final neurons; ``ratio``: ``R/‖w̄−ū‖``; ``angles``: the
        final angles (degrees) ``w``, ``u``, ``boundary`` to the PAR SVM
        (:func:`~twolayer.theory.sarussi2021.par_angles`) and
        ``boundary_vs_linear_svm`` (``w̄−ū`` vs ``w_lin``); ``norm_ratio``:
        ``(‖w̄‖/‖ū‖)/(‖w‖/‖u‖)``; ``entry``: the flow time from which the net
        stays in the PAR (:func:`~twolayer.theory.sarussi2021.par_entry_time`);
        ``history``: per snapshot after the first, the flow time, the three
        angles to the PAR SVM and the angle of ``w̄−ū`` to ``w_lin``.
    """
    net = models.TwoLayerNet.fixed_second_layer(
        2, k, alpha, init_scale=init_scale, seed=seed
    )
    traj = flows.gradient_flow(net, ds, t_max=t_max, n_snapshots=40)
    P, Q = theory.split_neurons(traj.final["W"])
    c = theory.clusters(P, Q)
    angles = theory.par_angles(traj.final["W"], w_par, u_par)
    angles["boundary_vs_linear_svm"] = theory.angle_degrees(c.direction, w_lin)
    norm_ratio = (np.linalg.norm(c.w_bar) / np.linalg.norm(c.u_bar)) / (
        np.linalg.norm(w_par) / np.linalg.norm(u_par)
    )
    entry = theory.par_entry_time(
        traj.times, [s["W"] for s in traj.snapshots], ds.X, ds.y
    )
    history = []
    for t, s in zip(traj.times[1:], traj.snapshots[1:]):
        c_t = theory.clusters(*theory.split_neurons(s["W"]))
        to_svm = theory.par_angles(s["W"], w_par, u_par).values()
        history.append([t, *to_svm, theory.angle_degrees(c_t.direction, w_lin)])
    return dict(
        P=P,
        Q=Q,
        ratio=c.ratio,
        angles=angles,
        norm_ratio=norm_ratio,
        entry=entry,
        history=np.array(history),
    )


def par_flows(
    ds: data.Dataset,
    w: np.ndarray,
    u: np.ndarray,
    *,
    k: int,
    alpha: float,
    init_scale: float,
    seeds: list[int] | range,
    t_max: float,
) -> pd.DataFrame:
    """Thm 6.2 over initialisation seeds: gradient flow to ``t_max`` (2
    snapshots) of the fixed-second-layer net of width ``2k`` from every seed.

    Returns
    -------
    pandas.DataFrame
        One row per seed: ``in_par`` (the final net in the PAR, Def. 6.3) and the
        angles (degrees) ``w``, ``u``, ``boundary`` of its clusters to the PAR
        SVM's ``(w, u)`` (:func:`~twolayer.theory.sarussi2021.par_angles`).
    """
    rows = []
    for s in seeds:
        net = models.TwoLayerNet.fixed_second_layer(
            2, k, alpha, init_scale=init_scale, seed=s
        )
        W = flows.gradient_flow(net, ds, t_max=t_max, n_snapshots=2).final["W"]
        in_par = theory.par_membership(*theory.split_neurons(W), ds.X, ds.y)
        rows.append(dict(in_par=in_par.network, **theory.par_angles(W, w, u)))
    return pd.DataFrame(rows)


def angle_spread(*tables: pd.DataFrame) -> float:
    """The largest spread (max − min over seeds) of any angle column of
    :func:`par_flows` tables: how much the limit depends on the seed."""
    return float(
        max(np.ptp(t.drop(columns="in_par").to_numpy(), axis=0).max() for t in tables)
    )


# ----------------------------------------------------------------- Thm 4.1 (SGD)


def sgd_grid(
    draws: dict[int, data.Dataset],
    widths: list[int],
    init_scales: list[float],
    alpha: float,
    lr: float,
    epochs: int,
    eps: float,
) -> tuple[pd.DataFrame, dict]:
    """Theorem 4.1 over a grid: SGD with batch 1, sampling without replacement
    (:func:`~twolayer.theory.sarussi2021.sgd_batch1`, the runs of one width and
    slope stepped together), for every data draw ``draws[seed]`` (its seed also
    the initialisation's and the visiting order's), width ``k``, init scale and
    slope (``alpha`` and the ReLU, 0), for ``epochs`` epochs of step ``lr``;
    with ``alpha`` also at the smallest scale with the step ``lr / k``.

    Returns
    -------
    table : pandas.DataFrame
        One row per run: ``alpha``, ``init_scale``, ``k``, ``seed``, ``mode``
        (``"η"`` or ``"η/k"``), ``init_norm`` ``‖W_0‖`` and App. B's counts
        (``leading``, ``last``, ``final_loss``:
        :func:`~twolayer.theory.sarussi2021.sgd_run_record` at ``eps``).
    curves : dict
        ``(alpha, init_scale, k, seed, mode)`` → the largest visited loss of
        each epoch.
    """
    seeds = list(draws)
    n = draws[seeds[0]].n
    rows, curves = [], {}
    for k, a in itertools.product(widths, (alpha, 0.0)):
        cases = [(sc, s, "η") for sc in init_scales for s in seeds]
        cases += [(min(init_scales), s, "η/k") for s in seeds] if a == alpha else []
        W0 = np.stack(
            [
                models.TwoLayerNet.fixed_second_layer(
                    2, k, 0.5, init_scale=sc, seed=s
                ).weights()[0]
                for sc, s, _ in cases
            ]
        )  # (the slope does not enter the initialisation)
        loss, W = theory.sgd_batch1(
            W0,
            np.stack([draws[s].X for _, s, _ in cases]),
            np.stack([draws[s].y for _, s, _ in cases]),
            a,
            [lr / k if mode == "η/k" else lr for *_, mode in cases],
            theory.sgd_orders(n, epochs, [s for _, s, _ in cases]),
        )
        for j, (sc, s, mode) in enumerate(cases):
            rec = theory.sgd_run_record(loss[j], W[j], draws[s].X, draws[s].y, a, eps)
            curves[(a, sc, k, s, mode)] = rec.pop("curve")
            norm = float(np.linalg.norm(W0[j]))
            rows.append(
                dict(
                    alpha=a,
                    init_scale=sc,
                    k=k,
                    seed=s,
                    mode=mode,
                    init_norm=norm,
                    **rec,
                )
            )
    return pd.DataFrame(rows), curves


def eq20_bounds(
    table: pd.DataFrame,
    draws: dict[int, data.Dataset],
    alpha: float,
    lr: float,
    eps: float,
) -> pd.DataFrame:
    """The leaky runs at the step ``lr`` of an :func:`sgd_grid` table with
    App. B's eq. 20 bound on their leading violating epochs
    (:func:`~twolayer.theory.sarussi2021.sgd_epoch_bound`, from each draw's
    max-margin ``γ`` through the origin, its radius ``B = max‖x‖`` and the run's
    ``‖W_0‖``) in the column ``bound_eq20``."""
    gamma = {
        s: 1 / np.linalg.norm(margins.max_margin(d.X, d.y)) for s, d in draws.items()
    }
    radius = {s: float(np.linalg.norm(d.X, axis=1).max()) for s, d in draws.items()}
    leaky = table[(table.alpha == alpha) & (table["mode"] == "η")].copy()
    leaky["bound_eq20"] = [
        theory.sgd_epoch_bound(
            draws[r.seed].n,
            r.k,
            alpha,
            gamma[r.seed],
            lr,
            eps,
            radius[r.seed],
            r.init_norm,
        )
        for r in leaky.itertuples()
    ]
    return leaky


def width_slopes(
    table: pd.DataFrame, alpha: float, init_scale: float
) -> dict[str, np.ndarray]:
    """Eq. 20's width dependence in an :func:`sgd_grid` table at one init scale:
    per data draw, the slope of ``log(leading violating epochs)`` against
    ``log k`` (:func:`~twolayer.theory.sarussi2021.log_log_slope`) of the leaky
    runs at the step ``η`` (``"fixed"``), at ``η/k`` (``"scaled"``) and of the
    ReLU at ``η`` (``"relu"``)."""
    out = {}
    for name, a, mode in (
        ("fixed", alpha, "η"),
        ("scaled", alpha, "η/k"),
        ("relu", 0.0, "η"),
    ):
        runs = theory.runs_at(table, a, init_scale, mode)
        out[name] = np.array(
            [theory.log_log_slope(g.k, g.leading) for _, g in runs.groupby("seed")]
        )
    return out


def first_epoch_losses(curves: dict, alpha: float, seeds: list[int]) -> list[float]:
    """Per data draw, the largest loss visited in the first epoch by any leaky run
    at the step ``η`` of :func:`sgd_grid` (Thm 4.1's rival: the runs early)."""
    return [
        max(
            c[0]
            for key, c in curves.items()
            if key[0] == alpha and key[3] == s and key[4] == "η"
        )
        for s in seeds
    ]


def sgd_summary(
    table: pd.DataFrame, leaky: pd.DataFrame, alpha: float, eps: float
) -> dict[str, float]:
    """The numbers Thm 4.1's page quotes, from an :func:`sgd_grid` table and its
    :func:`eq20_bounds` rows ``leaky``: the number of leaky ``runs``; their
    ``worst_last`` violating epoch and ``worst_final`` loss; of the ReLU runs the
    number ``relu_fail`` ending above ``eps`` out of ``relu_runs`` and their
    ``relu_last`` violating epoch; the largest observed/bound ratio
    ``bound_ratio`` and the smallest bound ``min_bound``; ``big_vs_small``, the
    largest ratio over widths of the median leading count at the largest init
    scale to that at the smallest (leaky, step ``η``)."""
    relu = table[table.alpha == 0.0]
    scale = leaky.groupby(["init_scale", "k"]).leading.median()
    big = scale[leaky.init_scale.max()]
    small = scale[leaky.init_scale.min()]
    return dict(
        runs=len(leaky),
        worst_last=int(leaky["last"].max()),
        worst_final=float(leaky.groupby("seed").final_loss.max().max()),
        relu_fail=int((relu.final_loss > eps).sum()),
        relu_runs=len(relu),
        relu_last=int(relu["last"].max()),
        bound_ratio=float((leaky.leading / leaky.bound_eq20).max()),
        min_bound=float(leaky.bound_eq20.min()),
        big_vs_small=float((big / small).max()),
    )


def _main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=mnist_store.__doc__)
    parser.add_argument("--first-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--no-halved", action="store_true")
    args = parser.parse_args(argv)
    # through the imported module: run as __main__, this file's functions would be
    # named __main__.*, and the code key would differ from the pages' one
    from twolayer.experiments import sarussi2021 as module

    module.mnist_store(module.mnist_jobs(args.first_seeds, halved=not args.no_halved))


if __name__ == "__main__":
    _main()
