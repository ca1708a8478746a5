"""Figures of the Lyu, Li, Wang & Arora (2021) chapter: one function per figure,
drawn from arrays the page has measured (no training, no theory)."""

from __future__ import annotations

import textwrap

import numpy as np

from .. import plots
from ..models import two_layer_output


def error_against_log_time(
    times, errors, planar, phase1_err: float, large=None, d: int = 3
):
    """Thm 6.2 beyond the plane: relative sup error to ½φ against ``ln t`` (log-log),
    one line per seed (``errors``: seeds x times); ``planar``: ``(times, errors)``
    per seed of the planar set; ``large``: seeds x times of large-init flows;
    the ``(ln t)^{-1/2}`` reference and the phase-I direction's error."""
    fig, ax = plots.panels(height=3.6)
    lnt = np.log(times)
    for k, e in enumerate(errors):
        label = "gradient flow, one line per seed" if k == 0 else None
        ax.loglog(lnt, e, "o-", color="C0", alpha=0.6, label=label)
    for k, (t, e) in enumerate(planar):
        label = "planar set (Theorem 6.2 page)" if k == 0 else None
        ax.loglog(np.log(t), e, "s-", color="0.6", ms=3, alpha=0.7, label=label)
    for k, e in enumerate([] if large is None else large):
        label = "large initialisation" if k == 0 else None
        ax.loglog(lnt, e, "^-", color="C2", ms=4, alpha=0.7, label=label)
    ref = np.mean(errors[:, 0]) * (lnt / lnt[0]) ** -0.5
    ax.loglog(lnt, ref, "k--", lw=1, label="$(\\ln t)^{-1/2}$")
    ax.axhline(phase1_err, color="C1", ls=":", label="phase-I direction (argmax G)")
    ax.set(
        xlabel="$\\ln t$",
        ylabel="sup |f − ½φ| / sup |½φ|",
        title=f"d = {d}: the error to the limit against ln t",
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize="small")
    plots.fit_titles(fig)
    return fig


def _hinted_boundary(ax, W, a, X, y, hints, w_star, alpha: float, title: str):
    """A run's decision boundary on the base set, the hints (shrunk) and ½φ's."""
    plots.decision_boundary(
        ax, lambda P: two_layer_output(W, a, P, alpha), X, y, lim=1.2, fill="sign"
    )
    shown = hints / np.maximum(1, np.abs(hints).max(axis=1, keepdims=True) / 1.1)
    ax.scatter(*shown.T, marker="x", c="k", s=60, label="hints (shrunk)")
    plots.zero_line(
        ax, w_star, 1.2, color="orange", lw=1, label="$\\frac{1}{2}\\phi$ boundary"
    )
    ax.set_title(title)


def hinted_runs(scans, band_deg: float, errors, paths, boundaries, alpha: float):
    """Thm 6.2 on the planar hinted sets. ``scans``: hint size -> (angles to w*
    in degrees, G / max G, the local maxima's angles, their G / max G);
    ``errors``: hint size -> (seeds, errors); ``paths``: title -> (times, angles,
    shares) of one run's positive neurons (:func:`positive_neuron_paths`);
    ``boundaries``: title -> (W, a, X, y, hints, w_star)."""
    fig, axes = plots.panels(3, 2, height=3.3)
    for (h, (deg, G, peaks, top)), style, color in zip(
        scans.items(), ("-", "--"), ("C0", "C1")
    ):
        axes[0, 0].plot(deg, G, style, color=color, label=f"H = {h:g}")
        axes[0, 0].plot(peaks, top, "v", color=color, ms=7)
    axes[0, 0].plot([], [], "kv", label="local maxima")
    axes[0, 0].axvspan(-band_deg, band_deg, color="C2", alpha=0.3, label="band")
    axes[0, 0].set(
        xlim=(-2, 5),
        ylim=(0.9992, 1.0001),
        xlabel="angle to $w^*$ (degrees)",
        ylabel="$G$ / max",
        title="(a) phase-I landscape near its top",
    )
    axes[0, 0].ticklabel_format(axis="y", useOffset=False)
    axes[0, 0].legend(loc="lower left", fontsize="small")
    for (h, (seeds, err)), marker in zip(errors.items(), "os"):
        axes[0, 1].semilogy(seeds, err, marker, label=f"H = {h:g}")
    axes[0, 1].axhline(1e-3, color="k", ls=":", label="threshold")
    axes[0, 1].set(
        xlabel="initialisation seed",
        ylabel="sup error to $\\frac{1}{2}\\phi$",
        title="(b) limits, seed by seed",
        ylim=(1e-10, 1),
    )
    axes[0, 1].legend(loc="lower center", ncol=2, fontsize="small")
    for ax, (title, (times, ang, share)) in zip(axes[1], paths.items()):
        for k in range(ang.shape[1]):
            big = share[:, k] > 0.01
            ax.plot(np.log10(times[big]), ang[big, k], ".-", ms=3, color=f"C{k % 10}")
        ax.axhspan(-band_deg, band_deg, color="C2", alpha=0.3, label="band")
        ax.set(
            xlabel="$\\log_{10} t$",
            ylabel="angle to $w^*$ (degrees)",
            title=title,
            ylim=(-35, 35),
        )
        ax.legend(loc="lower right", fontsize="small")
    for ax, (title, args) in zip(axes[2], boundaries.items()):
        _hinted_boundary(ax, *args, alpha=alpha, title=title)
    axes[2, 0].legend(loc="lower left")
    plots.fit_titles(fig)
    return fig


def fig1_boundary(
    W, a, X, y, alpha: float, lim: float, others=(), title="", hints=None
):
    """Fig. 1 (one panel): gradient flow's decision boundary (black, sign-shaded)
    of the net ``(W, a)`` on ``(X, y)``, with other nets' zero sets ``others`` =
    ``[(W, a, colour, linestyle, linewidth, label), ...]`` drawn over it (a broad
    line translucent) and, on the hinted set, its hint points (shrunk)."""
    fig, ax = plots.panels(height=3.8)
    plots.decision_boundary(
        ax, lambda P: two_layer_output(W, a, P, alpha), X, y, lim=lim, n=240
    )
    for Wo, ao, col, ls, lw, label in others:
        op = 0.5 if lw > 2 else 1.0
        plots.zero_set(
            ax,
            lambda P, Wo=Wo, ao=ao: two_layer_output(Wo, ao, P, alpha),
            lim,
            n=240,
            colors=col,
            linestyles=ls,
            linewidths=lw,
            alpha=op,
            zorder=3 if lw > 2 else 4,
        )
        ax.plot([], [], color=col, ls=ls, lw=lw, alpha=op, label=label)
    ax.plot([], [], color="k", lw=2, label="gradient flow's boundary")
    if hints is not None:
        shown = hints / np.maximum(
            1, np.linalg.norm(hints, axis=1, keepdims=True) / (lim - 0.1)
        )
        ax.scatter(*shown.T, marker="x", s=60, color=plots.POS, lw=2, zorder=4)
        ax.scatter([], [], marker="x", color=plots.POS, label="hints (shrunk)")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize="small")
    plots.fit_titles(fig)
    return fig


def mid_margin_and_masses(runs, phase, law, gamma1, best, early_masses, slope1, alpha):
    """Fig. 1 middle: (a) normalized margin against ``log10 t``, one line per seed
    (``runs``: (times, margins) per seed), the late-phase law ``law`` of the
    first seed on its late snapshots, ``γ1`` and the best margin found; (b) the
    masses ``c_−`` against ``c_+`` of the first seed (``phase``:
    :class:`~twolayer.theory.lyu2021.AxisLatePhase`) late and in phase I
    (``early_masses``), with slopes ``α`` and ``slope1``."""
    fig, axes = plots.panels(1, 2, height=3.4)
    for k, (t, g) in enumerate(runs):
        label = "gradient flow, one line per seed" if k == 0 else None
        axes[0].plot(np.log10(t[1:]), g[1:], color="k", alpha=0.6, label=label)
    t0, late = runs[0][0], phase.late
    axes[0].plot(
        np.log10(t0[late]), law[late], "C1--", label="γ₁(1 − (1−α)s), first seed"
    )
    axes[0].axhline(
        gamma1, color="tab:orange", ls=":", label="½φ(x1), the KKT direction"
    )
    axes[0].axhline(best, color="g", ls=":", label="best margin found")
    axes[0].set(
        xlabel="$\\log_{10} t$", ylabel="normalized margin", ylim=(0.02, 1.1 * best)
    )
    axes[0].set_title("(a) margin along the flow")
    axes[0].legend(loc="center right", fontsize="small")
    m, m1 = phase.masses, early_masses
    axes[1].loglog(*m[late].T, "k.", label="late phase (loss < 1e-20)")
    axes[1].loglog(*m1.T, "C0o", ms=4, label="phase I")
    c = np.geomspace(m[late, 0].min(), m[late, 0].max() * 30)
    axes[1].loglog(c, m[-1, 1] * (c / m[-1, 0]) ** alpha, "C1--", label="slope α")
    c0 = np.geomspace(m1[0, 0], m1[-1, 0])
    axes[1].loglog(
        c0, m1[0, 1] * (c0 / c0[0]) ** slope1, "C0:", label="slope |G(−e₁)|/G(e₁)"
    )
    c = np.geomspace(m1[0, 0], c[-1])
    axes[1].loglog(c, c, color="0.6", lw=1, label="$c_-=c_+$ (share ½)")
    axes[1].set(xlabel="$c_+$ (neurons on $+e_1$)", ylabel="$c_-$ (neurons on $-e_1$)")
    axes[1].set_title("(b) the two masses")
    axes[1].legend(loc="upper left", fontsize="small")
    plots.fit_titles(fig)
    return fig


def symmetric_function(W, a, X, y, grid, limit_grid, limit_fn, alpha: float, t_max):
    """Thm 4.2-4.3: the normalised net (colour) with the linear limit's contours
    (dashed, ``limit_fn`` on the plane), and ``|f − f∞| / sup|f∞|`` on ``grid``
    (``limit_grid``: f∞ there)."""
    fig, axes = plots.panels(1, 2, height=3.4)
    f = lambda Z: two_layer_output(W, a, Z, alpha)  # noqa: E731
    plots.decision_boundary(axes[0], f, X, y, fill="value", colorbar=True)
    g = np.linspace(-1, 1, 200)
    GX, GY = np.meshgrid(g, g)
    limit = limit_fn(np.c_[GX.ravel(), GY.ravel()]).reshape(GX.shape)
    axes[0].contour(
        GX, GY, limit, levels=9, colors="k", linewidths=0.7, linestyles="--"
    )
    axes[0].set_title("the network (colour) and its limit (dashed)")
    gap = np.abs(f(grid) - limit_grid) / np.abs(limit_grid).max()
    dots = axes[1].scatter(*grid.T, c=gap, s=6, cmap="viridis")
    fig.colorbar(dots, ax=axes[1])
    title = f"|f − f∞| / sup|f∞| at t = {t_max:.0e}"
    axes[1].set(xlabel="$x_1$", ylabel="$x_2$", aspect="equal", title=title)
    plots.fit_titles(fig)
    return fig


def symmetric_curves(curves):
    """Thm 4.3 along the flow: ``curves`` = {σ: [(times, errors, margin ratios)
    per seed]}; error to the linear limit and γ/γ* against ``log10 t``."""
    fig, axes = plots.panels(1, 2, height=3.4)
    for j, (sc, runs) in enumerate(curves.items()):
        for k, (t, err, ratio) in enumerate(runs):
            log_t = np.log10(np.maximum(t, 1e-1))
            label = f"σ={sc:g}" if k == 0 else None
            axes[0].plot(log_t, err, color=f"C{j}", alpha=0.6, label=label)
            axes[1].plot(log_t, ratio, color=f"C{j}", alpha=0.6, label=label)
    axes[0].set(
        xlabel=r"flow time $\log_{10} t$",
        yscale="log",
        ylabel="sup |f − f∞| / sup |f∞| (unit disk)",
        title="distance to the linear limit",
    )
    axes[1].axhline(1, color="k", lw=1, ls="--", label="γ* (Thm 4.2)")
    axes[1].set(
        xlabel=r"flow time $\log_{10} t$",
        ylabel="γ(θ)/γ*",
        ylim=(0, 1.05),
        title="normalized margin vs Thm 4.2's γ*",
    )
    axes[0].legend(fontsize="small")
    axes[1].legend(fontsize="small", loc="lower right")
    plots.fit_titles(fig)
    return fig


def sigma_sweep(sigmas, errors, gaps, t_max):
    """Thm 4.3 needs a small init: the error and ``1 − γ/γ*`` at ``t_max``
    against σ (``errors``, ``gaps``: scale x seed), with the claims' 1% level."""
    fig, ax = plots.panels(height=3.6)
    for k in range(errors.shape[1]):
        first = k == 0
        ax.plot(
            sigmas,
            errors[:, k],
            "o-",
            color="C0",
            alpha=0.7,
            label="relative sup error" if first else None,
        )
        ax.plot(
            sigmas,
            gaps[:, k],
            "s--",
            color="C1",
            alpha=0.7,
            label="1 − γ/γ*" if first else None,
        )
    ax.axhline(0.01, color="k", lw=1, ls=":", label="the claims' 1% level")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="init scale σ",
        ylabel="gap at the end of the flow",
        title=f"at t = {t_max:.0e}, {errors.shape[1]} seeds per scale",
    )
    ax.legend()
    plots.fit_titles(fig)
    return fig


def phase1_alignment(times, Ws, As, mu_bar, T1, rs, r_main, lam0, m_norms):
    """Lemma 5.2, one run: every neuron's ``sign(a_k) cos(w_k, μ̄)`` against t with
    ``T1(r)`` dashed (``T1``: r -> time), and ``‖θ(t)‖_M`` (``m_norms``) against
    its exponential growth at rate λ0."""
    fig, axes = plots.panels(1, 2, height=3.6)
    cosk = np.sign(As) * (Ws @ mu_bar) / np.linalg.norm(Ws, axis=2)
    axes[0].plot(times, cosk, color="#4c72b0", lw=0.6, alpha=0.6)
    for r in rs:
        axes[0].axvline(T1[r], color="k" if r == r_main else "0.6", ls="--", lw=1)
    axes[0].text(T1[r_main], -0.95, f" $T_1({r_main:g})$")
    axes[0].set(
        xlabel="t",
        ylabel="sign(a_k) cos(w_k, μ̄)",
        title="every neuron aligns with ±μ̄ (dashed: $T_1(r)$)",
    )
    axes[1].semilogy(times, m_norms, label="$\\|\\theta(t)\\|_M$")
    growth = m_norms[0] * np.exp(lam0 * np.asarray(times))
    axes[1].semilogy(
        times, growth, ls=":", label="$\\|\\theta_0\\|_M e^{\\lambda_0 t}$"
    )
    axes[1].set(xlabel="t", title="exponential growth at rate λ0")
    axes[1].legend()
    plots.fit_titles(fig)
    return fig


def phase1_residuals(rs, residuals, C: float, width: int):
    """Lemma 5.2's residual ``‖Δθ‖_M`` at ``T1(r)`` against r (seeds x r), with
    ``C r³/√m`` for the largest C."""
    fig, ax = plots.panels(height=3.6)
    for k, res in enumerate(residuals):
        label = (
            "measured $\\|\\Delta\\theta\\|_M$, one line per seed" if k == 0 else None
        )
        ax.loglog(rs, res, "o-", color="C0", alpha=0.6, label=label)
    ref = C * np.asarray(rs) ** 3 / np.sqrt(width)
    ax.loglog(rs, ref, "k:", label="$C r^3/\\sqrt{m}$, largest C")
    ax.set(
        xlabel="r",
        ylabel="$\\|\\Delta\\theta\\|_M$ at $T_1(r)$",
        title="Lemma 5.2 residual",
    )
    ax.legend()
    plots.fit_titles(fig)
    return fig


def phase1_clock(sigmas, scaled_times):
    """Lemma 5.2's time scale: ``λ0 t_r(σ)`` against ``ln(1/σ)`` (seeds x σ), with
    slope 1 (the lemma) and slope 2 (the paper's printed ``μ̃``)."""
    fig, ax = plots.panels(height=3.6)
    x = np.log(1 / np.asarray(sigmas))
    for k, tr in enumerate(scaled_times):
        label = "measured $\\lambda_0 t_r(\\sigma)$, all seeds" if k == 0 else None
        ax.plot(x, tr, "o", color="C0", alpha=0.7, label=label)
    c0 = np.mean(np.asarray(scaled_times)[:, 0] - x[0])
    ax.plot(x, x + c0, "k--", lw=1, label="slope 1 (Lemma 5.2)")
    ax.plot(
        x,
        2 * (x - x[0]) + x[0] + c0,
        "r:",
        lw=1,
        label="slope 2 (printed $\\tilde\\mu$)",
    )
    ax.set(
        xlabel="ln(1/σ)",
        ylabel="$\\lambda_0 t_r$",
        title="time to reach r, in units of 1/λ0",
    )
    ax.legend()
    plots.fit_titles(fig)
    return fig


def fig1_left_bent(Wb, ab, X, y, W_gf, a_gf, ratio: float, alpha: float):
    """Fig. 1 left, constructed set: (a) the bent KKT net's boundary with its
    neurons (arrows), the kink lines of its positive neurons and gradient flow's
    boundary (green); (b) both nets on the unit circle near ``+e2``."""
    fig, axes = plots.panels(1, 2, height=3.6)
    f_b = lambda P: two_layer_output(Wb, ab, P, alpha)  # noqa: E731
    f_g = lambda P: two_layer_output(W_gf, a_gf, P, alpha)  # noqa: E731
    plots.decision_boundary(axes[0], f_b, X, y, lim=3.0, n=240)
    plots.neuron_arrows(axes[0], Wb[ab > 0], plots.POS, 2.0, label="neurons, $a_k>0$")
    plots.neuron_arrows(axes[0], Wb[ab < 0], plots.NEG, 2.0, label="neuron, $a_k<0$")
    for w in Wb[ab > 0]:  # kink lines: the data points orthogonal to the neuron
        axes[0].plot(
            *np.outer([-3, 3], [-w[1], w[0]] / np.linalg.norm(w)).T, ":", c="0.5"
        )
    plots.zero_set(
        axes[0], f_g, 3.0, n=240, colors="g", linestyles="--", linewidths=1.5
    )
    axes[0].plot([], [], "k", label=f"bent KKT net (γ/γ* {ratio:.3f})")
    axes[0].plot([], [], "g--", label="gradient flow, small init")
    axes[0].plot([], [], ":", c="0.5", label="kink lines of the $a_k>0$ neurons")
    axes[0].set_title("(a) a bent KKT-margin direction")
    deg = np.linspace(60, 120, 241)  # around +e2; around -e2 it is the mirror image
    circle = np.stack([np.cos(np.radians(deg)), np.sin(np.radians(deg))], 1)
    for (W, a), style in (((Wb, ab), "k"), ((W_gf, a_gf), "g--")):
        scale = (W**2).sum() + (a**2).sum()  # ‖θ‖²: f of the unit direction
        axes[1].plot(deg, two_layer_output(W, a, circle, alpha) / scale, style)
    axes[1].axhline(0, color="0.6", lw=0.8)
    axes[1].axvline(90, color="0.6", lw=0.8, ls=":")
    axes[1].set(
        xlabel="angle of $x$ (degrees)",
        ylabel="$f(x)$, $\\|x\\|=1$, $\\|\\theta\\|=1$",
        xticks=range(60, 121, 15),
        ylim=(-0.62, 0.22),
        title="(b) the output on the unit circle, near $+e_2$",
    )
    axes[1].legend(
        *axes[0].get_legend_handles_labels(), loc="lower left", fontsize="small"
    )
    plots.fit_titles(fig)
    return fig


def embedding_difference(times, diff):
    """Lemma 5.3: relative difference of the m-neuron run and the embedded
    two-neuron run along GD, with float64's eps."""
    fig, ax = plots.panels(height=3.4)
    ax.semilogy(times[1:], np.maximum(diff[1:], 1e-18), "o-", ms=3)
    ax.axhline(np.finfo(float).eps, color="k", ls=":", label="float64 eps")
    ax.set(
        xlabel="t",
        ylabel="relative difference",
        xscale="log",
        title="Lemma 5.3: m-neuron run vs embedded two-neuron run",
    )
    ax.legend()
    plots.fit_titles(fig)
    return fig


def coupling_distances(sigmas, worst_book, worst_printed):
    """Lemma 5.4: relative distance to the embedded two-neuron flow, worst over t,
    against σ (seeds x σ), on the book's clock and on the printed one."""
    fig, ax = plots.panels(height=3.4)
    for k, (book, printed) in enumerate(zip(worst_book, worst_printed)):
        first = k == 0
        ax.loglog(
            sigmas,
            book,
            "o-",
            color="C0",
            alpha=0.6,
            label="book's λ0, worst t, one line per seed" if first else None,
        )
        ax.loglog(
            sigmas,
            printed,
            "k:",
            alpha=0.6,
            label="paper's printed λ0" if first else None,
        )
    ax.set(xlabel="init scale σ", ylabel="relative distance to π_b̄(θ̃(t))")
    ax.legend(fontsize="small")
    plots.fit_titles(fig)
    return fig


def distance_to_limit(curves, phase1_dist: float):
    """Thm 5.5: distance of θ/‖θ‖ to ½(w*, −w*, 1, −1) against ``log10 t``
    (``curves``: (times, distances) per seed) and the phase-I direction's."""
    fig, ax = plots.panels(height=3.4)
    for k, (t, d) in enumerate(curves):
        label = "gradient flow, one line per seed" if k == 0 else None
        ax.semilogy(
            np.log10(np.maximum(t, 1e-1)), d, color="C0", alpha=0.7, label=label
        )
    ax.axhline(phase1_dist, color="C1", ls="--", label="phase-I direction ½(μ̄,−μ̄,1,−1)")
    ax.set(
        xlabel="flow time $\\log_{10} t$",
        ylabel="‖θ/‖θ‖ − ½(w*,−w*,1,−1)‖",
        title="distance to the predicted limit",
    )
    ax.legend(fontsize="small")
    plots.fit_titles(fig)
    return fig


def hinted_seeds(
    scans,
    band_deg: float,
    errors,
    failing,
    runs,
    paths,
    splits,
    times,
    base,
    sets,
    w_star,
    alpha: float,
):
    """Thm 6.2 on the planar hinted sets, drawn by :func:`hinted_runs` from a page's
    runs at two hint sizes ``H > H_small`` (the keys of ``sets``, ``runs``,
    ``scans`` and ``errors``, in that order).

    ``scans``: hint size -> phase I's landscape (angles, ``G``, angles of the
    local maxima), panel (a); ``errors``: hint size -> (seeds, errors), panel (b);
    ``failing``: the ``H_small`` seeds that miss ½φ; ``paths``/``splits``: per
    ``H_small`` run its positive neurons' (angles, shares) and final split
    snapshot, drawn against ``times`` for the first converging seed (c) and the
    failing seed that splits first (d); (e–f) the decision boundary on ``base``
    (the set before the hints) of the first ``H`` run and of the worst
    ``H_small`` run."""
    (H, hinted), (H_small, hinted_small) = sets.items()
    seeds_small, err_small = errors[H_small]
    failing = np.asarray(failing)
    fail_shown = min(np.flatnonzero(failing), key=lambda k: splits[k])
    conv_shown = int(np.flatnonzero(~failing)[0])
    scan_fig = {}
    for h, (deg, G, peaks) in scans.items():
        top = np.isin(deg, peaks)
        scan_fig[h] = (deg, G / G.max(), deg[top], G[top] / G.max())
    paths_fig = {
        f"({p}) H = {H_small:g}, seed {seeds_small[k]} ({what})": (times, *paths[k])
        for p, k, what in (("c", conv_shown, "converges"), ("d", fail_shown, "fails"))
    }
    worst = int(np.argmax(err_small))
    boundaries = {
        f"({p}) H = {h:g}, seed {errors[h][0][k]}": (
            runs[h][k].final["W"],
            runs[h][k].final["a"],
            base.X,
            base.y,
            ds.X[-3:],
            w_star,
        )
        for p, h, ds, k in (("e", H, hinted, 0), ("f", H_small, hinted_small, worst))
    }
    return hinted_runs(scan_fig, band_deg, errors, paths_fig, boundaries, alpha)


def unequal_starts(frame, phase1_dist: float):
    """Thm 5.5 from unequal and large starts (``frame``:
    :func:`twolayer.experiments.lyu2021.thm55_unequal`): (a) the distance of
    θ/‖θ‖ to ½(w*, −w*, 1, −1) and (b) the norm imbalance |v| against
    ``log10 t``, one line per start and draw, coloured by start; stacked."""
    fig, (ax, bx) = plots.panels(2, 1, height=3.2, sharex=True)
    starts = list(dict.fromkeys(zip(frame["norm"], frame["ratio"])))
    for k, (norm, ratio) in enumerate(starts):
        sub = frame[(frame["norm"] == norm) & (frame["ratio"] == ratio)]
        r = f"{ratio:g}:1" if ratio >= 1 else f"1:{1 / ratio:g}"
        for j, (_, g) in enumerate(sub.groupby("draw")):
            label = f"‖w1‖ = {norm:g}, ‖w1‖:‖w2‖ = {r}" if j == 0 else None
            ax.semilogy(
                g["log10_t"], g["distance"], color=f"C{k}", alpha=0.7, label=label
            )
            bx.semilogy(g["log10_t"], np.abs(g["imbalance"]), color=f"C{k}", alpha=0.7)
    ax.axhline(phase1_dist, color="0.4", ls="--", label="phase-I direction")
    ax.set(ylabel="distance to ½(w*,−w*,1,−1)", title="(a) direction")
    bx.set_xscale("log")
    bx.set(xlabel="$\\log_{10} t$ (log scale)", ylabel="|v|")
    bx.set_title("(b) norm imbalance")
    ax.legend(fontsize="small")
    plots.fit_titles(fig)
    return fig


def thm62_regime(table):
    """Thm 6.2's failure frequency per setting of the stored grid (``table``:
    :func:`twolayer.experiments.lyu2021.thm62_regime_table`), with 95 %
    Clopper–Pearson intervals, one row per setting."""
    fig, ax = plots.panels(height=0.45 * len(table) + 1.2)
    y = np.arange(len(table))[::-1]
    freq = table["failure frequency"].to_numpy()
    lo, hi = zip(*(map(float, s.split("–")) for s in table["95% interval"]))
    err = np.array([freq - np.array(lo), np.array(hi) - freq])
    ax.errorbar(freq, y, xerr=err, fmt="o", color="C3", capsize=3)
    # settings folded to two lines: one-line labels widen the figure past the page
    ax.set_yticks(y, [textwrap.fill(str(s), 26) for s in table["setting"]])
    ax.set_xlim(-0.02, 1.02)
    ax.axvline(2.0**-10, color="0.5", ls=":")  # 2^-m, the excluded event (caption)
    ax.set(xlabel="failure frequency over init seeds (certified at t = 1e40)")
    plots.fit_titles(fig)
    return fig


def limit_trend(log10_ts, errors, errors_rival, threshold: float, rival: str):
    """A limit claim's trend: the relative sup error to the limit against
    ``log10 t`` (log-log), one line per seed (``errors``: seeds x horizons), the
    rival's flows (``errors_rival``, same shape) and the claim's threshold."""
    fig, ax = plots.panels(height=3.4)
    x = np.asarray(log10_ts, float)
    for k, e in enumerate(errors):
        label = "gradient flow, small init, one line per seed" if k == 0 else None
        ax.loglog(x, e, "o-", color="C0", alpha=0.7, label=label)
    for k, e in enumerate(errors_rival):
        ax.loglog(x, e, "^-", color="C2", alpha=0.7, label=rival if k == 0 else None)
    ax.axhline(threshold, color="k", ls=":", lw=1, label="the claim's threshold")
    ax.set(
        xlabel="$\\log_{10} t$",
        ylabel="sup |f − ½φ(x₁)| / sup |½φ(x₁)|",
        title="distance to the linear KKT direction",
    )
    ax.legend(fontsize="small")
    plots.fit_titles(fig)
    return fig
