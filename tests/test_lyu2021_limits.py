"""Tests of the limit helpers of twolayer.experiments.lyu2021 added for Fig. 1
middle's limit claim and Thm 5.5's balance rate, against computations written out
here (a direct flows run, hand-made trends)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from twolayer import data, flows
from twolayer.experiments import lyu2021 as E
from twolayer.figures import lyu2021 as F
from twolayer.models import TwoLayerNet, two_layer_output
from twolayer.theory import lyu2021 as L

ALPHA = 0.5
MID = data.Dataset(
    np.array([[1, 0], [0.1, 0.6], [0.1, -0.6], [-1, 0.2], [-1, -0.2]], float),
    np.array([1, 1, 1, -1, -1], float),
    "mid",
    "test",
)


def test_crossing_log10_t_geometric():
    # a factor 0.1 per decade of log10 t: 1 at 10, 0.1 at 100 -> 0.01 at 1000
    assert E.crossing_log10_t([10.0, 100.0], [1.0, 0.1], 0.01) == pytest.approx(1e3)
    # half a decade with a factor 10^-0.5: the same rate
    x = E.crossing_log10_t([10.0, 10**1.5], [1.0, 10**-0.5], 0.01)
    assert x == pytest.approx(1e3)
    assert E.crossing_log10_t([10.0, 100.0], [1.0, 0.005], 0.01) == 100.0
    assert E.crossing_log10_t([10.0, 100.0], [0.5, 0.5], 0.01) == float("inf")
    with pytest.raises(ValueError):
        E.crossing_log10_t([10.0], [1.0], 0.01)


def test_limit_error_trend_is_the_direct_run():
    angles = np.linspace(0, 2 * np.pi, 90, endpoint=False)
    grid = np.c_[np.cos(angles), np.sin(angles)]
    target = 0.5 * np.where(grid[:, 0] > 0, grid[:, 0], ALPHA * grid[:, 0])
    xs = [3.0, 10.0]
    got = E.limit_error_trend(
        MID, [0], xs, grid, target, alpha=ALPHA, width=3, init_scale=1e-3
    )
    net = TwoLayerNet(2, 3, ALPHA, "gaussian", init_scale=1e-3, seed=0)
    run = flows.gradient_flow(net, MID, log10_t_max=10.0, snapshot_log10_times=xs)
    want = []
    for s in run.snapshots[-2:]:
        n = np.sqrt(np.sum(s["W"] ** 2) + np.sum(s["a"] ** 2))
        f = two_layer_output(s["W"] / n, s["a"] / n, grid, ALPHA)
        want.append(np.abs(f - target).max() / np.abs(target).max())
    assert got.shape == (1, 2)
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    with pytest.raises(ValueError):
        E.limit_error_trend(MID, [0], [10.0, 3.0], grid, target, alpha=ALPHA, width=3)


def test_imbalance_exponents_fit_the_runs_imbalance():
    ds = L.symmetric_augment(
        data.uniform_disk_linear(10, margin=0.1, w_star=np.array([1.0, 0.6]), seed=0)
    )
    w_star = L.max_margin_separator(ds.X, ds.y)
    xs = np.arange(1.0, 80.0, 1.0)
    got = E.imbalance_exponents(ds, w_star, ALPHA, (3.0, 10.0), [3000], xs)
    W0, a0 = L.thm55_unequal_start(w_star, 3.0, 10.0, np.random.default_rng(3000))
    net = TwoLayerNet.from_weights(W0, a0, ALPHA)
    run = flows.gradient_flow(net, ds, log10_t_max=xs[-1], snapshot_log10_times=xs)
    v = []
    for s in run.snapshots[-len(xs) :]:
        n = np.sum(s["W"] ** 2, axis=1) + s["a"] ** 2
        v.append((n[0] - n[1]) / (n[0] + n[1]))
    v = np.abs(v)
    keep = (v >= 1e-6) & (v <= 1e-2)
    assert keep.sum() >= 3
    slope = np.polyfit(xs[keep], np.log10(v[keep]), 1)[0]
    assert got.shape == (1,)
    assert got[0] == pytest.approx(slope, rel=1e-9)
    assert got[0] < 0


def test_limit_trend_figure_draws_every_line():
    x = [300.0, 3000.0, 1e4]
    fig = F.limit_trend(x, np.ones((2, 3)) * 0.1, np.ones((3, 3)), 0.01, "rival")
    ax = fig.axes[0]
    assert len(ax.lines) == 2 + 3 + 1
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "rival" in labels and "the claim's threshold" in labels
