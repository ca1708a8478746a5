"""Phuong & Lampert (2021): the Fig. 1 page's per-network statistics, checked
against independent computations."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer import data
from twolayer.theory import phuong2021 as P


def _limit_net():
    """Balanced neurons at w± (Theorem 1's limit) on a small orthant draw."""
    ds = data.orthant_data(40, 4, seed=3)
    wp, wm = P.max_margin_directions(ds.X, ds.y)
    xp, xm = P.early_phase_directions(ds.X, ds.y)
    norms = np.array([1.0, 2.0, 0.5, 1.5])
    dirs = np.stack([wp, wp, wm, wm])
    W = norms[:, None] * dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    a = np.array([1.0, 2.0, -0.5, -1.5])
    return ds, W, a, (wp, wm), (xp, xm)


def test_flow_statistics_at_the_limit_and_at_the_early_phase():
    ds, W, a, w, x = _limit_net()
    s = P.flow_statistics(W, a, ds.X, ds.y, w, x)
    assert s["gap"] < 1e-12 and s["closer"] == 1.0 and s["aligned"] == 1.0
    assert abs(s["min_progress"] - 1.0) < 1e-6
    sv = np.linalg.svd(W, compute_uv=False)
    assert abs(s["rank"] - sv[2] / sv[0]) < 1e-12  # rank 2: σ3 ≈ 0
    Wx, ax = P.balanced_net_at(W, a, *x)
    sx = P.flow_statistics(Wx, ax, ds.X, ds.y, w, x)
    cos = min(x[i] @ w[i] / np.linalg.norm(x[i]) / np.linalg.norm(w[i]) for i in (0, 1))
    assert abs(sx["gap"] - (1 - cos)) < 1e-12 and sx["closer"] == 0.0
    assert abs(sx["min_progress"]) < 1e-6


def test_flow_statistics_all_dead_is_an_error():
    ds, W, a, w, x = _limit_net()
    X = np.abs(ds.X)  # every neuron at −|.|: no point activates it
    with pytest.raises(ValueError, match="dead"):
        P.flow_statistics(-np.abs(W), a, X, np.sign(ds.y), w, x)


def test_log_time_rate_recovers_the_exponent():
    t = np.logspace(10, 300, 30)
    assert abs(P.log_time_rate(t, 3.0 * np.log(t) ** -1.7, 1e50) - 1.7) < 1e-9
    with pytest.raises(ValueError):
        P.log_time_rate(t, np.log(t) ** -1.0, 1.0)


def test_construction_residual_is_a_kkt_point():
    ds, W, a, _, _ = _limit_net()
    assert P.construction_residual(W, a, ds.X, ds.y) < 1e-4


def test_lemma2_ascent_one_end_point_on_orthogonally_separable_data():
    ds = data.orthant_data(60, 4, seed=2)
    spread, inside = P.lemma2_ascent(ds.X, ds.y, starts=20, seed=1)
    assert spread <= 1e-6 and inside == 1.0
    # the maximiser on the sector is x̂+ (G is linear there)
    _, ends = P.G_ascent(ds.X, ds.y, starts=5, sign=1, seed=1)
    xp, _ = P.early_phase_directions(ds.X, ds.y)
    assert np.allclose(ends, xp / np.linalg.norm(xp), atol=1e-6)
    rival = P.two_cluster_data(150, 6, seed=1)
    r_spread, r_agree = P.lemma2_ascent(rival.X, rival.y, starts=20, seed=1)
    assert r_spread > 0.1 and r_agree < 1
    # the agreement is the share of examples whose sign pattern matches σ±
    sp, sm = P.extremal_sectors(rival.X, rival.y)
    _, ends = P.G_ascent(rival.X, rival.y, starts=20, sign=1, seed=1)
    share = [np.mean(np.sign(rival.X @ e) == sp) for e in ends]
    assert r_agree <= min(share) + 1e-12


def test_network_statistics_at_the_limit_and_one_neuron_off():
    ds, W, a, w, x = _limit_net()
    s = P.network_statistics(W, a, ds.X, ds.y, w, x)
    assert abs(s["aligned"] - 1) < 1e-12 and s["closer"] == 1.0 and s["dead"] == 0
    assert abs(s["progress"] - 1) < 1e-6 and s["in_sector"] == 1.0
    assert s["imbalance"] < 1e-12
    # two of four neurons moved to x̂±: the median progress is halfway, closer ½
    Wx, ax = P.balanced_net_at(W, a, *x)
    W2, a2 = W.copy(), a.copy()
    W2[[0, 2]], a2[[0, 2]] = Wx[[0, 2]], ax[[0, 2]]
    s2 = P.network_statistics(W2, a2, ds.X, ds.y, w, x)
    assert abs(s2["progress"] - 0.5) < 1e-6 and s2["closer"] == 0.5
    cos = np.sort([1, 1, *(x[i] @ w[i] / np.linalg.norm(w[i]) for i in (0, 1))])
    assert abs(s2["aligned"] - np.median(cos)) < 1e-9


def test_limit_statistics_vanish_at_lemma_c1s_limit():
    ds = data.orthant_data(40, 4, seed=3)
    w = P.max_margin_directions(ds.X, ds.y)
    c1 = P.lemma_c1_check(ds.X, ds.y, u=[1.0, 0.0, 2.0], z=[0.0, 1.0, 0.0])
    s = P.limit_statistics(c1.W, c1.a, ds.X, ds.y, w)
    assert max(s.values()) < 1e-4
    # the margin by hand: min_i y_i f(x_i) / ‖θ‖² against 1/(2(‖w+‖ + ‖w−‖))
    q = ds.y * (np.maximum(ds.X @ c1.W.T, 0) @ c1.a)
    gamma = q.min() / ((c1.W**2).sum() + (c1.a**2).sum())
    star = 1 / (2 * (np.linalg.norm(w[0]) + np.linalg.norm(w[1])))
    assert abs(s["margin"] - abs(gamma / star - 1)) < 1e-12
