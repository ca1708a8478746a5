"""Figures of the Phuong & Lampert chapter (``book/phuong2021``), one call each.

Every function draws from arrays a page has measured (weights, statistics along a
flow, representations) and returns the figure; the page's cell carries the
caption. The statistics come from :mod:`twolayer.theory.phuong2021`.
"""

from __future__ import annotations

import numpy as np

from .. import metrics, plots


def fig1(W, a, w_pm, early_level: float, level: float = 0.9):
    """The paper's Fig. 1 for one network ``(W, a)``: (a) the top singular values
    of ``W`` (Theorem 1: rank ≤ 2); (b) the neurons on the top-2 singular
    directions with ``w±`` as arrows; (c) the histogram of each neuron's cosine
    with its ``w±``, with ``level`` (the paper's 0.9) and ``early_level`` (the
    early-phase directions' own cosine) marked; (d) those cosines against the
    neuron norms."""
    from ..theory.phuong2021 import cosines_to_max_margin

    w_plus, w_minus = w_pm
    cos = cosines_to_max_margin(W, a, w_plus, w_minus)
    fig, axes = plots.panels(2, 2, height=3.4)
    plots.singular_value_bars(
        axes[0, 0], W, 10, title="(a) top-10 singular values of W"
    )
    plots.neuron_projection(
        axes[0, 1],
        W,
        a,
        title="(b) neurons, top-2 singular directions",
        refs={"$w_+$": (w_plus, plots.POS), "$w_-$": (w_minus, plots.NEG)},
    )
    plots.cosine_histogram(axes[1, 0], cos, level, title="(c) cos($w_j$, $w_\\pm$)")
    axes[1, 0].axvline(
        early_level, color="C3", ls=":", label="early phase $\\hat x_\\pm$"
    )
    axes[1, 0].legend(loc="upper left")
    ax = axes[1, 1]
    ax.scatter(metrics.neuron_norms(W), cos, c=plots.sign_colors(a), s=14)
    ax.axhline(level, color="k", ls="--", lw=1)
    ax.scatter([], [], c=plots.POS, label="$a_j>0$")
    ax.scatter([], [], c=plots.NEG, label="$a_j<0$")
    ax.set(
        xscale="log",
        xlabel="$\\|w_j\\|$ at the end",
        ylabel="cos to predicted direction",
        title="(d) laggards are the small neurons",
    )
    ax.xaxis.set_minor_formatter(plots.NullFormatter())
    ax.legend(loc="lower right")
    return fig


def fig1_limit(times, curves, early_gap: float, t_sgd: float, sgd_label: str):
    """Theorem 1 along gradient flow, one line per seed (``curves``: the dicts of
    :func:`~twolayer.theory.phuong2021.flow_curves` at ``times``): (a) the worst
    live neuron's ``1 − cos`` against ``log t`` on log-log axes, with the
    early-phase level ``early_gap``; (b) the fraction of neurons closer to ``w±``
    than to ``x̂±`` and Fig. 1c's fraction above 0.9, with the SGD run's flow time
    ``t_sgd`` marked."""
    t = np.asarray(times, float)
    past1 = t > 1.2  # log t > 0, for log axes
    log_t = np.log(t[past1])
    fig, axes = plots.panels(1, 2, height=3.2)
    for c in curves:
        axes[0].loglog(log_t, c["gap"][past1], color="C0", alpha=0.6)
        axes[1].semilogx(log_t, c["closer"][past1], color="C0", alpha=0.6)
        axes[1].semilogx(log_t, c["aligned"][past1], color="C1", alpha=0.6)
    axes[0].axhline(early_gap, color="C3", ls="--", label="$\\hat x_\\pm$ (worst draw)")
    axes[0].set(
        xlabel="$\\log t$",
        ylabel="worst live $1-\\cos(w_j, w_\\pm)$",
        title="(a) the gap against $\\log t$",
    )
    axes[0].legend(loc="lower left")
    axes[1].plot([], [], color="C0", label="closer to $w_\\pm$ than to $\\hat x_\\pm$")
    axes[1].plot([], [], color="C1", label="Fig. 1c: cos > 0.9")
    axes[1].axvline(np.log(t_sgd), color="k", ls=":", label=sgd_label)
    axes[1].set(
        xlabel="$\\log t$",
        ylabel="fraction of neurons",
        title="(b) the two statistics along the flow",
    )
    axes[1].legend(loc="center right")
    plots.fit_titles(fig)
    return fig


def fig2_spectra(W_end, W_init):
    """The paper's Fig. 2a–c: the top-10 singular values of each hidden layer
    ``W_end[l]`` (left) and of its learned update ``W_end[l] − W_init[l]``
    (right); the last matrix (a row vector) is left out."""
    hidden = len(W_end) - 1
    fig, axes = plots.panels(hidden, 2, height=2.6)
    for k in range(hidden):
        plots.singular_value_bars(
            axes[k, 0], W_end[k], 10, title=f"({'abc'[k]}) $W_{k + 1}$"
        )
        plots.singular_value_bars(
            axes[k, 1],
            W_end[k] - W_init[k],
            10,
            title=f"$W_{k + 1}(T)-W_{k + 1}(0)$",
        )
    plots.fit_titles(fig)
    return fig


def fig2_first_layer(W1, w_pm, x_pm, level: float = 0.9):
    """The paper's Fig. 2d and 2g: the rows of the first layer ``W1`` on its
    top-2 singular directions, coloured by the closer of ``w±`` (left), and the
    histogram of their cosine with it (right), with ``level`` and the early-phase
    directions' level ``min cos(x̂±, w±)`` marked."""
    (w_plus, w_minus), (x_plus, x_minus) = w_pm, x_pm
    to_plus, to_minus = (
        metrics.row_cosines(W1, w_plus),
        metrics.row_cosines(W1, w_minus),
    )
    fig, axes = plots.panels(1, 2, height=3.4)
    plots.neuron_projection(
        axes[0],
        W1,
        np.sign(to_plus - to_minus),
        title="(d) rows of $W_1$",
        labels=("closer to $w_+$", "closer to $w_-$"),
        refs={"$w_+$": (w_plus, plots.POS), "$w_-$": (w_minus, plots.NEG)},
    )
    plots.cosine_histogram(
        axes[1],
        np.maximum(to_plus, to_minus),
        level,
        title="(g) cos with the closer $w_\\pm$",
    )
    x_level = min(metrics.cosine(x_plus, w_plus), metrics.cosine(x_minus, w_minus))
    axes[1].axvline(x_level, color="C3", ls=":", label="early phase $\\hat x_\\pm$")
    axes[1].legend(loc="upper left", fontsize="small")
    plots.fit_titles(fig)
    return fig


def fig2_hidden_layers(W_end):
    """The paper's Fig. 2e–f: the rows of ``W_2`` and ``W_3`` on their own top-2
    singular directions, coloured by the direction that dominates."""
    fig, axes = plots.panels(1, 2, height=3.4)
    for ax, k in zip(axes, (1, 2)):
        Wl = W_end[k]
        coords = Wl @ metrics.top_singular_directions(Wl, 2).T
        plots.neuron_projection(
            ax,
            Wl,
            np.sign(np.abs(coords[:, 0]) - np.abs(coords[:, 1])),
            title=f"({'ef'[k - 1]}) rows of $W_{k + 1}$",
            labels=("mostly along $v_1$", "mostly along $v_2$"),
        )
    plots.fit_titles(fig)
    return fig


def fig3(reps, y, names: tuple[str, str]):
    """App. D Fig. 3: the distributions of ``f^l(x_i)·f^l(x_j)`` for same-class
    and cross-class pairs, layer by layer (``reps[0]`` is the input); one legend,
    on the input's panel."""
    fig, axes = plots.panels(4, 2, height=3.4)
    for layer, (ax, R) in enumerate(zip(axes.ravel(), reps)):
        plots.inner_product_histograms(
            ax, R, y, title=f"layer {layer}" if layer else "input", names=names
        )
        if layer and ax.get_legend():
            ax.get_legend().remove()
    fig.suptitle("Phuong & Lampert Fig. 3 — distributions of $f^l(x_i)^\\top f^l(x_j)$")
    plots.fit_titles(fig)
    return fig


def fig4(W7, W8):
    """App. D Fig. 4: the top-10 singular values of ``W7`` and its rows on its
    top-2 singular directions, coloured by the sign of ``W8``."""
    fig, axes = plots.panels(1, 2, height=3.6)
    plots.singular_value_bars(
        axes[0], W7, 10, title="(a) top-10 singular values of $W_7$"
    )
    plots.neuron_projection(
        axes[1],
        W7,
        W8,
        labels=("$W_8>0$", "$W_8<0$"),
        title="(b) rows of $W_7$ on its top-2 singular directions",
    )
    plots.fit_titles(fig)
    return fig


_LAYER_TITLES = {"0": "input (pixels)", "7pre": "layer 7 ($f^7$, before its ReLU)"}


def fig3_stored(hist, bins, layers, names: tuple[str, str]):
    """App. D Fig. 3 from stored histograms: per layer of ``layers`` (keys of
    ``hist``), the distribution of the cosine between the representations of
    cross-class and of same-class pairs; ``hist[layer]`` holds the counts
    ``(cross, same)`` over ``bins``. Two panels side by side, one legend."""
    rows = -(-len(layers) // 2)
    fig, axes = plots.panels(rows, 2, height=2.6, sharex=True)
    centres, width = 0.5 * (bins[1:] + bins[:-1]), np.diff(bins)
    for ax, layer in zip(axes.ravel(), layers):
        for counts, color, label in zip(
            hist[layer],
            (plots.NEG, plots.POS),
            (
                "different classes",
                f"same class ({names[0]}–{names[0]}, {names[1]}–{names[1]})",
            ),
        ):
            density = np.asarray(counts, float) / (np.sum(counts) * width)
            ax.step(centres, density, where="mid", color=color, label=label)
        ax.axvline(0, color="k", lw=0.5)
        ax.set(
            title=_LAYER_TITLES.get(layer, f"layer {layer}"),
            ylabel="density",
            xlim=(bins[0], bins[-1]),
        )
    for ax in axes[-1]:
        ax.set_xlabel("cosine of a pair")
    for ax in axes.ravel()[len(layers) :]:
        ax.remove()
    handles, names_ = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, names_, loc="outside upper center", ncols=2)
    plots.fit_titles(fig)
    return fig


def depth_profile(gaps, untrained, hierarchy, labels: dict[str, str]):
    """App. D: the class gap (same-class minus cross-class median cosine) layer by
    layer, one line per seed of the trained runs (``gaps``, a row per seed, a
    column per layer) and of the untrained networks (``untrained``)."""
    fig, ax = plots.panels(1, 1, height=3.4)
    layers = list(gaps.columns)
    x = np.arange(len(layers))
    for frame, color, name in (
        (gaps, plots.POS, "trained, 50 epochs"),
        (untrained, plots.DEAD, "untrained"),
    ):
        for i, (_, row) in enumerate(frame[layers].iterrows()):
            ax.plot(
                x,
                row.values,
                "o-",
                color=color,
                lw=1,
                ms=3,
                label=name if i == 0 else None,
            )
    ax.axvspan(
        layers.index(hierarchy[0]) - 0.3,
        layers.index(hierarchy[-1]) + 0.3,
        color="0.9",
        zorder=0,
        label="the layers of the hierarchy claim",
    )
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks(x, [labels.get(c, c) for c in layers])
    ax.set(
        xlabel="layer",
        ylabel="same-class minus cross-class\nmedian cosine",
        title="class gap by layer",
    )
    ax.legend(loc="upper left", fontsize="small")
    plots.fit_titles(fig)
    return fig


def fig4_stored(sv, x, y, w8, k: int = 10):
    """App. D Fig. 4 from stored values: (a) the ``k`` largest singular values of
    ``W7`` (``sv``), (b) its rows' coordinates ``(x, y)`` on its top-2 singular
    directions coloured by the sign of ``W8``."""
    fig, axes = plots.panels(1, 2, height=3.6)
    s = np.asarray(sv, float)[:k]
    axes[0].bar(np.arange(1, len(s) + 1), s, color="#4c72b0")
    axes[0].set(
        xlabel="index",
        ylabel="singular value",
        title=f"(a) top-{k} singular values of $W_7$",
    )
    axes[1].scatter(x, y, c=plots.sign_colors(w8), s=18, alpha=0.8, edgecolor="none")
    lim = 1.2 * float(np.max(np.hypot(x, y)))
    axes[1].set(
        xlim=(-lim, lim),
        ylim=(-lim, lim),
        aspect="equal",
        xlabel="singular direction 1",
        ylabel="singular direction 2",
        title="(b) rows of $W_7$ on its top-2 singular directions",
    )
    axes[1].axhline(0, color="k", lw=0.5)
    axes[1].axvline(0, color="k", lw=0.5)
    axes[1].scatter([], [], c=plots.POS, label="$W_8>0$")
    axes[1].scatter([], [], c=plots.NEG, label="$W_8<0$")
    axes[1].legend(loc="best")
    plots.fit_titles(fig)
    return fig
