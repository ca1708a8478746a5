"""Phuong & Lampert (2021): every chapter figure draws from small arrays, with
labelled axes and a legend wherever colours or lines need one."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from twolayer import data
from twolayer.figures import phuong2021 as F
from twolayer.theory import phuong2021 as P

matplotlib.use("Agg")


def _labelled(fig):
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
    plt.close(fig)


def test_the_figures_draw_with_labelled_axes():
    rng = np.random.default_rng(0)
    ds = data.orthant_data(40, 4, seed=0)
    g = P.data_geometry(ds.X, ds.y)
    W, a = rng.standard_normal((12, 4)), rng.choice([-1.0, 1.0], 12)
    fig = F.fig1(W, a, g["w"], early_level=0.95)
    assert all(ax.get_legend() for ax in fig.axes[1:])
    _labelled(fig)
    t = np.logspace(0.5, 300, 30)
    curves = [{k: rng.uniform(0.01, 1, 30) for k in ("gap", "closer", "aligned")}]
    fig = F.fig1_limit(t, curves, 0.07, 1e3, "500 SGD epochs")
    assert all(ax.get_legend() for ax in fig.axes)
    _labelled(fig)
    Ws = [rng.standard_normal((12, 4)), *rng.standard_normal((2, 12, 12)), W[:1]]
    _labelled(F.fig2_spectra(Ws, [0.1 * M for M in Ws]))
    _labelled(F.fig2_first_layer(Ws[0], g["w"], g["x"]))
    _labelled(F.fig2_hidden_layers(Ws))
    reps = [rng.random((20, 5)) for _ in range(8)]
    _labelled(F.fig3(reps, np.repeat([1.0, -1.0], 10), names=("0", "1")))
    _labelled(F.fig4(rng.standard_normal((12, 30)), rng.standard_normal(12)))


def test_the_stored_app_d_figures_draw():
    rng = np.random.default_rng(0)
    bins = np.linspace(-1, 1, 41)
    layers = ["0", "1", "2", "7pre"]
    hist = {k: (rng.integers(0, 9, 40), rng.integers(0, 9, 40)) for k in layers}
    fig = F.fig3_stored(hist, bins, layers, names=("0", "1"))
    assert all(ax.get_ylabel() for ax in fig.axes) and fig.axes[-1].get_xlabel()
    assert fig.legends  # one legend for the figure
    plt.close(fig)
    import pandas as pd

    gaps = pd.DataFrame(rng.random((3, 4)), columns=layers)
    fig = F.depth_profile(gaps, 0.1 * gaps, ("1", "2", "7pre"), {"0": "input"})
    assert fig.axes[0].get_legend()
    _labelled(fig)
    fig = F.fig4_stored(np.sort(rng.random(20))[::-1], *rng.standard_normal((3, 12)))
    assert fig.axes[1].get_legend()
    _labelled(fig)
