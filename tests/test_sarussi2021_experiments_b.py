"""Tests of twolayer.experiments.sarussi2021 (Figs 1, 3, 4, 5 and Theorem 4.1 of
Sarussi, Brutzkus & Globerson, ICML 2021) and the theory they use, each on a tiny
setting against an independent computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twolayer import data, flows, models
from twolayer.experiments import sarussi2021 as ex
from twolayer.theory import margins
from twolayer.theory import sarussi2021 as s


@pytest.fixture(scope="module")
def tiny():
    ds = data.uniform_disk_linear(8, margin=0.2, w_star=np.array([1.0, 0.3]), seed=0)
    return ds, s.disk_grid(21)


def _logistic(P, Q, X, y, alpha):
    return float(np.logaddexp(0, -y * s.network_output(P, Q, X, alpha)).mean())


# ----------------------------------------------------------------- Figs 1, 3, 5


def test_disk_grid_is_the_grid_points_in_the_disk():
    g = np.linspace(-1, 1, 11)
    expected = [(x, y) for y in g for x in g if 0 < np.hypot(x, y) <= 1]
    np.testing.assert_array_equal(s.disk_grid(11), np.array(expected))
    with pytest.raises(ValueError, match="size"):
        s.disk_grid(1.5)


def test_sign_agreement_two_neurons():
    w, u = np.array([[1.0, 1.0]]), np.array([[1.0, -1.0]])
    X = s.disk_grid(101)
    relu = s.sign_agreement(w, u, X, 0.0)
    # by hand: the ReLU net is 0 where both pre-activations are <= 0 (the dead
    # cone) and where they are equal (w·x = u·x: the ray x2 = 0, x1 > 0)
    dead = np.mean(((X @ w[0] <= 0) & (X @ u[0] <= 0)) | (X @ w[0] == X @ u[0]))
    assert relu["zero"] == pytest.approx(dead)
    assert abs(relu["zero"] - 0.25) < 0.02  # a quarter of the disk (w ⟂ u)
    leaky = s.sign_agreement(w, u, X, 0.2)
    assert leaky["mismatch"] == 0.0  # Cor 6.1, exactly
    # the leaky net is 0 only on its boundary, the line (w − u)·x = 2 x2 = 0
    assert leaky["zero"] == pytest.approx(np.mean(X[:, 1] == 0))


def test_fig1_runs_match_the_flow_run_by_run(tiny):
    ds, grid = tiny
    runs = ex.fig1_runs(ds, 2, 0.2, {"a": 1e-3, "b": 1.0}, 0.5, 20, grid, seed=3)
    for name, sc in (("a", 1e-3), ("b", 1.0)):
        net = models.TwoLayerNet.fixed_second_layer(2, 2, 0.2, init_scale=sc, seed=3)
        W = flows.gd(net, ds, lr=0.5, steps=20, n_snapshots=10).final["W"]
        np.testing.assert_array_equal(runs[name]["P"], np.asarray(W)[:2])
        assert runs[name]["init_scale"] == sc
        assert runs[name]["ratio"] == pytest.approx(
            s.clustering_ratio(*s.split_neurons(W))
        )


def test_init_scale_sweep_rows(tiny):
    ds, grid = tiny
    sweep = ex.init_scale_sweep(ds, 2, 0.2, [1.0, 1e-3], range(2), 0.5, 30, grid)
    assert list(zip(sweep.init_scale, sweep.seed)) == [
        (1e-3, 0),
        (1e-3, 1),
        (1.0, 0),
        (1.0, 1),
    ]
    for r in sweep.itertuples():
        assert r.departure == s.departure_from_best_line(r.P, r.Q, grid, 0.2)
        # the stored loss is the mean logistic loss of the final weights (to float32)
        assert r.loss == pytest.approx(_logistic(r.P, r.Q, ds.X, ds.y, 0.2), rel=1e-4)


def test_sweep_summary_by_hand():
    rows = [  # (scale, departure, outside, ratio, loss)
        (0.1, 0.000, 0.01, 0.1, 1e-3),
        (0.1, 0.002, 0.02, 0.2, 2e-3),
        (1.0, 0.005, 0.50, 0.6, 1e-3),
        (1.0, 0.030, 0.70, 0.8, 5e-3),
        (9.0, 0.040, 0.90, 0.9, 1e-3),
        (9.0, 0.060, 1.00, 1.0, 1e-3),
    ]
    cols = ["init_scale", "departure", "outside", "ratio", "loss"]
    got = ex.sweep_summary(pd.DataFrame(rows, columns=cols))
    assert got == pytest.approx(
        dict(
            small_scale=0.1,
            large_scale=9.0,
            small_worst=0.002,
            large_least=0.04,
            large_max=0.06,
            loss=5e-3,
            out_small=0.02,
            out_large=0.9,
            mid_scale=1.0,  # median ratio 0.7 > 1/2 first at scale 1
            out_mid=0.6,
            linear_until=0.1,  # at scale 1 one seed departs by 0.03 > 0.01
            dep_large=0.05,
        )
    )
    lo, med, hi = ex.sweep_bands(pd.DataFrame(rows, columns=cols))
    assert list(hi.departure) == [0.002, 0.03, 0.06]


def test_fig3_runs_fit_and_rival(tiny):
    ds, grid = tiny
    out = ex.fig3_runs(ds, 2, 0.2, 1e-3, range(2), 0.5, 30, grid)
    P, Q = out["ends"][0]
    N = s.network_output(P, Q, grid, 0.2)
    # the least-squares fit by the normal equations
    beta = np.linalg.solve(grid.T @ grid, grid.T @ N)
    np.testing.assert_allclose(out["beta"], beta, rtol=1e-8)
    res = np.linalg.norm(N - grid @ beta) / np.linalg.norm(N)
    assert out["residuals"][0] == pytest.approx(res, rel=1e-8)
    assert out["record"]["off_line"] == pytest.approx(
        np.mean(np.sign(N) != s.linear_prediction(P, Q, grid))
    )
    np.testing.assert_array_equal(out["linear"], 0.0)  # slope 1: N is linear


# ----------------------------------------------------------------- Fig 4, Thm 6.2


@pytest.fixture(scope="module")
def gaussians():
    return s.fig4_gaussians(6, [2.0, 1.5], [-2.0, 0.5], 0.5, 0)


def test_par_svm_kernel_gap_is_the_solvers_tolerance(gaussians):
    X, y = gaussians.X, gaussians.y
    gap = s.par_svm_kernel_gap(X, y, 0.2)
    assert 0 <= gap < 1e-5
    # by hand: the primal constraints of eq. 8 hold with equality on some point
    w, u = s.par_svm(X, y, 0.2)
    margin = np.where(y > 0, X @ w - 0.2 * (X @ u), X @ u - 0.2 * (X @ w))
    assert margin.min() == pytest.approx(1.0, abs=1e-5)


def test_par_svm_scan_by_hand():
    seeds = [0, 1, 2]
    got = ex.par_svm_scan(6, [2.0, 1.5], [-2.0, 0.5], 0.5, seeds, 0.2)
    for value, seed in zip(got, seeds):
        d = s.fig4_gaussians(6, [2.0, 1.5], [-2.0, 0.5], 0.5, seed)
        w, u = s.par_svm(d.X, d.y, 0.2)
        votes = (np.sign(d.X @ w) == d.y) & (np.sign(d.X @ u) == -d.y)
        assert value == votes.mean()


def _deg(a, b):
    return np.degrees(np.arccos(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))


def test_linear_svm_gap_by_hand_and_zero_on_symmetric_data(gaussians):
    X, y = gaussians.X, gaussians.y
    w, u = s.par_svm(X, y, 0.2)
    w_lin = margins.max_margin(X, y)
    by_hand = {
        "w": _deg(w, w_lin),
        "u": _deg(u, -w_lin),
        "boundary": _deg(w - u, w_lin),
    }
    assert ex.linear_svm_gap(X, y, 0.2) == pytest.approx(
        min(by_hand.values()), abs=1e-6
    )
    for name, value in by_hand.items():
        assert ex.linear_svm_gap(X, y, 0.2, (name,)) == pytest.approx(value, abs=1e-6)
    pos = X[y > 0]  # a symmetric set: the PAR SVM is the linear SVM
    sym = np.vstack([pos, -pos]), np.r_[np.ones(len(pos)), -np.ones(len(pos))]
    assert ex.linear_svm_gap(*sym, 0.2) < 1e-2


def test_discriminating_draw_is_the_first_seed_over_the_gap():
    def make(seed):
        return s.fig4_gaussians(6, [2.0, 1.5], [-2.0, 0.5], 0.5, seed)

    gaps = [ex.linear_svm_gap(make(k).X, make(k).y, 0.2) for k in range(8)]
    min_gap = float(np.median(gaps))  # some seeds below, some above
    first = next(k for k, g in enumerate(gaps) if g >= min_gap)
    got, ds, skipped = ex.discriminating_draw(
        make, 0, 0.2, min_gap, ("w", "u", "boundary")
    )
    assert got == first
    np.testing.assert_array_equal(ds.X, make(first).X)
    assert [k for k, _ in skipped] == list(range(first))
    assert all(g < min_gap for _, g in skipped)
    assert ex.discriminating_draw(make, 3, 0.2, 0.0, ("w",))[0] == 3
    with pytest.raises(ValueError, match="min_gap"):
        ex.discriminating_draw(make, 0, 0.2, -1.0, ("w",))
    with pytest.raises(ValueError, match="no data seed"):
        ex.discriminating_draw(make, 0, 0.2, 180.0, ("w",), tries=2)


def test_par_flow_and_par_flows(gaussians):
    w, u = s.par_svm(gaussians.X, gaussians.y, 0.2)
    w_lin = np.array([1.0, 0.0])
    run = ex.par_flow(gaussians, 2, 0.2, 1e-3, 0, 1e3, w, u, w_lin)
    # recomputed from the final neurons
    c = s.clusters(run["P"], run["Q"])
    cos = c.w_bar @ w / np.linalg.norm(c.w_bar) / np.linalg.norm(w)
    assert run["angles"]["w"] == pytest.approx(np.degrees(np.arccos(cos)), abs=1e-6)
    assert run["angles"]["boundary_vs_linear_svm"] == pytest.approx(
        np.degrees(np.arccos(c.direction[0] / np.linalg.norm(c.direction))), abs=1e-6
    )
    expected = np.linalg.norm(c.w_bar) / np.linalg.norm(c.u_bar)
    assert run["norm_ratio"] == pytest.approx(
        expected * np.linalg.norm(u) / np.linalg.norm(w)
    )
    # the history's last row is the final network
    np.testing.assert_allclose(
        run["history"][-1, 1:4],
        [run["angles"]["w"], run["angles"]["u"], run["angles"]["boundary"]],
    )
    table = ex.par_flows(
        gaussians, w, u, k=2, alpha=0.2, init_scale=1e-3, seeds=[0, 1], t_max=1e3
    )
    assert table.loc[0, "w"] == pytest.approx(run["angles"]["w"], abs=1e-6)
    spread = ex.angle_spread(table)
    assert spread == pytest.approx(
        max(abs(table.loc[0, c] - table.loc[1, c]) for c in ("w", "u", "boundary"))
    )


# ----------------------------------------------------------------- Thm 4.1


@pytest.fixture(scope="module")
def sgd_runs():
    draws = {
        s_: data.uniform_disk_linear(
            6, margin=0.3, w_star=np.array([1.0, 0.5]), seed=s_
        )
        for s_ in (0, 1)
    }
    table, curves = ex.sgd_grid(draws, [1, 2], [1e-3, 1.0], 0.1, 1.0, 6, 0.05)
    return draws, table, curves


def test_sgd_grid_equals_the_library_sgd_run_by_run(sgd_runs):
    draws, table, curves = sgd_runs
    # 2 widths × (leaky: 2 scales + η/k, relu: 2 scales) × 2 draws
    assert len(table) == 2 * (3 + 2) * 2
    for r in table.itertuples():
        net = models.TwoLayerNet.fixed_second_layer(
            2, r.k, r.alpha, init_scale=r.init_scale, seed=r.seed
        )
        init_norm = float(np.linalg.norm(net.weights()[0]))
        lr = 1.0 / r.k if r.mode == "η/k" else 1.0
        ref = flows.sgd(
            net,
            draws[r.seed],
            lr=lr,
            epochs=6,
            batch_size=1,
            seed=r.seed,
            n_snapshots=2,
        )
        visited = np.asarray(ref.step_loss).reshape(6, -1)
        np.testing.assert_allclose(
            curves[(r.alpha, r.init_scale, r.k, r.seed, r.mode)],
            visited.max(axis=1),
            rtol=1e-9,
        )
        bad = (visited >= 0.05).any(axis=1)
        leading = int(np.argmin(bad)) if not bad.all() else len(bad)
        assert r.leading == leading
        P, Q = s.split_neurons(ref.final["W"])
        assert r.final_loss == pytest.approx(
            _logistic(P, Q, draws[r.seed].X, draws[r.seed].y, r.alpha), rel=1e-8
        )
        assert r.init_norm == pytest.approx(init_norm)


def test_eq20_bounds_uses_each_draws_margin_and_radius(sgd_runs):
    draws, table, _ = sgd_runs
    leaky = ex.eq20_bounds(table, draws, 0.1, 1.0, 0.05)
    assert set(leaky.alpha) == {0.1} and set(leaky["mode"]) == {"η"}
    for r in leaky.itertuples():
        X, y = draws[r.seed].X, draws[r.seed].y
        w = margins.max_margin(X, y)
        gamma = float(np.min(y * (X @ w)) / np.linalg.norm(w))  # unit-teacher margin
        B = float(np.sqrt((X**2).sum(axis=1).max()))
        expected = s.sgd_epoch_bound(6, r.k, 0.1, gamma, 1.0, 0.05, B, r.init_norm)
        assert r.bound_eq20 == pytest.approx(expected, rel=1e-6)


def _thm41_table():
    rows = []
    for seed in (0, 1):
        for k in (1, 4, 16):
            rows += [
                dict(
                    alpha=0.1,
                    init_scale=1e-3,
                    k=k,
                    seed=seed,
                    mode="η",
                    leading=16 // k,
                ),
                dict(alpha=0.1, init_scale=1e-3, k=k, seed=seed, mode="η/k", leading=8),
                dict(
                    alpha=0.0, init_scale=1e-3, k=k, seed=seed, mode="η", leading=4 + k
                ),
                dict(
                    alpha=0.1, init_scale=9.0, k=k, seed=seed, mode="η", leading=32 // k
                ),
            ]
    return pd.DataFrame(rows)


def test_width_slopes_by_hand():
    slopes = ex.width_slopes(_thm41_table(), 0.1, 1e-3)
    np.testing.assert_allclose(slopes["fixed"], [-1.0, -1.0])  # 16/k
    np.testing.assert_allclose(slopes["scaled"], [0.0, 0.0], atol=1e-12)
    logk = np.log([1, 4, 16])
    relu = np.polyfit(logk, np.log([5, 8, 20]), 1)[0]
    np.testing.assert_allclose(slopes["relu"], [relu, relu])


def test_first_epoch_losses_and_summary_by_hand():
    curves = {
        (0.1, 1e-3, 1, 0, "η"): [0.7, 0.1],
        (0.1, 9.0, 1, 0, "η"): [2.0, 0.1],
        (0.1, 1e-3, 1, 0, "η/k"): [9.0, 0.1],  # not at the step η
        (0.0, 1e-3, 1, 0, "η"): [9.0, 0.1],  # not leaky
        (0.1, 1e-3, 1, 1, "η"): [0.5, 0.1],
    }
    assert ex.first_epoch_losses(curves, 0.1, [0, 1]) == [2.0, 0.5]
    table = _thm41_table()
    table["last"] = table.leading
    table["final_loss"] = np.where(table.alpha == 0.0, 0.1, 0.01)
    table.loc[0, "final_loss"] = 0.02
    leaky = table[(table.alpha == 0.1) & (table["mode"] == "η")].copy()
    leaky["bound_eq20"] = 64.0
    got = ex.sgd_summary(table, leaky, 0.1, 0.05)
    assert got == dict(
        runs=12,
        worst_last=32,
        worst_final=0.02,
        relu_fail=6,
        relu_runs=6,
        relu_last=20,
        bound_ratio=0.5,
        min_bound=64.0,
        big_vs_small=2.0,  # 32/k against 16/k at every width
    )
