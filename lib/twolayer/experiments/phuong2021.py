"""Phuong & Lampert (ICLR 2021): the experiments of the chapter's pages.

Each function trains the networks of one figure over seeds (through ``flows``,
with the same calls and arguments as the pages made them, so stored runs are
reused) and returns what the page measures on them (:mod:`twolayer.theory.phuong2021`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import data, flows, models
from ..data import Dataset
from ..metrics import rank_ratio
from ..theory import phuong2021 as theory

FIT_LOSS = 0.05  # a run whose final training loss is above this did not fit the data


def _check_fit(trajs, what: str) -> None:
    """Refuse runs that did not fit their data (final loss ≥ :data:`FIT_LOSS`)."""
    worst = max(t.loss[-1] for t in trajs)
    if not worst < FIT_LOSS:
        raise RuntimeError(f"the {what} runs did not fit the data ({worst:.3g})")


def orthant_draws(n: int, d: int, seeds: list[int]) -> tuple[list[Dataset], list]:
    """§5.1's data (:func:`~twolayer.data.orthant_data`), one draw of ``n`` points
    in ``R^d`` per seed, and each draw's
    :func:`~twolayer.theory.phuong2021.data_geometry` (``w±`` of eqs. (6)-(7),
    the early-phase ``x̂±``, their cosines, the support ranks)."""
    draws = [data.orthant_data(n, d, seed=k) for k in seeds]
    return draws, [theory.data_geometry(ds.X, ds.y) for ds in draws]


def fig1_sgd(
    draws: list[Dataset],
    geo: list[dict],
    seeds: list[int],
    width: int,
    *,
    init_scale: float,
    large_init_scale: float,
    lr: float,
    epochs: int,
    batch_size: int,
    n_snapshots: int = 40,
) -> tuple[dict[str, list], dict[str, pd.DataFrame]]:
    """Fig. 1 (§5.1): width-``width`` two-layer nets trained by SGD on each draw
    from three initialisations — ``"paper"`` (PyTorch's default × ``init_scale``),
    ``"balanced"`` (Theorem 1's hypothesis, scale ``init_scale``) and ``"large"``
    (default × ``large_init_scale``).

    Returns the trajectories per setting (one per seed) and, per setting, a table
    of :func:`~twolayer.theory.phuong2021.sgd_statistics` (one row per seed).
    Raises if a setting's runs did not fit the data.
    """
    inits = {
        "paper": ("default", init_scale),
        "balanced": ("balanced", init_scale),
        "large": ("default", large_init_scale),
    }
    recipe = dict(lr=lr, epochs=epochs, batch_size=batch_size, n_snapshots=n_snapshots)
    runs, stats = {}, {}
    d = draws[0].X.shape[1]
    for name, (init, s) in inits.items():
        nets = [
            models.TwoLayerNet(d, width, init=init, init_scale=s, seed=k) for k in seeds
        ]
        runs[name] = [
            flows.sgd(net, ds, seed=k, **recipe)
            for net, ds, k in zip(nets, draws, seeds)
        ]
        _check_fit(runs[name], name)
        stats[name] = pd.DataFrame(
            theory.sgd_statistics(t.snapshots, ds.X, ds.y, g["w"], g["x"])
            for t, ds, g in zip(runs[name], draws, geo)
        )
    return runs, stats


def limit_times(early_time: float, t_max: float) -> np.ndarray:
    """The snapshot times of the limit flows: ``0``, ``early_time``, then
    log-spaced to ``t_max``, finer through the early phase (where Fig. 1c's
    statistic moves)."""
    return np.r_[
        0.0, early_time, np.logspace(-1, 3, 41), np.logspace(-1, np.log10(t_max), 121)
    ]


@dataclass
class LimitFlows:
    """Theorem 1's flows over seeds (:func:`limit_flows`): ``times`` the snapshot
    times after 0, ``i_early`` the index of the early-phase time in them,
    ``curves`` per seed the :func:`~twolayer.theory.phuong2021.flow_curves`,
    ``finals`` per seed ``(W, a)`` at ``t_max``, ``large_rank`` per seed
    ``σ3/σ1`` of the large-init flow at ``t_max``, ``wall_time`` of all flows."""

    times: np.ndarray
    i_early: int
    curves: list[dict[str, np.ndarray]]
    finals: list[tuple[np.ndarray, np.ndarray]]
    large_rank: list[float]
    wall_time: float


def limit_flows(
    draws: list[Dataset],
    geo: list[dict],
    seeds: list[int],
    width: int,
    *,
    init_scale: float,
    large_init_scale: float,
    t_max: float,
    early_time: float,
) -> LimitFlows:
    """Theorem 1's limit (``t → ∞``): gradient flow (:func:`flows.gradient_flow`)
    to ``t_max`` on each draw, from the balanced initialisation of scale
    ``init_scale`` and, as the large-initialisation rival, from PyTorch's default
    × ``large_init_scale``; snapshots at :func:`limit_times`."""
    times = limit_times(early_time, t_max)
    d = draws[0].X.shape[1]
    limits, large = (
        [
            flows.gradient_flow(
                models.TwoLayerNet(d, width, init=init, init_scale=s, seed=k),
                ds,
                t_max,
                snapshot_times=times,
            )
            for ds, k in zip(draws, seeds)
        ]
        for init, s in (("balanced", init_scale), ("default", large_init_scale))
    )
    t_grid = limits[0].times[1:]
    return LimitFlows(
        times=t_grid,
        i_early=int(np.argmin(np.abs(t_grid - early_time))),
        curves=[
            theory.flow_curves(r.snapshots[1:], ds.X, ds.y, g["w"], g["x"])
            for r, ds, g in zip(limits, draws, geo)
        ],
        finals=[(r.final["W"], r.final["a"]) for r in limits],
        large_rank=[rank_ratio(r.final["W"], 2) for r in large],
        wall_time=sum(r.wall_time for r in limits + large),
    )


def fresh_points(n: int, d: int, seeds: list[int]) -> list[np.ndarray]:
    """Corollary 1's held-out points: ``n`` fresh §5.1 points per seed (data seed
    ``10_000 + seed``)."""
    return [data.orthant_data(n, d, seed=10_000 + k).X for k in seeds]


def limit_table(
    finals: list[tuple[np.ndarray, np.ndarray]],
    draws: list[Dataset],
    geo: list[dict],
    fresh: list[np.ndarray],
    kkt_tight: float,
) -> pd.DataFrame:
    """Theorem 1, Lemma C.1 and Corollary 1 at the end of each flow, one row per
    seed: :func:`~twolayer.theory.phuong2021.limit_tests` (suffix ``_x``: the
    same neurons turned to ``x̂±``), ``cor1`` (relative L2 distance, scale
    fitted, of the network to ``ρ(w+·x) − ρ(w−·x)`` on the ``fresh`` points),
    ``cor1_x`` (the early-phase model ``c+ρ(x̂+·x) − c−ρ(x̂−·x)``, both
    coefficients fitted) and ``c1`` (Lemma C.1's construction residual,
    :func:`~twolayer.theory.phuong2021.construction_residual`)."""
    T = pd.DataFrame(
        theory.limit_tests(W, a, ds.X, ds.y, g["w"], g["x"], kkt_tight)
        for (W, a), ds, g in zip(finals, draws, geo)
    )
    target = [theory.limit_function(X, *g["w"]) for X, g in zip(fresh, geo)]
    outputs = [models.two_layer_output(W, a, X) for (W, a), X in zip(finals, fresh)]
    T["cor1"] = [theory.scaled_distance(f, g) for f, g in zip(outputs, target)]
    T["cor1_x"] = [
        theory.best_two_ray_distance(*g["x"], X, f)
        for g, X, f in zip(geo, fresh, target)
    ]
    T["c1"] = [
        theory.construction_residual(W, a, ds.X, ds.y)
        for (W, a), ds in zip(finals, draws)
    ]
    return T


def cor1_over_widths(
    draws: list[Dataset],
    geo: list[dict],
    seeds: list[int],
    fresh: list[np.ndarray],
    widths: list[int],
    *,
    init_scale: float,
    t_max: float,
) -> np.ndarray:
    """Corollary 1 at other widths: per seed, the worst over ``widths`` of the
    relative L2 distance (scale fitted) on the ``fresh`` points of the flow's end
    network (balanced init ``init_scale``, to ``t_max``) to
    ``ρ(w+·x) − ρ(w−·x)``."""
    d = draws[0].X.shape[1]
    worst = np.zeros(len(seeds))
    for p in widths:
        for i, (ds, k) in enumerate(zip(draws, seeds)):
            net = models.TwoLayerNet(
                d, p, init="balanced", init_scale=init_scale, seed=k
            )
            end = flows.gradient_flow(net, ds, t_max, n_snapshots=2).final
            f = models.two_layer_output(end["W"], end["a"], fresh[i])
            target = theory.limit_function(fresh[i], *geo[i]["w"])
            worst[i] = max(worst[i], theory.scaled_distance(f, target))
    return worst


def lemma2(
    draws: list[Dataset], seeds: list[int], starts: int
) -> tuple[np.ndarray, np.ndarray]:
    """Lemma 2 (one extremal sector of each sign) by
    :func:`~twolayer.theory.phuong2021.lemma2_ascent` from ``starts`` random
    points, per seed, on the §5.1 ``draws`` and on the rival
    :func:`~twolayer.theory.phuong2021.two_cluster_data` (linearly but not
    orthogonally separable): two ``(seeds, 2)`` arrays of (spread of the end
    points, least share of the examples in the sector)."""
    n, d = draws[0].X.shape
    rivals = [theory.two_cluster_data(n, d, seed=k) for k in seeds]
    return tuple(
        np.array([theory.lemma2_ascent(s.X, s.y, starts, k) for s, k in zip(D, seeds)])
        for D in (draws, rivals)
    )


def residual_runs(
    draws: list[Dataset],
    seeds: list[int],
    width: int,
    depth: int,
    init_scales: dict[str, float],
    *,
    lr: float,
    epochs: int,
    batch_size: int,
) -> tuple[dict[str, list], dict[str, list]]:
    """Fig. 2 (§5.2): residual nets of ``depth`` weight matrices
    (:class:`~twolayer.models.ResidualNet`) trained by SGD on each draw, one
    setting per named init multiplier in ``init_scales``. Returns the weight
    matrices after and before training, per setting and seed. Raises if a
    setting's runs did not fit the data."""
    recipe = dict(lr=lr, epochs=epochs, batch_size=batch_size, n_snapshots=2)
    d = draws[0].X.shape[1]
    ends, starts = {}, {}
    for name, s in init_scales.items():
        nets = [
            models.ResidualNet(d, width, depth, init_scale=s, seed=k) for k in seeds
        ]
        trajs = [
            flows.sgd(net, ds, seed=k, **recipe)
            for net, ds, k in zip(nets, draws, seeds)
        ]
        _check_fit(trajs, f"init x{s:g}")
        ends[name] = [net.weight_matrices() for net in nets]
        inits = [flows.load_state(net, t.snapshots[0]) for net, t in zip(nets, trajs)]
        starts[name] = [net.weight_matrices() for net in inits]
    return ends, starts


def residual_ranks(ends: dict[str, list], starts: dict[str, list]) -> dict:
    """Fig. 2a–c: ``σ3/σ1`` of every hidden layer
    (:func:`~twolayer.theory.phuong2021.hidden_rank_ratios`), a ``(seeds,
    layers)`` array per setting of ``ends``, plus ``"init"`` (the first setting's
    initial matrices) and ``"update"`` (its learned updates ``W(T) − W(0)``)."""
    first = next(iter(ends))
    out = {
        name: np.array([theory.hidden_rank_ratios(W) for W in Ws])
        for name, Ws in ends.items()
    }
    out["init"] = np.array([theory.hidden_rank_ratios(W) for W in starts[first]])
    updates = [
        [W - W0 for W, W0 in zip(end, start)]
        for end, start in zip(ends[first], starts[first])
    ]
    out["update"] = np.array([theory.hidden_rank_ratios(U) for U in updates])
    return out


def appd_runs(
    seeds: list[int],
    *,
    init_scale: float,
    large_init_scale: float,
    epochs: int,
    long_epochs: int,
    **recipe,
) -> tuple[list[dict], list[dict]]:
    """App. D: :func:`~twolayer.theory.phuong2021.appd_run` per seed, with the FC
    weights × ``init_scale`` for ``epochs`` epochs continued to ``long_epochs``
    (every layer recorded on the first seed), and × ``large_init_scale`` (the
    rival) for ``epochs``; ``recipe`` the remaining arguments of ``appd_run``.
    Raises if a run misclassifies more than 1% of its training images."""
    main = [
        theory.appd_run(
            k,
            init_scale=init_scale,
            epochs=epochs,
            n_epochs=long_epochs,
            all_layers=k == seeds[0],
            **recipe,
        )
        for k in seeds
    ]
    large = [
        theory.appd_run(
            k, init_scale=large_init_scale, epochs=epochs, n_epochs=epochs, **recipe
        )
        for k in seeds
    ]
    for r in main + large:
        if r["errors"] > r["train"].n / 100:
            raise RuntimeError(f"a run misclassifies {r['errors']} images")
    return main, large


@dataclass
class Layer7:
    """App. D's 7th layer over seeds (:func:`appd_layer7`)."""

    after: dict[str, pd.DataFrame]
    pre: dict[str, pd.DataFrame]
    frozen: list[float]
    moved: list[float]


def appd_layer7(main: list[dict], large: list[dict]) -> Layer7:
    """App. D's 7th layer over seeds (runs of :func:`appd_runs`).

    ``after``: :func:`~twolayer.theory.phuong2021.layer7_statistics` of the
    layer after its ReLU, one table (a row per seed) per snapshot (``"init"``,
    ``"end"`` after ``epochs``, ``"long"`` at the end); ``pre``: the same of the
    paper's ``f⁷`` (before the ReLU) for ``"end"``, ``"large"`` (the rival at
    ``epochs``) and ``"long"``; ``frozen`` and ``moved``: per seed the share of
    layer 7's (image, unit) activations that change from ``epochs`` to the end,
    and from initialisation to ``epochs``
    (:func:`~twolayer.theory.phuong2021.pattern_change`)."""
    after = {
        when: pd.DataFrame(
            theory.layer7_statistics(r["reps"][i][7], r["reps"][i][0], r["train"].y)
            for r in main
        )
        for i, when in enumerate(("init", "end", "long"))
    }
    pre = {
        name: pd.DataFrame(
            theory.layer7_statistics(r["pre7"][i], r["reps"][i][0], r["train"].y)
            for r in runs
        )
        for name, runs, i in (("end", main, 1), ("large", large, 1), ("long", main, 2))
    }
    return Layer7(
        after=after,
        pre=pre,
        frozen=[theory.pattern_change(r["reps"][1][7], r["reps"][2][7]) for r in main],
        moved=[theory.pattern_change(r["reps"][0][7], r["reps"][1][7]) for r in main],
    )


def appd_w7_spectra(
    runs: dict[str, list[dict]], level: float, k: int = 10
) -> dict[str, pd.DataFrame]:
    """App. D Fig. 4: per setting of ``runs`` (:func:`appd_runs`' lists), a table
    with a row per seed of ``W7`` after ``epochs``: ``nsig`` (singular values
    above ``level`` times the largest,
    :func:`~twolayer.theory.phuong2021.significant_singular_values`) and
    ``beyond`` (the share of ``‖W7‖_F²`` beyond the ``k`` largest,
    :func:`~twolayer.theory.phuong2021.energy_beyond`)."""
    return {
        name: pd.DataFrame(
            dict(
                nsig=theory.significant_singular_values(r["W7"][1], level),
                beyond=theory.energy_beyond(r["W7"][1], k),
            )
            for r in rs
        )
        for name, rs in runs.items()
    }


def closer_limit_rows(W1, X, y) -> np.ndarray:
    """The first layer ``W1`` with each row moved to the closer of ``w±``
    (:func:`~twolayer.theory.phuong2021.max_margin_directions` of ``X, y``),
    keeping its norm: the layer at the limit Fig. 2g's statistic reads 1 on."""
    from ..metrics import row_cosines

    W1 = np.asarray(W1, float)
    wp, wm = theory.max_margin_directions(X, y)
    plus = row_cosines(W1, wp) >= row_cosines(W1, wm)
    return theory.limit_network(W1, np.where(plus, 1.0, -1.0), wp, wm)


def residual_first_layer(
    ends: dict[str, list], draws: list[Dataset], level: float
) -> dict[str, pd.DataFrame]:
    """Fig. 2d, g (§5.2): per setting of ``ends`` (weight matrices per seed), a
    table of :func:`~twolayer.theory.phuong2021.first_layer_statistics` of the
    first layer at ``level``, one row per seed."""
    return {
        name: pd.DataFrame(
            theory.first_layer_statistics(W[0], ds.X, ds.y, level)
            for W, ds in zip(Ws, draws)
        )
        for name, Ws in ends.items()
    }


# -- App. D at the paper's training length: runs computed by a command, stored -------
APPD_EPOCHS = 50  # App. D: "50 epochs"
APPD_CHECKPOINTS = (0, 1, 2, 5, 10, 20, 30, 40, 50)  # epochs measured along each run
APPD_ALL_LAYERS = (0, 50)  # epochs at which every layer is measured (Fig. 3)
APPD_SCALES = (0.05, 1.0)  # FC init multipliers: the paper's, and the rival's
APPD_SEEDS = tuple(range(5))
APPD_RECIPE = dict(digits=(0, 1), channels=(16, 32), batch_size=128, lr=1e-3)
APPD_BINS = np.linspace(-1.0, 1.0, 41)  # cosine histograms of Fig. 3
APPD_STORE = (
    Path(__file__).resolve().parents[3]
    / "data"
    / "sweeps"
    / "phuong2021_appd_epochs.parquet"
)


def appd_images(digits: tuple[int, int] = (0, 1)) -> Dataset:
    """Every training image of the two ``digits`` the book has: all 1,000 of the
    embedded sample (its train and test parts together; 500 per digit), or the
    full MNIST training split (12,665 for 0 and 1, App. D's data) when
    ``$TWOLAYER_MNIST_DIR`` is set. Fixed: a seed varies the initialisation and
    the batch order only."""
    import os

    parts = [data.mnist_pair(*digits, "train")]
    if not os.environ.get(data.MNIST_ENV):
        parts.append(data.mnist_pair(*digits, "test"))
    X = np.concatenate([p.X for p in parts])
    y = np.concatenate([p.y for p in parts])
    return Dataset(X, y, parts[0].name, parts[0].provenance + "; every image")


def _cos_stats(R, y) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Cosine statistics of representation rows ``R``: quantiles, largest
    cross-class cosine, mean same minus mean cross (the class separation), and
    the cross- and same-class cosines themselves."""
    U = theory._unit_rows(R)
    C = U @ U.T
    pos = y > 0
    cross = C[np.ix_(pos, ~pos)].ravel()
    iu = np.triu_indices(len(y), 1)
    same = C[iu][np.equal.outer(y, y)[iu]]
    qc, qs = np.quantile(cross, (0.05, 0.5, 0.95)), np.quantile(same, (0.05, 0.5, 0.95))
    stats = dict(
        cross_q05=qc[0],
        cross_median=qc[1],
        cross_q95=qc[2],
        cross_max=cross.max(),
        same_q05=qs[0],
        same_median=qs[1],
        same_q95=qs[2],
        sep=same.mean() - cross.mean(),
    )
    return {k: float(v) for k, v in stats.items()}, cross, same


def _w7_rows(W7, W8) -> dict[str, np.ndarray]:
    """Fig. 4 per row of ``W7``: its norm, its coordinates on ``W7``'s top-2
    right singular directions, the sign of its outer weight, and its cosine with
    the mean row of its own sign group and of the other group."""
    U, s, _ = np.linalg.svd(W7, full_matrices=False)
    sign = np.where(W8 > 0, 1.0, -1.0)
    N = theory._unit_rows(W7)
    means = {
        g: N[sign == g].mean(0) if (sign == g).any() else 0 * N[0] for g in (1, -1)
    }
    own = np.array([N[j] @ means[sign[j]] for j in range(len(sign))])
    other = np.array([N[j] @ means[-sign[j]] for j in range(len(sign))])
    norm_own = np.array([np.linalg.norm(means[g]) for g in sign])
    norm_other = np.array([np.linalg.norm(means[-g]) for g in sign])
    return dict(
        norm=np.linalg.norm(W7, axis=1),
        x=U[:, 0] * s[0],
        y=U[:, 1] * s[1],
        w8=np.asarray(W8, float),
        cos_own=own / np.maximum(norm_own, 1e-300),
        cos_other=other / np.maximum(norm_other, 1e-300),
    )


def appd_long_run(seed: int, init_scale: float) -> pd.DataFrame:
    """App. D at the paper's length: :class:`~twolayer.models.ConvNet` (the book's
    conv stack), FC weights × ``init_scale``, Adam (:data:`APPD_RECIPE`) for
    :data:`APPD_EPOCHS` epochs over :func:`appd_images`. Returns a long table
    (``table, epoch, layer, key, value``): ``along`` — at each of
    :data:`APPD_CHECKPOINTS`, the loss, training errors, layer 7's cosine
    statistics before (``layer="7pre"``) and after its ReLU (``"7"``), its unit
    counts, how much its activation pattern changed since the previous checkpoint
    (``pattern_prev``) and until the end (``pattern_end``), and ``W7``'s spectrum
    (``beyond10``: share of ``‖W7‖_F²`` beyond the ten largest singular values;
    ``nsig``: values above 10% of the largest); ``layers`` — every layer's cosine
    statistics at :data:`APPD_ALL_LAYERS`; ``hist`` — their cross- and same-class
    cosine histograms (:data:`APPD_BINS`); ``rows`` — :func:`_w7_rows` at the end;
    ``sv`` — the top-20 singular values of ``W7`` at the end."""
    import torch

    from ..metrics import singular_values

    train = appd_images(APPD_RECIPE["digits"])
    net = models.ConvNet(APPD_RECIPE["channels"], fc_scale=init_scale, seed=seed)
    per_epoch = -(-train.n // APPD_RECIPE["batch_size"])
    traj = flows.adam(
        net,
        train,
        lr=APPD_RECIPE["lr"],
        epochs=APPD_EPOCHS,
        batch_size=APPD_RECIPE["batch_size"],
        seed=seed,
        snapshot_steps=[e * per_epoch for e in APPD_CHECKPOINTS],
    )
    X, y = torch.tensor(train.X, dtype=torch.float32), train.y
    rows, patterns = [], []

    def put(table, epoch, layer, **values):
        rows.extend(
            dict(table=table, epoch=epoch, layer=layer, key=k, value=float(v))
            for k, v in values.items()
        )

    for epoch, state in zip(APPD_CHECKPOINTS, traj.snapshots, strict=True):
        model = flows.load_state(net, state).eval()
        with torch.no_grad():
            T = model.representations(X)
            pre7 = model.fc7(T[6]).numpy().astype(float)
            out = model.fc8(T[7]).squeeze(-1).numpy().astype(float)
        post7 = T[7].numpy().astype(float)
        patterns.append(post7 > 0)
        loss = np.mean(np.logaddexp(0, -y * out))
        put("along", epoch, "", loss=loss, errors=np.sum(y * out <= 0), n=train.n)
        W7 = state["fc7.weight"].astype(float)
        s = singular_values(W7)
        put(
            "along",
            epoch,
            "",
            beyond10=theory.energy_beyond(W7, 10),
            nsig=np.sum(s > 0.1 * s[0]),
        )
        for name, R in (("7", post7), ("7pre", pre7)):
            put("along", epoch, name, **_cos_stats(R, y)[0])
        put("along", epoch, "7", **theory.unit_counts(post7, y))
        if epoch in APPD_ALL_LAYERS:
            reps = [r.numpy().astype(float) for r in T] + [pre7]
            for layer, R in zip([*map(str, range(8)), "7pre"], reps):
                stats, cross, same = _cos_stats(R, y)
                put("layers", epoch, layer, **stats)
                for kind, v in (("cross", cross), ("same", same)):
                    counts = np.histogram(v, APPD_BINS)[0]
                    put(
                        "hist",
                        epoch,
                        layer,
                        **{f"{kind}_{i}": c for i, c in enumerate(counts)},
                    )
    for i, epoch in enumerate(APPD_CHECKPOINTS):
        put(
            "along",
            epoch,
            "7",
            pattern_prev=np.mean(patterns[i] != patterns[max(i - 1, 0)]),
            pattern_end=np.mean(patterns[i] != patterns[-1]),
        )
    last = traj.snapshots[-1]
    W7, W8 = last["fc7.weight"].astype(float), last["fc8.weight"].astype(float).ravel()
    per_row = {**_w7_rows(W7, W8), "live": patterns[-1].any(0)}
    for j in range(len(W8)):
        put("rows", APPD_EPOCHS, str(j), **{k: v[j] for k, v in per_row.items()})
    put(
        "sv",
        APPD_EPOCHS,
        "",
        **{f"s{i}": v for i, v in enumerate(singular_values(W7)[:20])},
    )
    frame = pd.DataFrame(rows)
    frame.insert(0, "init_scale", float(init_scale))
    frame.insert(0, "seed", int(seed))
    return frame


def appd_code_key() -> str:
    """What the stored App. D runs were computed with (12 hex digits): the files
    that build the data, the network and the Adam run, the code
    :func:`appd_long_run` calls (:func:`twolayer.codekey.source_closure`) and the
    settings, as syntax trees (:mod:`twolayer.codekey`), and the data's
    :func:`~twolayer.data.fingerprint`."""
    import hashlib

    from ..codekey import canonical, source_closure

    lib = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in ("data.py", "models.py", "flows/steps.py", "flows/trajectory.py"):
        h.update(canonical((lib / rel).read_text()))
    h.update(repr(source_closure([appd_long_run])).encode())
    settings = (APPD_EPOCHS, APPD_CHECKPOINTS, APPD_ALL_LAYERS, APPD_RECIPE)
    h.update(repr((*settings, APPD_BINS.tolist())).encode())
    h.update(data.fingerprint().encode())
    return h.hexdigest()[:12]


def appd_store(seeds=APPD_SEEDS, scales=APPD_SCALES, scratch: Path | None = None):
    """Compute the missing (seed, init scale) runs of :func:`appd_long_run` and
    store them all in :data:`APPD_STORE` with their :func:`appd_code_key`. Each
    finished run is kept in ``scratch`` (default ``data/cache/phuong2021_appd``)
    until the store is written, so an interrupted command resumes."""
    import time

    key = appd_code_key()
    scratch = Path(scratch or APPD_STORE.parents[1] / "cache" / "phuong2021_appd")
    scratch.mkdir(parents=True, exist_ok=True)
    frames = []
    for seed in seeds:
        for scale in scales:
            part = scratch / f"{key}_{seed}_{scale:g}.parquet"
            if not part.exists():
                start = time.time()
                appd_long_run(seed, scale).to_parquet(part)
                print(
                    f"seed {seed}, x{scale:g}: {time.time() - start:.0f} s", flush=True
                )
            frames.append(pd.read_parquet(part))
    frame = pd.concat(frames, ignore_index=True)
    frame["code_key"] = key
    frame.to_parquet(APPD_STORE, index=False)
    return frame


@dataclass
class AppdStored:
    """The stored App. D runs (:func:`appd_load`)."""

    frame: pd.DataFrame
    stale: bool
    key: str

    def table(self, table: str, **match) -> pd.DataFrame:
        """Rows of one ``table`` matching ``match`` (column = value), pivoted to one
        column per ``key``."""
        f = self.frame[self.frame["table"] == table]
        for col, value in match.items():
            f = f[f[col] == value]
        return f.pivot_table(
            index=["init_scale", "seed", "epoch", "layer"],
            columns="key",
            values="value",
        ).reset_index()


def appd_histograms(stored: AppdStored, seed: int, epoch: int) -> dict:
    """Fig. 3's stored cosine histograms of one run at one epoch: per layer, the
    counts ``(cross, same)`` over :data:`APPD_BINS`."""
    H = stored.table("hist", seed=seed, epoch=epoch).set_index("layer")
    nb = len(APPD_BINS) - 1
    return {
        layer: tuple(
            H.loc[layer, [f"{kind}_{i}" for i in range(nb)]].to_numpy(float)
            for kind in ("cross", "same")
        )
        for layer in H.index
    }


def appd_load(seeds, scales=APPD_SCALES) -> AppdStored:
    """The stored runs of ``seeds`` at ``scales`` (:data:`APPD_STORE`), and whether
    they are stale (computed with other code or data than now). Raises if a run
    is missing: compute it with ``python -m twolayer.experiments.phuong2021``."""
    frame = pd.read_parquet(APPD_STORE)
    want = {(int(s), float(c)) for s in seeds for c in scales}
    have = set(zip(frame["seed"], frame["init_scale"]))
    if want - have:
        raise RuntimeError(
            f"runs {sorted(want - have)} are not stored: python -m "
            "twolayer.experiments.phuong2021 --seeds ..."
        )
    frame = frame[[(s, c) in want for s, c in zip(frame["seed"], frame["init_scale"])]]
    key = appd_code_key()
    return AppdStored(frame, bool((frame["code_key"] != key).any()), key)


APPD_LAYERS = ("0", "1", "2", "3", "4", "5", "6", "7pre", "7")
"""The representations App. D measures, input to output: ``"0"`` the image, ``"1"``
to ``"6"`` the conv layers (after their ReLU), ``"7pre"`` the paper's ``f^7`` (the
first FC layer before its ReLU), ``"7"`` the same after it."""
APPD_HIERARCHY = ("1", "2", "3", "4", "5", "6", "7pre")
"""The network's layers in order (Fig. 3's "layer hierarchy"), ``f^7`` read before
its ReLU as the paper writes it."""


@dataclass
class AppdUntrained:
    """App. D's untrained networks (:func:`appd_untrained`)."""

    layers: pd.DataFrame  # a row per (seed, layer): :func:`_cos_stats`
    w7: pd.DataFrame  # a row per seed: ``beyond10`` and ``nsig`` of ``W7``


def appd_untrained(seeds, init_scale: float = APPD_SCALES[0]) -> AppdUntrained:
    """The book's conv net (:func:`appd_long_run`'s) at initialisation, one per
    seed of ``seeds``, read on :func:`appd_images` as the stored runs are: the
    cosine statistics of every layer of :data:`APPD_LAYERS` and ``W7``'s spectrum
    (the share of ``‖W7‖_F²`` beyond its ten largest singular values and the
    number above 10% of the largest). Cosines do not depend on ``init_scale``."""
    import torch

    from ..metrics import singular_values

    train = appd_images(APPD_RECIPE["digits"])
    X = torch.tensor(train.X, dtype=torch.float32)
    layers, w7 = [], []
    for seed in seeds:
        net = models.ConvNet(
            APPD_RECIPE["channels"], fc_scale=init_scale, seed=int(seed)
        ).eval()
        with torch.no_grad():
            T = net.representations(X)
            reps = [*T[:7], net.fc7(T[6]), T[7]]
        for layer, R in zip(APPD_LAYERS, reps):
            stats = _cos_stats(R.numpy().astype(float), train.y)[0]
            layers.append(dict(seed=int(seed), layer=layer, **stats))
        W7 = net.fc7.weight.detach().numpy().astype(float)
        s = singular_values(W7)
        w7.append(
            dict(
                seed=int(seed),
                beyond10=theory.energy_beyond(W7, 10),
                nsig=int(np.sum(s > 0.1 * s[0])),
            )
        )
    return AppdUntrained(pd.DataFrame(layers), pd.DataFrame(w7))


def class_gaps(layers: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3's "same-class pairs more similar than cross-class pairs", per seed
    (rows) and layer (columns, in :data:`APPD_LAYERS` order): the median cosine of
    same-class pairs minus that of cross-class pairs, from a table with columns
    ``seed, layer, same_median, cross_median``."""
    gap = layers.assign(gap=layers["same_median"] - layers["cross_median"])
    table = gap.pivot_table(index="seed", columns="layer", values="gap")
    return table[[c for c in APPD_LAYERS if c in table.columns]]


def depth_trend(gaps: pd.DataFrame, layers=APPD_HIERARCHY) -> pd.Series:
    """Fig. 3's "higher layers more strongly separated": per seed, the Spearman
    rank correlation between the depth of ``layers`` and their class gap
    (:func:`class_gaps`); +1 when the gap grows at every layer, −1 when it
    shrinks at every layer."""
    from scipy.stats import spearmanr

    depth = np.arange(len(layers))
    return pd.Series(
        {s: float(spearmanr(depth, row[list(layers)])[0]) for s, row in gaps.iterrows()}
    )


def _main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=appd_store.__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(APPD_SEEDS))
    parser.add_argument("--scales", type=float, nargs="+", default=list(APPD_SCALES))
    args = parser.parse_args(argv)
    appd_store(args.seeds, args.scales)


if __name__ == "__main__":
    _main()
