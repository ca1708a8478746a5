"""Figures of the Sarussi, Brutzkus & Globerson chapter (``book/sarussi2021``).

One call each: every function draws from arrays a page has measured (weights,
per-snapshot tables of :mod:`twolayer.theory.sarussi2021`, run tables) and
returns the figure; the page's cell carries the caption.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from .. import plots
from ..theory import sarussi2021 as theory

_CLUSTERS = [
    ("$\\bar w$ vs $w$", "-", "C0"),
    ("$\\bar u$ vs $u$", "-", "C1"),
    ("$\\bar w-\\bar u$ vs $w-u$", "-", "C2"),
    ("$\\bar w-\\bar u$ vs linear SVM", "--", "0.35"),
]


def _arrows(ax, P, Q, lim: float) -> None:
    """The w-neurons (black) and u-neurons (gold) as arrows scaled into ``lim``."""
    sc = lim / max(np.linalg.norm(np.vstack([P, Q]), axis=1).max(), 1e-300)
    plots.neuron_arrows(ax, P, "k", sc, label="w-neurons")
    plots.neuron_arrows(ax, Q, "gold", sc, label="u-neurons")


# ----------------------------------------------------------------- Thm 4.1


def thm41_visited_loss(curves, init_scales, widths, eps: float):
    """Thm 4.1: the largest visited loss per epoch, one panel per init scale,
    one line per width; ``curves[(scale, k)]`` the per-epoch maxima."""
    fig, axes = plots.panels(2, 2, height=2.6, sharex=True, sharey=True)
    palette = sns.color_palette("viridis", len(widths))
    for ax, scale in zip(axes.flat, init_scales):
        for j, k in enumerate(widths):
            c = curves[(scale, k)]
            ax.plot(np.arange(1, len(c) + 1), c, color=palette[j], lw=1.3)
        ax.axhline(eps, color="k", lw=1, ls="--")
        ax.set(yscale="log", title=f"init scale {scale:g}")
    for ax in axes[1]:
        ax.set_xlabel("epoch")
    for ax in axes[:, 0]:
        ax.set_ylabel("largest visited loss")
    handles = [plt.Line2D([], [], color=c, lw=1.3) for c in palette]
    handles.append(plt.Line2D([], [], color="k", lw=1, ls="--"))
    labels = [f"k = {k}" for k in widths] + [f"$\\epsilon$ = {eps}"]
    fig.legend(handles, labels, loc="outside right center", fontsize="x-small")
    fig.suptitle("Thm 4.1: every run ends with all visited points below $\\epsilon$")
    plots.fit_titles(fig)
    return fig


def thm41_width(table, alpha: float, init_scales, widths):
    """Eq. 20's width dependence: leading violating epochs against ``k``
    (median over the draws) per init scale, leaky ReLU (solid) and ReLU
    (dashed); the leaky net at step η/k (dotted, band: its range over the
    draws) and a slope −1 guide. ``table``: one row per run with columns
    ``alpha``, ``init_scale``, ``k``, ``mode``, ``leading``."""
    fig, ax = plots.panels(height=3.6)
    colours = sns.color_palette("viridis", len(init_scales))
    small = min(init_scales)
    for a, ls, name in ((alpha, "-", "leaky"), (0.0, "--", "ReLU")):
        for c, sc in zip(colours, init_scales):
            med = theory.runs_at(table, a, sc, "η").groupby("k").leading.median()
            ax.plot(
                med.index,
                med,
                ls=ls,
                color=c,
                marker="o",
                ms=3,
                label=f"{name}, scale {sc:g}",
            )
    g = theory.runs_at(table, alpha, small, "η/k").groupby("k").leading
    ax.fill_between(g.median().index, g.min(), g.max(), color="0.6", alpha=0.3, lw=0)
    ax.plot(
        g.median().index,
        g.median(),
        ls=":",
        color="k",
        label=f"leaky, step η/k, scale {small:g} (band: range)",
    )
    k_ = np.array(widths, dtype=float)
    first = theory.runs_at(table, alpha, small, "η").groupby("k").leading.median()
    ax.plot(
        k_, first.iloc[0] / k_, color="0.5", lw=3, alpha=0.4, label="slope −1 (eq. 20)"
    )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="k (neurons of each sign)",
        ylabel="leading violating epochs",
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize="x-small")
    plots.fit_titles(fig)
    return fig


# ----------------------------------------------------------------- Thm 5.1 on MNIST


def mnist_fractions(df, runs, names, settings):
    """Figs 2/6: the fraction of training (solid) and test (dashed) points
    outside the linear regime against flow time, per pair and centring, small
    init (band: range over the seeds) and large init; grey / black lines: the
    median first 100% training accuracy and first loss < log 2 / n."""
    fig, axes = plots.panels(len(names), 2, height=2.7, sharey=True, squeeze=False)
    for (name, setting), ax in zip(
        [(p, s) for p in names for s in settings], axes.flat
    ):
        sub = df[(df.pair == name) & (df.setting == setting) & (df.t > 0)]
        for init, color in (("small", plots.POS), ("large", plots.NEG)):
            g = sub[sub.init == init].groupby("t")
            small = init == "small"
            if small:
                ax.fill_between(
                    g.outside.median().index,
                    g.outside.min(),
                    g.outside.max(),
                    color=color,
                    alpha=0.25,
                    lw=0,
                    label="small init: range (train)",
                )
            ax.plot(
                g.outside.median(),
                color=color,
                ls="-" if small else ":",
                label=f"{init} init: train",
            )
            ax.plot(
                g.outside_test.median(),
                color=color,
                lw=1,
                ls="--" if small else "-.",
                label=f"{init} init: test",
            )
        hz = runs[(runs.pair == name) & (runs.setting == setting)]
        hz = hz[hz.init == "small"]
        if np.isfinite(hz.t_fit.median()):
            ax.axvline(hz.t_fit.median(), color="0.5", lw=1)
        if np.isfinite(hz.t_ll.median()):
            ax.axvline(hz.t_ll.median(), color="k", lw=1)
        ax.set(
            title=f"{name}, {setting}",
            xlabel="flow time $t$",
            xscale="log",
            ylim=(-0.03, 1.03),
        )
    for ax in axes[:, 0]:
        ax.set_ylabel("fraction outside")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3)
    plots.fit_titles(fig)
    return fig


def _along(df, col, init, name, setting):
    sub = df[(df.pair == name) & (df.setting == setting) & (df.init == init)]
    return sub[sub.t > 0].groupby("t")[col].median()


def mnist_radius(df, combos):
    """Fig 2's R against flow time (median over the seeds), small init (solid)
    and large init (dotted), one colour per (pair, centring)."""
    fig, ax = plots.panels(height=3.4)
    for (name, setting), color in zip(combos, plt.get_cmap("tab10").colors):
        small = _along(df, "R", "small", name, setting)
        ax.plot(small, color=color, label=f"{name}, {setting}")
        ax.plot(_along(df, "R", "large", name, setting), color=color, ls=":")
    ax.plot([], [], color="k", ls=":", label="large init")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="flow time $t$",
        ylabel="$R$",
        title="cluster radius R",
    )
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1))
    plots.fit_titles(fig)
    return fig


def mnist_clustering(df, combos):
    """Figs 6–7 along the MNIST runs (median over the seeds): the ratio
    R/‖w̄−ū‖ with Thm 5.1's 1/2 (left) and the largest within-cluster angle
    (right), small init (solid) and large init (dotted)."""
    fig, axes = plots.panels(1, 2, height=3.2)
    for (name, setting), color in zip(combos, plt.get_cmap("tab10").colors):
        for init, ls in (("small", "-"), ("large", ":")):
            lab = f"{name}, {setting}" if init == "small" else None
            ratio = _along(df, "ratio", init, name, setting)
            axes[0].plot(ratio, color=color, ls=ls, label=lab)
            axes[1].plot(_along(df, "angle", init, name, setting), color=color, ls=ls)
    axes[0].axhline(0.5, color="0.4", ls="-.", lw=1)
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="flow time $t$",
        ylabel="$R/\\|\\bar w-\\bar u\\|$",
        title="Fig. 6/7a: clustering ratio",
    )
    axes[1].set(
        xscale="log",
        xlabel="flow time $t$",
        ylabel="degrees",
        title="Fig. 7b: largest angle within a cluster",
    )
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize="x-small")
    plots.fit_titles(fig)
    return fig


# ----------------------------------------------------------------- Figs 1, 3, 5


def fig1(runs, ds, alpha: float):
    """Fig 1: decision regions, the cluster line (w̄−ū)·x = 0 and the neurons of
    the small- and large-init networks (``runs[name]``: dicts with ``P``, ``Q``,
    ``ratio``, ``init_scale``)."""
    fig, axes = plots.panels(1, 2, height=3.9)
    for ax, name in zip(axes, ("small", "large")):
        r = runs[name]
        P, Q = r["P"], r["Q"]
        plots.decision_boundary(
            ax, lambda Z: theory.network_output(P, Q, Z, alpha), ds.X, ds.y
        )
        plots.zero_line(
            ax,
            theory.clusters(P, Q).direction,
            1.0,
            color="orange",
            ls="--",
            label="$(\\bar w-\\bar u)\\cdot x=0$",
        )
        _arrows(ax, P, Q, 0.95)
        ax.set_title(f"{name} init ({r['init_scale']:g}): R/‖w̄−ū‖ = {r['ratio']:.2f}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3)
    plots.fit_titles(fig)
    return fig


def fig1_sparse(contrast, sparse, alpha: float, wide_k: int):
    """Fig 1's contrast on the sparse set: the first seed's boundary from the
    small and from the large init."""
    fig, axes = plots.panels(1, 2, height=3.7)
    for ax, name in zip(axes, ("small", "large")):
        r = contrast[name][0]
        P, Q = r["P"], r["Q"]
        plots.decision_boundary(
            ax, lambda Z: theory.network_output(P, Q, Z, alpha), sparse.X, sparse.y
        )
        ax.set_title(f"{name} init: 2k = {2 * wide_k}, scale {r['init_scale']:g}")
    plots.fit_titles(fig)
    return fig


def fig1_sweep(lo, med, hi, mid_scale: float):
    """The init-scale sweep: fraction of the disk outside the linear regime
    (left) and off the best line (right) per scale (median, band: range);
    ``mid_scale`` the first scale with median ratio > 1/2 (nan: none)."""
    fig, axes = plots.panels(1, 2, height=3.3)
    for ax, col, label in (
        (axes[0], "outside", "fraction of disk outside the regime"),
        (axes[1], "departure", "fraction of disk off the line"),
    ):
        ax.fill_between(med.index, lo[col], hi[col], color=plots.POS, alpha=0.25, lw=0)
        ax.plot(med.index, med[col], color=plots.POS, marker="o", label="median")
        if np.isfinite(mid_scale):
            ax.axvline(
                mid_scale, color="grey", ls=":", lw=1, label="median ratio > 1/2"
            )
        ax.set(xscale="log", xlabel="init scale", ylabel=label)
    axes[0].set_title("the certificate (Thm 5.1)")
    axes[0].legend(loc="center left")
    axes[1].set_title("the boundary itself")
    plots.fit_titles(fig)
    return fig


def fig3(P, Q, alpha: float, beta):
    """Fig 3: N(x) with its straight zero set (left) and N on the unit circle
    against the best linear fit ``x·beta`` (right; legend below the panel)."""
    fig, axes = plots.panels(1, 2, height=3.6)
    plots.decision_boundary(
        axes[0],
        lambda Z: theory.network_output(P, Q, Z, alpha),
        fill="value",
        colorbar=True,
    )
    axes[0].set_title("N(x): bent level sets, straight zero set")
    theta = np.linspace(0, 2 * np.pi, 400)
    circle = np.c_[np.cos(theta), np.sin(theta)]
    deg = np.degrees(theta)
    axes[1].plot(
        deg, theory.network_output(P, Q, circle, alpha), label="N(x) on the unit circle"
    )
    axes[1].plot(deg, circle @ beta, ls="--", label="best linear fit")
    axes[1].axhline(0, color="k", lw=0.8)
    axes[1].set(
        xlabel="angle of x (degrees)",
        ylabel="output",
        title="N is piecewise linear, not linear",
    )
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize="small")
    plots.fit_titles(fig)
    return fig


def fig5(w, u, alpha: float, grid_size: int):
    """Fig 5: two perfectly clustered neurons ``w``, ``u`` (1×2 each), leaky
    ReLU (left) and ReLU (right), with the ReLU's zero region in grey."""
    fig, axes = plots.panels(1, 2, height=3.6)
    for ax, a_ in zip(axes, (alpha, 0.0)):
        plots.decision_boundary(
            ax,
            lambda Z: theory.network_output(w, u, Z, a_),
            n=grid_size,
            zero_color="0.3",
        )
        plots.neuron_arrows(ax, w / np.linalg.norm(w), "k", 1.0, lw=2, label="$w$")
        plots.neuron_arrows(ax, u / np.linalg.norm(u), "gold", 1.0, lw=2, label="$u$")
        ax.set_title("leaky ReLU, α = " + str(a_) if a_ > 0 else "ReLU")
    for color, lab in (
        (plots.POS, "N(x) > 0"),
        (plots.NEG, "N(x) < 0"),
        ("0.3", "N(x) = 0"),
    ):
        axes[1].fill_between([], [], color=color, alpha=0.3, label=lab)
    keep = {}
    for a in axes[::-1]:
        for h, lab in zip(*a.get_legend_handles_labels()):
            keep[lab] = h
    fig.legend(keep.values(), keep.keys(), loc="outside lower center", ncol=5)
    plots.fit_titles(fig)
    return fig


# ----------------------------------------------------------------- Fig 4


def fig4(ds, P, Q, alpha: float, w_par, u_par, w_lin):
    """Fig 4: (a) the trained boundary against the PAR SVM's (w−u)·x = 0 and the
    linear SVM; (b) the learned neurons against the predicted w and u."""
    fig, axes = plots.panels(1, 2, height=3.8)
    lim = np.abs(ds.X).max() * 1.15
    ax = axes[0]
    plots.decision_boundary(
        ax, lambda Z: theory.network_output(P, Q, Z, alpha), ds.X, ds.y, lim=lim, n=300
    )
    plots.zero_line(
        ax,
        w_par - u_par,
        lim,
        color="orange",
        ls="--",
        lw=2,
        label="PAR: $(w-u)\\cdot x=0$",
    )
    plots.zero_line(
        ax, w_lin, lim, color="grey", ls=":", lw=2, label="linear max-margin SVM"
    )
    ax.plot([], [], color="k", lw=2, label="trained $N(x)=0$")
    ax.set_title("(a) decision boundary")
    ax = axes[1]
    scale = 1 / max(np.linalg.norm(np.vstack([P, Q]), axis=1).max(), 1e-300)
    top = max(np.linalg.norm(w_par), np.linalg.norm(u_par))
    for Wt, pred, color, lab in (
        (P, w_par, plots.POS, "w"),
        (Q, u_par, plots.NEG, "u"),
    ):
        plots.neuron_arrows(ax, Wt, color, scale, lw=1.5, label=f"learned ${lab}_i$")
        p = pred / top
        ax.plot([0, p[0]], [0, p[1]], color="orange", ls="--", lw=2)
        left = p[0] < 0  # the label beside the tip, away from the arrows
        ax.annotate(
            f"predicted ${lab}$",
            xy=p,
            textcoords="offset points",
            xytext=(4, -14) if left else (-4, 10),
            ha="left" if left else "right",
            va="top" if left else "bottom",
            color="darkorange",
        )
    ax.set(
        xlim=(-1.2, 1.2),
        ylim=(-1.2, 1.2),
        aspect="equal",
        xlabel="$x_1$",
        ylabel="$x_2$",
        title="(b) weights (scaled): learned vs PAR SVM",
    )
    handles = [h for a in axes for h in a.get_legend_handles_labels()[0]]
    labels = [lab for a in axes for lab in a.get_legend_handles_labels()[1]]
    fig.legend(handles, labels, loc="outside lower center", ncol=3)
    plots.fit_titles(fig)
    return fig


def fig4_angles(hist):
    """Angles (degrees) of the learned directions to the PAR SVM's along the
    flow; ``hist`` rows ``(t, w, u, boundary, boundary vs linear SVM)``."""
    fig, ax = plots.panels(height=3.8)
    x = np.log10(1 + hist[:, 0])
    for j, (lab, ls, color) in enumerate(_CLUSTERS):
        ax.plot(x, hist[:, j + 1], label=lab, ls=ls, color=color)
    ax.set(
        yscale="log",
        xlabel="$\\log_{10}(1+t)$ (gradient-flow time)",
        ylabel="angle (degrees)",
        title="learned directions vs the PAR SVM of Thm 6.2",
    )
    ax.legend(fontsize="small")
    plots.fit_titles(fig)
    return fig


# ----------------------------------------------------------------- Figs 7, 8, 9


def fig7_8(h, entry: int):
    """Figs 7–8 along one flow (``h``: :func:`~twolayer.theory.sarussi2021.
    regime_history` rows as a DataFrame, ``entry`` the PAR entrance's row):
    PAR fractions, the clustering ratio, the within-cluster angles, and R and
    ratio × log t after the entrance, relative to their last values."""
    fig, axes = plots.panels(2, 2, height=3.2)
    axes = axes.ravel()
    x = np.log10(h.step.clip(lower=1e-2))
    for col, color, ls, lab in (
        ("par", "k", "-", "all neurons"),
        ("par_w", plots.POS, "--", "w-neurons"),
        ("par_u", plots.NEG, ":", "u-neurons"),
    ):
        axes[0].plot(x, 100 * h[col], color=color, ls=ls, label=lab)
    axes[0].set(
        xlim=(-2, 6),
        xlabel="$\\log_{10} t$ (first decades)",
        ylabel="% of neurons in the PAR",
        title="Fig. 8: entrance to the PAR",
    )
    axes[0].legend(fontsize="x-small")
    axes[1].plot(x, h.ratio, color="k")
    axes[1].axvline(x[entry], color="grey", ls=":", lw=1)
    axes[1].set(
        yscale="log",
        xlabel="$\\log_{10} t$",
        ylabel="$R/\\|\\bar w-\\bar u\\|$",
        title="Fig. 7a: clustering ratio",
    )
    axes[2].plot(x, h.angle_w, color=plots.POS, label="w-neurons")
    axes[2].plot(x, h.angle_u, color=plots.NEG, ls="--", label="u-neurons")
    axes[2].axvline(x[entry], color="grey", ls=":", lw=1, label="PAR entrance")
    axes[2].set(
        yscale="log",
        xlabel="$\\log_{10} t$",
        ylabel="degrees",
        title="Fig. 7b: largest angle within a cluster",
    )
    axes[2].legend(fontsize="x-small")
    late = h.iloc[entry + 1 :]
    xl = x[entry + 1 :]
    axes[3].plot(xl, late.radius / late.radius.iloc[0], color="k", label="$R$")
    scaled = late.ratio * np.log(late.step)
    axes[3].plot(
        xl,
        scaled / scaled.iloc[-1],
        color="grey",
        ls="--",
        label="ratio $\\times\\log t$",
    )
    axes[3].set(
        xlabel="$\\log_{10} t$",
        ylabel="relative to its last value",
        title="after the entrance: R conserved, ratio ~ 1/log t",
    )
    axes[3].legend(fontsize="x-small")
    plots.fit_titles(fig)
    return fig


def fig9(base, outlier, alpha: float, snaps, hists, labels):
    """Fig 9 with an outlier. (a), (b): the boundary and the neurons of two
    snapshots ``snaps = [(W, title), (W, title)]``; (c) the largest same-type
    disagreement and (d) the % of w-neurons in the PAR along GD, one line per
    run of ``hists`` (per-snapshot DataFrames), ``labels`` naming each (the
    first seed of each setting; a setting keeps one colour)."""
    fig, axes = plots.panels(2, 2, height=3.4)
    axes = axes.ravel()
    lim = np.abs(np.vstack([base.X, outlier])).max() * 1.1
    for ax, (W, title) in zip(axes[:2], snaps):
        P, Q = theory.split_neurons(W)
        plots.decision_boundary(
            ax,
            lambda Z: theory.network_output(P, Q, Z, alpha),
            base.X,
            base.y,
            lim=lim,
            n=250,
        )
        ax.scatter(
            *outlier, marker="*", color=plots.POS, s=250, edgecolor="k", label="outlier"
        )
        _arrows(ax, P, Q, lim)
        ax.set_title(title)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=5)
    for j, (h, lab) in enumerate(zip(hists, labels)):
        x = h.step.clip(lower=1)
        worst = np.maximum(h.disagree_w, h.disagree_u)
        axes[2].plot(x, worst, color=f"C{j}", label=lab)
        axes[3].plot(x, 100 * h.par_w, color=f"C{j}", label=lab)
    axes[2].set(
        xscale="log",
        yscale="symlog",
        xlabel="GD step",
        ylabel="points (symlog)",
        ylim=(0, 2 * len(base.X)),
        title="(c) max same-type disagreements",
    )
    axes[3].set(
        xscale="log",
        xlabel="GD step",
        ylabel="%",
        title="(d) % of w-neurons in the PAR",
    )
    axes[3].legend(
        loc="upper center", bbox_to_anchor=(-0.1, -0.22), ncol=2, fontsize="small"
    )
    plots.fit_titles(fig)
    return fig


def fig1_contrast(sweep, sparse, alpha: float, wide_k: int):
    """:func:`fig1_sparse` from an init-scale sweep table (one row per scale and
    seed, with ``P``, ``Q``, ``init_scale``): the first seed of the smallest and
    of the largest scale."""
    ends = {
        name: sweep[sweep.init_scale == scale].to_dict("records")
        for name, scale in (
            ("small", sweep.init_scale.min()),
            ("large", sweep.init_scale.max()),
        )
    }
    return fig1_sparse(ends, sparse, alpha, wide_k)


def fig9_settings(base, outlier, alpha: float, hists, shown, init_scales, seed):
    """:func:`fig9` from the runs of
    :func:`twolayer.experiments.sarussi2021.fig9_runs` (``hists``), first seed
    ``seed`` of each setting ``shown = [(init, step), ...]`` (three: (a) is the
    first's snapshot midway through its NAR-not-PAR snapshots, (b) the end of
    the third's; (c), (d) draw all three), ``init_scales`` naming the inits."""
    (init_a, step_a), (init_b, step_b) = shown[0], shown[-1]
    h, W = hists[(step_a, init_a, True, seed)]
    nar = theory.nar_not_par_rows(h)
    i = int(nar.index[len(nar) // 2]) if len(nar) else 0
    title_a = f"(a) init {init_scales[init_a]:g}, step {step_a:g}: GD step"
    title_b = f"(b) init {init_scales[init_b]:g}, step {step_b:g}: the end"
    snaps = [
        (W[i], f"{title_a} {int(h.step[i])}"),
        (hists[(step_b, init_b, True, seed)][1][-1], title_b),
    ]
    labels = [f"init {init_scales[name]:g}, step {lr:g}" for name, lr in shown]
    runs = [hists[(lr, name, True, seed)][0] for name, lr in shown]
    return fig9(base, outlier, alpha, snaps, runs, labels)


def thm41_first_draw(curves, alpha: float, seed: int, init_scales, widths, eps):
    """:func:`thm41_visited_loss` of the leaky runs at the step η on the data
    draw ``seed``, from the ``curves`` of
    :func:`twolayer.experiments.sarussi2021.sgd_grid`."""
    first = {
        (sc, k): curves[(alpha, sc, k, seed, "η")] for sc in init_scales for k in widths
    }
    return thm41_visited_loss(first, init_scales, widths, eps)
