"""The synthesis pages' figures (book/synthesis): limits, overlay, regime maps, moves.

Each function draws one figure from what the page measured (runs of
:mod:`twolayer.synthesis`, grids of :mod:`twolayer.regimes`) and returns it; no
training.
"""

from __future__ import annotations

import numpy as np

from .. import plots

LOG_T = "$\\log_{10} t$"


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


def _strip(ax, groups, log=True):
    """Each group's values as a jittered column of dots (one per draw)."""
    jitter = np.random.default_rng(0).uniform(
        -0.15, 0.15, max(map(len, groups.values()))
    )
    for i, values in enumerate(groups.values()):
        values = np.asarray(values, float)
        draw = ax.semilogy if log else ax.plot
        draw(i + jitter[: len(values)], values, "o", ms=3, color=f"C{i}")
    ax.set(xticks=range(len(groups)), xlim=(-0.5, len(groups) - 0.5))
    ax.set_xticklabels(list(groups))


# ----------------------------------------------------------------------- limits


def phuong_limit(small, large, init_scale, large_scale, threshold=1e-3):
    """The worst live neuron's gap per run against the early-phase direction's
    (left), σ3/σ1 of ``W`` for both inits (right)."""
    fig, axes = plots.panels(1, 2, height=3.4)
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
        ax.set(xlabel=LOG_T, ylabel=ylabel, title=title)
        ax.legend(loc="center right", fontsize=8)
    plots.fit_titles(fig)
    return fig


def gd_check(check, lr):
    """The distance of GD to the integrated flow at two steps, and the moved-init
    rival's."""
    fig, ax = plots.panels(1, 1, height=3.2)
    t = check["times"][1:]
    ax.loglog(t, check["dist"][1:], "o-", label=f"GD, $\\eta$ = {lr:g}")
    ax.loglog(t, check["dist_half"][1:], "s-", label=f"GD, $\\eta$ = {lr / 2:g}")
    ax.loglog(
        t, check["rival_dist"][1:], "^--", color="C3", label="flow from a 1% moved init"
    )
    ax.set(xlabel="flow time $t$", ylabel="relative distance to GD ($\\eta$)")
    ax.legend()
    return fig


def lyu_limit(L, large_sigma, threshold=0.05):
    """The relative sup gap per run of :func:`twolayer.synthesis.lyu_limits` ``L``
    against phase I's (left, its best seed), the normalised margin over the global
    maximum against the large init's (right, its best seed)."""
    from matplotlib.ticker import NullFormatter

    runs, phase1_gap, big_margin = L["runs"], L["phase1_best"], L["big_margin"].max()

    fig, axes = plots.panels(1, 2, height=3.4)
    _runs(axes[0], runs, "err", "C0", "learned")
    _runs(axes[1], runs, "margin", "C0", "learned", log=False)
    axes[0].axhline(
        phase1_gap, color="C3", ls="--", label="phase I: $\\bar\\mu$ (best seed)"
    )
    axes[0].axhline(threshold, color="k", ls=":", label=f"threshold {threshold:g}")
    axes[0].set(xlabel=LOG_T, ylabel="relative sup gap", title="function (Thm 4.3)")
    axes[0].yaxis.set_minor_formatter(NullFormatter())
    axes[1].axhline(
        big_margin, color="C1", ls="--", label=f"init scale {large_sigma:g} (best seed)"
    )
    axes[1].axhline(0.99, color="k", ls=":", label="threshold 0.99")
    axes[1].set(xlabel=LOG_T, ylabel="margin / global max", title="margin (Thm 4.2)")
    for ax in axes:
        ax.legend(loc="best", fontsize=8)
    plots.fit_titles(fig)
    return fig


def sarussi_limit(S, small_scale, large_scale, threshold=1e-3):
    """The clustering ratio per run of :func:`twolayer.synthesis.sarussi_limits`
    ``S`` for both inits, the late-phase rate ``c/log10 t`` with the large init's
    mean ``c``, and the threshold."""
    small, large, c_large = S["small"], S["large"], S["c_big"].mean()
    fig, ax = plots.panels(1, 1, height=3.2)
    _runs(ax, small, "ratio", "C0", f"init scale {small_scale:g}", start=-100)
    _runs(ax, large, "ratio", "C1", f"init scale {large_scale:g}", start=-100)
    lt = np.linspace(50, 300, 20)
    ax.semilogy(lt, c_large / lt, "k--", lw=1, label="$c/\\log_{10} t$, large-init $c$")
    ax.axhline(threshold, color="k", ls=":", label=f"threshold {threshold:g}")
    ax.set(xlabel=LOG_T, ylabel="$R/\\|\\bar w-\\bar u\\|$")
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------- overlay


def overlay(runs, bigs, init_scale, large_scale, threshold=1e-3):
    """The three papers' gaps along each run, small init (top) and large (bottom)."""
    fig, axes = plots.panels(2, 1, height=3.2, sharex=True)
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
    axes[1].set(xlabel=LOG_T)
    axes[0].legend(loc="lower left", fontsize=8)
    plots.fit_titles(fig)
    return fig


def min_overlay(runs, bigs, init_scale, large_scale):
    """Min et al. on the overlay runs: the fraction in own cone or dead (left) and the
    stable rank (right) against ``log10 t``, with the first draw's ``log n/√μ``."""
    fig, axes = plots.panels(1, 2, height=3.0, sharex=True)
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
        ax.set(ylabel=ylabel, title=title, xlim=(-1, 4), xlabel=LOG_T)
    axes[1].axhline(2, color="C3", ls="--", lw=1, label="bound 2")
    for ax in axes:
        ax.legend(fontsize=8)
    plots.fit_titles(fig)
    return fig


# ---------------------------------------------------------------------- regimes


def heatmaps(
    axes, frame, gap: str, threshold: float, relation: str = "<=", label: str = ""
) -> None:
    """Two panels on ``axes``: the pass rate over seeds per (init scale, width), and
    the median gap (log colour scale) with the threshold's contour; the critical
    scale of :func:`twolayer.regimes.critical_scale` marked on both."""
    import matplotlib.colors as mcolors

    from ..regimes import critical_scale, pass_rates

    rates = pass_rates(frame, gap, threshold, relation)
    scales = np.sort(rates["init_scale"].unique())
    widths = np.sort(rates["width"].unique())
    P, M = (
        rates.pivot(index="width", columns="init_scale", values=v)
        .loc[widths, scales]
        .to_numpy()
        for v in ("pass_rate", "median")
    )
    x, yy = np.log10(scales), np.arange(len(widths))
    im = axes[0].pcolormesh(x, yy, P, shading="nearest", cmap="RdYlGn", vmin=0, vmax=1)
    axes[0].figure.colorbar(im, ax=axes[0], label="pass rate")
    positive = M[M > 0]
    # log only over decades
    norm = (
        mcolors.LogNorm(vmin=positive.min(), vmax=positive.max())
        if positive.size and positive.max() > 10 * positive.min()
        else None
    )
    im2 = axes[1].pcolormesh(
        x, yy, np.where(M > 0, M, np.nan), shading="nearest", cmap="viridis", norm=norm
    )
    axes[1].figure.colorbar(im2, ax=axes[1], label=f"median {label or gap}")
    if np.nanmin(M) < threshold < np.nanmax(M):
        axes[1].contour(x, yy, M, levels=[threshold], colors="w", linewidths=2)
    crit = critical_scale(frame, gap, threshold, relation)
    for ax in axes:
        ax.set(
            xlabel="$\\log_{10}$ init scale",
            ylabel="width",
            yticks=yy,
            yticklabels=[str(w) for w in widths],
        )
        if np.isfinite(crit["critical"]):
            ax.axvline(np.log10(crit["critical"]), color="k", ls="--", lw=1)


def regime_maps(grids, theorems, keys, height=3.0):
    """One row of :func:`heatmaps` per theorem in ``keys``; ``theorems[key]`` is
    ``(grid name, gap column, threshold, relation, label)``."""
    fig, axes = plots.panels(len(keys), 2, height=height)
    for row, key in zip(np.atleast_2d(axes), keys):
        grid, gap, threshold, relation, label = theorems[key]
        heatmaps(row, grids[grid], gap, threshold, relation, label=label)
        row[0].set_title(f"{key}: pass rate")
        row[1].set_title(f"{key}: median {label}")
    plots.fit_titles(fig)
    return fig


def decay_test(test, scales, stall: float = 0.9):
    """The regime maps' decay test (:func:`twolayer.regimes.decay_test`): top, each
    theorem's critical scale read at a fixed threshold at three horizons (a
    triangle at the grid's edge where the crossing lies beyond it: ▲ nothing fails
    at the largest scale, ▼ everything fails at the smallest); bottom, per init
    scale the median decay ratio per decade of log10 t over the runs (line) and
    their range (band), with the stall rule (dashed) and a 1/log t decay
    (dotted)."""
    lo, hi = float(min(scales)), float(max(scales))
    fig, axes = plots.panels(2, 1, height=5.6)
    for i, (key, c) in enumerate(test["crossings"].groupby("theorem", sort=False)):
        crit = c.critical.to_numpy(float)
        above = ~np.isfinite(crit) & np.isfinite(c.lo.to_numpy(float))
        below = ~np.isfinite(crit) & ~above
        y = np.where(above, hi, np.where(below, lo, crit))
        x = c.log10_t.to_numpy(float)
        inside = ~(above | below)
        axes[0].loglog(x, y, "-", color=f"C{i}", label=c.label.iloc[0])
        axes[0].loglog(x[inside], y[inside], "o", color=f"C{i}")
        axes[0].loglog(x[above], y[above], "^", ms=8, color=f"C{i}")
        axes[0].loglog(x[below], y[below], "v", ms=8, color=f"C{i}")
    axes[0].set(
        xlabel=LOG_T,
        ylabel="critical init scale",
        title="crossing of a fixed gap threshold",
        ylim=(lo / 2, hi * 2),
    )
    axes[0].legend(fontsize=9)
    for i, (key, s) in enumerate(test["stalled"].groupby("theorem", sort=False)):
        axes[1].fill_between(
            s.init_scale, s["best"], s["worst"], color=f"C{i}", alpha=0.2
        )
        axes[1].loglog(
            s.init_scale, s["median"], "o-", color=f"C{i}", label=s.label.iloc[0]
        )
    axes[1].axhline(stall, color="k", ls="--", lw=1, label=f"stall ({stall:g})")
    axes[1].axhline(0.1, color="0.4", ls=":", lw=1, label="$1/\\log t$ (0.1)")
    axes[1].set(
        xlabel="init scale",
        ylabel="decay ratio",
        title="gap ratio per decade of $\\log_{10} t$ (median, range)",
    )
    axes[1].legend(fontsize=9, ncol=2)
    plots.fit_titles(fig)
    return fig


def probability_clauses(clauses):
    """Failure rates per width against each theorem's bound (dashed) and the rival at
    large init (dotted); ``clauses``: theorem -> :func:`~twolayer.regimes.
    clause_table`. A rate of 0 is drawn at half a run."""
    fig, ax = plots.panels(1, 1, height=3.0)
    widths = set()
    for i, ((theorem, t), marker) in enumerate(zip(clauses.items(), "os")):
        rate = np.maximum(t.fail_rate, 0.5 / t.runs)
        ax.semilogy(t.m, rate, marker, ls="-", color=f"C{i}", label=theorem)
        ax.semilogy(t.m, 1 - t.bound, marker, ls="--", mfc="none", color="0.4")
        ax.semilogy(t.m, t.large_fail_rate, marker, ls=":", mfc="none", color=f"C{i}")
        widths |= set(t.m)
    ax.plot([], [], "--", color="0.4", label="bound $2^{-(m-1)}$, $2^{-p}$")
    ax.plot([], [], "k:", label="init scale 3 (rival)")
    ax.set(xlabel="width $m$ ($p$)", ylabel="failure rate", xticks=sorted(widths))
    ax.legend(fontsize=8)
    return fig


def mu_move(mu, large, threshold):
    """The μ move: Phuong's gap against μ with the large-init draws (left), Min's
    alignment time ``t1`` against ``log n/√μ`` where μ > 0 (right)."""
    fig, axes = plots.panels(1, 2, height=3.2)
    axes[0].semilogy(mu.mu, mu.phuong, "o", ms=3, label="init $10^{-3}$")
    axes[0].semilogy(large.mu, large.phuong, "^", ms=3, color="C3", label="init 3")
    axes[0].axhline(threshold, color="k", ls=":", label=f"{threshold:g}")
    axes[0].set(
        xlabel="$\\mu$", ylabel="Phuong gap", title="Phuong Thm 1 as $\\mu$ falls"
    )
    pos = mu[mu.mu > 0].sort_values("mu")
    axes[1].semilogy(pos.mu, pos.t1, "o", ms=3, label="$t_1$")
    axes[1].semilogy(pos.mu, pos.t_scale, "s--", ms=3, label="$\\log n/\\sqrt{\\mu}$")
    axes[1].set(xlabel="$\\mu$", ylabel="paper time", title="Min's alignment time")
    for ax in axes:
        ax.axvline(0, color="C3", ls="--", lw=1)
        ax.legend(fontsize=8)
    plots.fit_titles(fig)
    return fig


def alpha_move(drops, stall):
    """The α move: per draw, the change of ``log10`` of Phuong's gap from
    ``t = 1e100`` to ``1e300``; ``drops``: α -> values; ``stall``: the threshold."""
    fig, ax = plots.panels(1, 1, height=3.0)
    _strip(ax, {f"{a:g}": d for a, d in drops.items()}, log=False)
    ax.axhline(-np.log10(3), color="k", ls="--", lw=1, label="ReLU rate $1/\\log t$")
    ax.axhline(stall, color="k", ls=":", label="stalled above")
    ax.set(
        xlabel="leaky slope $\\alpha$",
        ylabel="$\\Delta\\log_{10}$ gap, $10^{100}\\to10^{300}$",
    )
    ax.legend(fontsize=8)
    return fig


def width2_move(mixed, same, threshold):
    """Width 2, signs forced: the relative sup gap per draw, one neuron of each sign
    against both positive."""
    fig, ax = plots.panels(1, 1, height=2.8)
    _strip(ax, {"one of each sign": mixed, "both positive": same})
    ax.axhline(threshold, color="k", ls=":", label=f"threshold {threshold:g}")
    ax.set(ylabel="relative sup gap")
    ax.legend(fontsize=8)
    return fig


def hinted_move(symmetric, hinted, threshold):
    """The hint move: per draw, the relative sup gap to ``(1+α)/4⟨w*, x⟩`` at
    ``t = 1e300`` without and with the hints, and with the hints the gap to Thm 6.2's
    ``½φ(⟨w*, x⟩)`` (frames of the ``hinted_draws`` grid)."""
    fig, ax = plots.panels(1, 1, height=3.0)
    _strip(
        ax,
        {
            "no hints: linear": symmetric["lyu_1e+300"],
            "hints: linear": hinted["lyu_1e+300"],
            "hints: Thm 6.2": hinted["thm62"],
        },
    )
    ax.axhline(threshold, color="k", ls=":", label=f"threshold {threshold:g}")
    ax.set(ylabel="relative sup gap at $t=10^{300}$")
    ax.legend(fontsize=8)
    return fig


def lyu_continued(continued, threshold=0.05, horizons=None):
    """Lyu Thm 4.3's misses at ``t = 10^300`` continued in log time (rows of
    :func:`twolayer.regimes.lyu_continued`): each miss's relative sup gap against
    ``log10 t`` on a log axis, up to the horizon it was run to, with the
    tolerance; the stalling rival (Lemma 5.4's event, if present) dashed."""
    from matplotlib.ticker import NullFormatter

    from ..synthesis import LYU_HORIZONS

    horizons = LYU_HORIZONS if horizons is None else horizons
    fig, ax = plots.panels(1, 1, height=3.6)
    ax = np.atleast_1d(ax)[0]
    for _, row in continued.iterrows():
        h = np.array([x for x in horizons if np.isfinite(row[f"gap@{x:g}"])])
        event = bool(row["event"])
        ax.loglog(
            h,
            [row[f"gap@{x:g}"] for x in h],
            "--" if event else "o-",
            ms=3,
            color="C3" if event else "C0",
            label=(
                "Lemma 5.4's event (b̄ of one sign)"
                if event
                else "a miss at $10^{300}$ (σ → 0 flow)"
            ),
        )
    ax.axhline(threshold, color="k", ls=":", label=f"tolerance {threshold:g}")
    ax.set(
        xlabel="$\\log_{10} t$",
        ylabel="relative sup gap",
        title="Thm 4.3's misses, continued",
    )
    ax.yaxis.set_minor_formatter(NullFormatter())
    handles, labels = ax.get_legend_handles_labels()
    keep = dict(zip(labels, handles))
    ax.legend(keep.values(), keep.keys(), loc="best", fontsize=9)
    plots.fit_titles(fig)
    return fig
