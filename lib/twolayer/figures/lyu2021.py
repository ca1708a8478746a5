"""Figures of the Lyu, Li, Wang & Arora (2021) chapter: one function per figure,
drawn from arrays the page has measured (no training, no theory)."""

from __future__ import annotations

import numpy as np

from .. import plots


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
