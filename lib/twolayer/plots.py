"""The book's one visual style and the figure helpers shared by chapters."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import NullFormatter  # noqa: F401  (re-exported for notebooks)

from .metrics import singular_values, top_singular_directions

POS, NEG, DEAD = "#d1495b", "#00798c", "#9e9e9e"
MIN_SEGMENT = 0.15  # shortest neuron segment in neurons_2d, as a fraction of the frame


# The book's text column is about 740 px wide. A figure wider than PAGE_WIDTH
# inches is shrunk to fit, so its fonts shrink with it: keep figures at most
# PAGE_WIDTH wide (stack panels instead of widening) and fonts at least MIN_FONT.
# On a phone (420 px screen, a ~400 px column) a PAGE_WIDTH figure shows at ~54%:
# 11 pt at 100 dpi is 15.3 px, 8.2 px on screen (the browser test asks >= 8).
PAGE_WIDTH = 7.4
MIN_FONT = 11


def set_style() -> None:
    """Seaborn whitegrid, colour-blind palette, fonts readable at the page's width."""
    sns.set_theme(
        style="whitegrid",
        palette="colorblind",
        context="notebook",
        rc={
            "figure.dpi": 100,
            "savefig.dpi": 100,
            "figure.figsize": (PAGE_WIDTH, 4.2),
            "font.size": MIN_FONT + 1,
            "axes.titlesize": MIN_FONT + 1,
            "axes.labelsize": MIN_FONT + 1,
            "legend.fontsize": MIN_FONT,
            "xtick.labelsize": MIN_FONT,
            "ytick.labelsize": MIN_FONT,
            "legend.title_fontsize": MIN_FONT,
        },
    )


def panels(rows: int = 1, cols: int = 1, height: float = 3.4, **kwargs):
    """``plt.subplots`` at the page's width: ``cols`` panels side by side (at
    most 2 keep labels readable), each ``height`` inches tall."""
    if cols > 2:
        raise ValueError(
            f"cols={cols}: at most 2 panels side by side stay readable; "
            "stack them (rows)"
        )
    kwargs.setdefault("layout", "constrained")
    fig, axes = plt.subplots(rows, cols, figsize=(PAGE_WIDTH, height * rows), **kwargs)
    return fig, axes


def _math_aware_words(line: str) -> list[str]:
    """Words of a title line, a ``$...$`` span kept whole (mathtext cannot be split)."""
    return re.findall(r"(?:[^\s$]|\$[^$]*\$)+", line)


def _visible_length(word: str) -> float:
    return len(word) * (0.6 if "$" in word else 1.0)


def wrap_title(text: str, width_chars: float) -> str:
    """``text`` with its lines folded to about ``width_chars`` visible characters."""
    out = []
    for line in text.split("\n"):
        current, length = [], 0.0
        for word in _math_aware_words(line):
            w = _visible_length(word)
            if current and length + 1 + w > width_chars:
                out.append(" ".join(current))
                current, length = [], 0.0
            current.append(word)
            length += w + (1 if len(current) > 1 else 0)
        out.append(" ".join(current))
    return "\n".join(out)


def fit_titles(fig) -> None:
    """Fold every panel title to its panel's width (a long title would widen the
    saved figure, and the page would then shrink all of its text). The layout
    is computed without rasterising (the page's own render draws the figure)."""
    fig.draw_without_rendering()
    width_in = fig.get_figwidth()
    for ax in fig.axes:
        title = ax.get_title()
        if not title or not ax.get_visible():
            continue
        size = ax.title.get_fontsize()
        chars = ax.get_position().width * width_in * 72 / (0.55 * size)
        ax.set_title(wrap_title(title, max(chars, 12)))


def decision_boundary(
    ax,
    f,
    X=None,
    y=None,
    lim: float = 1.0,
    n: int = 200,
    fill: str = "sign",
    cmap: str = "RdBu_r",
    colorbar: bool = False,
    zero_color: str | None = None,
) -> np.ndarray:
    """Draw a 2-D classifier ``f`` (a map from an (m, 2) array to m outputs) on
    ``[-lim, lim]²``: shaded by sign (``fill="sign"``) or by value (``"value"``),
    the zero set as a black line, and the data ``X`` (markers by label ``y``).
    ``zero_color`` (sign fill only) shades the points where ``f`` is exactly 0
    in that colour (a region with no decision, e.g. a ReLU net with every
    neuron off). Returns the outputs on the grid (shape (n, n))."""
    if fill not in ("sign", "value"):
        raise ValueError(f"fill must be 'sign' or 'value', got {fill!r}")
    GX, GY, F = _on_grid(f, lim, n)
    if fill == "sign" and zero_color is not None:
        ax.contourf(
            GX,
            GY,
            np.sign(F),
            levels=[-1.5, -0.5, 0.5, 1.5],
            colors=[NEG, zero_color, POS],
            alpha=0.15,
        )
    elif fill == "sign":
        ax.contourf(
            GX, GY, np.sign(F), levels=[-2, 0, 2], colors=[NEG, POS], alpha=0.15
        )
    else:
        im = ax.contourf(GX, GY, F, levels=21, cmap=cmap)
        if colorbar:
            ax.figure.colorbar(im, ax=ax)
    if F.min() < 0 < F.max():
        ax.contour(GX, GY, F, levels=[0], colors="k", linewidths=1.8)
    if X is not None:
        X, y = np.asarray(X, float), np.asarray(y, float)
        ax.scatter(
            *X[y > 0].T, marker="+", s=40, color=POS, lw=1.5, label="$y=+1$", zorder=3
        )
        ax.scatter(
            *X[y < 0].T, marker="_", s=40, color=NEG, lw=1.5, label="$y=-1$", zorder=3
        )
    ax.set(
        xlim=(-lim, lim),
        ylim=(-lim, lim),
        aspect="equal",
        xlabel="$x_1$",
        ylabel="$x_2$",
    )
    return F


def _on_grid(f, lim: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``f`` on an ``n × n`` grid of ``[-lim, lim]²``: ``(GX, GY, F)``."""
    g = np.linspace(-lim, lim, n)
    GX, GY = np.meshgrid(g, g)
    return GX, GY, np.asarray(f(np.c_[GX.ravel(), GY.ravel()]), float).reshape(GX.shape)


def zero_set(ax, f, lim: float = 1.0, n: int = 200, **kwargs) -> np.ndarray:
    """Another classifier's boundary ``{f = 0}`` on ``[-lim, lim]²`` as a line (over a
    :func:`decision_boundary`); ``kwargs`` go to ``ax.contour`` (``colors``,
    ``linestyles``, ``linewidths``). Returns the outputs on the grid."""
    GX, GY, F = _on_grid(f, lim, n)
    if F.min() < 0 < F.max():
        ax.contour(GX, GY, F, levels=[0], **kwargs)
    return F


def zero_line(ax, normal, lim: float, **kwargs) -> None:
    """The line ``{x : normal·x = 0}`` across ``[-lim, lim]²`` (a linear boundary)."""
    normal = np.asarray(normal, float)
    t = np.array([-normal[1], normal[0]]) / np.linalg.norm(normal)
    ax.plot(*np.outer([-2 * lim, 2 * lim], t).T, **kwargs)


def neuron_arrows(
    ax, W, color, scale: float, lw: float = 1.2, label: str | None = None
) -> None:
    """The rows of a 2-D ``W`` as arrows from the origin, each multiplied by
    ``scale`` (one scale for all, so lengths compare); ``label`` adds a legend entry."""
    for row in np.asarray(W, float) * scale:
        ax.annotate(
            "",
            xy=row,
            xytext=(0, 0),
            arrowprops=dict(arrowstyle="->", color=color, lw=lw),
        )
    if label:
        ax.plot([], [], color=color, label=label)


def sign_colors(a) -> np.ndarray:
    """Colour per neuron: positive / negative output weight, grey for zero."""
    a = np.asarray(a)
    return np.where(a > 0, POS, np.where(a < 0, NEG, DEAD))


def singular_value_bars(
    ax, W, k: int = 10, title: str = "top singular values"
) -> np.ndarray:
    """Bar plot of the top ``k`` singular values of ``W``; returns them."""
    s = singular_values(W, k)
    sns.barplot(x=np.arange(1, len(s) + 1), y=s, ax=ax, color="#4c72b0")
    ax.set(xlabel="index", ylabel="singular value", title=title)
    return s


def neuron_projection(
    ax,
    W,
    a,
    title: str = "neurons on the top-2 singular directions",
    refs: dict | None = None,
    labels: tuple[str, str] = ("$a_j>0$", "$a_j<0$"),
) -> None:
    """Scatter of the rows of ``W`` projected on its top-2 right singular
    vectors, coloured by the sign of the output weight; optional reference
    directions (e.g. w±) drawn as arrows of the largest neuron's length. Equal
    aspect and limits that hold the arrows, so directions read true."""
    V = top_singular_directions(W, 2)
    P = np.asarray(W) @ V.T
    ax.scatter(P[:, 0], P[:, 1], c=sign_colors(a), s=18, alpha=0.8, edgecolor="none")
    scale = float(np.linalg.norm(P, axis=1).max()) if P.size else 1.0
    for name, (vec, color) in (refs or {}).items():
        v = V @ np.asarray(vec)
        v = v / (np.linalg.norm(v) or 1.0) * scale
        ax.annotate(
            "", xy=v, xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=color, lw=2)
        )
        ax.annotate(name, xy=v, xytext=(4, 4), textcoords="offset points", color=color)
    lim = 1.2 * scale
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal")
    ax.axhline(0, color="k", lw=0.5)
    ax.axvline(0, color="k", lw=0.5)
    ax.set(xlabel="singular direction 1", ylabel="singular direction 2", title=title)
    ax.scatter([], [], c=POS, label=labels[0])
    ax.scatter([], [], c=NEG, label=labels[1])
    ax.legend(loc="best")


def cosine_histogram(
    ax,
    cos,
    threshold: float | None = 0.9,
    bins: int = 30,
    title: str = "cosine to the predicted direction",
) -> None:
    """Histogram of cosines in [-1, 1] with the claim threshold marked."""
    sns.histplot(np.asarray(cos), bins=bins, binrange=(-1, 1), ax=ax, color="#55a868")
    if threshold is not None:
        ax.axvline(threshold, color="k", ls="--", lw=1, label=f"threshold {threshold}")
        ax.legend(fontsize="small")
    ax.set(xlabel="cosine", ylabel="neurons", title=title)


def inner_product_histograms(
    ax,
    R,
    y,
    title: str,
    max_pairs: int = 20000,
    seed: int = 0,
    names: tuple[str, str] = ("+1", "-1"),
) -> None:
    """Distributions of ``r_i·r_j`` for pairs (+,+), (−,−), (+,−) (Phuong Fig 3)."""
    R, y = np.asarray(R), np.asarray(y)
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(y), max_pairs)
    j = rng.integers(0, len(y), max_pairs)
    keep = i != j
    i, j = i[keep], j[keep]
    if (
        len(y) <= 4096
    ):  # one Gram matrix costs less than gathering 2 x max_pairs long rows
        ip = (R @ R.T)[i, j]
    else:
        ip = np.concatenate(
            [
                np.einsum("ij,ij->i", R[a], R[b])
                for a, b in zip(
                    np.array_split(i, -(-len(i) // 1024)),
                    np.array_split(j, -(-len(j) // 1024)),
                )
            ]
        )
    kind = np.where(
        y[i] != y[j],
        "different classes",
        np.where(y[i] > 0, f"both {names[0]}", f"both {names[1]}"),
    )
    sns.histplot(
        x=ip,
        hue=kind,
        ax=ax,
        element="step",
        stat="density",
        common_norm=False,
        bins=40,
        hue_order=["different classes", f"both {names[0]}", f"both {names[1]}"],
    )
    ax.axvline(0, color="k", lw=0.8)
    ax.set(title=title, xlabel="inner product", ylabel="density")


def neurons_2d(ax, W, a, X, y, title: str = "", dead=None) -> None:
    """2-D data (markers by label) and neurons as segments from the origin along
    ``w_j``, of length ``‖w_j‖/max_k‖w_k‖`` but at least ``MIN_SEGMENT`` of the
    frame (so a tiny neuron's direction still shows),
    coloured by the sign of ``a_j``; ``dead`` (bool mask) greys neurons out (Min et al.
    Figs 6–9)."""
    W, a, X, y = (
        np.asarray(W, float),
        np.asarray(a, float),
        np.asarray(X, float),
        np.asarray(y, float),
    )
    if W.ndim != 2 or W.shape[1] != 2 or X.shape[1] != 2:
        raise ValueError(f"neurons_2d needs 2-D inputs; got W {W.shape}, X {X.shape}")
    scale = np.abs(X).max() * 1.1
    norms = np.linalg.norm(W, axis=1)
    relative = norms / max(norms.max(), 1e-300)
    U = (
        W
        / np.maximum(norms, 1e-300)[:, None]
        * (scale * np.clip(relative, MIN_SEGMENT, 1.0))[:, None]
    )
    colors = sign_colors(a)
    if dead is not None:
        colors = np.where(np.asarray(dead, bool), DEAD, colors)
    for u, c in zip(U, colors):
        ax.plot([0, u[0]], [0, u[1]], color=c, lw=1.2, alpha=0.8)
        ax.plot(u[0], u[1], "o", color=c, ms=3)
    ax.scatter(*X[y > 0].T, marker="+", s=90, color=POS, lw=2, label="$y=+1$", zorder=3)
    ax.scatter(*X[y < 0].T, marker="_", s=90, color=NEG, lw=2, label="$y=-1$", zorder=3)
    ax.set(
        xlim=(-scale, scale),
        ylim=(-scale, scale),
        aspect="equal",
        title=title,
        xlabel="$x_1$",
        ylabel="$x_2$",
    )
