"""Tests of twolayer.experiments.lyu2021 (Fig. 1, Lemmas 5.2-5.4, Thms 5.5-5.6):
each experiment on a tiny setting, checked against a computation written out here."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from twolayer import flows, models
from twolayer.data import Dataset, symmetric_augment, uniform_disk_linear
from twolayer.experiments import lyu2021 as E
from twolayer.theory import lyu2021 as L

ALPHA = 0.5


@pytest.fixture(scope="module")
def sym():
    return symmetric_augment(
        uniform_disk_linear(4, margin=0.2, w_star=[1.0, 0.6], seed=3)
    )


def _margin(W, a, X, y, alpha):
    """min_i y_i f(x_i) / ||θ||², written out."""
    f = np.maximum(X @ W.T, alpha * (X @ W.T)) @ a
    return (y * f).min() / ((W**2).sum() + (a**2).sum())


def test_seed_flows_matches_one_flow_per_seed(sym):
    flow = dict(width=3, init_scale=0.1, t_max=20.0, n_snapshots=3)
    out = E.seed_flows(sym, [0, 1], alpha=ALPHA, **flow)
    for k, s in enumerate([0, 1]):
        net = models.TwoLayerNet(2, 3, ALPHA, "gaussian", init_scale=0.1, seed=s)
        end = flows.gradient_flow(net, sym, 20.0, n_snapshots=3).final
        np.testing.assert_allclose(out.ends[k]["W"], end["W"])
        g = _margin(end["W"], end["a"], sym.X, sym.y, ALPHA)
        assert out.margins[k] == pytest.approx(g, rel=1e-10)
    assert out.nonlinearity.shape == (2,)
    assert ((out.nonlinearity >= 0) & (out.nonlinearity <= 1)).all()


def test_trajectories_are_the_flows_from_each_seed(sym):
    runs = E.trajectories(sym, [2], width=2, alpha=ALPHA, init_scale=0.1, t_max=5.0)
    net = models.TwoLayerNet(2, 2, ALPHA, "gaussian", init_scale=0.1, seed=2)
    ref = flows.gradient_flow(net, sym, 5.0)
    np.testing.assert_allclose(runs[0].final["a"], ref.final["a"])


def test_kkt_directions_rows_and_large_flows(sym):
    gstar = L.global_max_margin_symmetric(sym.X, sym.y, ALPHA)
    search = dict(width=2, starts=3, seed=0)
    found = L.search_max_margin(sym.X, sym.y, ALPHA, **search)
    large_init = dict(width=2, init_scale=2.0, t_max=30.0)
    table, large = E.kkt_directions(
        sym, ALPHA, found, gstar, search, large_init, [0], other_seeds=[5]
    )
    assert list(table.columns) == ["start", "ratio", "stationarity", "nonlinearity"]
    starts = list(table.start)
    assert starts.count("large-init flow, polished") <= 1
    assert all(s.startswith("other set 5") for s in starts if s.startswith("other"))
    # the random-start rows are the search's own solutions, margins written out
    ours = [
        _margin(W, a, sym.X, sym.y, ALPHA) / gstar
        for W, a in found.solutions
        if (sym.y * models.two_layer_output(W, a, sym.X, ALPHA)).min() > 0
    ]
    np.testing.assert_allclose(table[table.start == "random start"].ratio, ours)
    # the large-init flow, run here directly
    net = models.TwoLayerNet(2, 2, ALPHA, "gaussian", init_scale=2.0, seed=0)
    end = flows.gradient_flow(net, sym, 30.0, n_snapshots=2).final
    ratio = _margin(end["W"], end["a"], sym.X, sym.y, ALPHA) / gstar
    assert large.ratio.iloc[0] == pytest.approx(ratio, rel=1e-10)
    assert (table.ratio <= 1 + 1e-6).all()  # Thm 4.2: nothing beats gamma*


def _hand_table(first_ratio: float) -> pd.DataFrame:
    """Four rows of :func:`kkt_directions`' table: two verified random starts
    (ratios ``first_ratio`` and 2/3), a further set's row, an unverified row."""
    return pd.DataFrame(
        dict(
            start=["random start", "random start", "other set 2, points", "x"],
            ratio=[first_ratio, 0.66666, 0.5, 0.9],
            stationarity=[1e-6, 1e-5, 0.0, 1e-2],
            nonlinearity=[0.0, 0.001, 0.003, 0.2],
        )
    )


def test_kkt_summary_of_a_hand_table():
    out = E.kkt_summary(_hand_table(1.0))
    assert out == dict(
        n=4,
        verified=3,
        margins="0.667, 1.000",
        margins_all="0.500, 0.667, 1.000",
        nonlin=0.003,
    )


def test_suboptimal_kkt_one_neuron_first_then_verified_rows(sym):
    table = _hand_table(0.9995)  # within 1e-3 of gamma*: global
    gstar = L.global_max_margin_symmetric(sym.X, sym.y, ALPHA)
    out = E.suboptimal_kkt(table, sym, ALPHA, gstar)
    assert list(out.start) == ["one neuron on w*", "random start"]
    # ½φ(<w*, x>) on symmetric data: margin α γ_lin / 2 at ‖θ‖² = 1; γ* is
    # (1+α) γ_lin / 4 (two opposite neurons), so the ratio is 2α/(1+α)
    g_lin = 1 / np.linalg.norm(L.max_margin(sym.X, sym.y))
    w = L.max_margin_separator(sym.X, sym.y)
    one = _margin(w[None] / np.sqrt(2), np.array([2**-0.5]), sym.X, sym.y, ALPHA)
    assert one == pytest.approx(ALPHA * g_lin / 2, rel=1e-9)
    assert out.ratio[0] == pytest.approx(2 * ALPHA / (1 + ALPHA), rel=1e-7)
    assert out.stationarity[0] < 1e-8
    with pytest.raises(ValueError, match="not symmetric"):
        E.suboptimal_kkt(table, Dataset(sym.X[:3], sym.y[:3], "half", "t"), ALPHA, 1)


def _run(snapshots, loss=None, times=None):
    return SimpleNamespace(snapshots=snapshots, loss=loss, times=times)


def test_axis_tilts_at_end_and_start():
    on = dict(W=np.array([[2.0, 0.0], [-1.0, 0.0]]), a=np.ones(2))
    off = dict(W=np.array([[1.0, 1.0]]), a=np.ones(1))  # 45°: tilt sin(45°)
    runs = [_run([off, on]), _run([on, off])]
    e1 = [1.0, 0.0]
    np.testing.assert_allclose(E.axis_tilts(runs, e1), [0.0, 2**-0.5])
    np.testing.assert_allclose(E.axis_tilts(runs, e1, at=0), [2**-0.5, 0.0])


def test_axis_late_phases_on_an_exact_late_phase():
    """Balanced neurons on ±e1 with c_- = c_+^α exactly and the margin of the law:
    the fitted exponent is α and the law's error 0."""
    x0, gamma1 = 0.1, 0.05
    c_plus = np.exp(np.linspace(1.0, 3.0, 6))
    c_minus = c_plus**ALPHA
    snaps = [
        dict(
            W=np.array([[np.sqrt(p), 0.0], [-np.sqrt(q), 0.0]]),
            a=np.array([np.sqrt(p), -np.sqrt(q)]),
        )
        for p, q in zip(c_plus, c_minus)
    ]
    share = c_minus / (c_plus + c_minus)
    margins = gamma1 * (1 - (1 - ALPHA) * share)
    times = np.exp(x0 * (c_plus + ALPHA * c_minus))
    run = _run(snaps, loss=np.full(6, 1e-30), times=times)
    late = E.axis_late_phases([run, run], [margins, margins], [1, 0], ALPHA, gamma1, x0)
    np.testing.assert_allclose(late.exponent, ALPHA, atol=1e-10)
    np.testing.assert_allclose(late.law_error, 0.0, atol=1e-12)
    np.testing.assert_allclose(late.share_end, share[-1])
    np.testing.assert_allclose(late.ratio_end, margins[-1] / gamma1)
    assert late.t1pct.shape == (2,) and np.isfinite(late.t1pct).all()
    assert (late.t1pct > np.log10(times[-1])).all()  # the 1 % share lies ahead


def test_phase1_axis_masses_grow_at_the_rates_of_G():
    ds = Dataset(
        np.array([[1, 0], [0.1, 0.6], [0.1, -0.6], [-1, 0.2], [-1, -0.2]], float),
        np.array([1, 1, 1, -1, -1], float),
        "mid",
        "test",
    )
    rates, masses, exponent = E.phase1_axis_masses(ds, [1.0, 0.0], ALPHA, 6, 1e-4, 0)
    phi = np.maximum(ds.X[:, 0], ALPHA * ds.X[:, 0])  # φ(<e1, x>)
    phi_m = np.maximum(-ds.X[:, 0], -ALPHA * ds.X[:, 0])  # φ(<-e1, x>)
    G = np.array([phi @ ds.y, phi_m @ ds.y]) / (2 * len(ds.y))
    np.testing.assert_allclose(rates, np.abs(G))
    assert masses.shape == (6, 2) and (np.diff(masses, axis=0) > 0).all()
    # inside phase I ln c_- / ln c_+ grows at the ratio of the rates (to ~1 %)
    assert exponent == pytest.approx(rates[1] / rates[0], rel=0.02)


def test_lemma52_runs_draw_and_train_each_seed():
    kw = dict(n_half=3, margin=0.1, alpha=ALPHA, width=3, c_a=1.0, lr=0.05)
    kw.update(rs=[0.4, 0.2], r_main=0.2, sigmas=[1e-3, 1e-4], snap_every=200)
    runs, stats = E.lemma52_runs([4], **kw)
    (run,) = runs
    ds = symmetric_augment(
        uniform_disk_linear(3, margin=0.1, w_star=[1.0, 0.6], seed=4)
    )
    np.testing.assert_array_equal(run["ds"].X, ds.X)
    unit = models.TwoLayerNet(2, 3, ALPHA, "gaussian", second_layer_scale=1.0, seed=4)
    W_bar, a_bar = unit.weights()
    np.testing.assert_array_equal(run["W_bar"], W_bar)
    # the main run starts at σ_main θ̄0 and is plain GD from there
    s0 = run["main"].snapshots[0]
    np.testing.assert_allclose(s0["W"], run["sigma_main"] * W_bar)
    steps = int(round(run["main"].times[-1] / 0.05))
    net = models.TwoLayerNet.from_weights(
        run["sigma_main"] * W_bar, run["sigma_main"] * a_bar, ALPHA
    )
    ref = flows.gd(net, ds, lr=0.05, steps=steps, n_snapshots=2)
    np.testing.assert_allclose(run["main"].final["W"], ref.final["W"], rtol=1e-6)
    # it runs 30 time units past T1(r_main) of the smallest σ (last snapshot
    # within snap_every steps of the end)
    lam = run["lam_eff"]
    t_end = 30 + L.phase1_time(0.2, min(1e-4, run["sigma_main"]), W_bar, a_bar, lam)
    assert t_end - 200 * 0.05 <= run["main"].times[-1] <= t_end + 0.05
    assert len(run["sweep"]) == 2
    assert stats["slope"].shape == (1,) and stats["rate"].shape == (1,)


def test_lemma53_embedding_commutes(sym):
    times, diff, fdiff = E.lemma53_embedding(sym, 5, ALPHA, 0.2, 50, seed=1)
    assert (
        len(times) == len(diff) == len(np.unique(np.geomspace(1, 50, 40).astype(int)))
    )
    assert times[-1] == pytest.approx(50 * 0.2)
    assert diff.max() < 1e-12 and fdiff < 1e-12


def test_lemma54_distances_fall_with_sigma(sym):
    lam0 = L.lambda0(sym.X, sym.y, ALPHA)
    kw = dict(sigmas=[1e-2, 1e-4], r=1e-8, offsets=[0.0, 2.0])
    d = E.lemma54_distances(sym, 3, ALPHA, [0], lam0, **kw)
    assert d.shape == (1, 2, 2)
    assert (d[0, 1] < d[0, 0] / 10).all()  # Lemma 5.4: distance of order σ
    d2 = E.lemma54_distances(sym, 3, ALPHA, [0], 2 * lam0, **kw)
    assert d2[0, 1].max() > 10 * d[0, 1].max()  # the wrong clock does not couple


def test_thm55_distances_written_out(sym):
    w_star = L.max_margin_separator(sym.X, sym.y)
    runs, dist = E.thm55_distances(sym, w_star, ALPHA, 1e-3, [1000], 1e8)
    assert dist.shape == (1, len(runs[0].snapshots))
    end = runs[0].final
    theta = np.r_[end["W"].ravel(), end["a"]]
    limit = 0.5 * np.r_[w_star, -w_star, 1.0, -1.0]
    assert dist[0, -1] == pytest.approx(
        np.linalg.norm(theta / np.linalg.norm(theta) - limit), rel=1e-9
    )
    assert dist[0, -1] < dist[0, 0]


def test_thm56_local_flows_table(sym):
    w_star = L.max_margin_separator(sym.X, sym.y)
    local = E.thm56_local_flows(sym, w_star, 3, ALPHA, 10.0, 0.05, 100.0, [2000, 2001])
    assert list(local.index) == [0, 1]
    assert {"near", "random", "near_margin0", "near_margin", "random_margin"} <= set(
        local.columns
    )
    # margins in units of Thm 4.2's gamma* = (1 + α)/4 γ_lin: never above 1
    assert (local[["near_margin0", "near_margin", "random_margin"]] <= 1 + 1e-9).all(
        axis=None
    )
    assert (local.near < local.random).all()


@pytest.mark.parametrize("h, alpha", [(2.2, 0.5), (2.4, 0.5), (3.0, 0.1), (5.0, 0.3)])
def test_bent_kkt_nonlinearity_is_the_measured_one(h, alpha):
    """The wedges' exact fraction against the boundary measured on 36000 angles."""
    X, y, W, a = L.bent_kkt_example(h, alpha)
    measured = L.boundary_nonlinearity(W, a, alpha, angles=36000)
    assert L.bent_kkt_nonlinearity(h, alpha) == pytest.approx(measured, abs=1e-4)
    with pytest.raises(ValueError, match="h"):
        L.bent_kkt_nonlinearity(-1.0, alpha)
