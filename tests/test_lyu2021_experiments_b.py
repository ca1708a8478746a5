"""Tests of the §4 and §6 experiments of twolayer.experiments.lyu2021 (symmetric
limit, hinted sets) and the theory they call, on tiny settings, against
computations written out here."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from twolayer.data import symmetric_augment, uniform_disk_linear
from twolayer.experiments import lyu2021 as E
from twolayer.models import two_layer_output
from twolayer.theory import lyu2021 as L

ALPHA = 0.5


@pytest.fixture(scope="module")
def sym():
    return symmetric_augment(
        uniform_disk_linear(4, margin=0.1, w_star=np.array([1.0, 0.6]), seed=1)
    )


def _margin(W, a, X, y, alpha=ALPHA):
    """min_i y_i f(x_i) / ‖θ‖² (2-homogeneous)."""
    return (y * two_layer_output(W, a, X, alpha)).min() / (np.sum(W**2) + np.sum(a**2))


def _rel_sup(W, a, X, target, alpha=ALPHA):
    norm = np.sqrt(np.sum(W**2) + np.sum(a**2))
    f = two_layer_output(W / norm, a / norm, X, alpha)
    return np.abs(f - target).max() / np.abs(target).max()


# ------------------------------------------------------------------- theory


def test_one_neuron_net_computes_half_phi():
    w = np.array([0.6, 0.8])
    W, a = L.one_neuron_net(w)
    assert np.sum(W**2) + np.sum(a**2) == pytest.approx(1.0)
    X = np.random.default_rng(0).standard_normal((20, 2))
    z = X @ w
    np.testing.assert_allclose(
        two_layer_output(W, a, X, ALPHA), 0.5 * np.maximum(z, ALPHA * z), atol=1e-15
    )
    with pytest.raises(ValueError, match="unit"):
        L.one_neuron_net(2 * w)


def test_symmetric_phase1_gap_by_hand(sym):
    X, y = sym.X, sym.y
    grid = E.disk_points(300, seed=3)
    w_star = L.max_margin_separator(X, y)
    target = (1 + ALPHA) / 4 * grid @ w_star
    err, ratio = L.symmetric_phase1_gap(X, y, grid, target, ALPHA)
    mu = (y[:, None] * X).mean(axis=0)
    u = mu / np.linalg.norm(mu)
    # ½(u, −u, 1, −1) computes ½φ(u·x) − ½φ(−u·x) = (1+α)/2 · ½ u·x
    assert err == pytest.approx(
        np.abs((1 + ALPHA) / 4 * grid @ u - target).max() / np.abs(target).max()
    )
    assert ratio == pytest.approx((y * (X @ u)).min() / (y * (X @ w_star)).min())
    assert ratio <= 1 + 1e-9  # w* has the max linear margin


def test_max_relative_drop():
    assert L.max_relative_drop([np.array([1.0, 2.0, 3.0])]) == 0.0
    series = [np.array([1.0, 2.0, 1.5]), np.array([4.0, 3.0, 3.5])]
    assert L.max_relative_drop(series) == pytest.approx(max(0.5 / 1.5, 1.0 / 3.0))
    assert L.max_relative_drop([]) == 0.0


# -------------------------------------------------------------- experiments


def test_trajectories_are_the_seeds_runs(sym):
    kw = dict(width=4, alpha=ALPHA, init_scale=0.1, t_max=1e-2, n_snapshots=3)
    runs = E.trajectories(sym, [3, 5], init="balanced", **kw)
    for s, run in zip([3, 5], runs):
        one = L.gradient_flow_from_init(sym, init_seed=s, init="balanced", **kw)
        np.testing.assert_array_equal(run.final["W"], one.final["W"])


def test_disk_points_uniform_in_the_disk():
    pts = E.disk_points(20000, seed=0)
    r2 = np.sum(pts**2, axis=1)
    assert pts.shape == (20000, 2) and r2.max() <= 1 + 1e-12
    # uniform in the disk: r² is uniform on [0, 1]
    assert np.quantile(r2, [0.25, 0.5, 0.75]) == pytest.approx(
        [0.25, 0.5, 0.75], abs=0.02
    )
    np.testing.assert_array_equal(pts, E.disk_points(20000, seed=0))
    with pytest.raises(ValueError, match="n"):
        E.disk_points(0, seed=0)


def test_symmetric_searches_reach_thm42(sym):
    grid = E.disk_points(200, seed=1)
    w_star = L.max_margin_separator(sym.X, sym.y)
    target = L.symmetric_limit_function(grid, w_star, ALPHA)
    best, errors = E.symmetric_searches(sym, ALPHA, [0, 1], 4, grid, target)
    gamma_star = (1 + ALPHA) / 4 * (sym.y * (sym.X @ w_star)).min()
    assert best.shape == (2,) and errors.shape == (2, 2)
    assert np.all(best <= gamma_star * (1 + 1e-6))
    one = L.search_max_margin(sym.X, sym.y, ALPHA, width=4, starts=4, seed=1)
    assert best[1] == one.best
    assert errors[1, 0] == pytest.approx(_rel_sup(one.W, one.a, grid, target))


def test_symmetric_sweep_and_gaps_by_hand(sym):
    grid = E.disk_points(200, seed=2)
    w_star = L.max_margin_separator(sym.X, sym.y)
    target = L.symmetric_limit_function(grid, w_star, ALPHA)
    g_star = L.global_max_margin_symmetric(sym.X, sym.y, ALPHA)
    flow = dict(width=4, t_max=30.0, n_snapshots=4, t_min=1.0)
    sweep = E.symmetric_sweep(
        sym, ALPHA, [0.1, 0.3, 0.1], [0, 1], grid, target, g_star, **flow
    )
    assert list(sweep.runs) == [0.1, 0.3]
    peak = 0.0
    for sc, runs in sweep.runs.items():
        for k, run in enumerate(runs):
            W, a = run.final["W"], run.final["a"]
            assert sweep.errors[sc][k] == pytest.approx(_rel_sup(W, a, grid, target))
            assert sweep.ratios[sc][k] == pytest.approx(
                _margin(W, a, sym.X, sym.y) / g_star
            )
            peak = max(
                peak, max(_margin(s["W"], s["a"], sym.X, sym.y) for s in run.snapshots)
            )
    assert sweep.peak_ratio == pytest.approx(peak / g_star)
    gaps, runs = E.symmetric_gaps(
        sym, grid, w_star, [1], alpha=ALPHA, init_scale=0.3, **flow
    )
    np.testing.assert_array_equal(runs[0].final["W"], sweep.runs[0.3][1].final["W"])
    np.testing.assert_allclose(gaps[0], [sweep.errors[0.3][1], sweep.ratios[0.3][1]])


def test_errors_at_interpolates_in_log_time():
    times = np.array([0.0, 1.0, 10.0, 100.0])
    curves = [(times, np.array([5.0, 4.0, 3.0, 1.0])), (times, np.zeros(4))]
    # log10 t = 1.5 is halfway between 3 and 1; t = 0 counts at t_min = 0.1
    np.testing.assert_allclose(E.errors_at(curves, 10**1.5), [2.0, 0.0])
    assert E.errors_at(curves, 0.1)[0] == pytest.approx(5.0)


def test_hinted_plane_follows_def61():
    S, w_star, w_perp, sets, grid = E.hinted_plane(6, (40.0, 20.0), 1.0, 0.05, 2)
    assert w_star @ w_perp == pytest.approx(0.0, abs=1e-15)
    assert np.linalg.norm(w_perp) == pytest.approx(1.0)
    hints = sets[20.0].X[-3:]
    np.testing.assert_allclose(
        hints, [20 * w_star, 0.05 * w_star + w_perp, 0.05 * w_star - w_perp]
    )
    assert list(sets[40.0].y[-3:]) == [1, 1, 1] and len(sets[40.0].y) == S.n + 3
    assert grid.shape == (2000, 2) and np.abs(grid).max() <= 1


def test_hinted_ball_in_three_dimensions():
    S, w_star, w_perp, ds, grid = E.hinted_ball(8, 3, 40.0, 1.0, 0.05, 7, n_grid=500)
    assert w_star @ w_perp == pytest.approx(0.0, abs=1e-12)
    assert np.linalg.norm(w_perp) == pytest.approx(1.0)
    np.testing.assert_allclose(ds.X[-3], 40 * w_star)
    assert grid.shape == (500, 3) and np.linalg.norm(grid, axis=1).max() <= 1
    with pytest.raises(ValueError, match="d"):
        E.hinted_ball(8, 2, 40.0, 1.0, 0.05, 7)


def test_hinted_snapshot_times():
    t = E.hinted_snapshot_times(1e10)
    assert t[0] == pytest.approx(0.1) and t[-1] == pytest.approx(1e10)
    assert np.all(np.diff(t) > 0) and {10.0, 20.0, 100.0} <= set(t)


def test_late_rates_on_a_made_up_run():
    """Snapshots whose error to ½φ decays exactly like (ln t)^(-1/2)."""
    S, w_star, w_perp, sets, grid = E.hinted_plane(6, (40.0,), 1.0, 0.05, 2)
    ds = sets[40.0]
    target = L.hinted_limit_function(grid, w_star, ALPHA)
    times = np.array([1.0, 1e4, 1e8, 1e16, 1e32])
    W1, a1 = L.one_neuron_net(w_star)
    snaps = []
    for t in times:
        tilt = 0.3 * np.log(max(t, np.e)) ** -0.5
        W = np.vstack([W1, tilt * w_perp[None, :]])
        snaps.append(dict(W=W, a=np.r_[a1, 0.0]))
    run = SimpleNamespace(times=times, snapshots=snaps)
    t, errors, ratios, slopes = E.late_rates([run], ds, grid, target, ALPHA, 0.05, 1e4)
    np.testing.assert_array_equal(t[0], times[1:])
    for k, s in enumerate(snaps[1:]):
        assert errors[0, k] == pytest.approx(_rel_sup(s["W"], s["a"], grid, target))
    assert ratios[0] == pytest.approx(
        _margin(snaps[-1]["W"], snaps[-1]["a"], ds.X, ds.y) / 0.025
    )
    fit = np.polyfit(np.log(np.log(times[1:])), np.log(errors[0]), 1)[0]
    assert slopes[0] == pytest.approx(fit)
    asked = E.late_rates([run], ds, grid, target, ALPHA, 0.05, 1e4, times=times)
    np.testing.assert_array_equal(asked[0][0], times[1:])
    assert asked[3][0] == slopes[0]


def test_hinted_optimality_by_hand():
    S, w_star, w_perp, sets, grid = E.hinted_plane(6, (40.0,), 1.0, 0.05, 2)
    ds, eps = sets[40.0], 0.05
    target = L.hinted_limit_function(grid, w_star, ALPHA)
    scan = L.phase1_landscape(ds.X, ds.y, ALPHA, w_star, n_angles=720)
    out = E.hinted_optimality(ds, w_star, w_perp, scan, grid, target, ALPHA, eps, 3, 0)
    assert out["subopt"] == pytest.approx(eps / 2 / out["search_best"])
    assert out["certify_at"] ** 2 == pytest.approx(out["search_best"] / (eps / 2))
    deg, G, _ = scan
    assert out["phase1_deg"] == pytest.approx(deg[np.argmax(G)], abs=1e-9)
    W = np.vstack([w_star / np.sqrt(2), 0.01 * w_perp, -0.01 * w_perp])
    a = np.array([2**-0.5, 0.01, 0.01])
    assert out["gain_pair"] == pytest.approx(_margin(W, a, ds.X, ds.y) / (eps / 2) - 1)
    assert out["gain_one"] == pytest.approx(
        _margin(W[:2], a[:2], ds.X, ds.y) / (eps / 2) - 1
    )


def test_hinted_split_log_on_made_up_paths():
    """Two positive neurons: together at t = 20 in one run, apart from t = 100
    on in the other."""
    w_star = np.array([1.0, 0.0])
    times = np.array([1.0, 20.0, 100.0, 1e4])

    def run(angles_deg):
        snaps = []
        for ang in angles_deg:
            W = np.array([[np.cos(np.radians(x)), np.sin(np.radians(x))] for x in ang])
            snaps.append(dict(W=W, a=np.ones(len(ang))))
        return SimpleNamespace(snapshots=snaps)

    runs = [
        run([(0, 0), (0.5, 0.5), (0, 0), (0, 0)]),
        run([(0, 0), (0, 3), (-20, 20), (-27, 27)]),
    ]
    log, paths, splits = E.hinted_split_log(
        runs, times, w_star, 2.0, [0, 1], [1e-5, 0.3], [0.5, 3.0]
    )
    assert splits == [None, 2]
    assert list(log.index) == [0, 1] and list(log.columns[:2]) == ["error", "γ̃/(ε/2)"]
    assert log["outside the band"].tolist() == pytest.approx([0.0, 0.5])
    assert log["split at t"].iloc[1] == 100.0 and np.isnan(log["split at t"].iloc[0])
    np.testing.assert_allclose(paths[1][0][-1], [-27, 27])
