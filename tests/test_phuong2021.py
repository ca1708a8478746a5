"""Phuong & Lampert (2021) checks on hand-made examples."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer import data
from twolayer.theory import phuong2021 as P
from twolayer.theory.margins import NotSeparableError

# three points in the plane: x0 positive; x1, x2 negative
X3 = np.array([[1.0, 0.0], [-1.0, 0.2], [0.0, -1.0]])
Y3 = np.array([1.0, -1.0, -1.0])


def test_is_orthogonally_separable():
    assert P.is_orthogonally_separable(
        [[1.0, 0.1], [1.0, -0.1], [-1.0, 0.0]], [1, 1, -1]
    )
    assert not P.is_orthogonally_separable([[1.0, 0.0], [0.0, 1.0]], [1, 1]), (
        "x0·x1 = 0 within a class"
    )
    assert not P.is_orthogonally_separable([[1.0, 0.0], [1.0, 1.0]], [1, -1]), (
        "x0·x1 > 0 across classes"
    )
    assert P.is_orthogonally_separable([[1.0, 0.0], [0.0, 1.0]], [1, -1]), (
        "x0·x1 = 0 across classes is allowed"
    )
    ds = data.orthant_data(20, 4, seed=0)
    assert P.is_orthogonally_separable(ds.X, ds.y)


def test_max_margin_directions_hand_made():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0], [-2.0, 0.0], [0.0, -2.0]])
    y = np.array([1, 1, 1, -1, -1])
    wp, wm = P.max_margin_directions(X, y)
    assert np.allclose(wp, [1, 1], atol=1e-6) and np.allclose(
        wm, [-0.5, -0.5], atol=1e-6
    )
    info = P.support_examples(X, y)
    assert info.positive.tolist() == [0, 1] and info.negative.tolist() == [3, 4]
    assert info.positive_spans and info.negative_spans
    info1 = P.support_examples(
        np.array([[1.0, 0.0], [2.0, 1.0], [-1.0, 0.0]]), [1, 1, -1]
    )
    assert info1.positive.tolist() == [0] and not info1.positive_spans


def test_max_margin_directions_not_separable_class():
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, -1.0]])
    with pytest.raises(NotSeparableError, match="the positive examples admit no w"):
        P.max_margin_directions(X, [1, 1, -1])


def test_extremal_sectors_hand_made():
    sp, sm = P.extremal_sectors(X3, Y3)
    # σ+: x0 own; x1·x0 = −1 < 0 → −1; x2·x0 = 0 → 0
    assert sp.tolist() == [1, -1, 0]
    # σ−: x1, x2 own; x0·x1 = −1 < 0 → −1
    assert sm.tolist() == [-1, 1, 1]


def test_in_sector_and_neuron_groups():
    W = np.array([[1.0, 0.0], [-1.0, -1.0], [-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    a = np.array([1.0, -1.0, -1.0, 1.0, -1.0])
    sp, sm = P.extremal_sectors(X3, Y3)
    assert P.in_sector(W, X3, sp).tolist() == [True, False, False, False, True]
    assert P.in_sector(W, X3, sm).tolist() == [False, True, False, False, False]
    g = P.neuron_groups(W, a, X3, Y3)
    assert g.plus.tolist() == [True, False, False, False, False]
    assert g.minus.tolist() == [False, True, False, False, False]
    assert g.dead.tolist() == [False, False, False, True, False]
    assert g.other.tolist() == [False, False, True, False, True], (
        "neuron 4 is in S_σ+ but has a < 0"
    )


def test_G_function():
    assert np.isclose(P.G_function([1.0, 0.0], X3, Y3), 0.5)
    assert np.isclose(P.G_function([5.0, 0.0], X3, Y3), 0.5), "defined on the sphere"
    assert np.isclose(P.G_function([0.0, -1.0], X3, Y3), -0.5)
    with pytest.raises(ValueError, match="w must be non-zero"):
        P.G_function([0.0, 0.0], X3, Y3)
    with pytest.raises(ValueError, match="w must have length 2"):
        P.G_function([1.0, 0.0, 0.0], X3, Y3)


def test_cosines_to_max_margin_and_balancedness():
    W = np.array([[1.0, 1.0], [0.0, -1.0]])
    c = P.cosines_to_max_margin(W, [2.0, -1.0], w_plus=[1.0, 1.0], w_minus=[-1.0, -1.0])
    assert np.allclose(c, [1.0, 1 / np.sqrt(2)])
    flips, gap = P.balancedness(W, [np.sqrt(2), -1.0], [1.0, 1.0])
    assert flips == 1 and gap < 1e-12
    assert P.balancedness(W, [1.0, 1.0], [1.0, 1.0]) == (0, 1.0)


def test_lemma_c1_is_a_kkt_point():
    ds = data.orthant_data(16, 3, seed=1)
    c1 = P.lemma_c1_check(ds.X, ds.y, u=[1.0, 0.0, 2.0], z=[0.0, 1.0, 0.0])
    assert np.isclose(c1.min_margin, 1.0, atol=1e-5)
    assert c1.slackness < 1e-5 and c1.stationarity < 1e-4
    assert np.all(c1.lambdas >= 0) and c1.W.shape == (3, 3)
    assert np.allclose(np.abs(c1.a), np.linalg.norm(c1.W, axis=1)), (
        "the limit is balanced"
    )


@pytest.mark.parametrize(
    "u, z, match",
    [
        ([1.0, 0.0], [0.0, 1.0, 0.0], "equal length"),
        ([1.0, -1.0], [0.0, 1.0], "non-negative"),
        ([1.0, 1.0], [0.0, 1.0], "u_j z_j = 0"),
        ([0.0, 0.0], [0.0, 1.0], "both be non-zero"),
    ],
)
def test_lemma_c1_bad_u_z(u, z, match):
    ds = data.orthant_data(10, 2, seed=0)
    with pytest.raises(ValueError, match=match):
        P.lemma_c1_check(ds.X, ds.y, u, z)


@pytest.mark.parametrize(
    "fn",
    [
        P.is_orthogonally_separable,
        P.max_margin_directions,
        P.extremal_sectors,
        P.support_examples,
    ],
)
def test_bad_input_names_the_argument(fn):
    with pytest.raises(ValueError, match=r"y must contain only labels -1 and \+1"):
        fn(X3, [1, 0, -1])
    with pytest.raises(ValueError, match="X must be 2-D"):
        fn(np.ones(3), Y3)
    with pytest.raises(ValueError, match="X must be non-empty"):
        fn(np.ones((0, 2)), [])


@pytest.mark.parametrize("fn", [P.max_margin_directions, P.extremal_sectors])
def test_one_class_only_is_an_error(fn):
    with pytest.raises(ValueError, match="y has no negative examples"):
        fn(np.array([[1.0, 0.0], [0.0, 1.0]]), [1, 1])


def test_G_ascent_finds_the_unique_extremal_directions():
    """Lemma 2 on orthant data: every start ends at the same point, in σ±, at x̂± (the
    maximiser of the linear piece ½⟨w, Σ_pos x_i⟩), with G = ½‖Σ_pos x_i‖."""
    import numpy as np

    from twolayer import data
    from twolayer.theory import phuong2021

    ds = data.orthant_data(200, 8, seed=3)
    sp, sm = phuong2021.extremal_sectors(ds.X, ds.y)
    xp, xm = phuong2021.early_phase_directions(ds.X, ds.y)
    for sign, sigma, target in ((1, sp, xp), (-1, sm, xm)):
        W0, W = phuong2021.G_ascent(ds.X, ds.y, starts=50, sign=sign, steps=300, seed=0)
        assert phuong2021.in_sector(W, ds.X, sigma).all()
        assert not phuong2021.in_sector(W0, ds.X, sigma).all()
        assert np.allclose(W @ target / np.linalg.norm(target), 1.0, atol=1e-9)
    best = phuong2021.G_function(xp, ds.X, ds.y)
    assert np.isclose(best, 0.5 * np.linalg.norm(ds.X[ds.y > 0].sum(0)))
    import pytest

    with pytest.raises(ValueError, match="sign"):
        phuong2021.G_ascent(ds.X, ds.y, sign=0)


# -- the chapter's measurements (fig1_two_layer, fig2_residual) -----------------------
WP, WM = np.array([1.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])


def test_fit_two_directions_exact_limit_and_rival():
    u, z = np.array([0.5, 0.0, 0.3]), np.array([0.0, 0.4, 0.0])
    W = np.outer(u, WP) + np.outer(z, WM)
    a = u * np.linalg.norm(WP) - z * np.linalg.norm(WM)
    fit = P.fit_two_directions(W, a, WP, WM)
    assert fit.W_residual < 1e-12 and fit.a_residual < 1e-12
    assert np.all(fit.u * fit.z == 0) and np.all(fit.u >= 0) and np.all(fit.z >= 0)
    # one neuron tilted by angle 0.1: residual is its sine times its share of ‖W‖_F
    W2 = W.copy()
    W2[0] = 0.5 * np.array([np.cos(0.1), 0.0, np.sin(0.1)])
    fit2 = P.fit_two_directions(W2, a, WP, WM)
    expected = 0.5 * np.sin(0.1) / np.linalg.norm(W2)
    assert abs(fit2.W_residual - expected) < 1e-12


def test_geodesic_progress_on_and_off_the_path():
    x = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    # x̂ = (1,1)/√2 is π/4 from w+ = e1; the middle row is a quarter of the way
    W = np.stack([x, [np.cos(3 * np.pi / 16), np.sin(3 * np.pi / 16), 0.0], WP])
    s = P.geodesic_progress(W, np.ones(3), WP, WM, x, -x)
    assert np.allclose(s, [0.0, 0.25, 1.0])
    off = P.geodesic_progress([[1.0, 1.0, 1.0]], [1.0], WP, WM, x, -x)
    assert 0 <= off[0] <= 0.5
    closer = P.closer_to_limit(W, np.ones(3), WP, WM, x, -x)
    assert closer.tolist() == [False, False, True]


def test_fraction_aligned_counts_all_neurons():
    W = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    a = np.array([1.0, -1.0, 1.0])
    assert P.fraction_aligned(W, a, WP, WM) == 2 / 3
    assert P.fraction_aligned_closest(W, WP, WM) == 2 / 3


def test_balanced_net_at_keeps_norms_and_signs():
    W = np.array([[3.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    a = np.array([1.0, -5.0])
    Wx, ax = P.balanced_net_at(W, a, WP, WM)
    assert np.allclose(Wx, [[3, 0, 0], [0, 2, 0]]) and np.allclose(ax, [3, -2])
    assert P.imbalance(Wx, ax) == 0.0 and P.imbalance(W, a) == 1.5  # |−5| vs 2


def test_settling_time_is_the_last_upward_crossing_in_log_time():
    t = np.array([1.0, 10.0, 100.0, 1000.0])
    assert P.settling_time(t, [0.0, 0.0, 1.0, 1.0], 0.5) == pytest.approx(10**1.5)
    assert P.settling_time(t, [0.6, 0.0, 0.0, 1.0], 0.5) == pytest.approx(10**2.5)
    assert P.settling_time(t, [0.6, 0.7, 0.8, 0.9], 0.5) == 1.0
    assert P.settling_time(t, [0.0, 0.1, 0.2, 0.3], 0.5) == float("inf")
    with pytest.raises(ValueError, match="increasing"):
        P.settling_time(t[::-1], [0, 0, 1, 1], 0.5)


def test_sector_exits_and_lemma_b1_on_hand_made_snapshots():
    X = np.array([[1.0, 0.0], [-1.0, 0.0]])
    y = np.array([1.0, -1.0])
    inside = {"W": np.array([[1.0, 0.0]]), "a": np.array([1.0])}
    outside = {"W": np.array([[0.0, 1.0]]), "a": np.array([1.0])}
    assert P.sector_exits([inside, inside], X, y) == 0
    assert P.sector_exits([inside, outside, inside], X, y) == 1
    lost, kept = P.lemma_b1_violations(
        inside["W"], inside["a"], [inside, outside], X, y
    )
    assert (lost, kept) == (1, 1)


def test_support_ranks_and_two_cluster_data():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0], [-2.0, 0.0], [0.0, -2.0]])
    assert P.support_ranks(X, [1, 1, 1, -1, -1]) == (2, 2)
    ds = P.two_cluster_data(300, 5, seed=1)
    assert ds.X.shape == (300, 5) and set(np.unique(ds.y)) == {-1.0, 1.0}
    assert not P.is_orthogonally_separable(ds.X, ds.y)


def test_representation_measures():
    R = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    q = P.cosine_quantiles(R, y, q=(0.0, 1.0))
    assert q["cross_max"] == pytest.approx(0.5)  # rows 1 and 3 share unit 1
    assert q["cross"][0] == 0.0 and q["same"][1] == pytest.approx(1 / np.sqrt(2))
    assert P.unit_counts(R, y) == dict(dead=0, specific=2, shared=1)
    assert P.unit_counts(R[[0, 2]], y[[0, 2]]) == dict(dead=1, specific=2, shared=0)
    assert P.pattern_change(R, R) == 0.0 and P.pattern_change(R, 1 - R) == 1.0


def test_cor1_limit_function_and_fitted_distances():
    """Cor. 1's limit ρ(w+·x) − ρ(w−·x); the scale-fitted distance is 0 for any
    positive multiple and 1 for an orthogonal shape; the two-ray rival fitted
    by least squares recovers a function of its own form exactly."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    wp, wm = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])
    g = P.limit_function(X, wp, wm)
    by_hand = [max(x[0], 0) - max(x[1], 0) for x in X]
    assert np.allclose(g, by_hand)
    assert P.scaled_distance(3.5 * g, g) < 1e-12
    f = np.ones(4) * [1, -1, 1, -1]
    assert abs(P.scaled_distance(f, np.ones(4)) - 1.0) < 1e-12
    assert P.best_two_ray_distance(wp, wm, X, 2 * g) < 1e-12
    assert P.best_two_ray_distance(np.array([0, 0, 1.0]), wm, X, g) > 0.1


def test_relative_progress_reads_early_phase_and_limit():
    early = np.array([0.95, 0.8])
    assert np.allclose(P.relative_progress(early, early), 0)
    assert np.allclose(P.relative_progress([1.0, 1.0], early), 1)
    assert np.allclose(P.relative_progress([0.9625, 0.85], early), [0.25, 0.25])
    with pytest.raises(ValueError, match="early_level"):
        P.relative_progress(0.5, 1.0)


def test_limit_network_scores_one():
    rng = np.random.default_rng(0)
    W, a = rng.standard_normal((6, 3)), np.array([1, -1, 1, -1, 1, -1.0])
    wp, wm = np.array([1.0, 2.0, 0.0]), np.array([0.0, -1.0, 3.0])
    L = P.limit_network(W, a, wp, wm)
    assert np.allclose(np.linalg.norm(L, axis=1), np.linalg.norm(W, axis=1))
    assert np.allclose(P.cosines_to_max_margin(L, a, wp, wm), 1)
    assert not np.allclose(P.cosines_to_max_margin(W, a, wp, wm), 1)
