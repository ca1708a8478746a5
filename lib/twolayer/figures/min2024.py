"""Figures of the Min, Mallada & Vidal chapter (``book/min2024``), one call each.

Every function draws from arrays a page has measured (snapshots of a run, the
read-outs of :mod:`twolayer.theory.min2024`) and returns the figure; the page's
cell carries the caption. No training here.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import plots
from ..theory import min2024

# ------------------------------------------------------------------------- Fig 5


def gram(X, y, digits: tuple[int, int]):
    """The Gram matrix of the data, the positive class first (Assumption 1 asks
    every same-label entry > 0 and every opposite-label entry < 0)."""
    import seaborn as sns

    X, y = np.asarray(X, float), np.asarray(y, float)
    order = np.argsort(-y, kind="stable")
    G = X[order] @ X[order].T
    lim = np.abs(G).max()
    fig, ax = plt.subplots(figsize=(4.6, 4))
    sns.heatmap(
        G,
        ax=ax,
        cmap="RdBu_r",
        vmin=-lim,
        vmax=lim,
        xticklabels=False,
        yticklabels=False,
    )
    ax.set_title(
        f"Gram matrix of centred data\n(digit {digits[0]} first, then {digits[1]})"
    )
    return fig


def fig5(it, loss, tr: min2024.Track, phases: min2024.PhaseSummary, title: str):
    """The paper's Fig 5 for one run: the mean positive / negative neuron's cosine
    with ``x±`` (min-max band over the neurons), the loss with ``‖W‖_2²``, and the
    stable rank; dotted the band's iteration, dash-dotted the loss halving
    (``phases``, :func:`~twolayer.theory.min2024.phase_summary`)."""
    fig, axes = plots.panels(2, 2, height=3.3)
    axes = axes.ravel()
    sides = (("plus", "+", plots.POS), ("minus", "-", plots.NEG))
    for ax, (key, sign, col) in zip(axes, sides):
        ax.plot(
            it,
            tr.cos(f"mean_{key}"),
            color=col,
            label=f"cos($\\bar w_{sign}$, $x_{sign}$)",
        )
        lo, hi = tr.cos(f"min_{key}"), tr.cos(f"max_{key}")
        ax.fill_between(it, lo, hi, color=col, alpha=0.25, label="min–max over neurons")
        name = "positive" if sign == "+" else "negative"
        ax.set(
            xlabel="iteration",
            ylabel="cosine",
            ylim=(-1.05, 1.05),
            title=f"{name} neurons vs $x_{sign}$",
        )
    axes[2].plot(it, loss / loss[0], color="k", label="loss / initial loss")
    axes[2].set(
        xlabel="iteration", ylabel="loss / initial loss", title="loss and $\\|W\\|_2^2$"
    )
    ax2 = axes[2].twinx()
    ax2.semilogy(
        it, tr.spectral_norm_sq, color="C3", label="$\\|W\\|_2^2$ (right axis)"
    )
    ax2.set_ylabel("$\\|W\\|_2^2$")
    ax2.grid(False)
    axes[3].plot(it, tr.stable_rank, color="C2", label="stable rank")
    axes[3].axhline(2, color="grey", ls="--", lw=1, label="Thm 1: limsup ≤ 2")
    axes[3].set(
        xlabel="iteration",
        ylabel="$\\|W\\|_F^2/\\|W\\|_2^2$",
        yscale="log",
        title="low-rank bias",
    )
    for ax in axes:
        ax.axvline(phases.t_band, color="k", ls=":", lw=1.2)
        ax.axvline(phases.t_half, color="k", ls="-.", lw=1.2)
    axes[3].plot([], [], "k:", label="90% of live neurons at cos ≥ 0.9")
    axes[3].plot([], [], "k-.", label="loss halved")
    pairs = [p for a in (*axes, ax2) for p in zip(*a.get_legend_handles_labels())]
    keep = {lab: h for h, lab in pairs}
    # two columns: three of these labels side by side are wider than the page
    fig.legend(keep.values(), keep.keys(), loc="outside lower center", ncol=2)
    fig.suptitle(title)
    plots.fit_titles(fig)
    return fig


def mean_neurons(W, v, X_raw, y, iteration: int):
    """The mean positive and negative neurons beside the data centres ``x̄±`` as
    28×28 images, alone (top) and added to the mean image (bottom)."""
    W, v, X_raw, y = (np.asarray(a, float) for a in (W, v, X_raw, y))
    mean_img = X_raw.mean(axis=0)
    X = X_raw - mean_img
    panels = [
        (W[v > 0].mean(axis=0), "$\\bar w_+$"),
        (X[y > 0].mean(axis=0), "$\\bar x_+$"),
        (W[v < 0].mean(axis=0), "$\\bar w_-$"),
        (X[y < 0].mean(axis=0), "$\\bar x_-$"),
    ]
    fig, axes = plt.subplots(
        2, 4, figsize=(plots.PAGE_WIDTH, 4.4), layout="constrained"
    )
    for k, (img, name) in enumerate(panels):
        axes[0, k].imshow(img.reshape(28, 28), cmap="gray")
        axes[0, k].set_title(name)
        shown = img / np.abs(img).max() * 0.5 + mean_img
        axes[1, k].imshow(shown.reshape(28, 28), cmap="gray")
        axes[1, k].set_title(name + " + $\\bar x$")
    for ax in axes.ravel():
        ax.axis("off")
    fig.suptitle(f"mean neurons and data centres at iteration {iteration}")
    return fig


# ------------------------------------------------------------------------- Fig 6


def lemma1(t_gf, err_gf, b4, t_gd, err_gd, bound: min2024.Lemma1Bound, lr: float):
    """Lemma 1's direction error along gradient flow and GD against Lemma 4's
    state-wise bound, a quarter of it, and Lemma 1's explicit bound on ``[0, T]``."""
    b4 = np.asarray(b4, float)
    valid = np.isfinite(b4)
    fig, ax = plots.panels(height=3.8)
    ax.semilogy(t_gf, err_gf, label="error along gradient flow")
    ax.semilogy(t_gd, err_gd, label=f"error along GD (η = {lr:g})", alpha=0.8)
    t_valid = np.asarray(t_gf)[valid]
    ax.semilogy(
        t_valid, b4[valid], "k--", label="Lemma 4 bound $2nX_{max}\\max_i|f(x_i)|$"
    )
    ax.semilogy(
        t_valid, b4[valid] / 4, "k:", label="a quarter of it (exact at balance)"
    )
    ax.hlines(
        bound.error, 0, bound.horizon, color="C3", label="Lemma 1 bound on $[0, T]$"
    )
    ax.set(
        xlabel="time (paper units)",
        ylabel="max over neurons",
        ylim=(1e-12, 10),
        title="Lemma 1: direction dynamics vs the field "
        "$\\mathrm{sign}(v_j)P_w x_a(w)$",
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9)
    return fig


def _neuron_panels(axes, times, Ws, vs, X, y, membership, ks, names):
    for ax, k, name in zip(axes, ks, names):
        plots.neurons_2d(
            ax,
            Ws[k],
            vs[k],
            X,
            y,
            title=f"{name}: t = {times[k]:.2f}",
            dead=membership[k] == min2024.S_DEAD,
        )


def fig6(times, Ws, vs, X, y, membership, t1: float):
    """The paper's Fig 6: neurons at initialisation, at the alignment time ``t1``
    and at the end of the run (``membership`` from
    :func:`~twolayer.theory.min2024.membership_record` greys out ``S_dead``)."""
    fig, axes = plots.panels(2, 2, height=3.4)
    axes = axes.ravel()
    axes[3].axis("off")  # the legend goes here, off the data
    ks = (0, int(np.searchsorted(times, t1)), len(times) - 1)
    names = ("(a) initialisation", "(b) end of alignment $t_1$", "(c) end")
    _neuron_panels(axes, times, Ws, vs, X, y, membership, ks, names)
    axes[3].legend(*_neuron_legend(axes[0]), loc="center")
    plots.fit_titles(fig)
    return fig


def cone_counts(times, loss, membership, t1: float):
    """The loss with ``t1`` marked (left) and how many neurons are in each cone
    over time (right)."""
    fig, axes = plots.panels(1, 2, height=3.6)
    axes[0].plot(times, loss, label="loss")
    axes[0].axvline(t1, color="k", ls=":", label="$t_1$")
    axes[0].set(xlabel="time (paper units)", yscale="log", title="loss")
    axes[0].legend()
    for code in (min2024.S_PLUS, min2024.S_MINUS, min2024.S_DEAD, min2024.S_NONE):
        counts = (np.asarray(membership) == code).sum(axis=1)
        axes[1].plot(times, counts, label=min2024.CONE_NAMES[code])
    axes[1].set(xlabel="time (paper units)", ylabel="neurons", title="cone membership")
    axes[1].legend(loc="center right")
    plots.fit_titles(fig)
    return fig


def dead_branch(times, Ws, vs, X, y, membership):
    """Neurons at initialisation and at the end of a run on two cones with a gap
    (grey: ``S_dead``)."""
    fig, axes = plots.panels(1, 2, height=3.4)
    ks, names = (0, len(times) - 1), ("(a) initialisation", "(b) end")
    _neuron_panels(axes, times, Ws, vs, X, y, membership, ks, names)
    fig.legend(*_neuron_legend(axes[0]), loc="outside right center")
    plots.fit_titles(fig)
    return fig


def relu_linear(X, y, relu, linear):
    """Where ``x+ ≠ −x−``: the neurons at the end of the ReLU run (a) and of the
    linear run from the same init (b), ``relu`` / ``linear`` each ``(W, v)``,
    with the directions of ``x+`` and ``x+ − x−`` dashed (grey: ``S_dead``)."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    xp, xm = min2024.aggregate_data(X, y)
    fig, axes = plots.panels(1, 2, height=3.4)
    for ax, (W, v), name in zip(axes, (relu, linear), ("(a) ReLU", "(b) linear")):
        dead = min2024.cone_membership(W, X, y) == min2024.S_DEAD
        plots.neurons_2d(ax, W, v, X, y, title=f"{name}: end", dead=dead)
        r = np.abs(X).max() * 1.1
        for ref, ls, lab in ((xp, "--", "$x_+$"), (xp - xm, ":", "$x_+-x_-$")):
            u = r * ref / np.linalg.norm(ref)
            ax.plot([0, u[0]], [0, u[1]], color="k", ls=ls, lw=1.2, label=lab)
    fig.legend(*_neuron_legend(axes[0]), loc="outside lower center", ncol=3)
    plots.fit_titles(fig)
    return fig


def two_drops(first: dict):
    """Fig 6's two loss drops where ``‖x+‖ ≠ ‖x−‖``: each class's loss over its
    initial value along the ReLU run (a) and the linear run from the same init
    (b) (``first``: ``{"relu" | "linear": (paper times, (k, 2) class losses)}``,
    :func:`~twolayer.experiments.min2024.two_drops`), the total loss in black."""
    fig, axes = plots.panels(1, 2, height=3.4, sharey=True)
    titles = {"relu": "(a) ReLU", "linear": "(b) linear, same init"}
    for ax, (name, (t, L)) in zip(axes, first.items()):
        total = L.sum(axis=1)
        ax.plot(t, total / total[0], "k", lw=2, label="total loss")
        ax.plot(t, L[:, 0] / L[0, 0], "C0--", label="positive points ($x_+$)")
        ax.plot(t, L[:, 1] / L[0, 1], "C3:", label="negative points ($x_-$)")
        ax.set(xlabel="time (paper units)", title=titles[name])
    axes[0].set_ylabel("loss / initial loss")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    plots.fit_titles(fig)
    return fig


def long_flows(longs: dict, scales: dict):
    """Stable rank and ``t L(t)`` along the long flows, one line per seed, for each
    init of ``longs`` (``{"small": [long_flow_summary, ...], "large": [...]}``;
    ``scales`` the ε of each)."""
    fig, axes = plots.panels(1, 2, height=3.6)
    for (name, runs), col in zip(longs.items(), ("C0", "C1")):
        lab = f"ε = {scales[name]:g}" + (" (rival)" if name == "large" else "")
        for j, r in enumerate(runs):
            t = r["t"][1:]
            label = lab if j == 0 else None
            axes[0].loglog(t, r["srank"][1:], color=col, lw=1, label=label)
            axes[1].loglog(t, (r["t"] * r["loss"])[1:], color=col, lw=1, label=label)
    axes[0].axhline(2, color="grey", ls="--", label="Thm 1: limsup ≤ 2")
    axes[0].set(
        xlabel="time (paper units)",
        ylabel="$\\|W\\|_F^2/\\|W\\|_2^2$",
        title="stable rank",
    )
    axes[1].set(
        xlabel="time (paper units)",
        ylabel="$t\\,L(t)$",
        title="$t\\,L(t)$: bounded after $t_2$",
    )
    handles = [h for ax in axes for h in zip(*ax.get_legend_handles_labels())]
    keep = {lab: h for h, lab in handles}
    fig.legend(keep.values(), keep.keys(), loc="outside lower center", ncol=3)
    plots.fit_titles(fig)
    return fig


# --------------------------------------------------------------------- Figs 7-9


def _shown(W):
    """Rows at length ``(‖w‖/max‖w‖)^0.15``: neurons that stay small remain visible."""
    n = np.linalg.norm(W, axis=1)
    return W / n[:, None] * (n / n.max())[:, None] ** 0.15


def two_point_neurons(runs: dict, k_mid: int):
    """Figs 7–9: one row per angle of ``runs`` (``{name: two_point_runs(...)}``),
    the first seed's neurons at initialisation, at snapshot ``k_mid`` and at the
    end."""
    fig, axes = plt.subplots(
        len(runs), 3, figsize=(plots.PAGE_WIDTH, 2.8 * len(runs)), layout="constrained"
    )
    for row, (name, r) in zip(axes, runs.items()):
        for ax, k in zip(row, (0, k_mid, len(r["steps"]) - 1)):
            plots.neurons_2d(
                ax,
                _shown(r["Ws"][k]),
                r["vs"][k],
                r["X"],
                r["y"],
                title=f"θ = {name}, iteration {r['steps'][k]}",
                dead=r["rec"][k] == min2024.S_DEAD,
            )
    fig.legend(*_neuron_legend(axes[0, 0]), loc="outside lower center", ncol=4)
    plots.fit_titles(fig)
    return fig


def _neuron_legend(ax):
    """The data markers drawn on ``ax`` and one line per neuron colour."""
    from matplotlib.lines import Line2D

    pairs = [
        (h, lab)
        for h, lab in zip(*ax.get_legend_handles_labels())
        if len(getattr(h, "get_offsets", lambda: [1])())
    ]
    colours = (
        (plots.POS, "$v_j>0$"),
        (plots.NEG, "$v_j<0$"),
        (plots.DEAD, "$S_{\\rm dead}$"),
    )
    pairs += [(Line2D([], [], color=c, lw=1.2), lab) for c, lab in colours]
    return [h for h, _ in pairs], [lab for _, lab in pairs]


def two_point_fraction(runs: dict, mid: int):
    """The fraction of the live positive neurons in ``S+`` over the iterations,
    one line per seed and angle; dotted the paper's middle iteration ``mid``."""
    fig, ax = plots.panels(height=3.6)
    for (name, r), col in zip(runs.items(), ("C0", "C1", "C2")):
        for j, frac in enumerate(r["in_plus"]):
            label = f"θ = {name} (μ = {r['mu']:.3g})" if j == 0 else None
            ax.plot(r["steps"], frac, color=col, alpha=0.8, lw=1.2, label=label)
    label = f"iteration {mid} (the paper's middle panel)"
    ax.axvline(mid, color="k", ls=":", lw=1, label=label)
    ax.set(
        xlabel="iteration",
        ylabel="fraction in $S_+$",
        ylim=(0, 1.05),
        title="live positive neurons in $S_+$ (one line per seed)",
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


# ------------------------------------------------------------------- Figs 12-13


def two_phases(runs: dict, per_epoch: int, mark_epoch: int):
    """Figs 12–13: per run of ``runs`` (``{title: trajectory}``, each with a
    ``"changes"`` record of :func:`~twolayer.theory.min2024.norm_direction_changes`),
    the relative loss and the summed rates of change of neuron norms and
    directions per epoch; dotted the epoch ``mark_epoch``."""
    fig, axes = plots.panels(1, len(runs), height=3.6)
    for ax, (title, traj) in zip(np.atleast_1d(axes), runs.items()):
        ch = traj.record("changes")
        ep = traj.steps / per_epoch
        ax.plot(ep, traj.loss / traj.loss[0], "k", label="loss / initial loss")
        ax.set(xlabel="epoch", ylabel="relative loss", title=title, ylim=(-0.05, 1.05))
        ax2 = ax.twinx()
        ax2.semilogy(ep[1:], ch[1:, 0], "C1--", label="changes in neuron norms")
        ax2.semilogy(ep[1:], ch[1:, 1], "C0", label="changes in neuron directions")
        label = f"epoch {mark_epoch} (the claims)"
        ax.axvline(mark_epoch, color="grey", ls=":", label=label)
        ax2.set_ylabel("sum of rates (log)")
        ax2.grid(False)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
    fig.legend(h1 + h2, l1 + l2, loc="outside lower center", ncol=2)
    plots.fit_titles(fig)
    return fig


# ------------------------------------------------------------------- the sweeps


def entry_law(table):
    """The last positive neuron's entry time against ``μ`` (one dot per seed and
    angle), the per-neuron law at each seed's initial angles, and the bound's
    shape ``C log n/√μ`` (``table``: rows of
    :func:`~twolayer.theory.min2024.entry_law_row` with ``seed`` and
    ``t1_shape`` columns)."""
    fig, ax = plots.panels(height=3.8)
    styles = (
        ("t1_measured", dict(ls="", marker="o", color="C0"), "measured $t_1$ (+ side)"),
        ("t1_law", dict(color="k", lw=1), "per-neuron law, each seed's $\\varphi_0$"),
        (
            "t1_shape",
            dict(ls="--", color="C3", lw=1),
            "$C\\log n/\\sqrt{\\mu}$, C at max μ",
        ),
    )
    for j, (_, g) in enumerate(table.groupby("seed")):
        for col, style, label in styles:
            ax.semilogx(g.mu, g[col], **style, label=label if j == 0 else None)
    ax.set(
        xlabel="$\\mu=\\sin\\theta$",
        ylabel="$t_1$ (paper time)",
        ylim=(0, 1.3 * table.t1_measured.max()),
        title="two points: the last positive neuron's entry into $S_+$",
    )
    ax.legend(loc="upper right")
    return fig


def eps_sweep(table, n: int, half_angle: float):
    """The alignment time ``t1`` and the end of the alignment phase against the
    initialisation scale, one line per seed (``table``: columns ``seed``, ``eps``,
    ``t1``, ``t_esc``; a missing ``t1``: never aligned)."""
    fig, ax = plots.panels(height=3.8)
    lines = (
        ("t1", "o-", "C0", "$t_1$ (alignment complete)"),
        ("t_esc", "s-", "C1", "end of alignment phase ($\\max_i|f(x_i)|\\geq 1$)"),
    )
    for j, (_, g) in enumerate(table.groupby("seed")):
        for col, fmt, c, label in lines:
            values = g[col].replace(np.inf, np.nan)
            label = label if j == 0 else None
            ax.semilogx(g.eps, values, fmt, color=c, lw=1, label=label)
    ax.invert_xaxis()
    ax.set(
        xlabel="initialisation scale $\\epsilon$",
        ylabel="time (paper units)",
        title=f"n = {n}, half-angle {half_angle}, one line per seed",
    )
    ax.legend(loc="upper left")
    return fig
