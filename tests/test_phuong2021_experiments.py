"""The Phuong & Lampert chapter's experiments (``experiments.phuong2021``) on tiny
settings, each against an independent computation: singular values, cosines,
activation patterns and scale-fitted distances by hand, and the same training
calls made directly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twolayer import data, flows, models
from twolayer.experiments import phuong2021 as E
from twolayer.theory import phuong2021 as P


def _ratio(W):
    s = np.linalg.svd(np.asarray(W, float), compute_uv=False)
    return s[2] / s[0]


def _unit(v):
    return np.asarray(v, float) / np.linalg.norm(v)


def _cos_rows(W, v):
    W = np.asarray(W, float)
    return W @ _unit(v) / np.linalg.norm(W, axis=1)


def test_orthant_draws_and_fresh_points():
    draws, geo = E.orthant_draws(30, 3, [2, 5])
    for ds, g, k in zip(draws, geo, [2, 5]):
        assert np.array_equal(ds.X, data.orthant_data(30, 3, seed=k).X)
        for w, sign in zip(g["w"], (1, -1)):  # w±: smallest margin 1 on its class
            assert (ds.X[ds.y == sign] @ w).min() == pytest.approx(1, abs=1e-6)
    fresh = E.fresh_points(30, 3, [2, 5])
    assert np.array_equal(fresh[1], data.orthant_data(30, 3, seed=10_005).X)
    assert not np.array_equal(fresh[1], draws[1].X)


def test_fig1_sgd_runs_the_three_inits_and_reads_them_by_hand():
    seeds, width = [0, 1], 6
    draws, geo = E.orthant_draws(40, 3, seeds)
    recipe = dict(lr=0.5, epochs=60, batch_size=10, n_snapshots=4)
    runs, S = E.fig1_sgd(
        draws, geo, seeds, width, init_scale=0.3, large_init_scale=1.0, **recipe
    )
    assert list(S) == ["paper", "balanced", "large"]
    net = models.TwoLayerNet(3, width, init="balanced", init_scale=0.3, seed=1)
    direct = flows.sgd(net, draws[1], seed=1, **recipe)
    assert np.array_equal(runs["balanced"][1].final["W"], direct.final["W"])
    for name, trajs in runs.items():
        for i, t in enumerate(trajs):
            W, a = t.final["W"], t.final["a"]
            a0 = t.snapshots[0]["a"]
            assert S[name]["rank"][i] == pytest.approx(_ratio(W), rel=1e-9)
            flips = int(np.sum(np.sign(a) != np.sign(a0)))
            assert S[name]["flips"][i] == flips
            wp, wm = geo[i]["w"]
            cos = np.where(a > 0, _cos_rows(W, wp), _cos_rows(W, wm))
            assert S[name]["aligned"][i] == pytest.approx(np.median(cos), abs=1e-12)
    with pytest.raises(RuntimeError, match="did not fit"):
        E.fig1_sgd(
            draws,
            geo,
            seeds,
            width,
            init_scale=0.3,
            large_init_scale=1.0,
            lr=1e-4,
            epochs=1,
            batch_size=10,
        )


def test_limit_times_and_limit_flows_against_direct_flows():
    times = E.limit_times(10.0, 1e8)
    assert times[:2].tolist() == [0.0, 10.0] and times.size == 2 + 41 + 121
    assert times.max() == pytest.approx(1e8)
    seeds, width = [0, 1], 4
    draws, geo = E.orthant_draws(20, 3, seeds)
    flow = E.limit_flows(
        draws,
        geo,
        seeds,
        width,
        init_scale=1e-2,
        large_init_scale=1.0,
        t_max=1e8,
        early_time=10.0,
    )
    assert flow.times[flow.i_early] == pytest.approx(10.0)
    for i, (ds, k) in enumerate(zip(draws, seeds)):
        net = models.TwoLayerNet(3, width, init="balanced", init_scale=1e-2, seed=k)
        end = flows.gradient_flow(net, ds, 1e8, snapshot_times=times).final
        assert np.allclose(flow.finals[i][0], end["W"])
        assert flow.curves[i]["rank"][-1] == pytest.approx(_ratio(end["W"]))
        big = models.TwoLayerNet(3, width, init="default", init_scale=1.0, seed=k)
        big_end = flows.gradient_flow(big, ds, 1e8, snapshot_times=times).final
        assert flow.large_rank[i] == pytest.approx(_ratio(big_end["W"]))
    assert flow.wall_time > 0


def test_limit_table_at_the_limit_is_zero_and_its_rival_is_not():
    draws, geo = E.orthant_draws(40, 3, [0])
    (wp, wm), (xp, xm) = geo[0]["w"], geo[0]["x"]
    # Lemma C.1's limit: two neurons along w± with a_j = ±‖w_j‖
    W = np.array([wp / np.linalg.norm(wp) ** 0.5, wm / np.linalg.norm(wm) ** 0.5])
    a = np.linalg.norm(W, axis=1) * np.array([1.0, -1.0])
    fresh = E.fresh_points(50, 3, [0])
    T = E.limit_table([(W, a)], draws, geo, fresh, kkt_tight=0.05)
    assert T["W_res"][0] < 1e-6 and T["cor1"][0] < 1e-9 and T["c1"][0] < 1e-6
    X = fresh[0]  # the x̂± model fitted by hand (least squares in c+, c−)
    g = np.maximum(X @ wp, 0) - np.maximum(X @ wm, 0)
    A = np.c_[np.maximum(X @ xp, 0), -np.maximum(X @ xm, 0)]
    coef = np.linalg.lstsq(A, g, rcond=None)[0]
    assert T["cor1_x"][0] == pytest.approx(
        np.linalg.norm(A @ coef - g) / np.linalg.norm(g)
    )
    assert T["cor1_x"][0] > 1e-3


def test_cor1_over_widths_is_the_worst_width():
    seeds = [0, 1]
    draws, geo = E.orthant_draws(20, 3, seeds)
    fresh = E.fresh_points(30, 3, seeds)
    worst = E.cor1_over_widths(
        draws, geo, seeds, fresh, [2, 3], init_scale=1e-2, t_max=1e6
    )
    for i, (ds, k) in enumerate(zip(draws, seeds)):
        dist = []
        for p in (2, 3):
            net = models.TwoLayerNet(3, p, init="balanced", init_scale=1e-2, seed=k)
            end = flows.gradient_flow(net, ds, 1e6, n_snapshots=2).final
            f = np.maximum(fresh[i] @ end["W"].T, 0) @ end["a"]
            g = np.maximum(fresh[i] @ geo[i]["w"][0], 0) - np.maximum(
                fresh[i] @ geo[i]["w"][1], 0
            )
            c = f @ g / (f @ f)
            dist.append(np.linalg.norm(c * f - g) / np.linalg.norm(g))
        assert worst[i] == pytest.approx(max(dist), rel=1e-9)


def test_lemma2_one_sector_on_orthant_data_not_on_the_rival():
    seeds = [2, 3]
    draws, _ = E.orthant_draws(60, 4, seeds)
    l2, rival = E.lemma2(draws, seeds, 20)
    assert l2.shape == rival.shape == (2, 2)
    assert np.all(l2[:, 0] < 1e-6) and np.all(l2[:, 1] == 1)  # Lemma 2
    R = P.two_cluster_data(60, 4, seed=3)
    assert tuple(rival[1]) == P.lemma2_ascent(R.X, R.y, 20, 3)
    assert rival[:, 0].max() > 0.1  # several end points: not one sector


def test_residual_runs_ranks_and_first_layer_by_hand():
    seeds = [0, 1]
    draws, _ = E.orthant_draws(40, 3, seeds)
    recipe = dict(lr=0.2, epochs=40, batch_size=10)
    scales = {"small": 0.5, "large": 1.0}
    ends, starts = E.residual_runs(draws, seeds, 5, 3, scales, **recipe)
    net = models.ResidualNet(3, 5, 3, init_scale=0.5, seed=1)
    before = [np.array(W) for W in net.weight_matrices()]
    flows.sgd(net, draws[1], seed=1, n_snapshots=2, **recipe)
    for W, W_run in zip(net.weight_matrices(), ends["small"][1]):
        assert np.array_equal(W, W_run)
    for W0, W0_run in zip(before, starts["small"][1]):
        assert np.allclose(W0, W0_run)
    rank = E.residual_ranks(ends, starts)
    assert rank["small"].shape == (2, 2)  # seeds x hidden layers (W_3 left out)
    assert rank["large"][0, 1] == pytest.approx(_ratio(ends["large"][0][1]))
    assert rank["init"][1, 0] == pytest.approx(_ratio(starts["small"][1][0]))
    update = ends["small"][1][1] - starts["small"][1][1]
    assert rank["update"][1, 1] == pytest.approx(_ratio(update))
    F = E.residual_first_layer(ends, draws, 0.9)
    W1, ds = ends["large"][0][0], draws[0]
    wp, wm = P.max_margin_directions(ds.X, ds.y)
    cos = np.maximum(_cos_rows(W1, wp), _cos_rows(W1, wm))
    assert F["large"]["aligned"][0] == pytest.approx(np.median(cos), abs=1e-12)
    assert F["large"]["fraction"][0] == pytest.approx(np.mean(cos > 0.9))


def test_appd_layer7_and_w7_spectra_on_hand_made_runs():
    rng = np.random.default_rng(0)
    y = np.array([1.0, 1.0, -1.0, -1.0])

    def run():
        R = [rng.standard_normal((4, 6)) for _ in range(3)]
        reps = [[rng.standard_normal((4, 5)), *[None] * 6, np.maximum(r, 0)] for r in R]
        return dict(
            reps=reps,
            pre7=R,
            train=data.Dataset(reps[0][0], y, "toy", "toy"),
            W7=[np.diag([4.0, 2.0, 1.0, 0.5]) * (i + 1) for i in range(3)],
        )

    main, large = [run(), run()], [run(), run()]
    L7 = E.appd_layer7(main, large)
    A, B = main[1]["reps"][1][7] > 0, main[1]["reps"][2][7] > 0
    assert L7.frozen[1] == np.mean(A != B)
    R = large[0]["pre7"][1]  # before the ReLU: the largest cross-class cosine
    U = R / np.linalg.norm(R, axis=1, keepdims=True)
    assert L7.pre["large"]["cross_max"][0] == pytest.approx((U[:2] @ U[2:].T).max())
    assert list(L7.after) == ["init", "end", "long"]
    W7 = E.appd_w7_spectra({"main": main}, level=0.2, k=2)
    assert W7["main"]["nsig"][0] == 3  # ×2 at epoch E: 8, 4, 2 > 0.2 · 8; 1 is not
    assert W7["main"]["beyond"][0] == pytest.approx((1 + 0.25) / (16 + 4 + 1 + 0.25))


def test_appd_runs_refuse_a_run_that_did_not_fit():
    with pytest.raises(RuntimeError, match="misclassifies"):
        E.appd_runs(
            [0],
            init_scale=0.05,
            large_init_scale=1.0,
            epochs=1,
            long_epochs=1,
            channels=(2, 2),
            max_per_class=8,
            batch_size=8,
            lr=1e-6,
        )


def test_appd_images_are_every_image_of_the_two_digits(monkeypatch):
    monkeypatch.delenv(data.MNIST_ENV, raising=False)
    ds = E.appd_images((0, 1))
    assert ds.n == 1000 and (ds.y > 0).sum() == 500  # the sample: 500 per digit
    assert len({row.tobytes() for row in ds.X}) == ds.n  # train and test parts disjoint


def test_appd_cos_stats_by_hand():
    R = np.array([[1.0, 0.0], [1.0, 0.2], [0.0, 1.0], [-0.1, 1.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    stats, cross, same = E._cos_stats(R, y)
    U = R / np.linalg.norm(R, axis=1, keepdims=True)
    C = U @ U.T
    want_cross = [C[0, 2], C[0, 3], C[1, 2], C[1, 3]]
    assert np.allclose(np.sort(cross), np.sort(want_cross))
    assert np.allclose(np.sort(same), np.sort([C[0, 1], C[2, 3]]))
    assert stats["cross_max"] == pytest.approx(max(want_cross))
    assert stats["sep"] == pytest.approx(
        np.mean([C[0, 1], C[2, 3]]) - np.mean(want_cross)
    )


def test_appd_w7_rows_cluster_by_sign():
    rng = np.random.default_rng(0)
    plus, minus = rng.standard_normal(30), rng.standard_normal(30)
    W7 = np.vstack(
        [plus + 0.01 * rng.standard_normal(30) for _ in range(4)]
        + [minus + 0.01 * rng.standard_normal(30) for _ in range(3)]
    )
    W8 = np.array([1, 2, 1, 3, -1, -2, -1.0])
    rows = E._w7_rows(W7, W8)
    assert np.all(rows["cos_own"] > 0.99)
    assert np.all(rows["cos_own"] > rows["cos_other"])
    assert np.allclose(rows["norm"], np.linalg.norm(W7, axis=1))
    assert np.allclose(np.hypot(rows["x"], rows["y"]) <= rows["norm"] + 1e-9, True)


def test_appd_load_refuses_missing_runs(tmp_path, monkeypatch):
    frame = pd.DataFrame(
        dict(
            seed=[0],
            init_scale=[0.05],
            table=["along"],
            epoch=[0],
            layer=[""],
            key=["loss"],
            value=[0.7],
            code_key=["old"],
        )
    )
    path = tmp_path / "store.parquet"
    frame.to_parquet(path)
    monkeypatch.setattr(E, "APPD_STORE", path)
    with pytest.raises(RuntimeError, match="not stored"):
        E.appd_load([0, 1], scales=(0.05,))
    stored = E.appd_load([0], scales=(0.05,))
    assert stored.stale  # computed with other code than now
    assert stored.table("along")["loss"].tolist() == [0.7]


def test_closer_limit_rows_score_one():
    ds = data.orthant_data(40, 4, seed=0)
    rng = np.random.default_rng(1)
    W1 = rng.standard_normal((6, 4))
    L = E.closer_limit_rows(W1, ds.X, ds.y)
    stats = P.first_layer_statistics(L, ds.X, ds.y)
    assert stats["aligned"] == pytest.approx(1.0)
    assert np.allclose(np.linalg.norm(L, axis=1), np.linalg.norm(W1, axis=1))


def _layers_frame(gap_by_seed):
    """A stored-like layer table whose class gaps are ``gap_by_seed[seed]`` per
    layer of :data:`E.APPD_LAYERS` (cross median 0.1, same median 0.1 + gap)."""
    return pd.DataFrame(
        dict(seed=s, layer=layer, cross_median=0.1, same_median=0.1 + g)
        for s, gaps in gap_by_seed.items()
        for layer, g in zip(E.APPD_LAYERS, gaps)
    )


def _spearman_by_hand(x, y):
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return np.corrcoef(rx, ry)[0, 1]


def test_class_gaps_and_depth_trend_by_hand():
    up = [0.3, 0.1, 0.2, 0.25, 0.15, 0.4, 0.5, 0.6, 0.7]  # pixels, 1..6, 7pre, 7
    down = [0.3, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.04]
    gaps = E.class_gaps(_layers_frame({0: up, 1: down}))
    assert list(gaps.columns) == list(E.APPD_LAYERS)
    assert np.allclose(gaps.loc[0].to_numpy(), up) and np.allclose(gaps.loc[1], down)
    trend = E.depth_trend(gaps)
    hierarchy = up[1:8]  # layers 1-6 and 7pre
    assert trend[0] == pytest.approx(_spearman_by_hand(np.arange(7), hierarchy))
    assert 0 < trend[0] < 1 and trend[1] == pytest.approx(-1.0)
    with_pixels = E.depth_trend(gaps, ("0", *E.APPD_HIERARCHY))
    assert with_pixels[0] == pytest.approx(_spearman_by_hand(np.arange(8), up[:8]))


def test_appd_histograms_read_one_run_and_epoch():
    nb = len(E.APPD_BINS) - 1
    rows = [
        dict(
            seed=s,
            init_scale=0.05,
            table="hist",
            epoch=e,
            layer="7pre",
            key=f"{kind}_{i}",
            value=float(i + s + e + (kind == "same")),
        )
        for s in (0, 1)
        for e in (0, 50)
        for kind in ("cross", "same")
        for i in range(nb)
    ]
    stored = E.AppdStored(pd.DataFrame(rows), False, "k")
    cross, same = E.appd_histograms(stored, 1, 50)["7pre"]
    assert np.array_equal(cross, np.arange(nb) + 51.0)
    assert np.array_equal(same, np.arange(nb) + 52.0)


def test_appd_untrained_reads_the_network_as_the_runs_do(monkeypatch):
    import torch

    small = data.mnist_pair(0, 1, "train")
    keep = np.r_[np.flatnonzero(small.y > 0)[:6], np.flatnonzero(small.y < 0)[:6]]
    tiny = data.Dataset(small.X[keep], small.y[keep], "tiny", "test")
    monkeypatch.setattr(E, "appd_images", lambda digits: tiny)
    out = E.appd_untrained([3])
    net = models.ConvNet(E.APPD_RECIPE["channels"], fc_scale=0.05, seed=3).eval()
    with torch.no_grad():
        f7 = net.fc7(net.representations(torch.tensor(tiny.X, dtype=torch.float32))[6])
    U = f7.numpy().astype(float)
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    cross = (U @ U.T)[np.ix_(tiny.y > 0, tiny.y < 0)]
    row = out.layers.set_index("layer").loc["7pre"]
    assert row["cross_max"] == pytest.approx(cross.max(), rel=1e-6)
    assert set(out.layers["layer"]) == set(E.APPD_LAYERS)
    s = np.linalg.svd(net.fc7.weight.detach().numpy().astype(float), compute_uv=False)
    assert out.w7["beyond10"].iloc[0] == pytest.approx(
        (s[10:] ** 2).sum() / (s**2).sum()
    )
    assert out.w7["nsig"].iloc[0] == np.sum(s > 0.1 * s[0])
