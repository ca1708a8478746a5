"""Phuong & Lampert (2021): the pages' per-seed measurements (data geometry,
SGD-run and flow statistics, first-layer and App. D statistics), each checked
against an independent computation."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer import data
from twolayer.theory import phuong2021 as P


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_data_geometry_against_its_definitions():
    ds = data.orthant_data(60, 4, seed=2)
    g = P.data_geometry(ds.X, ds.y)
    for i, sign in enumerate((1, -1)):
        part = ds.X[ds.y == sign]
        x = _unit(part.sum(axis=0))  # x̂±: the normalised class sum
        assert np.allclose(g["x"][i], x)
        margins = part @ g["w"][i]  # w±: every margin >= 1, the support at 1
        assert margins.min() == pytest.approx(1.0, abs=1e-6)
        cos = x @ _unit(g["w"][i])
        assert g["early_cos"][i] == pytest.approx(cos, abs=1e-12)
        support = part[np.abs(margins - 1) < 1e-6]
        assert g["span"][i] == np.linalg.matrix_rank(support)
    assert g["orth"] is True  # the orthant data are orthogonally separable


def _snapshots():
    """Two balanced neurons on 2-D data: one stays in its sector, the other
    leaves it and its output weight changes sign."""
    X = np.array([[1.0, 0.2], [0.8, 0.6], [-1.0, -0.3], [-0.7, -0.7]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    W0 = np.array([[1.0, 0.0], [-1.0, 0.0]])
    a0 = np.array([1.0, -1.0])
    W1 = np.array([[2.0, 0.5], [1.0, -1.0]])
    a1 = np.array([np.linalg.norm(W1[0]), 0.5])
    return X, y, [{"W": W0, "a": a0}, {"W": W1, "a": a1}]


def test_sgd_statistics_end_init_and_along_the_run():
    X, y, snaps = _snapshots()
    w = P.max_margin_directions(X, y)
    x = P.early_phase_directions(X, y)
    s = P.sgd_statistics(snaps, X, y, w, x)
    end = P.network_statistics(snaps[-1]["W"], snaps[-1]["a"], X, y, w, x)
    assert {k: s[k] for k in end} == end
    init = P.network_statistics(snaps[0]["W"], snaps[0]["a"], X, y, w, x)
    assert s["init_aligned"] == init["aligned"]
    assert s["init_in_sector"] == init["in_sector"]
    assert s["flips"] == 1  # neuron 2: a from −1 to +0.5
    # neuron 2 starts in σ− (active on the negatives only), ends in neither sector
    assert s["exits"] == 1
    # Lemma B.1 covers (neuron 1, both positives) and (neuron 2, both negatives);
    # neuron 2 ends inactive on the negatives (W1[1]·x < 0): two pairs lost
    assert s["b1"] == 2


def test_flow_curves_stack_flow_statistics():
    X, y, snaps = _snapshots()
    w = P.max_margin_directions(X, y)
    x = P.early_phase_directions(X, y)
    curves = P.flow_curves(snaps, X, y, w, x)
    for i, snap in enumerate(snaps):
        one = P.flow_statistics(snap["W"], snap["a"], X, y, w, x)
        assert {k: v[i] for k, v in curves.items()} == one
    with pytest.raises(ValueError, match="snapshots"):
        P.flow_curves([], X, y, w, x)


def test_limit_tests_net_and_its_early_phase_rival():
    ds = data.orthant_data(40, 4, seed=3)
    wp, wm = P.max_margin_directions(ds.X, ds.y)
    xp, xm = P.early_phase_directions(ds.X, ds.y)
    # Lemma C.1's limit: u = ‖w+‖^(-1/2) along w+, z = ‖w−‖^(-1/2) along w−
    u, z = np.linalg.norm(wp) ** -0.5, np.linalg.norm(wm) ** -0.5
    W = np.stack([u * wp, z * wm])
    a = np.array([u * np.linalg.norm(wp), -z * np.linalg.norm(wm)])
    t = P.limit_tests(W, a, ds.X, ds.y, (wp, wm), (xp, xm))
    assert max(t["W_res"], t["a_res"], t["margin"]) < 1e-6 and t["kkt"] < 1e-4
    # the rival: the same norms turned to x̂±
    Wx = np.stack([np.linalg.norm(W[0]) * xp, np.linalg.norm(W[1]) * xm])
    fx = P.fit_two_directions(Wx, a, wp, wm)
    assert t["W_res_x"] == pytest.approx(fx.W_residual, rel=1e-9)
    assert t["a_res_x"] == pytest.approx(fx.a_residual, rel=1e-9)
    assert t["W_res_x"] > 0.01


def test_first_layer_statistics_rows_at_w_and_at_x():
    ds = data.orthant_data(60, 4, seed=4)
    wp, wm = P.max_margin_directions(ds.X, ds.y)
    xp, xm = P.early_phase_directions(ds.X, ds.y)
    at_w = P.first_layer_statistics(np.stack([wp, 2 * wm, 3 * wp]), ds.X, ds.y)
    assert at_w["aligned"] == pytest.approx(1.0) and at_w["fraction"] == 1.0
    assert at_w["closer"] == 1.0
    cos_x = min(_unit(xp) @ _unit(wp), _unit(xm) @ _unit(wm))
    assert at_w["x_cos"] == pytest.approx(cos_x, abs=1e-12)
    # rows at x̂±: cosine cos(x̂±, w±) each, none closer to w±
    at_x = P.first_layer_statistics(np.stack([xp, 2 * xm]), ds.X, ds.y)
    assert at_x["closer"] == 0.0
    cos = sorted([_unit(xp) @ _unit(wp), _unit(xm) @ _unit(wm)])
    assert at_x["aligned"] == pytest.approx(np.mean(cos), abs=1e-12)


def test_singular_value_counts_on_a_known_spectrum():
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((30, 30)))
    V, _ = np.linalg.qr(rng.standard_normal((20, 20)))
    s = np.array([10.0, 5.0, 2.0, 1.5, 0.5] + [0.1] * 15)
    W = U[:, :20] @ np.diag(s) @ V.T
    assert P.significant_singular_values(W, 0.1) == 4  # 10, 5, 2, 1.5 > 1
    assert P.energy_beyond(W, 10) == pytest.approx((s[10:] ** 2).sum() / (s**2).sum())
    assert P.energy_beyond(W, 0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="level"):
        P.significant_singular_values(W, 1.5)
    with pytest.raises(ValueError, match="k must"):
        P.energy_beyond(W, -1)


def test_layer7_statistics_and_the_quantile_table():
    R0 = np.array([[1.0, 1.0], [1.0, 0.9], [0.9, 1.0], [1.0, 0.8]])
    R7 = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 3.0, 0.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    s = P.layer7_statistics(R7, R0, y)
    assert s["cross_max"] == 0.0 and s["cross_median"] == 0.0  # disjoint units
    assert s["same_median"] == pytest.approx(1.0)
    assert (s["dead"], s["specific"], s["shared"]) == (1, 2, 0)

    # class separation: mean same-class minus mean cross-class cosine (by hand)
    def sep(R):
        U = R / np.linalg.norm(R, axis=1, keepdims=True)
        C = U @ U.T
        same = [C[i, j] for i in range(4) for j in range(4) if i < j and y[i] == y[j]]
        cross = [C[i, j] for i in range(4) for j in range(4) if y[i] != y[j]]
        return np.mean(same) - np.mean(cross)

    assert s["sep"] == pytest.approx(sep(R7) - sep(R0), abs=1e-12)
    rows = P.cosine_quantile_rows([R0, R7], y)
    assert [r["layer"] for r in rows] == [0, 1]
    assert rows[1]["cross max"] == 0.0 and rows[1]["same 50%"] == pytest.approx(1.0)


def test_hidden_rank_ratios_leave_out_the_last_matrix():
    rng = np.random.default_rng(1)
    rank2 = rng.standard_normal((8, 2)) @ rng.standard_normal((2, 6))
    full = rng.standard_normal((8, 8))
    row = rng.standard_normal((1, 8))
    r = P.hidden_rank_ratios([rank2, full, row])
    assert r.shape == (2,) and r[0] < 1e-12
    s = np.linalg.svd(full, compute_uv=False)
    assert r[1] == pytest.approx(s[2] / s[0], rel=1e-12)
    with pytest.raises(ValueError, match="Ws"):
        P.hidden_rank_ratios([row])


def test_appd_run_snapshots_representations_and_errors():
    import torch

    from twolayer import flows, models

    r = P.appd_run(
        0, init_scale=0.05, epochs=1, n_epochs=2, channels=(2, 2), max_per_class=8,
        batch_size=8, all_layers=True,
    )  # fmt: skip
    train, traj = r["train"], r["traj"]
    assert r["per_epoch"] == 2 and list(traj.steps) == [0, 2, 4]
    assert len(r["reps"][1]) == 8 and r["reps"][0][3] is None  # all layers at E only
    X = torch.tensor(train.X, dtype=torch.float32)
    net = flows.load_state(models.ConvNet((2, 2), seed=0), traj.snapshots[1])
    with torch.no_grad():
        f = net(X).numpy()
        R7 = net.representations(X)[7].numpy()
    assert r["errors"] == int((f * train.y <= 0).sum())  # at epoch E, not the end
    assert np.allclose(r["reps"][1][7], R7) and np.allclose(r["reps"][1][0], train.X)
    assert np.array_equal(r["W7"][2], traj.snapshots[2]["fc7.weight"])
    with pytest.raises(ValueError, match="epochs"):
        P.appd_run(0, init_scale=0.05, epochs=3, n_epochs=2)


def test_appd_run_layer7_before_the_relu():
    import torch

    from twolayer import flows, models

    r = P.appd_run(
        1, init_scale=0.05, epochs=1, n_epochs=2, channels=(2, 2), max_per_class=8,
        batch_size=8,
    )  # fmt: skip
    X = torch.tensor(r["train"].X, dtype=torch.float32)
    for k, s in enumerate(r["traj"].snapshots):  # f^7 = W7 ρ(f^6) + b7, by hand
        net = flows.load_state(models.ConvNet((2, 2), seed=1), s)
        with torch.no_grad():
            R6 = net.representations(X)[6].numpy().astype(float)
        f7 = R6 @ s["fc7.weight"].T.astype(float) + s["fc7.bias"].astype(float)
        assert np.allclose(r["pre7"][k], f7, atol=1e-5)
        assert np.allclose(np.maximum(r["pre7"][k], 0), r["reps"][k][7], atol=1e-6)
