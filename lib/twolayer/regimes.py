"""Regime maps: where each theorem's limit prediction stops holding (book/synthesis).

Each theorem's limit is measured at the end of one gradient flow
(:func:`twolayer.flows.gradient_flow`, ``t = 1e300``) over a grid of **init
scale** × **width** × **seeds** (each seed draws the data and the init). The
grids are too costly for the book's build, so they are computed here, once::

    python -m twolayer.regimes            # every grid, 1 worker
    python -m twolayer.regimes --workers 2 --only lyu

and stored as Parquet under ``data/sweeps/synthesis_<name>.parquet``, one row per
(scale, width, seed) with the commit and the code key (:func:`code_key`) they
were computed at; the synthesis pages read them with :func:`load` (which says
whether the stored grid is stale) and locate the critical scale with
:func:`critical_scale`.

Settings (one per theorem, each within its paper's hypotheses where possible):

* ``phuong_min`` — antipodal Gaussians (:func:`twolayer.limit_data.synthesis_data`:
  orthogonally separable, ``μ > 0``), ReLU, balanced init: Phuong & Lampert
  Thm 1's gap ``max_live 1 − cos(w_j, w±)``; Min et al. Thm 1 (i)'s aligned
  fraction at paper time ``log n/√μ`` and the stable rank's max over
  ``t ∈ [1e100, 1e300]`` (the limsup, Thm 1); the all-same-sign event.
* ``lyu`` — symmetric data (two Gaussians, then ``x ↦ −x`` with the opposite
  label, Assumption 4.1), leaky ReLU α = 1/2, Gaussian init ``N(0, σ²)``:
  Lyu et al. Thm 4.3's relative sup gap to ``(1+α)/4 ⟨w*, x⟩``.
* ``sarussi`` — antipodal Gaussians (Lemma 6.1), fixed ±1 second layer,
  leaky α = 0.2, ``k = width/2`` neurons of each sign: Sarussi et al.
  Thm 6.1's clustering ratio ``R/‖w̄ − ū‖`` and the NAR/PAR membership.
* ``lyu_probability`` — width ``m`` = 2…6, small init, ≥ 100 seeds on one
  dataset: whether Thm 4.3's limit is reached, and whether the init's output
  weights all had one sign (the event of probability ``2^{−(m−1)}``).
* ``decay`` / ``decay_heldout`` — the three limits (Phuong, Lyu, Sarussi) at
  ``t = 1e30, 1e100, 1e300`` and their decay ratio per decade of log10 t: does a
  gap stop decaying above some scale (a transition) or does the crossing of a
  fixed threshold move with the horizon (a slow decay)? Located on seeds 0-4 at
  every scale, tested on fresh seeds 10-19 at the largest.
* ``imbalance_fresh`` — fresh initialisations for the imbalance law of Thm 4.3's
  slow misses (:func:`twolayer.synthesis.mass_law_exponent`).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .codekey import FLOW_CODE as _CODE
from .codekey import source_closure
from .limit_data import lyu_data, sarussi_data  # noqa: F401  (re-exported)

ROOT = Path(__file__).resolve().parents[2]
SWEEP_DIR = ROOT / "data" / "sweeps"
T_MAX = 1e300
SCALES = tuple(float(s) for s in np.geomspace(1e-4, 3.0, 12))
WIDTHS = (4, 20, 100)
SEEDS = tuple(range(10))
PROBABILITY_WIDTHS = (2, 3, 4, 5, 6)
PROBABILITY_SEEDS = tuple(range(100))
PROBABILITY_SCALE = 1e-4
# thresholds of the limits, the same as the limits page's (fixed from theory before the
# runs)
THRESHOLDS = dict(phuong=1e-3, lyu=0.05, sarussi=1e-3, min_aligned=1.0, stable_rank=2.0)
LATE_TIMES = (1e100, 1e150, 1e200, 1e250, 1e300)


def code_key() -> str:
    """Hash of what every grid shares (first 12 hex digits): the files that build a
    dataset, a network and a flow (:data:`_CODE`) and the grids' settings, as syntax
    trees (:func:`twolayer.codekey.canonical`: reformatting, comments and docstrings
    keep the key). What a grid's points compute is added by :func:`grid_key`."""
    from .codekey import canonical

    lib = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for rel in _CODE:
        if not (lib / rel).exists():  # the log-time engine's module, once it exists
            continue
        h.update(rel.encode())
        h.update(canonical((lib / rel).read_text()))
    settings = (SCALES, WIDTHS, SEEDS, PROBABILITY_WIDTHS, PROBABILITY_SEEDS)
    h.update(repr((*settings, PROBABILITY_SCALE, T_MAX, LATE_TIMES)).encode())
    return h.hexdigest()[:12]


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):  # pragma: no cover
        return "unknown"


# ---------------------------------------------------------------- the settings


def phuong_min_point(
    init_scale: float, width: int, seed: int, t_max: float = T_MAX, data=None
) -> dict:
    """Phuong Thm 1 and Min Thm 1 on the synthesis data (ReLU, balanced init)."""
    from . import metrics
    from .flows import gradient_flow
    from .limit_data import max_margin_pair, synthesis_data
    from .models import TwoLayerNet
    from .theory import min2024, phuong2021

    data = synthesis_data(seed=seed) if data is None else data
    X, y = data.X, data.y
    w_plus, w_minus = max_margin_pair(data)
    t1 = float(min2024.book_time(min2024.t1_order(X, y), "mean", data.n))
    net = TwoLayerNet(data.d, width, init="balanced", init_scale=init_scale, seed=seed)
    W0, a0 = net.weights()
    late = [t for t in LATE_TIMES if t <= t_max]
    run = gradient_flow(
        net,
        data,
        t_max,
        rtol=1e-5,
        atol=1e-8,
        snapshot_times=[0.0, t1, *late],
        max_steps=400_000,
    )
    W, a = run.final["W"], run.final["a"]
    live = ~metrics.dead_neurons(W, X)
    cos = phuong2021.cosines_to_max_margin(W, a, w_plus, w_minus)
    signs = np.sign(a0)
    codes = min2024.cone_membership(run.snapshots[1]["W"], X, y)
    own = np.where(signs > 0, min2024.S_PLUS, min2024.S_MINUS)
    late_ranks = [metrics.stable_rank(s["W"]) for s in run.snapshots[2:]]
    act0 = (W0 @ X.T) > 0
    j_plus = (a0 > 0) & (act0 & (y > 0)[None, :]).any(axis=1)
    j_minus = (a0 < 0) & (act0 & (y < 0)[None, :]).any(axis=1)
    return dict(
        phuong=float((1 - cos[live]).max()) if live.any() else np.nan,
        min_aligned=float(((codes == own) | (codes == min2024.S_DEAD)).mean()),
        stable_rank=float(max(late_ranks)),
        stable_rank_init=float(metrics.stable_rank(W0)),
        rank3=float(metrics.rank_ratio(W, 2)),
        same_sign=bool(abs(signs.sum()) == width),
        sign_flip=bool((np.sign(a) != signs).any()),
        live=int(live.sum()),
        j0_event=bool(not (j_plus | j_minus).any()),
        both_groups=bool(j_plus.any() and j_minus.any()),
        steps=int(run.config["steps"]),
        wall=float(run.wall_time),
    )


def lyu_point(
    init_scale: float,
    width: int,
    seed: int,
    t_max: float = T_MAX,
    alpha: float = 0.5,
    data_seed: int | None = None,
) -> dict:
    """Lyu Thm 4.3 on symmetric data (leaky α, Gaussian init of scale
    σ = ``init_scale``).
    ``data_seed`` None: the data are drawn with ``seed`` too."""
    from .flows import gradient_flow
    from .models import TwoLayerNet
    from .theory import lyu2021

    data, X_eval = lyu_data(seed if data_seed is None else data_seed)
    w_star = lyu2021.max_margin_separator(data.X, data.y)
    target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
    net = TwoLayerNet(
        data.d, width, alpha=alpha, init="gaussian", init_scale=init_scale, seed=seed
    )
    W0, a0 = net.weights()
    run = gradient_flow(
        net, data, t_max, rtol=1e-5, atol=1e-8, n_snapshots=3, max_steps=400_000
    )
    W, a = run.final["W"], run.final["a"]
    margin = lyu2021.normalized_margin(W, a, data.X, data.y, alpha)
    best = lyu2021.global_max_margin_symmetric(data.X, data.y, alpha)
    mu_bar = lyu2021.mu(data.X, data.y)
    # sign of Lemma 5.2's b̄_k (positive factor dropped)
    b = W0 @ (mu_bar / np.linalg.norm(mu_bar)) + a0
    return dict(
        lyu=lyu2021.limit_error(W, a, X_eval, target, alpha),
        margin_ratio=float(margin / best),
        same_sign=bool(abs(np.sign(a0).sum()) == width),
        same_sign_b=bool(abs(np.sign(b).sum()) == width),
        same_sign_end=bool(abs(np.sign(a).sum()) == width),
        steps=int(run.config["steps"]),
        wall=float(run.wall_time),
    )


def sarussi_point(
    init_scale: float, width: int, seed: int, t_max: float = T_MAX, alpha: float = 0.2
) -> dict:
    """Sarussi Thm 6.1 (fixed ±1 second layer, ``k = width // 2`` of each sign)."""
    from .flows import gradient_flow
    from .models import TwoLayerNet
    from .theory import sarussi2021

    data = sarussi_data(seed)
    k = max(width // 2, 1)
    net = TwoLayerNet.fixed_second_layer(
        data.d, k, alpha=alpha, init_scale=init_scale, seed=seed
    )
    run = gradient_flow(
        net, data, t_max, rtol=1e-5, atol=1e-8, n_snapshots=3, max_steps=400_000
    )
    Wp, Wn = sarussi2021.split_neurons(run.final["W"], k)
    ratio = sarussi2021.clustering_ratio(Wp, Wn)
    return dict(
        sarussi=ratio,
        c_log=float(ratio * np.log10(t_max)),
        nar=sarussi2021.nar_membership(Wp, Wn, data.X).fraction,
        par=sarussi2021.par_membership(Wp, Wn, data.X, data.y).fraction,
        steps=int(run.config["steps"]),
        wall=float(run.wall_time),
    )


def lyu_probability_point(
    width: int, seed: int, init_scale: float = PROBABILITY_SCALE, t_max: float = T_MAX
) -> dict:
    """One draw of the init for Lyu Thm 4.3's probability clause: data fixed (draw
    0)."""
    return lyu_point(init_scale, width, seed, t_max=t_max, data_seed=0)


def phuong_probability_point(
    width: int, seed: int, init_scale: float = PROBABILITY_SCALE, t_max: float = T_MAX
) -> dict:
    """One draw of the init for Phuong Thm 1's ``1 − 2^{−p}`` (``p`` = width): data
    fixed (draw 0). ``j0_event``: no neuron starts with ``a_j > 0`` active on a
    positive point or ``a_j < 0`` active on a negative one — the event of the proof's
    bound (every neuron in J0)."""
    from .limit_data import synthesis_data

    data = synthesis_data(seed=0)
    out = phuong_min_point(init_scale, width, seed, t_max=t_max, data=data)
    return out


# the rival of each probability clause: the same widths and inits, at the grid's
# largest init scale (the theorem's "sufficiently small" dropped)
LARGE_SCALE = SCALES[-1]


def lyu_probability_large_point(width: int, seed: int) -> dict:
    """:func:`lyu_probability_point` at :data:`LARGE_SCALE`."""
    return lyu_probability_point(width, seed, init_scale=LARGE_SCALE)


def phuong_probability_large_point(width: int, seed: int) -> dict:
    """:func:`phuong_probability_point` at :data:`LARGE_SCALE`."""
    return phuong_probability_point(width, seed, init_scale=LARGE_SCALE)


# the moves over many draws (book/synthesis/moves): kind -> values; 20 draws each
DRAW_MOVES = dict(
    mu=(0.3, 0.6, 0.8, 1.0, 1.3),
    mu_large=(1.0,),
    alpha=(0.0, 0.05, 0.2, 0.5),
    width2=(1.0, -1.0),
)
DRAWS = tuple(range(20))


def moves_draws_point(kind: str, value: float, seed: int) -> dict:
    """One draw of one move (:mod:`twolayer.synthesis`): ``mu`` — spread ``value``
    of :func:`~twolayer.limit_data.nonsymmetric_data` (init 1e-3), ``mu_large`` — the
    same at init scale :data:`LARGE_SCALE`; ``alpha`` — leaky slope ``value`` at
    spread 0.5 (Phuong's gap at 1e100, 1e200, 1e300); ``width2`` — width 2 on Lyu's
    data with signs ``(1, value)``."""
    from . import synthesis

    if kind in ("mu", "mu_large"):
        scale = LARGE_SCALE if kind == "mu_large" else 1e-3
        out = synthesis.mu_move(seed, value, init_scale=scale)
    elif kind == "alpha":
        out = synthesis.leaky_move(seed, value)
    elif kind == "width2":
        out = dict(lyu=synthesis.width2_move(seed, (1.0, value)))
    else:
        raise ValueError(f"kind must be one of {sorted(DRAW_MOVES)}, got {kind!r}")
    return dict(kind=kind, value=value, seed=seed, **out)


# the hint move (Lyu Def. 6.1 on the overlay's data): with and without the hints on the
# same draws, and a tolerance check of the stiff hinted flows on the first draws
HINTED_KINDS = dict(hinted=DRAWS, symmetric=DRAWS, hinted_fine=DRAWS[:3])
HINTED_RTOL = dict(hinted=1e-3, symmetric=1e-3, hinted_fine=1e-4)


def hinted_draws_point(kind: str, seed: int) -> dict:
    """One draw of the hint move (:func:`twolayer.synthesis.hinted_move`): ``hinted``
    and ``symmetric`` (the same draw without the hints) at ``rtol = 1e-3``,
    ``hinted_fine`` the hinted flow at ``rtol = 1e-4``."""
    from . import synthesis

    if kind not in HINTED_KINDS:
        raise ValueError(f"kind must be one of {sorted(HINTED_KINDS)}, got {kind!r}")
    out = synthesis.hinted_move(seed, kind != "symmetric", rtol=HINTED_RTOL[kind])
    return dict(kind=kind, seed=seed, **out)


# Lyu Thm 4.3's misses at t = 1e300 continued in log time
# (:func:`twolayer.synthesis.lyu_horizon_run`): the limits page's draw 15 (width 10,
# its own data) and every miss of the probability clause with b̄ of both signs (data
# draw 0, the lyu_probability grid at 1e300); two inits of Lemma 5.4's event (b̄ of
# one sign, the theorem's failure) as the rival that stalls
LYU_HORIZON_POINTS = (
    dict(width=10, seed=15, data_seed=15),
    *(
        dict(width=m, seed=s, data_seed=0)
        for m, seeds in {
            2: (26, 35, 67, 83),
            3: (22, 28, 34, 36, 44, 79),
            4: (9, 40, 62),
            5: (0, 76),
            6: (34, 61),
        }.items()
        for s in seeds
    ),
    dict(width=2, seed=1, data_seed=0),
    dict(width=3, seed=5, data_seed=0),
)


def lyu_horizons_point(width: int, seed: int, data_seed: int) -> dict:
    """One Lyu Thm 4.3 draw continued in log time
    (:func:`twolayer.synthesis.lyu_horizon_run`)."""
    from . import synthesis

    return synthesis.lyu_horizon_run(width, seed, data_seed=data_seed)


# The decay test of the regime maps: is a critical scale a transition (the gap stops
# decaying: another limit) or the constant of a slow decay (the crossing moves with
# the horizon)? Each theorem's gap at three horizons, t = 1e30, 1e100, 1e300, and its
# decay ratio per decade of log10 t between the last two (a 1/log t decay: 0.1; a
# stall: 1). Located on DECAY_SEEDS at every grid scale, tested on fresh
# DECAY_HELDOUT_SEEDS at the grid's largest scale.
DECAY_THEOREMS = ("phuong", "lyu", "sarussi")
DECAY_TIMES = (1e30, 1e100, 1e300)
DECAY_WIDTHS = (4, 20)
DECAY_SEEDS = tuple(range(5))
DECAY_HELDOUT_SEEDS = tuple(range(10, 20))
DECAY_HELDOUT_SCALES = (SCALES[-1],)
# the ledger's stall rule (twolayer.claims): a distance that shrinks by less than
# 10 % per decade of log10 t has stopped decaying
DECAY_STALL = 0.9


def _decay_setting(theorem: str, init_scale: float, width: int, seed: int):
    """``(net, data, gap)`` of one decay point: the map's network and data
    (:func:`phuong_min_point`, :func:`lyu_point`, :func:`sarussi_point`) and its gap
    as a function of a snapshot."""
    from .limit_data import max_margin_pair, synthesis_data
    from .models import TwoLayerNet
    from .synthesis import live_gap
    from .theory import lyu2021, sarussi2021

    if theorem == "phuong":
        data = synthesis_data(seed=seed)
        w_pm = max_margin_pair(data)
        net = TwoLayerNet(
            data.d, width, init="balanced", init_scale=init_scale, seed=seed
        )
        return net, data, lambda s: live_gap(s["W"], s["a"], data.X, *w_pm)
    if theorem == "lyu":
        data, X_eval = lyu_data(seed)
        alpha = 0.5
        w_star = lyu2021.max_margin_separator(data.X, data.y)
        target = lyu2021.symmetric_limit_function(X_eval, w_star, alpha)
        net = TwoLayerNet(
            data.d,
            width,
            alpha=alpha,
            init="gaussian",
            init_scale=init_scale,
            seed=seed,
        )
        return (
            net,
            data,
            lambda s: lyu2021.limit_error(s["W"], s["a"], X_eval, target, alpha),
        )
    if theorem == "sarussi":
        data = sarussi_data(seed)
        k = max(width // 2, 1)
        net = TwoLayerNet.fixed_second_layer(
            data.d, k, alpha=0.2, init_scale=init_scale, seed=seed
        )
        return (
            net,
            data,
            lambda s: sarussi2021.clustering_ratio(
                *sarussi2021.split_neurons(s["W"], k)
            ),
        )
    raise ValueError(f"theorem must be one of {DECAY_THEOREMS}, got {theorem!r}")


def decay_ratio(first, last, log10_first: float, log10_last: float):
    """A distance's ratio per decade of ``log10 t`` between two horizons:
    ``(last/first)^(1/log10(log10_last/log10_first))`` (a ``1/log t`` decay: 0.1, a
    stall: 1; NaN where ``first`` is 0 or not finite)."""
    first, last = np.asarray(first, float), np.asarray(last, float)
    if not 0 < log10_first < log10_last:
        raise ValueError(
            f"need 0 < log10_first < log10_last, got {log10_first}, {log10_last}"
        )
    decades = np.log10(log10_last / log10_first)
    ok = (first > 0) & np.isfinite(first)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (last / np.where(ok, first, 1.0)) ** (1 / decades)
    return np.where(ok, out, np.nan)


def _direction(W) -> np.ndarray:
    W = np.asarray(W, float)
    return W / np.linalg.norm(W)


def decay_point(theorem: str, init_scale: float, width: int, seed: int) -> dict:
    """One run of the decay test: the theorem's gap (:func:`_decay_setting`) at the
    horizons ``DECAY_TIMES`` (``gap@h``, ``h`` = log10 t) and its decay ratio per
    decade of log10 t between the last two (``ratio``, :func:`decay_ratio`); the
    rival, the lazy alternative — the first layer stays in its initial direction —
    as the distance ``‖W(t)/‖W(t)‖ − W(0)/‖W(0)‖‖`` at the same horizons
    (``lazy@h``) and its ratio (``lazy_ratio``)."""
    from .flows import gradient_flow

    net, data, gap = _decay_setting(theorem, init_scale, width, seed)
    run = gradient_flow(
        net,
        data,
        DECAY_TIMES[-1],
        rtol=1e-5,
        atol=1e-8,
        snapshot_times=[0.0, *DECAY_TIMES],
        max_steps=400_000,
    )
    W0 = _direction(run.snapshots[0]["W"])
    out = dict(theorem=theorem)
    logs = [float(np.log10(t)) for t in DECAY_TIMES]
    for h, s in zip(logs, run.snapshots[1:]):
        out[f"gap@{h:g}"] = gap(s)
        out[f"lazy@{h:g}"] = float(np.linalg.norm(_direction(s["W"]) - W0))
    h0, h1 = logs[-2], logs[-1]
    for key, col in (("ratio", "gap"), ("lazy_ratio", "lazy")):
        out[key] = float(
            decay_ratio(out[f"{col}@{h0:g}"], out[f"{col}@{h1:g}"], h0, h1)
        )
    return out


# The imbalance law of Thm 4.3's slow misses tested on fresh initialisations: widths
# 2-6, seeds never used by the probability grids (100-199), data draw 0, every init
# outside Lemma 5.4's event whose imbalance is at least IMBALANCE_MIN (the smallest
# of the 1e300 misses, 21.7, rounded down)
IMBALANCE_SEEDS = tuple(range(100, 200))
IMBALANCE_MIN = 20.0


def imbalance_fresh_points() -> list[dict]:
    """The fresh initialisations of the imbalance law (no flow: ``b̄`` only)."""
    from .models import TwoLayerNet
    from .theory import lyu2021

    data, _ = lyu_data(0)
    mu_bar = lyu2021.mu(data.X, data.y)
    out = []
    for m in PROBABILITY_WIDTHS:
        for s in IMBALANCE_SEEDS:
            net = TwoLayerNet(data.d, m, alpha=0.5, init="gaussian", seed=s)
            b = lyu2021.embedding_vector(*net.weights(), mu_bar)
            if not lyu2021.is_good_embedding(b):
                continue
            ratio = np.linalg.norm(b[b > 0]) / np.linalg.norm(b[b < 0])
            if max(ratio, 1 / ratio) >= IMBALANCE_MIN:
                out.append(dict(width=m, seed=s))
    return out


def imbalance_fresh_point(width: int, seed: int) -> dict:
    """:func:`twolayer.synthesis.imbalance_law_run` on data draw 0."""
    from . import synthesis

    return synthesis.imbalance_law_run(width, seed, data_seed=0)


POINTS = dict(
    phuong_min=phuong_min_point,
    lyu=lyu_point,
    sarussi=sarussi_point,
    lyu_probability=lyu_probability_point,
    phuong_probability=phuong_probability_point,
    lyu_probability_large=lyu_probability_large_point,
    phuong_probability_large=phuong_probability_large_point,
    moves_draws=moves_draws_point,
    hinted_draws=hinted_draws_point,
    lyu_horizons=lyu_horizons_point,
    decay=decay_point,
    decay_heldout=decay_point,
    imbalance_fresh=imbalance_fresh_point,
)


def _grid(name: str) -> list[dict]:
    if name == "imbalance_fresh":
        return imbalance_fresh_points()
    if name in ("decay", "decay_heldout"):
        scales, seeds = (
            (SCALES, DECAY_SEEDS)
            if name == "decay"
            else (DECAY_HELDOUT_SCALES, DECAY_HELDOUT_SEEDS)
        )
        return [
            dict(theorem=th, init_scale=sc, width=w, seed=s)
            for th in DECAY_THEOREMS
            for sc in scales
            for w in DECAY_WIDTHS
            for s in seeds
        ]
    if name == "lyu_horizons":
        return [dict(p) for p in LYU_HORIZON_POINTS]
    if name == "hinted_draws":
        return [
            dict(kind=k, seed=s) for k, seeds in HINTED_KINDS.items() for s in seeds
        ]
    if name == "moves_draws":
        return [
            dict(kind=k, value=v, seed=s)
            for k, values in DRAW_MOVES.items()
            for v in values
            for s in DRAWS
        ]
    if name.endswith("_probability") or name.endswith("_probability_large"):
        return [
            dict(width=m, seed=s) for m in PROBABILITY_WIDTHS for s in PROBABILITY_SEEDS
        ]
    return [
        dict(init_scale=sc, width=w, seed=s)
        for sc in SCALES
        for w in WIDTHS
        for s in SEEDS
    ]


def grid_key(name: str, base: str | None = None) -> str:
    """The code key a stored grid ``name`` is checked against: :func:`code_key`
    (``base``, if already computed), the grid's own settings and the library code its
    points run (:func:`source_closure` of its point function)."""
    base = code_key() if base is None else base
    h = hashlib.sha256(f"{base} {name}".encode())
    if name == "moves_draws":
        h.update(f"{DRAW_MOVES!r} {DRAWS!r}".encode())
    elif name == "hinted_draws":
        h.update(f"{HINTED_KINDS!r} {HINTED_RTOL!r}".encode())
    elif name == "lyu_horizons":
        h.update(repr(LYU_HORIZON_POINTS).encode())
    elif name in ("decay", "decay_heldout", "imbalance_fresh"):
        h.update(repr(_grid(name)).encode())
        h.update(repr(DECAY_TIMES).encode())
    elif name.endswith("_large"):
        h.update(repr(LARGE_SCALE).encode())
    h.update(repr(source_closure([POINTS[name]])).encode())
    return h.hexdigest()[:12]


def _timed(name: str, point: dict) -> dict:
    t0 = time.perf_counter()
    try:
        out = POINTS[name](**point)
        err = ""
    except Exception as exc:  # a failed point is recorded, the grid goes on
        out, err = {}, f"{type(exc).__name__}: {exc}".splitlines()[0]
    return dict(point, **out, error=err, seconds=time.perf_counter() - t0)


def compute(name: str, workers: int = 1, points: list[dict] | None = None):
    """The grid ``name`` as a DataFrame (one row per point), with ``commit`` and
    ``code_key``."""
    import pandas as pd

    from .sweeps import run_sweep

    if name not in POINTS:
        raise ValueError(f"name must be one of {sorted(POINTS)}, got {name!r}")
    points = _grid(name) if points is None else points
    rows = run_sweep(
        _timed, [dict(name=name, point=p) for p in points], max_workers=workers
    )
    frame = pd.DataFrame(rows)
    frame["commit"], frame["code_key"] = _commit(), grid_key(name)
    return frame


def path(name: str) -> Path:
    return SWEEP_DIR / f"synthesis_{name}.parquet"


def store(frame, name: str) -> Path:
    """Write atomically (temp file, then rename)."""
    SWEEP_DIR.mkdir(parents=True, exist_ok=True)
    out = path(name)
    tmp = out.with_suffix(".tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(out)
    return out


def load(name: str, base: str | None = None):
    """The stored grid and whether it is stale (its code key is not the library's
    now; ``base``: :func:`code_key`, if already computed)."""
    import pandas as pd

    frame = pd.read_parquet(path(name))
    stale = bool((frame["code_key"] != grid_key(name, base)).any())
    return frame, stale


def pass_rates(frame, gap: str, threshold: float, relation: str = "<="):
    """Pass rate over seeds per (init_scale, width) and the median gap: a tidy frame."""
    ok = frame[gap] <= threshold if relation == "<=" else frame[gap] >= threshold
    out = frame.assign(passed=ok & frame[gap].notna())
    return (
        out.groupby(["init_scale", "width"])
        .agg(
            pass_rate=("passed", "mean"),
            median=(gap, "median"),
            worst=(gap, "max"),
            best=(gap, "min"),
            seeds=("seed", "nunique"),
        )
        .reset_index()
    )


def critical_scale(frame, gap: str, threshold: float, relation: str = "<=") -> dict:
    """Where the pass rate (over all widths and seeds at one scale) crosses ½.

    Returns ``lo`` (the largest scale at which the pass rate is ≥ ½ with every
    smaller scale ≥ ½ too), ``hi`` (the next grid scale, where it is < ½; NaN if
    none), their pass rates, and the geometric midpoint ``critical`` of the bracket.
    """
    ok = frame[gap] <= threshold if relation == "<=" else frame[gap] >= threshold
    rate = (
        frame.assign(passed=ok & frame[gap].notna())
        .groupby("init_scale")["passed"]
        .mean()
        .sort_index()
    )
    scales = rate.index.to_numpy(float)
    below = np.flatnonzero(rate.to_numpy() < 0.5)
    if below.size == 0:
        return dict(
            lo=scales[-1],
            hi=np.nan,
            rate_lo=float(rate.iloc[-1]),
            rate_hi=np.nan,
            critical=np.nan,
        )
    first = int(below[0])
    if first == 0:
        return dict(
            lo=np.nan,
            hi=scales[0],
            rate_lo=np.nan,
            rate_hi=float(rate.iloc[0]),
            critical=np.nan,
        )
    lo, hi = scales[first - 1], scales[first]
    return dict(
        lo=float(lo),
        hi=float(hi),
        rate_lo=float(rate.iloc[first - 1]),
        rate_hi=float(rate.iloc[first]),
        critical=float(np.sqrt(lo * hi)),
    )


def per_seed(frame, scale: float, gap: str, worst: str = "max") -> np.ndarray:
    """At one grid scale: each seed's worst gap over the widths (one value per seed)."""
    sub = frame[np.isclose(frame["init_scale"], scale)]
    g = sub.groupby("seed")[gap]
    return (g.max() if worst == "max" else g.min()).to_numpy(float)


def _passed(frame, gap: str, threshold: float, relation: str) -> np.ndarray:
    ok = frame[gap] <= threshold if relation == "<=" else frame[gap] >= threshold
    return (ok & frame[gap].notna()).to_numpy(bool)


def scale_trials(frame, gap: str, threshold: float, relation: str = "<=") -> dict:
    """The per-run outcomes behind a critical scale (:func:`critical_scale`): at
    the bracket's ``lo`` the pass flags (``below``), at ``hi`` the fail flags
    (``above``), and the rival "no dependence on scale" — the pass flags at the
    grid's largest scale (``top``) and the fail flags at its smallest (``bottom``).
    One flag per (width, seed) run of the scale."""
    crit = critical_scale(frame, gap, threshold, relation)
    passed = _passed(frame, gap, threshold, relation)
    scales = np.sort(frame["init_scale"].unique())

    def at(scale: float) -> np.ndarray:
        return passed[np.isclose(frame["init_scale"].to_numpy(float), scale)]

    out = dict(crit, top_scale=float(scales[-1]), bottom_scale=float(scales[0]))
    out["top"], out["bottom"] = at(scales[-1]), ~at(scales[0])
    if np.isfinite(crit["critical"]):
        out["below"], out["above"] = at(crit["lo"]), ~at(crit["hi"])
    return out


def clause_table(small, large, gap: str, threshold: float, event: str, failure):
    """A probability clause per width ``m``: ``successes`` (the limit reached, one
    flag per init of the small-scale grid ``small``), ``rival`` (the same at the
    large scale, grid ``large``), the bound ``1 − failure(m)``, the runs that
    failed and how many of them had the proof's failure event (column ``event``).
    Points of ``large`` whose flow stopped with an error are left out of the rival
    (``large_runs`` says how many remain)."""
    import pandas as pd

    rows = []
    for m, g in small.groupby("width"):
        ok = _passed(g, gap, threshold, "<=")
        ev = g[event].to_numpy(bool)
        big = large[large["width"] == m]
        if "error" in big:  # a flow that stopped has no outcome: left out, counted
            big = big[big["error"] == ""]
        rows.append(
            dict(
                m=int(m),
                runs=len(g),
                bound=1.0 - failure(m),
                failed=int((~ok).sum()),
                event=int(ev.sum()),
                failed_with_event=int((~ok & ev).sum()),
                fail_rate=float((~ok).mean()),
                large_runs=len(big),
                large_fail_rate=float((~_passed(big, gap, threshold, "<=")).mean()),
                successes=ok,
                no_event=~ev,
                rival=_passed(big, gap, threshold, "<="),
            )
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m twolayer.regimes", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=sorted(POINTS))
    args = parser.parse_args(argv)
    from . import configure_threads

    configure_threads()
    for name in args.only:
        t0 = time.perf_counter()
        frame = compute(name, workers=args.workers)
        out = store(frame, name)
        bad = int((frame["error"] != "").sum())
        print(
            f"{name}: {len(frame)} points, {bad} failed, "
            f"{time.perf_counter() - t0:.0f} s -> {out}",
            flush=True,
        )


if __name__ == "__main__":  # pragma: no cover
    # run the imported module's main, not this __main__ copy: the grids' code key
    # (source_closure) names functions by their module, twolayer.regimes
    from twolayer.regimes import main as _main

    _main(sys.argv[1:])


# ------------------------------------------------------------- what the page reads

GRIDS = (
    "phuong_min",
    "lyu",
    "sarussi",
    "moves_draws",
    "hinted_draws",
    "lyu_probability",
    "lyu_probability_large",
    "phuong_probability",
    "phuong_probability_large",
    "decay",
    "decay_heldout",
    "imbalance_fresh",
    "lyu_horizons",
)
# grids whose points may stop (a large init's vector field can overflow)
MAY_STOP = (
    "lyu_probability_large",
    "phuong_probability_large",
    "moves_draws",
    "decay",
    "decay_heldout",
)


def load_grids(names=GRIDS):
    """Every stored grid of ``names`` (:func:`load`) and their provenance (commit,
    code key, rows, stale) as a DataFrame; a grid outside :data:`MAY_STOP` with a
    failed point is an error."""
    import pandas as pd

    grids, rows, base = {}, {}, code_key()
    for name in names:
        frame, stale = load(name, base)
        if name not in MAY_STOP and (frame["error"] != "").any():
            raise ValueError(f"grid {name!r} has failed points: recompute it")
        grids[name] = frame
        rows[name] = dict(
            commit=frame.commit.iloc[0],
            code_key=frame.code_key.iloc[0],
            rows=len(frame),
            stale=stale,
        )
    return grids, pd.DataFrame(rows).T


def theorems(phuong: float, lyu: float) -> dict:
    """The regime maps' limits: key -> (grid, gap column, threshold, relation,
    label); ``phuong``, ``lyu``: the thresholds of those two (the others are
    :data:`THRESHOLDS`)."""
    return {
        "phuong": ("phuong_min", "phuong", phuong, "<=", "$1-\\cos(w_j,w_\\pm)$"),
        "min_aligned": ("phuong_min", "min_aligned", 1.0, ">=", "fraction aligned"),
        "stable_rank": ("phuong_min", "stable_rank", 2.0, "<=", "stable rank limsup"),
        "lyu": ("lyu", "lyu", lyu, "<=", "sup gap"),
        "sarussi": (
            "sarussi",
            "sarussi",
            THRESHOLDS["sarussi"],
            "<=",
            "$R/\\|\\bar w-\\bar u\\|$",
        ),
    }


def brackets(grids, specs):
    """Each theorem's critical bracket (:func:`critical_scale`) per width: rows the
    theorems of ``specs`` (:func:`theorems`), columns ``lo``/``hi`` × width."""
    import pandas as pd

    rows = [
        dict(theorem=key, width=w, **critical_scale(fw, gap, thr, rel))
        for key, (grid, gap, thr, rel, _) in specs.items()
        for w, fw in grids[grid].groupby("width")
    ]
    return pd.DataFrame(rows).pivot(
        index="theorem", columns="width", values=["lo", "hi"]
    )


def lyu_failure(m: int) -> float:
    """Lyu et al. Thm 4.3: the limit may be missed with probability ``2^{-(m-1)}``
    (Lemma 5.4's event: ``b̄`` of one sign)."""
    return 2.0 ** -(m - 1)


def phuong_failure(p: int) -> float:
    """Phuong & Lampert Thm 1: the limit may be missed with probability ``2^{-p}``
    (every neuron in ``J_0`` at the start)."""
    return 2.0**-p


def clauses(grids, lyu: float, phuong: float) -> dict:
    """Both probability clauses (:func:`clause_table`) from the stored grids, keyed
    by theorem; ``lyu``, ``phuong``: the gaps counted as at the limit."""
    return {
        "Lyu Thm 4.3": clause_table(
            grids["lyu_probability"],
            grids["lyu_probability_large"],
            "lyu",
            lyu,
            "same_sign_b",
            lyu_failure,
        ),
        "Phuong Thm 1": clause_table(
            grids["phuong_probability"],
            grids["phuong_probability_large"],
            "phuong",
            phuong,
            "j0_event",
            phuong_failure,
        ),
    }


def clause_summary(clauses):
    """The probability clauses (:func:`clauses`) as one table, a row per theorem
    and width (the per-run flags left out), and the prose's quotes: failures and
    events summed over the widths, Lyu's failure rate at ``m = 3``, and the rival's
    lowest failure rate and stopped flows."""
    import pandas as pd

    table = pd.concat(clauses, names=["theorem", "row"]).reset_index(level=0)
    table = table.drop(columns=["successes", "no_event", "rival"])
    lyu, phuong = clauses["Lyu Thm 4.3"], clauses["Phuong Thm 1"]
    quotes = dict(
        lyu_failed_total=int(lyu.failed.sum()),
        lyu_failed_event=int(lyu.failed_with_event.sum()),
        lyu_event_total=int(lyu.event.sum()),
        lyu_failed_outside=int((lyu.failed - lyu.failed_with_event).sum()),
        lyu_fail_m3=float(lyu.fail_rate[lyu.m == 3].iloc[0]),
        phuong_failed_total=int(phuong.failed.sum()),
        large_fail_min=float(table.large_fail_rate.min()),
        large_stopped=int((table.runs - table.large_runs).sum()),
    )
    return table.round(3), quotes


def mu_move(frame, threshold: float) -> dict:
    """The μ move from the ``moves_draws`` grid (stopped points left out, counted):
    every draw of every spread (``mu``), those with ``μ < 0`` (``neg``), the
    large-init draws (``large``), the pass flags of both (``neg_pass``,
    ``large_pass``: Phuong's gap ≤ ``threshold``), and the prose's quotes."""
    stopped = int((frame.error != "").sum())
    frame = frame[frame.error == ""]
    mu = frame[frame.kind == "mu"]
    neg, large = mu[mu.mu < 0], frame[frame.kind == "mu_large"]
    widest, pos = mu[mu.value == mu.value.max()], mu[mu.mu > 0]
    passed = {
        k: (f.phuong <= threshold).to_numpy()
        for k, f in (("neg", neg), ("large", large), ("widest", widest))
    }
    return dict(
        mu=mu,
        neg=neg,
        large=large,
        neg_pass=passed["neg"],
        large_pass=passed["large"],
        quotes=dict(
            mu_stopped=stopped,
            n_draws=int(frame.seed.nunique()),
            n_neg=len(neg),
            mu_lo=neg.mu.min(),
            large_std=float(large.value.iloc[0]),
            **{f"mu_{k}_pass": float(v.mean()) for k, v in passed.items()},
            mu_widest_std=float(widest.value.iloc[0]),
            mu_widest_lo=widest.mu.min(),
            t1_max=pos.t1.max(),
            t_scale_max=pos.t_scale.max(),
        ),
    )


def alpha_quotes(drops, alpha: float, stall: float) -> dict:
    """The α move's quotes: the fraction of draws that stall (``Δ > stall``) at
    ``alpha`` and under ReLU, the largest ReLU ``Δ`` and the smallest at ``alpha``
    (``drops``: :func:`alpha_drops`)."""
    return dict(
        alpha_leaky=alpha,
        alpha_stalled=float((drops[alpha] > stall).mean()),
        relu_stalled=float((drops[0.0] > stall).mean()),
        relu_drop_hi=float(drops[0.0].max()),
        leaky_drop_lo=float(drops[alpha].min()),
    )


def alpha_drops(frame) -> dict:
    """The α move from the ``moves_draws`` grid: per leaky slope, each draw's
    ``Δ = log10 gap(1e300) − log10 gap(1e100)`` of Phuong's gap (``1/log t`` decay:
    ``−log10 3``)."""
    al = frame[(frame.kind == "alpha") & (frame.error == "")]
    return {
        float(a): np.log10(f["gap_1e+300"] / f["gap_1e+100"]).to_numpy()
        for a, f in al.groupby("value")
    }


def width2_gaps(frame) -> tuple[np.ndarray, np.ndarray]:
    """The width-2 move from the ``moves_draws`` grid: Lyu's gap per draw with one
    neuron of each sign, and with both positive."""
    w2 = frame[(frame.kind == "width2") & (frame.error == "")]
    return w2[w2.value < 0].lyu.to_numpy(), w2[w2.value > 0].lyu.to_numpy()


def hinted_move(frame) -> dict:
    """The hint move from the ``hinted_draws`` grid: the draws with and without the
    hints (``hinted``, ``symmetric``, ordered by seed), and the quotes: the gaps to
    the linear limit at 1e100 and 1e300, to Thm 6.2's, what else the hints change
    (μ, orthogonal separability, linear margin, the original points' norm), the
    steps, and the largest difference to the ``rtol = 1e-4`` flows."""
    hinted, symmetric, fine = (
        frame[frame.kind == k].sort_values("seed").set_index("seed")
        for k in ("hinted", "symmetric", "hinted_fine")
    )
    end = "lyu_1e+300"
    return dict(
        hinted=hinted,
        symmetric=symmetric,
        quotes=dict(
            h_draws=len(hinted),
            h_gap_lo=hinted[end].min(),
            h_gap_hi=hinted[end].max(),
            h_gap_100=hinted["lyu_1e+100"].median(),
            h_gap_300=hinted[end].median(),
            h_sym_hi=symmetric[end].max(),
            h_sym_100=symmetric["lyu_1e+100"].median(),
            h_sym_300=symmetric[end].median(),
            h_thm62_lo=hinted["thm62"].min(),
            h_mu=hinted["mu"].max(),
            h_sym_mu=symmetric["mu"].min(),
            h_orthogonal=int(hinted["orthogonal"].sum()),
            h_margin=hinted["linear_margin"].max(),
            h_sym_margin=symmetric["linear_margin"].min(),
            h_shrink=hinted["shrink"].max(),
            h_steps=int(hinted["steps"].max()),
            h_fine_draws=len(fine),
            h_fine_diff=float((fine[end] - hinted.loc[fine.index, end]).abs().max()),
        ),
    )


def freshness(provenance) -> str:
    """Whether the stored grids (:func:`load_grids`' provenance) are current, as
    the regimes page says it."""
    if provenance.stale.any():
        return (
            "stale — the library code that computes them has changed "
            "(the table says which)"
        )
    return "current: the library code that computes them is unchanged"


def map_trials(grids, specs) -> tuple[dict, dict]:
    """The regime maps' per-run outcomes, :func:`scale_trials` of each theorem of
    ``specs`` (:func:`theorems`) on its grid, and the prose's quotes: each critical
    scale (``crit_<key>``) and the stable-rank pass rate (limsup ≤ 2) at width 100
    and the grid's largest scale (``sr_w100_top``)."""
    trials = {
        key: scale_trials(grids[grid], gap, thr, rel)
        for key, (grid, gap, thr, rel, _) in specs.items()
    }
    quotes = {f"crit_{key}": s["critical"] for key, s in trials.items()}
    sr = grids["phuong_min"]
    top = sr[(sr.width == 100) & (sr.init_scale == sr.init_scale.max())]
    quotes["sr_w100_top"] = float((top.stable_rank <= 2).mean())
    return trials, quotes


def lyu_clause_misses(
    frame,
    threshold: float,
    *,
    sigma: float = 1e-12,
    r: float = 1e-6,
    alpha: float = 0.5,
) -> dict:
    """Why Lyu Thm 4.3's probability clause misses outside Lemma 5.4's event, on
    the ``lyu_probability`` grid ``frame`` (data draw 0, σ = 1e-4): per run with
    ``b̄`` of both signs whose gap exceeds ``threshold`` (``misses``, a table), the
    imbalance ``max(|b̄+|/|b̄−|, |b̄−|/|b̄+|)`` of Lemma 5.2's ``b̄`` (``imbalance``;
    ``b̄±``: the norms of its positive and negative parts, Lemma 5.4), the gap
    rerun from the same init direction at ``sigma`` (``gap_sigma``,
    :func:`lyu_probability_point`), and the σ → 0 flow: Thm 5.5's two-neuron flow
    from ``r θ̂``, ``θ̂ = (b̄+ μ̄, b̄− μ̄; b̄+, b̄−)`` (Lemma 5.4,
    :func:`twolayer.theory.lyu2021.phase2_start`), its gap at ``t = 1e200`` and
    ``1e300`` (``gap0_200``, ``gap0_300``) and its output weights' ratio
    ``max(â1/|â2|, |â2|/â1)`` at ``1e300`` (``a_ratio``: Thm 4.3's limit has
    ``â1 = |â2|``). ``hit_imbalance``: the largest imbalance of the runs outside the
    event that reached the limit. The prose's quotes: the misses, their smallest
    imbalance and the hits' largest, the largest change of a gap at ``sigma`` or
    σ → 0 (``stall_diff``), the range of ``a_ratio`` and of the fall of ``gap0``
    from 1e200 to 1e300."""
    import pandas as pd

    from .flows import gradient_flow
    from .models import TwoLayerNet
    from .theory import lyu2021

    data, X_eval = lyu_data(0)
    target = lyu2021.symmetric_limit_function(
        X_eval, lyu2021.max_margin_separator(data.X, data.y), alpha
    )
    mu_bar = lyu2021.mu(data.X, data.y)

    def embedding(width: int, seed: int) -> np.ndarray:
        net = TwoLayerNet(data.d, width, alpha=alpha, init="gaussian", seed=seed)
        return lyu2021.embedding_vector(*net.weights(), mu_bar)

    def imbalance(b: np.ndarray) -> float:
        ratio = np.linalg.norm(b[b > 0]) / np.linalg.norm(b[b < 0])
        return float(max(ratio, 1 / ratio))

    outside = frame[~frame.same_sign_b.to_numpy(bool)]
    hits = outside[outside.lyu <= threshold]
    rows = []
    for row in outside[outside.lyu > threshold].itertuples():
        m, s = int(row.width), int(row.seed)
        b = embedding(m, s)
        W, a = lyu2021.phase2_start(b, mu_bar)
        two = TwoLayerNet.from_weights(r * W, r * a, alpha=alpha)
        flow = gradient_flow(
            two, data, T_MAX, rtol=1e-5, atol=1e-8, snapshot_times=[0.0, 1e200, T_MAX]
        )
        late = [
            lyu2021.limit_error(snap["W"], snap["a"], X_eval, target, alpha)
            for snap in flow.snapshots[1:]
        ]
        a_end = flow.snapshots[-1]["a"]
        rows.append(
            dict(
                width=m,
                seed=s,
                gap=float(row.lyu),
                imbalance=imbalance(b),
                gap_sigma=lyu_probability_point(m, s, init_scale=sigma)["lyu"],
                gap0_200=late[0],
                gap0_300=late[1],
                a_ratio=imbalance(a_end),
            )
        )
    misses = pd.DataFrame(rows)
    hit_imbalance = max(
        imbalance(embedding(int(h.width), int(h.seed))) for h in hits.itertuples()
    )
    drop = misses.gap0_200 - misses.gap0_300
    return dict(
        misses=misses,
        hit_imbalance=hit_imbalance,
        quotes=dict(
            stall_n=len(misses),
            stall_imbalance_lo=misses.imbalance.min(),
            stall_hit_imbalance=hit_imbalance,
            stall_sigma=sigma,
            stall_diff=float(
                max(
                    abs(misses[k] - misses.gap).max() for k in ("gap_sigma", "gap0_300")
                )
            ),
            stall_a_lo=misses.a_ratio.min(),
            stall_a_hi=misses.a_ratio.max(),
            stall_drop_lo=float(drop.min()),
            stall_drop_hi=float(drop.max()),
        ),
    )


def lyu_continued(points) -> tuple:
    """Lyu Thm 4.3 draws continued in log time, ``points`` as
    ``(width, seed, data_seed)``: the stored ``lyu_horizons`` grid's row where it
    has the point, :func:`twolayer.synthesis.lyu_horizon_run` computed here
    otherwise; and whether the stored grid is stale."""
    import pandas as pd

    from . import synthesis

    if path("lyu_horizons").exists():
        frame, stale = load("lyu_horizons")
    else:  # not stored yet: every point computed here
        frame, stale = pd.DataFrame(columns=["width", "seed", "data_seed"]), True
    rows = []
    for w, s, ds in points:
        row = frame[(frame.width == w) & (frame.seed == s) & (frame.data_seed == ds)]
        if len(row):
            rows.append(row.iloc[0].to_dict())
        else:
            out = synthesis.lyu_horizon_run(int(w), int(s), data_seed=int(ds))
            rows.append(dict(out, data_seed=ds))
    return pd.DataFrame(rows), stale


def lyu_resolution(hits, continued, tol: float, hits_200=None) -> dict:
    """Thm 4.3's clause read at the horizons where its misses are resolved:
    ``hits`` (bool per draw: gap ≤ ``tol`` at 1e300, counted at the limit at
    every later horizon) and ``continued`` (:func:`lyu_continued` of the misses).
    ``log10_t``: 300, then each stored horizon up to the last one a miss was run
    to; ``frequency``: the fraction of draws at the limit at each; ``successes``:
    per draw at the last horizon; quotes of the worst miss."""
    from .synthesis import LYU_HORIZONS

    hits = np.asarray(hits, bool)
    last = float(continued.reached.max()) if len(continued) else 300.0
    hs = [h for h in LYU_HORIZONS if 300.0 <= h <= last]
    freq = [] if hits_200 is None else [float(np.mean(hits_200))]
    hs = hs if hits_200 is None else [200.0, *hs]
    for h in hs[len(freq) :]:
        ok = (  # a miss once resolved counts as at the limit later on, as a hit
            (continued.resolved <= h).to_numpy(bool) if len(continued) else []
        )
        freq.append((hits.sum() + int(np.sum(ok))) / hits.size)
    at_end = (
        continued.resolved.notna().to_numpy(bool)
        if len(continued)
        else np.array([], bool)
    )
    successes = hits.copy()  # the misses in draw order, as continued's rows
    successes[np.flatnonzero(~hits)[: at_end.size]] = at_end
    quotes = dict(cont_last=last, cont_misses=len(continued))
    if len(continued):
        worst = continued.loc[continued["gap@300"].idxmax()]
        quotes.update(
            cont_worst_300=worst["gap@300"],
            cont_worst_resolved=worst["resolved"],
            cont_worst_end=worst[f"gap@{worst['reached']:g}"],
            cont_worst_margin_300=worst["margin@300"],
            cont_worst_margin_end=worst[f"margin@{worst['reached']:g}"],
            cont_worst_kkt=worst["kkt@300"],
            cont_resolved=int(continued.resolved.notna().sum()),
        )
    return dict(log10_t=hs, frequency=freq, successes=successes, quotes=quotes)


def lyu_limits_resolution(L: dict, first: int, tol: float, width: int) -> dict:
    """The limits page's Thm 4.3 draws (:func:`twolayer.synthesis.lyu_limits` ``L``,
    drawn from ``first``, each with its own data): every miss at 1e300 continued
    (:func:`lyu_continued`, ``continued``, ``stale``) and the clause read where
    they are resolved (:func:`lyu_resolution`)."""
    n = len(L["err"]) + len(L["skipped"])
    draws = [d for d in range(first, first + n) if d not in L["skipped"]]
    hits = np.asarray(L["err"]) <= tol
    misses = [(width, d, d) for d, h in zip(draws, hits) if not h]
    continued, stale = lyu_continued(misses)
    res = lyu_resolution(hits, continued, tol, hits_200=L["err_200"] <= tol)
    return dict(res, continued=continued, stale=stale)


def lyu_clause_resolution(clause, frame, tol: float) -> dict:
    """Lyu Thm 4.3's probability clause per width read where its misses are
    resolved: ``clause`` the ``Lyu Thm 4.3`` rows of :func:`clauses`, ``frame`` the
    ``lyu_probability`` grid (data draw 0). Every miss at 1e300 with ``b̄`` of both
    signs is continued in log time (:func:`lyu_continued`); a miss with Lemma 5.4's
    event is the theorem's failure and stays one. Per width ``m``: ``successes`` at
    the last horizon, ``log10_t`` and ``frequency`` (:func:`lyu_resolution`);
    ``continued`` (all widths' continued misses) and ``stale``; quotes."""
    import pandas as pd

    out, conts, stale = {}, [], False
    for r in clause.itertuples():
        g = frame[frame.width == r.m].sort_values("seed")
        hits = (g.lyu <= tol).to_numpy(bool)
        event = g.same_sign_b.to_numpy(bool)
        misses = [(r.m, int(s), 0) for s in g.seed[~hits & ~event]]
        cont, st = lyu_continued(misses)
        stale = stale or st
        # the event's misses are failures at every horizon: not continued
        res = lyu_resolution(hits | event, cont, tol)
        res["successes"] = np.where(event & ~hits, False, res["successes"])
        res["frequency"] = [f - float((event & ~hits).mean()) for f in res["frequency"]]
        out[r.m] = res
        conts.append(cont)
    continued = pd.concat([c for c in conts if len(c)], ignore_index=True)
    resolved = continued[continued.resolved.notna()]
    quotes = dict(
        res_misses=len(continued),
        res_resolved=len(resolved),
        res_first=float(resolved.resolved.min()) if len(resolved) else np.nan,
        res_last=float(resolved.resolved.max()) if len(resolved) else np.nan,
        res_horizon=float(continued.reached.max()),
    )
    return dict(per_width=out, continued=continued, stale=stale, quotes=quotes)


def decay_specs(phuong: float, lyu: float) -> dict:
    """The decay test's theorems: key -> (threshold, label) of each gap
    (``phuong``, ``lyu``: the page's thresholds; Sarussi's :data:`THRESHOLDS`)."""
    return dict(
        phuong=(phuong, "Phuong Thm 1"),
        lyu=(lyu, "Lyu Thm 4.3"),
        sarussi=(THRESHOLDS["sarussi"], "Sarussi Thm 6.1"),
    )


def _crossing_text(lo: float, hi: float, critical: float) -> str:
    """A critical scale as the prose says it: its value, or where it lies beyond
    the grid (:func:`critical_scale`'s NaNs)."""
    if np.isfinite(critical):
        return f"{critical:.2g}"
    if np.isfinite(lo):
        return f"above {lo:g}"
    return f"below {hi:g}"


def decay_test(located, heldout, specs) -> dict:
    """The regime maps' decay test (grids ``decay`` and ``decay_heldout``, stopped
    points left out and counted). ``crossings``: per theorem and horizon (log10
    t of :data:`DECAY_TIMES`) the critical scale read at a fixed threshold
    (:func:`critical_scale` of ``gap@h`` on ``located``): a transition keeps it, a
    slow decay moves it up with the horizon. ``stalled``: per theorem and init
    scale the fraction of ``located`` runs whose ratio per decade of log10 t is at
    least :data:`DECAY_STALL` and the largest ratio. ``bracket``: per theorem the
    smallest scale where half the runs or more stall (NaN: none on the grid).
    ``trials``: per theorem the held-out flags at the largest scale — the gap
    still decays (``decays``) and the lazy rival's distance decays
    (``lazy_decays``). Quotes for the prose."""
    import pandas as pd

    stopped = int((located.error != "").sum() + (heldout.error != "").sum())
    located, heldout = (f[f.error == ""] for f in (located, heldout))
    logs = [float(np.log10(t)) for t in DECAY_TIMES]
    crossings, stalled, bracket, trials = [], [], {}, {}
    quotes = dict(decay_stopped=stopped)
    for key, (thr, label) in specs.items():
        f = located[located.theorem == key]
        for h in logs:
            c = critical_scale(f, f"gap@{h:g}", thr)
            crossings.append(dict(theorem=key, label=label, log10_t=h, **c))
        st = (
            f.assign(stall=f.ratio >= DECAY_STALL)
            .groupby("init_scale")
            .agg(
                stalled=("stall", "mean"),
                worst=("ratio", "max"),
                best=("ratio", "min"),
                median=("ratio", "median"),
            )
            .reset_index()
        )
        stalled.append(st.assign(theorem=key, label=label))
        over = st[st.stalled >= 0.5]
        bracket[key] = float(over.init_scale.min()) if len(over) else np.nan
        h = heldout[heldout.theorem == key]
        trials[key] = dict(
            decays=(h.ratio < DECAY_STALL).to_numpy(bool),
            lazy_decays=(h.lazy_ratio < DECAY_STALL).to_numpy(bool),
            ratio_hi=float(h.ratio.max()),
            lazy_lo=float(h.lazy_ratio.min()),
            runs=len(h),
            label=label,
            scale=float(h.init_scale.max()) if len(h) else np.nan,
        )
        quotes.update(
            {
                f"decay_{key}_hi": float(f.ratio.max()),
                f"decay_{key}_med": float(f.ratio.median()),
                f"decay_{key}_stalled": int((f.ratio >= DECAY_STALL).sum()),
                f"decay_runs_{key}": len(f),
                f"decay_{key}_held_hi": float(h.ratio.max()),
                f"decay_{key}_lazy_lo": float(h.lazy_ratio.min()),
            }
        )
    crossings = pd.DataFrame(crossings)
    for key in specs:
        c = crossings[crossings.theorem == key]
        quotes[f"cross_{key}"] = "; ".join(
            f"{_crossing_text(r.lo, r.hi, r.critical)} at log₁₀ t = {r.log10_t:g}"
            for r in c.itertuples()
        )
    quotes.update(
        decay_runs=len(located),
        decay_held_runs=len(heldout) // max(len(specs), 1),
        decay_brackets=int(np.isfinite(list(bracket.values())).sum()),
        decay_lazy_lo=float(located.lazy_ratio.min()),
    )
    return dict(
        crossings=crossings,
        stalled=pd.concat(stalled, ignore_index=True),
        bracket=bracket,
        trials=trials,
        quotes=quotes,
    )


def imbalance_law(horizons, fresh) -> dict:
    """The imbalance law of Thm 4.3's slow misses (:func:`twolayer.synthesis.
    mass_law_check` between ``log10 t`` = 200 and 300): on the stored misses of the
    probability grid (``horizons``: the ``lyu_horizons`` grid, outside Lemma 5.4's
    event, widths 2-6), on the fresh initialisations (``fresh``: the
    ``imbalance_fresh`` grid) and on the limits page's draw 15 (width 10), whose
    slow approach has another cause. ``*_dev``: ``|p − p_law|`` per run; ``fresh``:
    the fresh grid with ``p``, ``p_law``; quotes for the prose, with each stored
    miss's resolved horizon over its squared imbalance (``law_k2_lo/hi``)."""
    from .synthesis import mass_law_check

    h0, h1 = 200.0, 300.0
    cols = [f"mass@{h:g}" for h in (h0, h1)]
    ok = ~horizons.event.to_numpy(bool)
    stored = horizons[ok & (horizons.width < 10)]
    rival = horizons[ok & (horizons.width == 10)]
    dev = {}
    for key, f in (("stored", stored), ("rival", rival)):
        p, law = mass_law_check(f[cols[0]], f[cols[1]], h0, h1)
        dev[key] = np.abs(np.asarray(p) - np.asarray(law))
    rp, rlaw = mass_law_check(rival[cols[0]], rival[cols[1]], h0, h1)
    fresh = fresh[fresh.error == ""] if "error" in fresh else fresh
    dev["fresh"] = np.abs(fresh.p - fresh.p_law).to_numpy(float)
    k2 = (stored.resolved / stored.imbalance**2).to_numpy(float)
    rho = np.r_[fresh[cols[0]], fresh[cols[1]]]
    quotes = dict(
        law_stored_n=len(stored),
        law_stored_dev=float(dev["stored"].max()),
        law_fresh_n=len(fresh),
        law_fresh_dev=float(dev["fresh"].max()),
        law_fresh_k_lo=float(fresh.imbalance.min()),
        law_fresh_k_hi=float(fresh.imbalance.max()),
        law_rho_lo=float(rho.min()),
        law_rho_hi=float(rho.max()),
        law_rival_p=float(np.asarray(rp)[0]),
        law_rival_law=float(np.asarray(rlaw)[0]),
        law_k2_lo=float(np.nanmin(k2)),
        law_k2_hi=float(np.nanmax(k2)),
        law_k_lo=float(stored.imbalance.min()),
        law_k_hi=float(stored.imbalance.max()),
    )
    return dict(
        stored_dev=dev["stored"],
        fresh_dev=dev["fresh"],
        rival_dev=float(dev["rival"][0]),
        fresh=fresh,
        quotes=quotes,
    )
