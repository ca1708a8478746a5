"""Experiments of the Lyu et al. (2021) chapter: the runs of a page over seeds and
settings, and their measured summary, one call each from the notebook.

The paper's quantities are :mod:`twolayer.theory.lyu2021`; training goes through
:mod:`twolayer.flows` with the same calls as before, so stored runs are reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import data, flows, metrics, models
from ..theory import lyu2021


@dataclass
class SeedFlows:
    """Gradient flow from one initialisation per seed on one data set.

    ``ends`` the final ``{"W", "a"}`` per seed, ``margins`` their normalized
    margins, ``nonlinearity`` the nonlinearity of their decision boundaries
    (:func:`~twolayer.theory.lyu2021.boundary_nonlinearity`)."""

    ends: list[dict]
    margins: np.ndarray
    nonlinearity: np.ndarray


def seed_flows(
    ds: data.Dataset, seeds: Iterable[int], *, alpha: float, **flow
) -> SeedFlows:
    """Fig. 1 (left): gradient flow from a small initialisation, one run per seed
    (:func:`trajectories`), and the normalized margin (Lyu & Li's ``γ``, §3)
    and boundary nonlinearity of each final net.

    Parameters
    ----------
    ds
        The data set.
    seeds
        Initialisation seeds, one run each.
    alpha
        Leaky slope ``α`` of ``φ(z) = max(z, αz)``.
    **flow
        ``width``, ``init_scale``, ``t_max`` and the integrator's arguments.

    Returns
    -------
    SeedFlows
    """
    ends = [tr.final for tr in trajectories(ds, seeds, alpha=alpha, **flow)]
    return SeedFlows(
        ends=ends,
        margins=lyu2021.normalized_margins(ends, ds.X, ds.y, alpha),
        nonlinearity=np.array(
            [lyu2021.boundary_nonlinearity(e["W"], e["a"], alpha) for e in ends]
        ),
    )


def kkt_directions(
    ds: data.Dataset,
    alpha: float,
    found: lyu2021.MarginSearch,
    gamma_star: float,
    search: dict,
    large_init: dict,
    large_seeds: Iterable[int],
    other_seeds: Iterable[int] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 1 left: every KKT direction of the margin problem (P) we can reach on
    a symmetric set, one row each (:func:`~twolayer.theory.lyu2021.kkt_row`).

    The rows, in order: the converged starts of ``found`` (random starts); a
    search with every neuron started on a data point; for each of
    ``large_seeds`` the end of gradient flow from a large initialisation (Lyu &
    Li's Thm 3.1: it converges to *some* KKT direction), polished by the margin
    solver and, separately, with the KKT system solved from it; then, for each
    data seed of ``other_seeds``, both kinds of search on a further symmetric
    set (4 disk points and their mirrors, band 0.3), at most 10 starts.

    Parameters
    ----------
    ds, alpha
        The symmetric set and the leaky slope.
    found
        The page's random-start search on ``ds``
        (:func:`~twolayer.theory.lyu2021.search_max_margin`).
    gamma_star
        Thm 4.2's global max margin of ``ds``: the rows' ``ratio`` unit.
    search
        ``width``, ``starts`` and ``seed`` of the searches.
    large_init, large_seeds
        The large-init flows: ``large_init`` holds ``width``, ``init_scale``
        and ``t_max`` (a Gaussian draw per seed of ``large_seeds``, flown to
        ``t_max``).
    other_seeds
        Data seeds of the further sets.

    Returns
    -------
    (table, large)
        ``table``: columns ``start``, ``ratio``, ``stationarity``,
        ``nonlinearity`` (starts that do not separate the data are left out);
        ``large``: per large-init flow its ``ratio`` to ``gamma_star`` and KKT
        ``stationarity`` residual before polishing.
    """
    X, y = ds.X, ds.y
    points = lyu2021.search_max_margin(X, y, alpha, **search, start="points")
    dirs = [("random start", W, a) for W, a in found.solutions]
    dirs += [("start on data points", W, a) for W, a in points.solutions]
    large = []
    for s in large_seeds:
        net = models.TwoLayerNet(
            2,
            large_init["width"],
            alpha,
            "gaussian",
            init_scale=large_init["init_scale"],
            seed=s,
        )
        end = flows.gradient_flow(net, ds, large_init["t_max"], n_snapshots=2).final
        W, a = end["W"], end["a"]
        large.append(
            dict(
                ratio=lyu2021.normalized_margin(W, a, X, y, alpha) / gamma_star,
                stationarity=lyu2021.kkt_check(W, a, X, y, alpha).stationarity,
            )
        )
        polished = lyu2021.polish_kkt(W, a, X, y, alpha)[:2]
        dirs.append(("large-init flow, polished", *polished))
        solved = lyu2021.solve_kkt(W, a, X, y, alpha)
        dirs.append(("large-init flow, KKT system solved", *solved))
    rows = [lyu2021.kkt_row(W, a, X, y, alpha, gamma_star, k) for k, W, a in dirs]
    for s in other_seeds:
        other = lyu2021.symmetric_augment(
            data.uniform_disk_linear(4, margin=0.3, w_star=[1.0, 0.6], seed=s)
        )
        g_other = lyu2021.global_max_margin_symmetric(other.X, other.y, alpha)
        for kind in ("gaussian", "points"):
            other_search = lyu2021.search_max_margin(
                other.X,
                other.y,
                alpha,
                search["width"],
                min(search["starts"], 10),
                search["seed"],
                start=kind,
            )
            rows += [
                lyu2021.kkt_row(
                    W, a, other.X, other.y, alpha, g_other, f"other set {s}, {kind}"
                )
                for W, a in other_search.solutions
            ]
    return pd.DataFrame([r for r in rows if r is not None]), pd.DataFrame(large)


def kkt_summary(table: pd.DataFrame, tol: float = 1e-4) -> dict:
    """Fig. 1 left: what :func:`kkt_directions`' ``table`` shows.

    Parameters
    ----------
    table
        :func:`kkt_directions`' table (rows ``"other set ..."`` are the further
        sets).
    tol
        KKT stationarity residual below which a row is a verified KKT point.

    Returns
    -------
    dict
        ``n`` rows, ``verified`` of them KKT points, the distinct margin ratios
        (3 digits, as text) of the verified ones on the main set (``margins``)
        and on all sets (``margins_all``), and their largest boundary
        nonlinearity (``nonlin``).
    """
    verified = table[table.stationarity <= tol]
    main = verified[~verified.start.str.startswith("other set")]

    def levels(ratios) -> str:
        return ", ".join(f"{v:.3f}" for v in sorted(set(ratios.round(3))))

    return dict(
        n=len(table),
        verified=len(verified),
        margins=levels(main.ratio),
        margins_all=levels(verified.ratio),
        nonlin=float(verified.nonlinearity.max()),
    )


def suboptimal_kkt(
    table: pd.DataFrame,
    ds: data.Dataset,
    alpha: float,
    gamma_star: float,
    tol: float = 1e-4,
    same: float = 1e-3,
) -> pd.DataFrame:
    """Fig. 1 left: the verified KKT directions of ``ds`` whose margin is below
    Thm 4.2's ``γ*`` — what Lyu & Li's Thm 3.1 allows and Thm 4.3 rules out for
    gradient flow from small initialisation.

    The first row is the one-neuron net on ``w*``
    (:func:`~twolayer.theory.lyu2021.one_neuron_net`): on symmetric data
    (Assumption 4.1) it is a KKT point with margin ``2α/(1+α)·γ*`` on every
    draw; the others are the rows of :func:`kkt_directions`' ``table`` on
    ``ds`` (not ``"other set ..."``) that are KKT points to ``tol`` and below
    ``(1 − same)·γ*``.

    Parameters
    ----------
    table
        :func:`kkt_directions`' table.
    ds, alpha, gamma_star
        The symmetric set, the leaky slope and its global max margin ``γ*``.
    tol
        KKT stationarity residual of a verified KKT point.
    same
        Relative margin gap below which a KKT point counts as global.

    Returns
    -------
    pd.DataFrame
        Columns of ``table`` (``ratio`` to ``gamma_star``).
    """
    if not lyu2021.is_symmetric(ds.X, ds.y):
        raise ValueError(
            f"suboptimal_kkt: {ds.name!r} is not symmetric (Assumption 4.1)"
        )
    W, a = lyu2021.one_neuron_net(lyu2021.max_margin_separator(ds.X, ds.y))
    one = lyu2021.kkt_row(W, a, ds.X, ds.y, alpha, gamma_star, "one neuron on w*")
    rows = table[~table.start.str.startswith("other set")]
    rows = rows[(rows.stationarity <= tol) & (rows.ratio < 1 - same)]
    return pd.concat([pd.DataFrame([one]), rows], ignore_index=True)


def limit_error_trend(
    ds: data.Dataset,
    seeds: Iterable[int],
    log10_ts: Sequence[float],
    grid: np.ndarray,
    target: np.ndarray,
    *,
    alpha: float,
    **flow,
) -> np.ndarray:
    """A limit's trend over seeds: gradient flow from one initialisation per seed
    (:func:`~twolayer.theory.lyu2021.gradient_flow_from_init`) followed with the
    log-time engine to ``t = 10^max(log10_ts)``, and at each horizon of
    ``log10_ts`` (:func:`~twolayer.flows.horizon_grid`) the relative sup error of
    ``θ/‖θ‖`` to the limit function (:func:`~twolayer.theory.lyu2021.limit_error`,
    values ``target`` on the rows of ``grid``).

    Parameters
    ----------
    ds, seeds
        The data set and the initialisation seeds, one run each.
    log10_ts
        Horizons ``log10 t`` (increasing, > 0).
    grid, target
        Evaluation points and the limit function's values there.
    alpha
        Leaky slope.
    **flow
        ``width``, ``init_scale``, ``init``, ``reflect`` and the integrator's
        arguments (``rtol``, ...).

    Returns
    -------
    np.ndarray
        (seed, horizon): the errors; the worst seed per horizon is a ``limit:
        true`` claim's ``trend=``.
    """
    xs = [float(x) for x in log10_ts]
    if not xs or any(b <= a for a, b in zip(xs, xs[1:])) or xs[0] <= 0:
        raise ValueError(f"log10_ts must be increasing and > 0, got {log10_ts!r}")
    rows = []
    for s in seeds:
        run = lyu2021.gradient_flow_from_init(
            ds,
            init_seed=s,
            alpha=alpha,
            t_max=None,
            log10_t_max=xs[-1],
            snapshot_log10_times=xs,
            **flow,
        )
        snaps = run.snapshots[-len(xs) :]
        rows.append(
            [lyu2021.limit_error(e["W"], e["a"], grid, target, alpha) for e in snaps]
        )
    return np.array(rows)


def crossing_log10_t(log10_ts, values, level: float) -> float:
    """Where a limit's trend would cross ``level``: the decay ratio per decade of
    ``log10 t`` over the last two horizons, extrapolated geometrically (the
    ledger's "not resolved" reading, :mod:`twolayer.claims`); the last horizon
    itself when already at or below ``level``, ``inf`` when not decaying."""
    x, v = np.asarray(log10_ts, float), np.asarray(values, float)
    if x.size < 2 or x.shape != v.shape:
        raise ValueError("log10_ts and values need the same length >= 2")
    if v[-1] <= level:
        return float(x[-1])
    rate = (v[-1] / v[-2]) ** (1.0 / np.log10(x[-1] / x[-2]))
    if not rate < 1:
        return float("inf")
    return float(x[-1] * 10 ** (np.log10(level / v[-1]) / np.log10(rate)))


# ---------------------------------------------------------- §4.2 and §6 (helper B)


def trajectories(ds: data.Dataset, seeds, **flow) -> list:
    """Gradient flow from one initialisation per seed (Thms 4.3 and 6.2 hold with
    a probability over the initialisation): one
    :func:`~twolayer.theory.lyu2021.gradient_flow_from_init` per seed, with
    ``init_seed`` the seed and ``flow`` every other argument.

    Parameters
    ----------
    ds
        The data set.
    seeds
        Initialisation seeds, one run each.
    **flow
        ``width``, ``alpha``, ``init_scale``, ``t_max``, ``init``, ``reflect`` and
        the integrator's arguments.

    Returns
    -------
    list of Trajectory
        The runs, in the order of ``seeds``.
    """
    return [lyu2021.gradient_flow_from_init(ds, init_seed=s, **flow) for s in seeds]


def disk_points(n: int, seed: int) -> np.ndarray:
    """``n`` points uniform in the unit disk (direction Gaussian, radius
    ``√U``) from ``default_rng(seed)``: where Thm 4.3's sup error is measured."""
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    grid = rng.standard_normal((n, 2))
    grid *= np.sqrt(rng.random((n, 1))) / np.linalg.norm(grid, axis=1, keepdims=True)
    return grid


def symmetric_searches(
    ds: data.Dataset, alpha: float, seeds, starts: int, grid, target
) -> tuple[np.ndarray, np.ndarray]:
    """Thm 4.2 on a symmetric set: one global max-margin search per seed
    (:func:`~twolayer.theory.lyu2021.search_max_margin`, width 4, ``starts``
    random starts).

    Parameters
    ----------
    ds, alpha
        The symmetric set (Assumption 4.1) and the leaky slope.
    seeds
        Seeds of the searches.
    starts
        Random starts per search.
    grid, target
        Evaluation points and the limit ``(1+α)/4 ⟨w*, x⟩`` there.

    Returns
    -------
    (best, errors)
        ``best``: the best normalized margin of each search; ``errors``: (seed, 2)
        :func:`~twolayer.theory.lyu2021.search_limit_errors` (the best net's and
        the worst converged start's relative sup error to the limit).
    """
    searches = [
        lyu2021.search_max_margin(ds.X, ds.y, alpha, width=4, starts=starts, seed=s)
        for s in seeds
    ]
    errors = [lyu2021.search_limit_errors(sr, grid, target, alpha) for sr in searches]
    return np.array([sr.best for sr in searches]), np.array(errors)


@dataclass
class SymmetricSweep:
    """Thm 4.3's runs over init scales (:func:`symmetric_sweep`), per scale:
    ``runs`` the trajectories (one per seed), ``curves`` per seed ``(times,
    errors, margin ratios)`` at every snapshot, ``errors`` and ``ratios`` their
    final values (arrays over seeds); ``peak_ratio`` the largest margin ratio of
    any snapshot of any run (Thm 4.2: at most 1)."""

    runs: dict
    curves: dict
    errors: dict
    ratios: dict
    peak_ratio: float


def symmetric_sweep(
    ds: data.Dataset, alpha: float, scales, seeds, grid, target, gamma_star, **flow
) -> SymmetricSweep:
    """Thm 4.3 (and Cor. 4.4) on a symmetric set: gradient flow from every init
    scale in ``scales`` (repeats dropped) and seed (:func:`trajectories`), and
    along each run the relative sup error of the direction to the limit
    (:func:`~twolayer.theory.lyu2021.limit_errors`) and the normalized margin
    over Thm 4.2's ``γ*``.

    Parameters
    ----------
    ds, alpha
        The symmetric set and the leaky slope.
    scales
        Init scales ``σ``.
    seeds
        Initialisation seeds, one run per scale and seed.
    grid, target
        Evaluation points and the limit ``(1+α)/4 ⟨w*, x⟩`` there.
    gamma_star
        Thm 4.2's global max normalized margin.
    **flow
        The other arguments of the runs.

    Returns
    -------
    SymmetricSweep
    """
    runs = {
        sc: trajectories(ds, seeds, alpha=alpha, init_scale=sc, **flow)
        for sc in dict.fromkeys(scales)
    }
    curves = {
        sc: [
            (
                tr.times,
                lyu2021.limit_errors(tr.snapshots, grid, target, alpha),
                lyu2021.normalized_margins(tr.snapshots, ds.X, ds.y, alpha)
                / gamma_star,
            )
            for tr in trs
        ]
        for sc, trs in runs.items()
    }
    return SymmetricSweep(
        runs=runs,
        curves=curves,
        errors={sc: np.array([c[1][-1] for c in cs]) for sc, cs in curves.items()},
        ratios={sc: np.array([c[2][-1] for c in cs]) for sc, cs in curves.items()},
        peak_ratio=float(max(c[2].max() for cs in curves.values() for c in cs)),
    )


def errors_at(curves, t: float, t_min: float = 1e-1) -> np.ndarray:
    """Each run's error at flow time ``t``, interpolated linearly in ``log10 t``
    between its snapshots (times below ``t_min`` counted at ``t_min``); ``curves``
    per run ``(times, errors, ...)`` as in :class:`SymmetricSweep`."""
    return np.array(
        [
            np.interp(np.log10(t), np.log10(np.maximum(c[0], t_min)), c[1])
            for c in curves
        ]
    )


def symmetric_gaps(
    ds: data.Dataset, grid, w_star, seeds, *, alpha: float, **flow
) -> tuple[np.ndarray, list]:
    """Thm 4.3 at the end of a run: gradient flow from each seed
    (:func:`trajectories`) and the final direction's gap to the limit
    (:func:`~twolayer.theory.lyu2021.symmetric_limit_gap`: relative sup error on
    ``grid`` to ``(1+α)/4 ⟨w*, x⟩`` and normalized margin over ``γ*``).

    Returns
    -------
    (gaps, runs)
        ``gaps``: (seed, 2) error and margin ratio; ``runs`` the trajectories.
    """
    runs = trajectories(ds, seeds, alpha=alpha, **flow)
    gaps = [
        lyu2021.symmetric_limit_gap(
            tr.final["W"], tr.final["a"], ds.X, ds.y, grid, w_star, alpha
        )
        for tr in runs
    ]
    return np.array(gaps), runs


def hinted_plane(n: int, hs, K: float, eps: float, data_seed: int, n_grid=2000):
    """Def. 6.1 on a planar set: ``n`` points uniform in the unit disk labelled by
    the teacher ``(1, 0.6)`` with a band of half-width 0.1 removed (seed
    ``data_seed``), its max-margin separator ``w*``, ``w_⊥`` (``w*`` turned by
    90°) and the hinted set ``S'`` for every hint size ``H`` in ``hs``; the
    evaluation grid: ``n_grid`` points uniform in ``[−1, 1]²`` from
    ``default_rng(data_seed)``.

    Returns
    -------
    (S, w_star, w_perp, sets, grid)
        ``sets``: hint size ``H`` -> the hinted :class:`~twolayer.data.Dataset`.
    """
    S = data.uniform_disk_linear(
        n, margin=0.1, w_star=np.array([1.0, 0.6]), seed=data_seed
    )
    w_star = lyu2021.max_margin_separator(S.X, S.y)
    w_perp = np.array([-w_star[1], w_star[0]])
    sets = {
        h: data.Dataset(
            *lyu2021.hinted_dataset(S.X, S.y, h, K, eps, w_perp),
            f"hinted(H={h:g}, K={K:g}, eps={eps:g})",
            f"Lyu et al. Def. 6.1 hints on a 2-D disk set (seed {data_seed})",
        )
        for h in hs
    }
    grid = np.random.default_rng(data_seed).uniform(-1, 1, (n_grid, 2))
    return S, w_star, w_perp, sets, grid


def hinted_ball(
    n: int, d: int, H: float, K: float, eps: float, data_seed: int, n_grid=4000
):
    """Def. 6.1 in ``d ≥ 3`` dimensions: ``n`` points uniform in the unit ball
    labelled by the teacher ``(1, 0.6, −0.4, 0, ...)`` (band 0.1 removed, seed
    ``data_seed``), ``w*``, a random unit ``w_⊥ ⊥ w*`` and then ``n_grid``
    evaluation points uniform in the ball, both drawn from
    ``default_rng(data_seed)``, and the hinted set of size ``H``.

    Returns
    -------
    (S, w_star, w_perp, ds, grid)
    """
    if int(d) != d or d < 3:
        raise ValueError(f"d must be an integer >= 3, got {d!r}")
    teacher = np.r_[1.0, 0.6, -0.4, np.zeros(d - 3)]
    S = data.uniform_ball_linear(n, d, margin=0.1, w_star=teacher, seed=data_seed)
    w_star = lyu2021.max_margin_separator(S.X, S.y)
    rng = np.random.default_rng(data_seed)
    v = rng.standard_normal(d)
    w_perp = (v - (v @ w_star) * w_star) / np.linalg.norm(v - (v @ w_star) * w_star)
    X2, y2 = lyu2021.hinted_dataset(S.X, S.y, H, K, eps, w_perp)
    ds = data.Dataset(X2, y2, f"hinted-{d}d(H={H:g})", f"Def. 6.1 on {S.name}")
    grid = rng.standard_normal((n_grid, d))
    grid *= rng.random((n_grid, 1)) ** (1 / d) / np.linalg.norm(
        grid, axis=1, keepdims=True
    )
    return S, w_star, w_perp, ds, grid


def hinted_snapshot_times(t_max: float) -> np.ndarray:
    """Snapshot times of the planar Thm 6.2 runs: 41 log-spaced from 0.1 to
    ``t_max`` and the phases I–II times 10, 15, 20, 25, 30, 40, 60, 100."""
    early = np.array([10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 60.0, 100.0])
    return np.union1d(np.geomspace(0.1, t_max, 41), early)


def late_rates(
    runs,
    ds: data.Dataset,
    grid,
    target,
    alpha: float,
    eps: float,
    t_from: float = 0.0,
    times=None,
):
    """Thm 6.2's rate: per run, the relative sup error to ``½φ(⟨w*, x⟩)``
    (``target`` on ``grid``) at every snapshot from time ``t_from`` on, its final
    normalized margin over ``ε/2`` and the slope of ``log error`` against
    ``log ln t`` (:func:`~twolayer.theory.lyu2021.log_time_slope`; ``−½`` for a
    tilt the hints do not pin).

    Parameters
    ----------
    runs
        Trajectories (``times``, ``snapshots``) of gradient flow on ``ds``.
    ds, grid, target, alpha, eps
        The hinted set, evaluation points, ``½φ(⟨w*, x⟩)`` there, the leaky
        slope and the hint offset ``ε``.
    t_from
        First flow time counted.
    times
        The snapshot times the runs were asked for, used for the slope instead
        of each run's recorded times (which the integrator may round).

    Returns
    -------
    (times, errors, ratios, slopes)
        ``times`` per run the snapshot times used, ``errors`` (run, time),
        ``ratios`` and ``slopes`` per run.
    """
    late = [tr.times >= t_from for tr in runs]
    errors = np.array(
        [
            lyu2021.limit_errors(
                [s for s, k in zip(tr.snapshots, keep) if k], grid, target, alpha
            )
            for tr, keep in zip(runs, late)
        ]
    )
    if times is None:
        times = [tr.times[keep] for tr, keep in zip(runs, late)]
    else:
        times = [np.asarray(times, float)[keep] for keep in late]
    ends = [tr.snapshots[-1] for tr in runs]
    ratios = lyu2021.normalized_margins(ends, ds.X, ds.y, alpha) / (eps / 2)
    slopes = np.array([lyu2021.log_time_slope(t, e) for t, e in zip(times, errors)])
    return times, errors, ratios, slopes


def hinted_optimality(
    ds: data.Dataset,
    w_star,
    w_perp,
    scan,
    grid,
    target,
    alpha: float,
    eps: float,
    starts: int,
    seed: int,
) -> dict:
    """Thm 6.2's limit ``½φ(⟨w*, x⟩)`` (margin ``ε/2``) against the other
    directions on the planar hinted set ``ds``.

    Parameters
    ----------
    ds, w_star, w_perp
        The hinted set (Def. 6.1), ``w*`` and ``w_⊥``.
    scan
        Phase I's landscape on ``ds``
        (:func:`~twolayer.theory.lyu2021.phase1_landscape`).
    grid, target
        Evaluation points and ``½φ(⟨w*, x⟩)`` there.
    alpha, eps
        The leaky slope and the hint offset ``ε``.
    starts, seed
        The global max-margin search (width 4).

    Returns
    -------
    dict
        ``search_best`` (best margin found), ``search_err`` (its net's error to
        ``½φ``), ``subopt`` (``ε/2`` over the best), ``gain_one``/``gain_pair``
        (relative margin change from one neuron of 1 % of the norm along
        ``+w_⊥`` / a pair along ``±w_⊥``), ``phase1_err``, ``phase1_ratio`` and
        ``phase1_deg`` (phase I's direction, one neuron at the top of ``G``: its
        error, margin over ``ε/2`` and angle to ``w*``) and ``certify_at`` (the
        geometric mean of ``ε/2`` and the best, over ``ε/2``).
    """
    search = lyu2021.search_max_margin(
        ds.X, ds.y, alpha, width=4, starts=starts, seed=seed
    )
    gamma_one = eps / 2
    deg, G, _ = scan
    top = np.arctan2(w_star[1], w_star[0]) + np.radians(deg[np.argmax(G)])
    w_G = np.array([np.cos(top), np.sin(top)])
    W_G, a_G = lyu2021.one_neuron_net(w_G)
    side = [
        lyu2021.margin_with_side_neurons(w_star, w_perp, s, 0.01, ds.X, ds.y, alpha)
        / gamma_one
        - 1
        for s in ([1], [1, -1])
    ]
    gamma_G = lyu2021.normalized_margin(W_G, a_G, ds.X, ds.y, alpha)
    return dict(
        search_best=search.best,
        search_err=lyu2021.limit_error(search.W, search.a, grid, target, alpha),
        subopt=gamma_one / search.best,
        gain_one=side[0],
        gain_pair=side[1],
        phase1_err=lyu2021.limit_error(W_G, a_G, grid, target, alpha),
        phase1_ratio=gamma_G / gamma_one,
        phase1_deg=np.degrees(
            np.arctan2(w_G[1], w_G[0]) - np.arctan2(w_star[1], w_star[0])
        ),
        certify_at=np.sqrt(search.best / gamma_one),
    )


def hinted_split_log(runs, times, w_star, band: float, seeds, errors, certified):
    """Thm 6.2 below its regime, seed by seed: where the positive neurons of each
    run go (:func:`~twolayer.theory.lyu2021.positive_neuron_paths`), the snapshot
    from which they stay apart by more than twice the band
    (:func:`~twolayer.theory.lyu2021.final_split`) and one row per seed of
    :func:`~twolayer.theory.lyu2021.split_record` at the end of phase I (the
    snapshot nearest ``t = 20``, ``ln(1/σ)/max G``), after the run's ``error``
    and certified margin ``γ̃/(ε/2)``.

    Returns
    -------
    (log, paths, splits)
        ``log`` a table indexed by seed; ``paths`` per run ``(angles, shares)``;
        ``splits`` per run the split snapshot or ``None``.
    """
    paths = [lyu2021.positive_neuron_paths(r.snapshots, w_star) for r in runs]
    splits = [lyu2021.final_split(ang, share, 2 * band) for ang, share in paths]
    end_I = int(np.argmin(np.abs(times - 20.0)))
    log = pd.DataFrame(
        [
            lyu2021.split_record(ang, share, times, end_I, k, band)
            for (ang, share), k in zip(paths, splits)
        ],
        index=pd.Index(seeds, name="seed"),
    )
    log.insert(0, "error", np.asarray(errors).round(4))
    log.insert(1, "γ̃/(ε/2)", np.asarray(certified).round(3))
    return log, paths, splits


def axis_tilts(
    runs: Sequence[flows.Trajectory], u: Sequence[float], at: int = -1
) -> np.ndarray:
    """Fig. 1 middle / Lemma 5.2: how far each run's neurons are off an axis.

    Parameters
    ----------
    runs
        Trajectories with snapshots ``{"W", "a"}``.
    u
        The axis (phase I's ``±μ̄``).
    at
        The snapshot: the end by default, ``0`` the initialisation.

    Returns
    -------
    np.ndarray
        Per run, :func:`~twolayer.theory.lyu2021.axis_tilt` of its first layer.
    """
    return np.array([lyu2021.axis_tilt(r.snapshots[at]["W"], u) for r in runs])


@dataclass
class LatePhases:
    """Fig. 1 middle's late phase on the axis, one entry per run
    (:func:`axis_late_phases`)."""

    phases: list[lyu2021.AxisLatePhase]
    exponent: np.ndarray  # fitted d ln c_- / d ln c_+ (-> alpha)
    law_error: np.ndarray  # max relative error of gamma = gamma1 (1 - (1 - alpha) s)
    share_end: np.ndarray  # s = c_- / (c_+ + c_-) at the end
    ratio_end: np.ndarray  # gamma / gamma1 at the end
    t1pct: np.ndarray  # log10 t at which s would reach 1 % (extrapolated)


def axis_late_phases(
    runs: Sequence[flows.Trajectory],
    margins: Sequence[np.ndarray],
    u: Sequence[float],
    alpha: float,
    gamma1: float,
    x0: float,
) -> LatePhases:
    """Fig. 1 middle: the late phase of each run on the axis ``u``
    (:func:`~twolayer.theory.lyu2021.axis_late_phase`: ``c_- ∝ c_+^α`` and the
    margin law ``γ = γ1 (1 − (1 − α) s)``), and when the share ``s`` of the
    ``−u`` neurons would fall to 1 %
    (:func:`~twolayer.theory.lyu2021.axis_share_log10_time`, positives at
    distance ``x0``).

    Parameters
    ----------
    runs, margins
        The gradient-flow runs and their normalized margins per snapshot.
    u, alpha, gamma1, x0
        The axis, the leaky slope, the linear KKT direction's margin ``γ1`` and
        the positives' distance ``x0`` from the boundary ``x1 = 0``.

    Returns
    -------
    LatePhases
    """
    phases = [
        lyu2021.axis_late_phase(r.snapshots, r.loss, r.times, g, u, alpha, gamma1)
        for r, g in zip(runs, margins)
    ]
    t1pct = [
        lyu2021.axis_share_log10_time(*p.masses[p.late].T, r.times[p.late], x0, alpha)
        for r, p in zip(runs, phases)
    ]
    return LatePhases(
        phases=phases,
        exponent=np.array([p.exponent for p in phases]),
        law_error=np.array([p.law_error for p in phases]),
        share_end=np.array([p.share[-1] for p in phases]),
        ratio_end=np.array([g[-1] for g in margins]) / gamma1,
        t1pct=np.array(t1pct),
    )


def phase1_axis_masses(
    ds: data.Dataset,
    u: Sequence[float],
    alpha: float,
    width: int,
    init_scale: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Fig. 1 middle, inside phase I (Lemma 5.2): the masses ``c_±`` of the
    neurons on ``±u`` grow at the rates ``|G(±u)|``, so ``d ln c_- / d ln c_+``
    is their ratio, not the late phase's ``α``.

    Gradient flow of the Gaussian draw (``init_scale``, ``seed``) to
    ``0.8 T_esc``, ``T_esc = ln(1/init_scale) / max |G(±u)|`` (phase I ends
    near there), six snapshots from ``0.3 T_esc``; ``u`` is taken as ``e1``
    for ``G`` (:func:`~twolayer.theory.lyu2021.phase1_objective` at angles 0
    and π).

    Returns
    -------
    (rates, masses, exponent)
        ``|G(±u)|``, the masses ``(c_+, c_-)`` per snapshot and the fitted
        slope of ``ln c_-`` against ``ln c_+``.
    """
    rates = np.abs(lyu2021.phase1_objective(ds.X, ds.y, alpha, [0.0, np.pi]))
    T_esc = np.log(1 / init_scale) / rates.max()
    net = models.TwoLayerNet(
        2, width, alpha=alpha, init="gaussian", init_scale=init_scale, seed=seed
    )
    early = flows.gradient_flow(
        net, ds, 0.8 * T_esc, snapshot_times=np.linspace(0.3, 0.8, 6) * T_esc
    )
    masses = np.array([lyu2021.axis_masses(s["W"], s["a"], u) for s in early.snapshots])
    return rates, masses, np.polyfit(*np.log(masses).T, 1)[0]


def lemma52_runs(
    seeds: Iterable[int],
    *,
    n_half: int,
    margin: float,
    alpha: float,
    width: int,
    c_a: float,
    lr: float,
    rs: Sequence[float],
    r_main: float,
    sigmas: Sequence[float],
    snap_every: int,
) -> tuple[list[dict], dict]:
    """Lemma 5.2 over seeds: seed ``s`` draws a symmetric set (``n_half`` disk
    points, band ``margin``, teacher ``(1, 0.6)``, then mirrored) and the unit
    initialisation ``θ̄0`` (Gaussian, ``a_k ~ N(0, c_a²)``); GD with step ``lr``
    from ``σ_main θ̄0`` and from ``σ θ̄0`` for each of ``sigmas`` runs as one
    tensor (``flows.gd_many``) to 30 time units past the latest ``T1(r_main)``,
    with snapshots every ``snap_every`` steps and at every ``T1(r)``.

    Returns
    -------
    (runs, stats)
        Per seed a dict: ``ds``, ``W_bar``, ``a_bar``, ``seed``,
        :func:`~twolayer.theory.lyu2021.phase1_setting`'s entries, ``main`` and
        ``sweep`` (the trajectories); ``stats``: each entry of
        :func:`~twolayer.theory.lyu2021.lemma52_run_statistics` as an array over
        the seeds.
    """
    runs = []
    for s in seeds:
        base = data.uniform_disk_linear(
            n_half, margin=margin, w_star=[1.0, 0.6], seed=s
        )
        ds = lyu2021.symmetric_augment(base)
        unit = models.TwoLayerNet(
            2, width, alpha, "gaussian", second_layer_scale=c_a, seed=s
        )
        W_bar, a_bar = unit.weights()
        run = dict(ds=ds, W_bar=W_bar, a_bar=a_bar, seed=s)
        run.update(lyu2021.phase1_setting(ds.X, ds.y, W_bar, a_bar, alpha, lr, rs))
        scales = [run["sigma_main"], *sigmas]
        nets = [
            models.TwoLayerNet.from_weights(sc * W_bar, sc * a_bar, alpha)
            for sc in scales
        ]
        t_end = 30 + max(
            lyu2021.phase1_time(r_main, sc, W_bar, a_bar, run["lam_eff"])
            for sc in scales
        )
        steps = int(t_end / lr) + 1
        marks = np.round(np.array(list(run["T1"].values())) / lr).astype(int)
        grid = np.union1d(np.arange(0, steps + 1, snap_every), marks)
        trajs = flows.gd_many(nets, ds, lr=lr, steps=steps, snapshot_steps=grid)
        run.update(main=trajs[0], sweep=trajs[1:])
        runs.append(run)
    per_seed = [lyu2021.lemma52_run_statistics(r, rs, r_main, sigmas) for r in runs]
    stats = {key: np.array([p[key] for p in per_seed]) for key in per_seed[0]}
    return runs, stats


def lemma53_embedding(
    ds: data.Dataset, m: int, alpha: float, lr: float, steps: int, seed: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Lemma 5.3: GD commutes with the embedding ``π_b`` (exactly, for any step).

    With ``default_rng(seed)``: a good embedding vector ``b`` of length ``m``
    (``b_1 > 0 > b_2``), a balanced two-neuron net ``θ̂`` (``W ~ 0.1 N(0, I)``,
    ``a = (‖w_1‖, −‖w_2‖)``); GD with step ``lr`` for ``steps`` steps of ``θ̂`` and
    of ``π_b(θ̂)`` (40 log-spaced snapshots), then 500 points uniform in
    ``[−1, 1]²``.

    Returns
    -------
    (times, diff, fdiff)
        The snapshot times, the relative difference
        ``‖π_b(θ̂(t)) − θ(t)‖_max / ‖θ(t)‖`` per snapshot and the largest
        difference of the two final functions on the points.
    """
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(m)
    b[0], b[1] = abs(b[0]), -abs(b[1])  # a good embedding vector
    W_hat = 0.1 * rng.standard_normal((2, 2))
    a_hat = np.array([np.linalg.norm(W_hat[0]), -np.linalg.norm(W_hat[1])])
    two = models.TwoLayerNet.from_weights(W_hat, a_hat, alpha)
    big = models.TwoLayerNet.from_weights(*lyu2021.embed(W_hat, a_hat, b), alpha)
    snaps = np.unique(np.geomspace(1, steps, 40).astype(int))
    tr2 = flows.gd(two, ds, lr=lr, steps=steps, snapshot_steps=snaps)
    trm = flows.gd(big, ds, lr=lr, steps=steps, snapshot_steps=snaps)
    diff = []
    for s2, sm in zip(tr2.snapshots, trm.snapshots):
        W_e, a_e = lyu2021.embed(s2["W"], s2["a"], b)
        gap = max(np.abs(W_e - sm["W"]).max(), np.abs(a_e - sm["a"]).max())
        diff.append(gap / metrics.parameter_norm(sm["W"], sm["a"]))
    grid = rng.uniform(-1, 1, (500, 2))
    fdiff = np.abs(
        models.two_layer_output(*big.weights(), grid, alpha)
        - models.two_layer_output(*two.weights(), grid, alpha)
    ).max()
    return tr2.times, np.array(diff), fdiff


def lemma54_distances(
    ds: data.Dataset,
    m: int,
    alpha: float,
    seeds: Iterable[int],
    lam0: float,
    *,
    sigmas: Sequence[float],
    r: float,
    offsets: Sequence[float],
    rtol: float = 1e-8,
    atol: float = 1e-11,
) -> np.ndarray:
    """Lemma 5.4 over initialisations: the ``m``-neuron flow from ``σ θ̄0`` at
    ``T12 + t`` against the embedded two-neuron flow ``π_b̄(θ̃(t))``.

    Parameters
    ----------
    ds, m, alpha
        The data, the width and the leaky slope.
    seeds
        Seeds of the unit-scale Gaussian draws ``θ̄0``.
    lam0
        The growth rate ``λ0`` whose clock sets ``T12`` and ``T2`` (the book's
        ``‖μ̃‖``, or twice it for the paper's printed ``μ̃``).
    sigmas, r, offsets
        Init scales, the two-neuron reference's ``r`` and the times ``t``.
    rtol, atol
        The integrator's tolerances.

    Returns
    -------
    np.ndarray
        (seed, ``sigmas``, ``offsets``): per seed
        :func:`~twolayer.theory.lyu2021.lemma54_coupling`'s relative distances.
    """
    return np.array(
        [
            lyu2021.lemma54_coupling(
                ds, m, alpha, s, sigmas, r, offsets, lam0, rtol=rtol, atol=atol
            )
            for s in seeds
        ]
    )


def thm55_distances(
    ds: data.Dataset,
    w_star: Sequence[float],
    alpha: float,
    init_norm: float,
    draws: Iterable[int],
    t_max: float,
) -> tuple[list[flows.Trajectory], np.ndarray]:
    """Thm 5.5: gradient flow of a two-neuron net from
    :func:`~twolayer.theory.lyu2021.thm55_two_neuron_start` (one generator seed
    per entry of ``draws``, norm ``init_norm``) to ``t_max``
    (:func:`~twolayer.theory.lyu2021.thm55_flow`), and the distance of
    ``θ/‖θ‖`` to ``½(w*, −w*, 1, −1)`` at every snapshot.

    Returns
    -------
    (runs, distances)
        The trajectories and the distances, shape (draw, snapshot).
    """
    limit = lyu2021.two_neuron_limit(w_star)
    runs = [lyu2021.thm55_flow(ds, w_star, alpha, init_norm, s, t_max) for s in draws]
    dist = [
        [lyu2021.direction_distance(s["W"], s["a"], *limit) for s in tr.snapshots]
        for tr in runs
    ]
    return runs, np.array(dist)


def thm55_unequal(
    ds: data.Dataset,
    w_star: Sequence[float],
    alpha: float,
    starts: Sequence[tuple[float, float]],
    draws: Iterable[int],
    log10_times: Sequence[float],
) -> pd.DataFrame:
    """Thm 5.5 from unequal and large starts: for each ``(norm, ratio)`` of
    ``starts`` and each generator seed of ``draws``, gradient flow of the two-neuron
    net from :func:`~twolayer.theory.lyu2021.thm55_unequal_start` to
    ``t = 10^max(log10_times)`` (log-time horizon), and at each horizon of
    ``log10_times`` the distance of ``θ/‖θ‖`` to ``½(w*, −w*, 1, −1)`` and the
    norm imbalance ``v`` (:func:`~twolayer.theory.lyu2021.norm_imbalance`).

    Returns
    -------
    pd.DataFrame
        One row per (start, draw, horizon): ``norm``, ``ratio``, ``draw``,
        ``log10_t``, ``distance``, ``imbalance``.
    """
    from ..models import TwoLayerNet

    limit = lyu2021.two_neuron_limit(w_star)
    times = [float(x) for x in log10_times]
    rows = []
    for norm, ratio in starts:
        for s in draws:
            rng = np.random.default_rng(s)
            W0, a0 = lyu2021.thm55_unequal_start(w_star, norm, ratio, rng)
            net = TwoLayerNet.from_weights(W0, a0, alpha)
            run = flows.gradient_flow(
                net, ds, log10_t_max=max(times), snapshot_log10_times=times
            )
            snaps = run.snapshots[-len(times) :]
            for lt, snap in zip(times, snaps):
                rows.append(
                    dict(
                        norm=norm,
                        ratio=ratio,
                        draw=s,
                        log10_t=lt,
                        distance=lyu2021.direction_distance(
                            snap["W"], snap["a"], *limit
                        ),
                        imbalance=lyu2021.norm_imbalance(snap["W"], snap["a"]),
                    )
                )
    return pd.DataFrame(rows)


def imbalance_exponents(
    ds: data.Dataset,
    w_star: Sequence[float],
    alpha: float,
    start: tuple[float, float],
    draws: Iterable[int],
    log10_times: Sequence[float],
    lo: float = 1e-6,
    hi: float = 1e-2,
) -> np.ndarray:
    """Thm 5.5's equalisation rate: per generator seed of ``draws``, the two-neuron
    flow from the ``(norm, ratio)`` start of :func:`thm55_unequal` followed to
    ``t = 10^max(log10_times)``, and the exponent ``d ln|v| / d ln t`` of its norm
    imbalance ``v`` fitted over ``lo ≤ |v| ≤ hi``
    (:func:`~twolayer.theory.lyu2021.imbalance_exponent`; ``log10_times`` must be
    dense enough to put three snapshots in that window).

    A linearisation about the limit ``½(w*, −w*, 1, −1)`` (the turn-4 audit's)
    gives ``−((1−α)/(1+α))²``.

    Returns
    -------
    np.ndarray
        One exponent per draw (NaN where the window holds fewer than three
        snapshots).
    """
    runs = thm55_unequal(ds, w_star, alpha, [start], draws, log10_times)
    return np.array(
        [
            lyu2021.imbalance_exponent(g["log10_t"], g["imbalance"], lo, hi)
            for _, g in runs.groupby("draw", sort=False)
        ]
    )


def thm56_local_flows(
    ds: data.Dataset,
    w_star: Sequence[float],
    m: int,
    alpha: float,
    norm: float,
    eps: float,
    t_max: float,
    draws: Iterable[int],
) -> pd.DataFrame:
    """Thm 5.6 over draws: :func:`~twolayer.theory.lyu2021.thm56_local_flow`
    (the flow from norm ``norm`` at distance ``eps`` from
    ``θ̄* = π_b(½(w*, −w*, 1, −1))`` and from a random direction), one row per
    generator seed of ``draws``.

    Returns
    -------
    pd.DataFrame
        Columns ``near``, ``random`` (final distance to ``θ̄*``) and
        ``*_margin0``, ``*_margin`` (normalized margin at the start and the end
        in units of Thm 4.2's ``γ*``), one row per draw.
    """
    limit = lyu2021.two_neuron_limit(w_star)
    gamma_star = lyu2021.global_max_margin_symmetric(ds.X, ds.y, alpha)
    rows = [
        lyu2021.thm56_local_flow(ds, limit, m, alpha, norm, eps, gamma_star, t_max, s)
        for s in draws
    ]
    return pd.DataFrame(rows)


# --- Theorem 6.2's regime, measured (a grid too costly for a page run) -------------
#
# The failure frequency of Thm 6.2's limit over init seeds as H, K, eps and the init
# scale sigma vary, on the book's set (data seed 2) and on sets redrawn per seed.
# Computed once by ``python -m twolayer.experiments.lyu2021 thm62-regime`` and stored
# in data/sweeps/lyu2021__thm62_regime.parquet with the code key of what it ran
# (:func:`thm62_regime_key`); the hinted page reads it with :func:`thm62_regime_load`.

THM62_T_MAX = 1e40
THM62_SEEDS = tuple(range(20))
THM62_RTOL = 1e-4
THM62_CHECK = (1e10, 1e20, 1e30, 1e40)  # horizons the error and certificate are read at
THM62_BOOK_DATA = 2  # the hinted page's data seed
THM62_REDRAW = 1000  # redrawn sets: data seed THM62_REDRAW + init seed
THM62_SETTINGS = (
    dict(H=40.0, K=1.0, eps=0.05, init_scale=1e-6, data="book"),
    dict(H=20.0, K=1.0, eps=0.05, init_scale=1e-6, data="book"),
    dict(H=20.0, K=1.0, eps=0.05, init_scale=1e-12, data="book"),
    dict(H=20.0, K=2.0, eps=0.05, init_scale=1e-6, data="book"),
    dict(H=20.0, K=1.0, eps=0.025, init_scale=1e-6, data="book"),
    dict(H=40.0, K=1.0, eps=0.05, init_scale=1e-6, data="redrawn"),
    dict(H=20.0, K=1.0, eps=0.05, init_scale=1e-6, data="redrawn"),
)
THM62_PATH = "data/sweeps/lyu2021__thm62_regime.parquet"


def thm62_regime_point(
    H: float,
    K: float,
    eps: float,
    init_scale: float,
    data: str,
    seed: int,
    n: int = 20,
    width: int = 10,
    alpha: float = 0.5,
) -> dict:
    """One run of Thm 6.2's flow (balanced init, seed ``seed``) on the planar hinted
    set (:func:`hinted_plane`; ``data="book"``: data seed :data:`THM62_BOOK_DATA`,
    ``"redrawn"``: :data:`THM62_REDRAW` + ``seed``) to :data:`THM62_T_MAX`.

    Returns the relative sup error to ``½φ(⟨w*,x⟩)`` (``err_<t>``) and the certified
    limit margin / (ε/2) (``cert_<t>``: Lyu & Li's smoothed margin, non-decreasing,
    a lower bound on the limit's margin) at each horizon of :data:`THM62_CHECK`, the
    final normalised margin / (ε/2), and the phase-I landscape of the set: local
    maxima of ``G`` and how many lie outside the band ``|angle| ≤ arctan(ε/K)``."""
    data_seed = THM62_BOOK_DATA if data == "book" else THM62_REDRAW + int(seed)
    if data not in ("book", "redrawn"):
        raise ValueError(f"data must be 'book' or 'redrawn', got {data!r}")
    _, w_star, _, sets, grid = hinted_plane(n, (H,), K, eps, data_seed)
    ds = sets[H]
    _, _, peaks = lyu2021.phase1_landscape(ds.X, ds.y, alpha, w_star)
    band = float(np.degrees(np.arctan(eps / K)))
    times = np.union1d(np.geomspace(0.1, THM62_T_MAX, 42), THM62_CHECK)
    run = lyu2021.gradient_flow_from_init(
        ds,
        width,
        alpha,
        init_scale,
        int(seed),
        THM62_T_MAX,
        init="balanced",
        reflect="none",
        snapshot_times=times,
        rtol=THM62_RTOL,
    )
    target = lyu2021.hinted_limit_function(grid, w_star, alpha)
    snap_t = np.asarray(run.times, float)
    out = dict(data_seed=data_seed, band=band, n_peaks=len(peaks))
    out["peaks_outside"] = int(np.sum(np.abs(peaks) > band))
    out["outer_peak"] = float(np.max(np.abs(peaks))) if len(peaks) else np.nan
    log_loss = np.asarray(run.records["log_loss"], float)
    log_scale = np.asarray(run.records["log_scale"], float)
    for t in THM62_CHECK:
        i = int(np.argmin(np.abs(np.log(snap_t) - np.log(t))))
        s = run.snapshots[i]
        key = f"{np.log10(t):.0f}"
        out[f"err_{key}"] = lyu2021.limit_error(s["W"], s["a"], grid, target, alpha)
        sm = lyu2021.fitted_smoothed_margins(
            log_loss[: i + 1], log_scale[: i + 1], ds.n
        )
        out[f"cert_{key}"] = float(sm.max() / (eps / 2)) if len(sm) else np.nan
    end = run.snapshots[-1]
    out["margin"] = float(
        lyu2021.normalized_margins([end], ds.X, ds.y, alpha)[0] / (eps / 2)
    )
    return out


def thm62_outcome(err: float, cert: float, tol: float = 1e-3) -> str:
    """A run's verdict at its horizon: ``"converges"`` (error to ½φ ≤ ``tol``),
    ``"fails"`` (certified limit margin above ε/2 by more than ``tol``: the limit
    cannot be ½φ, whose margin is ε/2 — a failure that has stalled for good) or
    ``"not resolved"`` (neither yet: still moving)."""
    if err <= tol:
        return "converges"
    if cert > 1 + tol:
        return "fails"
    return "not resolved"


def thm62_regime_key() -> str:
    """The code key of the stored grid: the files every flow shares, the grid's
    settings and the library code a point runs."""
    import hashlib
    from pathlib import Path

    from ..codekey import FLOW_CODE, canonical, source_closure

    lib = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in FLOW_CODE:
        h.update(canonical((lib / rel).read_text()))
    settings = (THM62_T_MAX, THM62_SEEDS, THM62_RTOL, THM62_CHECK, THM62_SETTINGS)
    h.update(repr((settings, THM62_BOOK_DATA, THM62_REDRAW)).encode())
    h.update(repr(source_closure([thm62_regime_point])).encode())
    return h.hexdigest()[:12]


def _thm62_timed(point: dict) -> dict:
    import time

    t0 = time.perf_counter()
    out = thm62_regime_point(**point)
    return dict(point, **out, seconds=time.perf_counter() - t0)


_THM62_POINT = ("H", "K", "eps", "init_scale", "data", "seed")


def thm62_priority_points() -> list[dict]:
    """The grid's points in the order that makes a partial grid most useful: the
    page's three main settings (H = 40 and 20 at σ = 1e-6, H = 20 at σ = 1e-12, the
    book's set) to 12 seeds and the others to 8, then the main ones to 20 and the
    others to 10."""
    main, other = THM62_SETTINGS[:3], THM62_SETTINGS[3:]
    order = [(main, range(12)), (other, range(8))]
    order += [(main, range(12, 20)), (other, range(8, 10))]
    return [
        dict(s, seed=k) for settings, seeds in order for k in seeds for s in settings
    ]


def thm62_regime_compute(workers: int = 1, path=None, points=None, resume=True):
    """Compute the grid (every setting × seed), storing the table after each point
    (so a partial grid is usable), with the code key and the commit."""
    import subprocess
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    path = root / THM62_PATH if path is None else Path(path)
    if points is None:
        points = [dict(s, seed=k) for k in THM62_SEEDS for s in THM62_SETTINGS]
    rows = []
    if resume and path.exists():  # keep the stored points, compute the others
        rows = pd.read_parquet(path).drop(columns=["code_key", "commit"])
        rows = rows.to_dict("records")
        done = {tuple(r[k] for k in _THM62_POINT) for r in rows}
        points = [p for p in points if tuple(p[k] for k in _THM62_POINT) not in done]
    key = thm62_regime_key()
    git = ["git", "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(git, cwd=root, capture_output=True, text=True)
    commit = commit.stdout.strip()

    def save():
        frame = pd.DataFrame(rows).assign(code_key=key, commit=commit)
        tmp = path.with_suffix(".tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(path)

    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_thm62_timed, p) for p in points]
        for f in as_completed(futures):
            rows.append(f.result())
            save()
    return pd.DataFrame(rows)


def thm62_regime_load(path=None):
    """The stored grid with each run's outcome (:func:`thm62_outcome` at
    :data:`THM62_T_MAX`) and whether it is stale (code key changed)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    frame = pd.read_parquet(root / THM62_PATH if path is None else path)
    top = f"{np.log10(THM62_T_MAX):.0f}"
    frame["outcome"] = [
        thm62_outcome(e, c) for e, c in zip(frame[f"err_{top}"], frame[f"cert_{top}"])
    ]
    stale = bool((frame["code_key"] != thm62_regime_key()).any())
    return frame, stale


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Lyu chapter grids")
    parser.add_argument("grid", choices=["thm62-regime"])
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    thm62_regime_compute(args.workers, points=thm62_priority_points())


def thm62_setting_label(row) -> str:
    """A grid setting as a reader reads it: ``H = 20, σ = 1e-12, book set``, naming
    K and ε only where they differ from the page's (1, 0.05)."""
    parts = [f"H = {row['H']:g}"]
    if row["K"] != 1.0:
        parts.append(f"K = {row['K']:g}")
    if row["eps"] != 0.05:
        parts.append(f"ε = {row['eps']:g}")
    parts.append(f"σ = {row['init_scale']:.0e}")
    parts.append("book's set" if row["data"] == "book" else "set redrawn per seed")
    return ", ".join(parts)


def thm62_regime_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per setting of the stored grid (:func:`thm62_regime_load`): the runs, how many
    converge / fail (certified) / are not resolved at the horizon, and the failure
    frequency with its two-sided 95 % Clopper–Pearson interval."""
    from scipy import stats

    keys = ["H", "K", "eps", "init_scale", "data"]
    rows = []
    for key, g in frame.groupby(keys, sort=False):
        row = dict(zip(keys, key))
        n = len(g)
        k = int((g["outcome"] == "fails").sum())
        lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
        hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
        rows.append(
            {
                "setting": thm62_setting_label(row),
                "runs": n,
                "converge": int((g["outcome"] == "converges").sum()),
                "fail": k,
                "not resolved": int((g["outcome"] == "not resolved").sum()),
                "failure frequency": k / n,
                "95% interval": f"{lo:.2f}–{hi:.2f}",
                **row,
            }
        )
    return pd.DataFrame(rows)


def thm62_gband_check(frame: pd.DataFrame) -> dict:
    """Does the phase-I scan ("no local maximum of G outside the band") predict the
    outcome on the sets redrawn per seed? Counts over the redrawn runs: failures
    among draws the scan calls inside the regime, convergences among those it calls
    outside."""
    red = frame[frame["data"] == "redrawn"]
    inside = red["peaks_outside"] == 0
    return dict(
        g_runs=len(red),
        g_inside=int(inside.sum()),
        g_inside_fail=int((inside & (red["outcome"] == "fails")).sum()),
        g_outside=int((~inside).sum()),
        g_outside_conv=int((~inside & (red["outcome"] == "converges")).sum()),
    )


def thm62_select(
    frame: pd.DataFrame,
    H: float,
    K: float = 1.0,
    eps: float = 0.05,
    init_scale: float = 1e-6,
    data: str = "book",
) -> pd.DataFrame:
    """The runs of one setting of the stored grid, in seed order."""
    sel = (
        (frame["H"] == H)
        & (frame["K"] == K)
        & (frame["eps"] == eps)
        & (frame["init_scale"] == init_scale)
        & (frame["data"] == data)
    )
    return frame[sel].sort_values("seed")
