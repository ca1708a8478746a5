"""Experiments of Sarussi et al. (2021), Figs 7–9 and Thm 5.1 on MNIST
(``twolayer.experiments.sarussi2021``): each checked on a tiny setting against
the same quantities computed run by run from the definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twolayer import data, flows, models
from twolayer.experiments import sarussi2021 as experiments
from twolayer.theory import sarussi2021 as s
from twolayer.theory.margins import NotSeparableError


def test_fig7_8_flows_rows_match_a_flow_run_by_hand():
    ds = data.antipodal_gaussians(8, 3, mean=2.0, std=1.0, seed=0)
    grid = np.r_[0.0, np.logspace(-1, 2, 6)]
    hist, table = experiments.fig7_8_flows(ds, 2, 0.2, 0.03, [0, 1], 100.0, grid)
    assert len(hist) == 2 and list(table.index) == [0, 1]
    for seed, h, row in zip([0, 1], hist, table.itertuples()):
        net = models.TwoLayerNet.fixed_second_layer(
            3, 2, 0.2, init_scale=0.03, seed=seed
        )
        traj = flows.gradient_flow(net, ds, t_max=100.0, snapshot_times=grid)
        W = [snap["W"] for snap in traj.snapshots]
        inside = [s.par_membership(*s.split_neurons(w), ds.X, ds.y).network for w in W]
        entry = inside.index(True) if any(inside) else len(W) - 1
        assert row.entry == entry
        assert row.par_entry == (grid[entry] if any(inside) else np.inf)
        assert row.ratio_entry == pytest.approx(
            s.clustering_ratio(*s.split_neurons(W[entry]))
        )
        assert row.ratio_end == pytest.approx(
            s.clustering_ratio(*s.split_neurons(W[-1]))
        )
        radii = [s.clusters(*s.split_neurons(w)).radius for w in W[entry:]]
        assert row.radius_drift == pytest.approx(np.ptp(radii) / radii[0], abs=1e-12)
        assert np.allclose(h.step, grid)


def test_outlier_data_appends_the_outlier_and_checks_separability():
    base, out = experiments.outlier_data(10, 3.0, [-2.0, 6.0], seed=1)
    assert np.array_equal(out.X[:-1], base.X) and np.array_equal(out.y[:-1], base.y)
    assert np.array_equal(out.X[-1], [-2.0, 6.0]) and out.y[-1] == 1.0
    with pytest.raises(NotSeparableError):
        experiments.outlier_data(10, 3.0, [-6.0, 0.0], seed=1)
    with pytest.raises(ValueError, match="outlier"):
        experiments.outlier_data(10, 3.0, [1.0, 2.0, 3.0], seed=1)


def _gd_alone(ds, init_scale, seed, lr, steps, marks):
    net = models.TwoLayerNet.fixed_second_layer(
        2, 2, 0.2, init_scale=init_scale, seed=seed
    )
    traj = flows.gd(net, ds, lr=lr, steps=steps, snapshot_steps=marks)
    return [np.asarray(snap["W"], dtype=float) for snap in traj.snapshots]


def test_fig9_runs_match_runs_trained_one_by_one():
    base, out = experiments.outlier_data(6, 3.0, [-2.0, 6.0], seed=0)
    inits = {"small": 1e-6, "process": 0.03}
    setting = dict(k=2, alpha=0.2, steps=40, n_snapshots=6, margin=0.01)
    table, hists = experiments.fig9_runs(base, out, inits, [0, 1], [0.5], **setting)
    assert len(table) == 8 and set(hists) == {
        (0.5, i, o, sd) for i in inits for o in (True, False) for sd in (0, 1)
    }
    marks = np.r_[0, np.geomspace(1, 40, 6)].astype(int)
    for row in table.itertuples():
        ds = out if row.outlier else base
        W = _gd_alone(ds, inits[row.init], row.seed, 0.5, 40, marks)
        assert np.allclose(hists[(0.5, row.init, row.outlier, row.seed)][1][-1], W[-1])
        P, Q = s.split_neurons(W[-1])
        w_in = s.par_membership(P, Q, ds.X, ds.y, 0.01).w_neurons
        assert row.w_off_par == int((~w_in).sum())
        assert row.off_par_end == int((~w_in).sum() >= 1)
        assert row.not_nar_end == int(not s.nar_membership(P, Q, ds.X, 0.01).network)
        cos = (
            np.abs(Q @ out.X[-1])
            / np.linalg.norm(Q, axis=1)
            / np.linalg.norm(out.X[-1])
        )
        assert row.cos_u == pytest.approx(cos.max())
        state = []
        for w in W[1:]:
            p, q = s.split_neurons(w)
            fit = np.all(np.sign(s.network_output(p, q, ds.X, 0.2)) == ds.y)
            nar = s.nar_membership(p, q, ds.X, 0.01).network
            par = s.par_membership(p, q, ds.X, ds.y, 0.01).network
            state.append(nar and not par and fit)
        assert row.nar_not_par_snaps == sum(state)
        assert row.passes_nar_not_par == int(any(state))
        assert row.never_nar_not_par == int(not any(state))


def test_fig9_all_in_par_is_the_end_state_of_fig9_runs():
    base, out = experiments.outlier_data(6, 3.0, [-2.0, 6.0], seed=0)
    setting = dict(k=2, alpha=0.2, steps=40, n_snapshots=6, margin=0.01)
    table, _ = experiments.fig9_runs(
        base, out, {"small": 1e-6}, [0, 1, 2], [0.5], **setting
    )
    freq = experiments.fig9_all_in_par(out, [0.5], 1e-6, [0, 1, 2], **setting)
    expected = (table[table.outlier].w_off_par == 0).to_numpy()
    assert list(freq) == [0.5] and np.array_equal(freq[0.5], expected)


def test_nar_not_par_rows_selects_the_fig9_state():
    h = pd.DataFrame(
        dict(
            step=[0, 1, 2, 3],
            in_nar=[True, True, True, False],
            in_par=[False, True, False, False],
            accuracy=[1.0, 1.0, 0.5, 1.0],
        )
    )
    assert list(s.nar_not_par_rows(h).step) == [0]


def test_mnist_runs_horizons_match_the_rows():
    plan = s.mnist_schedule(0.05, 0.2, 3, 0.05, [0.4], 2)
    inits = [("small", 1e-6, 0), ("large", 0.05, 0)]
    df, runs = experiments.mnist_runs([[0, 1]], [plan], inits, 2, 0.2, 0.01, 0.3)
    assert list(runs.setting) == ["centred", "centred", "uncentred", "uncentred"]
    assert list(runs.init) == ["small", "large", "small", "large"]
    for run in runs.itertuples():
        rows = df[(df.setting == run.setting) & (df.init == run.init)]
        t = rows.t.to_numpy()
        fit = t[rows.acc.to_numpy() == 1.0]
        assert run.t_fit == (fit[0] if fit.size else np.inf)
        stop = min(run.t_fit, t[-1])
        assert run.entered == rows.outside[t <= stop].min()
    with pytest.raises(ValueError, match="schedule"):
        experiments.mnist_runs([[0, 1], [3, 5]], [plan], inits, 2, 0.2, 0.01, 0.3)


def test_read_at_reads_each_seed_at_its_own_time():
    rows = pd.DataFrame(
        dict(seed=[1, 1, 1, 0, 0], t=[0.0, 1.0, 2.0, 0.0, 3.0], r=[5, 6, 7, 8, 9])
    )
    times = pd.Series({0: 0.5, 1: 1.0})
    assert np.array_equal(experiments.read_at(rows, "r", times), [9.0, 6.0])
