"""Tests of twolayer.theory.lyu2021 (Lyu, Li, Wang & Arora, NeurIPS 2021)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from twolayer import models
from twolayer.data import symmetric_augment, uniform_disk_linear
from twolayer.models import TwoLayerNet, two_layer_output
from twolayer.theory import lyu2021 as L
from twolayer.theory.margins import NotSeparableError, margin_gradients


@pytest.fixture(scope="module")
def sym():
    return symmetric_augment(
        uniform_disk_linear(8, margin=0.1, w_star=np.array([1.0, 0.6]), seed=1)
    )


def test_symmetric_augment_is_reexported_not_copied():
    assert L.symmetric_augment is symmetric_augment


def test_is_symmetric(sym):
    assert L.is_symmetric(sym.X, sym.y)
    assert not L.is_symmetric(sym.X[:-1], sym.y[:-1])
    y = sym.y.copy()
    y[0] = -y[0]
    assert not L.is_symmetric(sym.X, y)


def test_mu_lambda0_and_eigenvector(sym):
    alpha = 0.3
    mt = L.mu_tilde(sym.X, sym.y, alpha)
    assert np.allclose(mt, (1 + alpha) / 4 * np.mean(sym.y[:, None] * sym.X, axis=0))
    d = sym.d
    M = np.zeros((d + 1, d + 1))
    M[:d, d] = mt
    M[d, :d] = mt
    assert np.isclose(np.linalg.eigvalsh(M).max(), L.lambda0(sym.X, sym.y, alpha))
    # on symmetric data G(w) = (1/2n) Σ y_i φ(w·x_i) is linear: G(w) = <w, μ̃> (§5.1)
    w = np.array([0.3, -1.2])
    G = 0.5 * np.mean(sym.y * np.where(sym.X @ w > 0, sym.X @ w, alpha * sym.X @ w))
    assert np.isclose(G, w @ mt)


def test_hinted_dataset(sym):
    ws = L.max_margin_separator(sym.X, sym.y)
    wp = np.array([-ws[1], ws[0]])
    X2, y2 = L.hinted_dataset(sym.X, sym.y, H=5.0, K=3.0, eps=0.01, w_perp=wp)
    assert X2.shape == (sym.n + 3, 2) and np.all(y2[-3:] == 1)
    assert np.allclose(X2[-3], 5 * ws) and np.allclose(X2[-2] + X2[-1], 0.02 * ws)
    assert np.allclose(X2[: sym.n], sym.X)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(H=-1.0), "H must be > 0"),
        (dict(K=0.0), "K must be > 0"),
        (dict(eps=-0.1), "eps must be > 0"),
        (dict(w_perp=np.array([2.0, 0.0])), "unit vector"),
        (dict(w_perp=np.array([1.0])), "w_perp must have length"),
    ],
)
def test_hinted_dataset_bad_input(sym, kw, match):
    ws = L.max_margin_separator(sym.X, sym.y)
    args = dict(H=5.0, K=3.0, eps=0.01, w_perp=np.array([-ws[1], ws[0]]))
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        L.hinted_dataset(sym.X, sym.y, **args)


def test_hinted_dataset_rejects_non_perpendicular_and_non_separable(sym):
    ws = L.max_margin_separator(sym.X, sym.y)
    with pytest.raises(ValueError, match="perpendicular"):
        L.hinted_dataset(sym.X, sym.y, 5.0, 3.0, 0.01, ws)
    X = np.array([[1.0, 0.0], [2.0, 0.0]])
    with pytest.raises(NotSeparableError):
        L.hinted_dataset(X, np.array([1.0, -1.0]), 5.0, 3.0, 0.01, np.array([0.0, 1.0]))


def test_phase1_time_and_decomposition_exact_on_the_top_eigenvector():
    rng = np.random.default_rng(0)
    Wb, ab = rng.standard_normal((5, 3)), rng.standard_normal(5)
    mu = np.array([0.0, 2.0, 0.0])
    T = L.phase1_time(0.1, 1e-4, Wb, ab, 0.5)
    assert np.isclose(T, np.log(0.1 / (np.sqrt(5) * 1e-4 * L.m_norm(Wb, ab))) / 0.5)
    dec = L.phase1_decomposition(Wb * 0, ab * 0, Wb, ab, mu, r=0.1)
    b = (Wb[:, 1] + ab) / (2 * np.sqrt(5) * L.m_norm(Wb, ab))
    assert np.allclose(dec.b, b)
    W = 0.1 * b[:, None] * np.array([0, 1.0, 0])
    dec2 = L.phase1_decomposition(W, 0.1 * b, Wb, ab, mu, r=0.1)
    assert dec2.residual_m_norm < 1e-15


def test_phase1_bad_input():
    with pytest.raises(ValueError, match="sigma must be > 0"):
        L.phase1_time(0.1, 0.0, np.ones((2, 2)), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="a must have length 2"):
        L.m_norm(np.ones((2, 2)), np.ones(3))
    with pytest.raises(ValueError, match="mu_vec must be non-zero"):
        L.phase1_decomposition(
            np.ones((2, 2)), np.ones(2), np.ones((2, 2)), np.ones(2), np.zeros(2), 0.1
        )


def _two_neuron(data):
    W_hat, a_hat = data
    return W_hat, np.array([abs(a_hat[0]) + 0.1, -abs(a_hat[1]) - 0.1])


finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(
    W_hat=arrays(np.float64, (2, 3), elements=finite),
    a_hat=arrays(np.float64, 2, elements=finite),
    b=arrays(
        np.float64,
        st.integers(2, 7),
        elements=st.floats(0.05, 3) | st.floats(-3, -0.05),
    ),
    X=arrays(np.float64, (6, 3), elements=finite),
    alpha=st.floats(0, 0.99),
)
def test_embedding_preserves_the_function(W_hat, a_hat, b, X, alpha):
    """§5.2: f_{π_b(θ̂)} = f_θ̂ for every good embedding vector b."""
    b[0], b[-1] = abs(b[0]), -abs(b[-1])
    W_hat, a_hat = _two_neuron((W_hat, a_hat))
    W, a = L.embed(W_hat, a_hat, b)
    assert W.shape == (len(b), 3)
    assert np.allclose(
        two_layer_output(W, a, X, alpha),
        two_layer_output(W_hat, a_hat, X, alpha),
        atol=1e-10,
    )
    W2, a2 = L.unembed(W, a, b)
    assert np.allclose(W2, W_hat) and np.allclose(a2, a_hat)
    # the embedding is norm preserving
    assert np.isclose((W**2).sum() + (a**2).sum(), (W_hat**2).sum() + (a_hat**2).sum())


def test_embedding_bad_input():
    W_hat, a_hat = np.ones((2, 2)), np.array([1.0, -1.0])
    with pytest.raises(ValueError, match="good embedding"):
        L.embed(W_hat, a_hat, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="good embedding"):
        L.embed(W_hat, a_hat, np.array([1.0, 0.0, -1.0]))
    with pytest.raises(ValueError, match="a_hat must satisfy"):
        L.embed(W_hat, np.array([-1.0, 1.0]), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="2 rows"):
        L.embed(np.ones((3, 2)), np.ones(3), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="b must have length 3"):
        L.unembed(np.ones((3, 2)), np.ones(3), np.array([1.0, -1.0]))


def test_gradient_flow_commutes_with_embedding(sym):
    """Lemma 5.3 on a GD run (GD commutes with π_b exactly, step by step)."""
    from twolayer.flows import train

    rng = np.random.default_rng(3)
    W_hat = rng.standard_normal((2, 2)) * 0.1
    a_hat = np.array([0.2, -0.15])
    b = np.array([0.5, -1.0, 2.0, -0.3])
    two = TwoLayerNet(2, 2, alpha=0.5)
    big = TwoLayerNet(2, 4, alpha=0.5)
    W, a = L.embed(W_hat, a_hat, b)
    with torch.no_grad():
        two.W.copy_(torch.tensor(W_hat)), two.a.copy_(torch.tensor(a_hat))
        big.W.copy_(torch.tensor(W)), big.a.copy_(torch.tensor(a))
    train(two, sym, lr=0.5, steps=200)
    train(big, sym, lr=0.5, steps=200)
    We, ae = L.embed(*two.weights(), b)
    Wb, ab = big.weights()
    assert np.abs(We - Wb).max() < 1e-12 and np.abs(ae - ab).max() < 1e-12


def test_margins_limits_and_theorem_4_2(sym):
    alpha = 0.5
    ws = L.max_margin_separator(sym.X, sym.y)
    W, a = L.two_neuron_limit(ws)
    assert np.isclose((W**2).sum() + (a**2).sum(), 1.0)
    f = two_layer_output(W, a, sym.X, alpha)
    assert np.allclose(f, L.symmetric_limit_function(sym.X, ws, alpha))
    g = L.normalized_margin(W, a, sym.X, sym.y, alpha)
    assert np.isclose(g, L.global_max_margin_symmetric(sym.X, sym.y, alpha))
    assert L.kkt_check(W, a, sym.X, sym.y, alpha).stationarity < 1e-8
    # one-neuron hinted limit ½φ(<w*, x>) has unit norm: w = w*/√2, a = 1/√2
    W1, a1 = ws[None, :] / np.sqrt(2), np.array([1 / np.sqrt(2)])
    assert np.allclose(
        two_layer_output(W1, a1, sym.X, alpha),
        L.hinted_limit_function(sym.X, ws, alpha),
    )


def test_global_max_margin_needs_symmetric_data():
    ds = uniform_disk_linear(10, margin=0.1, seed=0)
    with pytest.raises(ValueError, match="Assumption 4.1"):
        L.global_max_margin_symmetric(ds.X, ds.y, 0.5)


def test_search_max_margin_finds_theorem_4_2_value(sym):
    res = L.search_max_margin(sym.X, sym.y, 0.5, width=3, starts=10, seed=0)
    g_star = L.global_max_margin_symmetric(sym.X, sym.y, 0.5)
    assert res.best <= g_star * (
        1 + 1e-6
    )  # Thm 4.2: nothing beats the linear direction
    assert res.best >= g_star * (1 - 1e-4)  # and the search finds it
    assert np.isclose((sym.y * two_layer_output(res.W, res.a, sym.X, 0.5)).min(), 1.0)
    with pytest.raises(ValueError, match="width"):
        L.search_max_margin(sym.X, sym.y, 0.5, width=0)
    with pytest.raises(ValueError, match="alpha"):
        L.search_max_margin(sym.X, sym.y, 1.5, width=2)


def test_limit_error_is_relative_sup_distance_of_the_direction():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5]])
    w_star = np.array([0.6, 0.8])
    target = L.symmetric_limit_function(X, w_star, 0.5)
    W = np.array([[3.0, 4.0], [-3.0, -4.0]])  # f = 5·(φ(w*·x) − φ(−w*·x)) up to scale
    a = np.array([5.0, -5.0])
    err = L.limit_error(W, a, X, target, 0.5)
    Wn, an = L.unit_direction(W, a)
    expected = (
        np.abs(models.two_layer_output(Wn, an, X, 0.5) - target).max()
        / np.abs(target).max()
    )
    assert err == pytest.approx(expected) and err < 0.5
    assert L.limit_error(2 * W, 2 * a, X, target, 0.5) == pytest.approx(
        err
    )  # direction only
    with pytest.raises(ValueError, match="0 on every"):
        L.limit_error(W, a, X, np.zeros(3), 0.5)


def test_from_weights_builds_the_network_it_is_given():
    W, a = np.array([[1.0, -2.0], [0.5, 0.5], [0.0, 1.0]]), np.array([1.0, -1.0, 2.0])
    net = models.TwoLayerNet.from_weights(W, a, alpha=0.3)
    W2, a2 = net.weights()
    assert (
        np.array_equal(W2, W)
        and np.array_equal(a2, a)
        and net.alpha == 0.3
        and net.trains_second_layer
    )
    X = np.array([[1.0, 1.0], [-1.0, 2.0]])
    assert np.allclose(net.predict(X), models.two_layer_output(W, a, X, 0.3))
    with pytest.raises(ValueError, match="W must be"):
        models.TwoLayerNet.from_weights(W, a[:2])


def test_search_from_point_starts_and_polish_reach_kkt_points(sym):
    res = L.search_max_margin(
        sym.X, sym.y, 0.5, width=2, starts=5, seed=0, start="points"
    )
    assert res.n_converged >= 1
    W, a, gamma = L.polish_kkt(res.W, res.a, sym.X, sym.y, 0.5)
    assert gamma == pytest.approx(res.best, rel=1e-6)
    assert L.kkt_check(W, a, sym.X, sym.y, 0.5).stationarity < 1e-6
    with pytest.raises(ValueError, match="start must be"):
        L.search_max_margin(sym.X, sym.y, 0.5, width=2, start="uniform")
    with pytest.raises(ValueError, match="does not separate"):
        L.polish_kkt(-res.W, res.a, sym.X, sym.y, 0.5)


def test_boundary_nonlinearity_separates_a_line_from_a_wedge():
    line = L.boundary_nonlinearity(np.array([[1.0, 0.0]]), np.array([1.0]), 0.5)
    # f = relu-ish "V": positive only where both x1 > |x2| — a wedge, not a half-plane
    wedge = L.boundary_nonlinearity(
        np.array([[1.0, 1.0], [1.0, -1.0], [1.0, 0.0]]),
        np.array([-1.0, -1.0, 1.5]),
        0.0,
    )
    assert line <= 1 / 3600
    assert wedge >= 0.1


def test_phase2_start_embeds_to_the_phase1_direction():
    rng = np.random.default_rng(3)
    W_bar, a_bar = rng.standard_normal((6, 2)), rng.standard_normal(6)
    mu_vec = np.array([0.3, -0.4])
    b = L.embedding_vector(W_bar, a_bar, mu_vec)
    assert L.is_good_embedding(b)
    W_hat, a_hat = L.phase2_start(b, mu_vec)
    W, a = L.embed(W_hat, a_hat, b)
    # π_b̄(θ̂) is phase I's end point at r = 1: neuron k = b̄_k (μ̄, 1)
    np.testing.assert_allclose(W, b[:, None] * mu_vec / 0.5, atol=1e-12)
    np.testing.assert_allclose(a, b, atol=1e-12)
    dec = L.phase1_decomposition(W, a, W_bar, a_bar, mu_vec, r=1.0)
    assert dec.residual_m_norm < 1e-12


def test_axis_masses_are_the_two_halves_of_an_axis_net():
    W = np.array([[2.0, 0.0], [-1.0, 0.0], [3.0, 0.0], [0.0, 1.0]])
    a = np.array(
        [2.0, -1.0, -3.0, 1.0]
    )  # neuron 3: wrong sign for its side, neuron 4 off-axis
    c_plus, c_minus = L.axis_masses(W, a, [1.0, 0.0])
    assert (c_plus, c_minus) == (4.0, 1.0)
    Wb, ab = W[:2], a[:2]  # balanced, on the axis: f = c+ phi(x1) - c- phi(-x1)
    X = np.array([[0.7, 0.3], [-0.4, 2.0]])
    f = models.two_layer_output(Wb, ab, X, 0.5)
    expected = 4.0 * models.leaky_relu(X[:, 0], 0.5) - 1.0 * models.leaky_relu(
        -X[:, 0], 0.5
    )
    np.testing.assert_allclose(f, expected)
    assert (Wb**2).sum() + (ab**2).sum() == 2 * (c_plus + c_minus)
    with pytest.raises(ValueError, match="u"):
        L.axis_masses(W, a, [1.0, 0.0, 0.0])


def test_solve_kkt_returns_to_a_kkt_point_from_a_perturbed_one(sym):
    w_star = L.max_margin_separator(sym.X, sym.y)
    W, a = L.two_neuron_limit(w_star)  # the global max-margin direction (Thm 4.2)
    rng = np.random.default_rng(0)
    W_start, a_start = (
        W + 1e-3 * rng.standard_normal(W.shape),
        a + 1e-3 * rng.standard_normal(2),
    )
    assert L.kkt_check(W_start, a_start, sym.X, sym.y, 0.5).stationarity > 1e-4
    W_kkt, a_kkt = L.solve_kkt(W_start, a_start, sym.X, sym.y, 0.5)
    assert L.kkt_check(W_kkt, a_kkt, sym.X, sym.y, 0.5).stationarity < 1e-8
    ratio = L.normalized_margin(
        W_kkt, a_kkt, sym.X, sym.y, 0.5
    ) / L.global_max_margin_symmetric(sym.X, sym.y, 0.5)
    assert ratio == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="tight_tol"):
        L.solve_kkt(W, a, sym.X, sym.y, 0.5, tight_tol=0)


def test_the_kkt_systems_jacobian_is_the_derivative_of_its_residual():
    """solve_kkt's analytic Jacobian against central differences (off the kinks)."""
    rng = np.random.default_rng(0)
    m, d, n, alpha = 4, 3, 6, 0.3
    X, y = rng.standard_normal((n, d)), np.sign(rng.standard_normal(n))
    k = m * (d + 1)

    def residual(z):
        W, a = z[: m * d].reshape(m, d), z[m * d : k]
        G = margin_gradients(W, a, X, y, alpha)
        return np.r_[z[:k] - G.T @ z[k:], y * two_layer_output(W, a, X, alpha) - 1]

    z = np.r_[rng.standard_normal(k), rng.random(n)]
    eps = 1e-6
    numeric = np.array(
        [
            (residual(z + eps * e) - residual(z - eps * e)) / (2 * eps)
            for e in np.eye(len(z))
        ]
    ).T
    np.testing.assert_allclose(
        L.kkt_system_jacobian(X, y, alpha, m, d)(z), numeric, atol=1e-8
    )


def test_bent_kkt_example_is_a_clarke_kkt_point_with_a_bent_suboptimal_boundary():
    X, y, W, a = L.bent_kkt_example(2.4, 0.5)
    assert L.is_symmetric(X, y)
    np.testing.assert_allclose(y * two_layer_output(W, a, X, 0.5), 1.0, atol=1e-12)
    clarke = L.kkt_check(W, a, X, y, 0.5, kink_tol=1e-9)
    assert clarke.stationarity < 1e-6
    assert len(clarke.kinks) == 4  # 2 points on each positive neuron's kink
    assert np.all((clarke.kinks[:, 2] >= 0.5) & (clarke.kinks[:, 2] <= 1.0))
    assert L.kkt_check(W, a, X, y, 0.5).stationarity > 0.1  # φ'(0) := α is not enough
    ratio = L.normalized_margin(W, a, X, y, 0.5) / L.global_max_margin_symmetric(
        X, y, 0.5
    )
    assert ratio == pytest.approx(0.96, abs=1e-6)  # 1 / (4(λ_P + λ_N)) over (1+α)/4
    bend = np.arctan(0.5 / (2.4 * 3.5)) / np.pi  # the two wedges, fraction of the disk
    assert L.boundary_nonlinearity(W, a, 0.5) == pytest.approx(bend, abs=1e-3)
    # below h ≈ 2.1 the kink slopes would have to leave [α, 1]: not a KKT point
    X2, y2, W2, a2 = L.bent_kkt_example(2.0, 0.5)
    assert L.kkt_check(W2, a2, X2, y2, 0.5, kink_tol=1e-9).stationarity > 1e-3


def test_clarke_kkt_check_agrees_with_the_plain_one_off_the_kinks(sym):
    res = L.search_max_margin(sym.X, sym.y, 0.5, width=2, starts=3, seed=0)
    plain = L.kkt_check(res.W, res.a, sym.X, sym.y, 0.5)
    clarke = L.kkt_check(res.W, res.a, sym.X, sym.y, 0.5, kink_tol=1e-9)
    assert len(clarke.kinks) == 0
    assert clarke.stationarity == pytest.approx(plain.stationarity, abs=1e-6)
    with pytest.raises(ValueError, match="kink_tol"):
        L.kkt_check(res.W, res.a, sym.X, sym.y, 0.5, kink_tol=-1.0)


def test_first_passage_time_is_exact_for_exponential_growth():
    t = np.linspace(0, 10, 11)
    assert L.first_passage_time(t, 1e-3 * np.exp(0.7 * t), 0.1) == pytest.approx(
        np.log(100) / 0.7
    )
    with pytest.raises(ValueError, match="reach"):
        L.first_passage_time(t, np.ones(11), 2.0)


def test_phase1_decomposition_at_moves_r_to_the_snapshot():
    mu_vec = np.array([0.6, 0.8])
    W_bar, a_bar = np.array([[0.3, 0.1], [-0.2, 0.4]]), np.array([0.5, -0.25])
    b = L.embedding_vector(W_bar, a_bar, mu_vec)
    times = np.array(
        [0.0, 1.0, 2.0]
    )  # exactly on the top mode: θ(t) = r e^(t−T) b̄ (μ̄, 1)
    Ws = np.stack([np.exp(t - 1.1) * b[:, None] * mu_vec[None] for t in times])
    As = np.stack([np.exp(t - 1.1) * b for t in times])
    d = L.phase1_decomposition_at(
        times, Ws, As, W_bar, a_bar, mu_vec, T=1.1, r=1.0, rate=1.0
    )
    assert d.residual_m_norm < 1e-12 and d.r == pytest.approx(np.exp(-0.1))


def test_alignment_gap():
    u = np.array([1.0, 0.0])
    assert (
        L.alignment_gap(np.array([[2.0, 0.0], [-1.0, 0.0]]), np.array([1.0, -3.0]), u)
        == 0
    )
    assert L.alignment_gap(np.array([[0.0, 1.0]]), np.array([1.0]), u) == pytest.approx(
        1.0
    )


def test_neuron_angles_signed_and_sorted_by_mass():
    W = np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 1.0]])
    a = np.array([1.0, 3.0, -1.0])
    ang, mass = L.neuron_angles(W, a, np.array([1.0, 0.0]))
    assert np.allclose(ang, [0.0, 45.0]) and np.allclose(mass, [6.0, np.sqrt(2)])
    ang, _ = L.neuron_angles(
        np.array([[1.0, -1.0]]), np.array([1.0]), np.array([1.0, 0.0])
    )
    assert ang[0] == pytest.approx(-45.0)


def test_axis_tilt():
    e1 = np.array([1.0, 0.0])
    assert L.axis_tilt(np.array([[2.0, 0.0], [-1.0, 0.0]]), e1) == 0
    assert L.axis_tilt(np.array([[0.0, 1.0]]), e1) == pytest.approx(1.0)
    assert L.axis_tilt(np.array([[1.0, 1.0]]), e1) == pytest.approx(2**-0.5)


def test_phase1_argmax_is_mu_bar_on_symmetric_data(sym):
    mu_bar = L.mu(sym.X, sym.y) / np.linalg.norm(L.mu(sym.X, sym.y))
    w = L.phase1_argmax(sym.X, sym.y, 0.5, np.array([1.0, 0.0]))
    assert w @ mu_bar == pytest.approx(1.0, abs=1e-9)


def test_alignment_constant_scales_each_neurons_angle_by_its_b():
    # neuron 1 at angle 0.02 rad from +u with a > 0, neuron 2 at 0.01 rad from −u
    th = np.array([0.02, np.pi + 0.01])
    W = np.stack([np.cos(th), np.sin(th)], axis=1) * np.array([[3.0], [0.5]])
    a, b, r = np.array([1.0, -2.0]), np.array([0.1, -0.4]), 0.2
    chord = 2 * np.sin(np.array([0.02, 0.01]) / 2)  # independent: the chord's formula
    expected = max(chord * np.sqrt(2) * np.abs(b)) / r**2
    got = L.alignment_constant(W, a, np.array([2.0, 0.0]), b, r)
    assert got == pytest.approx(expected, rel=1e-12)
    # a neuron on the wrong side: chord 2 (angle π)
    assert L.alignment_constant(
        np.array([[-1.0, 0.0]]), np.array([1.0]), np.array([1.0, 0.0]), [1.0], 1.0
    ) == pytest.approx(2.0)


def test_direction_distance_and_a_start_at_a_given_distance():
    W, a = np.array([[3.0, 0.0]]), np.array([4.0])
    assert L.direction_distance(2 * W, 2 * a, W, a) == pytest.approx(0, abs=1e-15)
    # (0.6, 0, 0.8) against (0, 1, 0): orthogonal unit vectors, distance √2
    assert L.direction_distance(W, a, np.array([[0.0, 1.0]]), [0.0]) == pytest.approx(
        np.sqrt(2)
    )
    rng = np.random.default_rng(0)
    for eps in (0.01, 0.5, 2.0):
        W0, a0 = L.direction_at_distance(W, a, eps, rng)
        v = np.r_[W0.ravel(), a0]
        assert np.linalg.norm(v) == pytest.approx(1.0)
        assert np.linalg.norm(v - np.array([0.6, 0.0, 0.8])) == pytest.approx(eps)
    with pytest.raises(ValueError, match="at most 2"):
        L.direction_at_distance(W, a, 2.5, rng)


def test_axis_share_log10_time_inverts_the_late_phase_laws():
    from scipy.optimize import brentq

    alpha, x0, k, const = 0.5, 0.1, 3.0, 2.0
    c_plus = np.geomspace(50.0, 400.0, 6)
    c_minus = k * c_plus**alpha  # c− ∝ c+^α
    times = np.exp(x0 * (c_plus + alpha * c_minus) + const)
    got = L.axis_share_log10_time(c_plus, c_minus, times, x0, alpha, share=0.01)
    # independently: the c+ at which k c+^α / (c+ + k c+^α) = 1%, then ln t
    cp = brentq(lambda c: k * c**alpha / (c + k * c**alpha) - 0.01, 1.0, 1e12)
    expected = (x0 * (cp + alpha * k * cp**alpha) + const) / np.log(10)
    assert got == pytest.approx(expected, rel=1e-9)


def test_log_time_slope_recovers_a_power_of_log_time():
    t = np.geomspace(1e8, 1e40, 5)
    assert L.log_time_slope(t, 0.08 * np.log(t) ** -0.5) == pytest.approx(-0.5)
    assert L.log_time_slope(t, np.full(5, 0.3)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="times > 1"):
        L.log_time_slope([0.5, 10.0], [1.0, 1.0])


def test_per_snapshot_errors_and_margins_match_the_single_snapshot_functions(sym):
    rng = np.random.default_rng(3)
    snaps = [
        dict(W=rng.standard_normal((4, 2)), a=rng.standard_normal(4)) for _ in "ab"
    ]
    X_eval = rng.uniform(-1, 1, (50, 2))
    w = L.max_margin_separator(sym.X, sym.y)
    target = L.hinted_limit_function(X_eval, w, 0.5)
    errs = L.limit_errors(snaps, X_eval, target, 0.5)
    gammas = L.normalized_margins(snaps, sym.X, sym.y, 0.5)
    for s, e, g in zip(snaps, errs, gammas):
        W, a = s["W"], s["a"]
        n2 = (W**2).sum() + (a**2).sum()  # ‖θ‖², computed here directly
        f = np.maximum(X_eval @ W.T, 0.5 * X_eval @ W.T) @ a / n2
        assert e == pytest.approx(np.abs(f - target).max() / np.abs(target).max())
        q = sym.y * (np.maximum(sym.X @ W.T, 0.5 * sym.X @ W.T) @ a)
        assert g == pytest.approx(q.min() / n2)


def test_positive_neuron_paths_follow_each_neuron_and_final_split():
    def snap(deg, a):
        rad = np.radians(deg)
        return dict(W=np.c_[np.cos(rad), np.sin(rad)], a=np.asarray(a, float))

    a = [2.0, 1.0, -1.0, 1.0]  # neuron 2 is negative: left out
    snaps = [snap([0, 1, 90, 2], a), snap([0, 30, 90, -20], a), snap([0, 1, 9, 2], a)]
    snaps += [snap([0, 30, 90, -20], a), snap([0, 27, 90, -27], a)]
    ang, share = L.positive_neuron_paths(snaps, [1.0, 0.0])
    assert ang.shape == (5, 3)
    assert np.allclose(ang[1], [0, 30, -20]) and np.allclose(
        share[0], [0.5, 0.25, 0.25]
    )
    assert L.final_split(ang, share, 5.0) == 3  # apart at 1, together at 2, then apart
    assert L.final_split(ang[:3], share[:3], 5.0) is None
    assert L.final_split(ang, share, 5.0, share=0.3) is None  # only neuron 0 counts


def test_phase1_landscape_peaks_at_mu_bar_on_symmetric_data(sym):
    mu = L.mu(sym.X, sym.y)
    deg, G, peaks = L.phase1_landscape(sym.X, sym.y, 0.5, mu, n_angles=3600)
    assert deg.shape == G.shape == (3600,) and deg.min() >= -180
    assert len(peaks) == 1 and abs(peaks[0]) < 0.1  # G = <w, mu~>: top at mu_bar


def test_fitted_smoothed_margins_from_records_match_the_definition():
    rng = np.random.default_rng(0)
    q = rng.uniform(5, 9, (3, 4))  # margins of 4 points at 3 snapshots
    norms = np.array([2.0, 3.0, 4.0])
    mean_loss = np.log1p(np.exp(-q)).mean(axis=1)
    got = L.fitted_smoothed_margins(np.log(mean_loss), np.log(norms), 4)
    want = np.log(1 / np.expm1(np.log1p(np.exp(-q)).sum(axis=1))) / norms**2
    assert np.allclose(got, want)
    unfitted = L.fitted_smoothed_margins(np.log([1.0, mean_loss[0]]), [0.0, 1.0], 4)
    assert len(unfitted) == 1  # the first snapshot's sum loss is above log 2


def test_margin_with_side_neurons_adds_the_neurons(sym):
    w = L.max_margin_separator(sym.X, sym.y)
    p = np.array([-w[1], w[0]])
    base = L.margin_with_side_neurons(w, p, [], 0.01, sym.X, sym.y, 0.5)
    assert base == pytest.approx(
        L.normalized_margin(w[None] / 2**0.5, [2**-0.5], sym.X, sym.y, 0.5)
    )
    W = np.vstack([w / 2**0.5, 0.01 * p, -0.01 * p])
    pair = L.margin_with_side_neurons(w, p, [1, -1], 0.01, sym.X, sym.y, 0.5)
    assert pair == pytest.approx(
        L.normalized_margin(W, [2**-0.5, 0.01, 0.01], sym.X, sym.y, 0.5)
    )


def test_split_record_reads_the_two_moments():
    ang = np.array([[2.0, 3.2, 50.0], [-10.0, 14.0, 50.0], [-27.0, 27.5, 50.0]])
    share = np.array([[0.84, 0.16, 0.0], [0.8, 0.2, 0.0], [0.5, 0.5, 0.0]])
    rec = L.split_record(ang, share, [20.0, 100.0, 1e40], 0, 1, 2.86)
    assert rec["end of phase I"] == "2.0° (0.84), 3.2° (0.16)"
    assert rec["outside the band"] == pytest.approx(0.16)
    assert rec["split at t"] == 100.0 and rec["at t_max"].startswith("-27.0° (0.50)")
    assert np.isnan(L.split_record(ang, share, [1, 2, 3], 0, None, 2.86)["split at t"])


def test_axis_late_phase_reads_the_exponent_and_the_margin_law():
    alpha, x0 = 0.5, 0.1
    c_plus = np.array([1.0, 4.0, 9.0, 30.0])
    c_minus = 2.0 * c_plus**alpha  # the late-phase law c_- ∝ c_+^α
    snaps = [
        dict(
            W=np.array([[np.sqrt(p), 0.0], [-np.sqrt(m), 0.0]]),
            a=np.sqrt([p, m]) * [1, -1],
        )
        for p, m in zip(c_plus, c_minus)
    ]
    s = c_minus / (c_plus + c_minus)
    X = np.array([[1, 0], [x0, 0.6], [x0, -0.6], [-1, 0.2], [-1, -0.2]])
    y = np.array([1.0, 1, 1, -1, -1])  # Fig. 1 middle's set: margins measured
    margins = [L.normalized_margin(sn["W"], sn["a"], X, y, alpha) for sn in snaps]
    res = L.axis_late_phase(
        snaps,
        [1.0, 1e-25, 1e-30, 1e-40],
        [0.0, 1.0, 2.0, 3.0],
        margins,
        [1.0, 0.0],
        alpha,
        x0 / 2,
    )
    assert res.late.tolist() == [False, True, True, True]
    assert res.exponent == pytest.approx(alpha) and res.law_error < 1e-12
    assert np.allclose(res.masses, np.c_[c_plus, c_minus]) and np.allclose(res.share, s)


def test_symmetric_limit_gap_is_zero_at_the_theorem_4_2_net(sym):
    w = L.max_margin_separator(sym.X, sym.y)
    W, a = L.two_neuron_limit(w)  # ½(w*, −w*, 1, −1) computes (1+α)/4 <w*, x>
    X_eval = np.random.default_rng(0).uniform(-1, 1, (100, 2))
    err, ratio = L.symmetric_limit_gap(W, a, sym.X, sym.y, X_eval, w, 0.5)
    assert err < 1e-12 and ratio == pytest.approx(1.0)
    err1, ratio1 = L.symmetric_limit_gap(
        w[None] / 2**0.5, [2**-0.5], sym.X, sym.y, X_eval, w, 0.5
    )
    assert ratio1 == pytest.approx(2 * 0.5 / 1.5)  # one neuron: 2α/(1+α) of γ*
    assert err1 == pytest.approx((1 - 0.5) / (1 + 0.5), rel=0.05)


def test_search_limit_errors_reads_best_and_worst_start(sym):
    w = L.max_margin_separator(sym.X, sym.y)
    X_eval = np.random.default_rng(0).uniform(-1, 1, (200, 2))
    target = L.symmetric_limit_function(X_eval, w, 0.5)
    search = L.search_max_margin(sym.X, sym.y, 0.5, width=4, starts=6, seed=0)
    best, worst = L.search_limit_errors(search, X_eval, target, 0.5)
    assert best < 1e-4 and worst > best


def test_phase1_time_scale_is_one_for_growth_at_lambda0():
    lam0, t = 0.3, np.linspace(0, 200, 2001)
    sigmas = [1e-4, 1e-6, 1e-8]
    sweeps = [(t, 2.0 * s * np.exp(lam0 * t)) for s in sigmas]
    t_r, rate = L.phase1_time_scale(sweeps, sigmas, 0.1, lam0)
    assert np.allclose(t_r, np.log(0.1 / (2.0 * np.asarray(sigmas))) / lam0, atol=1e-6)
    assert rate == pytest.approx(1.0, abs=1e-6)


def test_lemma52_statistics_on_a_run_that_is_pure_top_mode(sym):
    rng = np.random.default_rng(0)
    W_bar, a_bar = rng.standard_normal((6, 2)), rng.standard_normal(6)
    rs = [0.4, 0.2, 0.1]
    setting = L.phase1_setting(sym.X, sym.y, W_bar, a_bar, 0.5, 0.01, rs)
    mu = L.mu(sym.X, sym.y)
    b, mbar = L.embedding_vector(W_bar, a_bar, mu), mu / np.linalg.norm(mu)
    times = np.array(sorted(v for (r, c), v in setting["T1"].items() if c == 1))
    r_at = np.array(sorted(rs))  # T1 grows with r: the run is r b̄ (μ̄, 1) + r³ noise
    noise = 1e-3 * rng.standard_normal((6, 2))  # the same Δw_k/r³ at every r
    Ws = (
        r_at[:, None, None] * b[None, :, None] * mbar + noise * r_at[:, None, None] ** 3
    )
    As = r_at[:, None] * b[None, :]
    st = L.lemma52_statistics(
        times,
        Ws,
        As,
        W_bar,
        a_bar,
        sym.X,
        sym.y,
        setting["T1"],
        rs,
        0.1,
        setting["lam_eff"],
    )
    assert st["slope"] == pytest.approx(3.0)  # residual exactly of order r³
    assert st["determined"] == 6 and st["align"] < st["align_init"]
    assert setting["sigma_main"] == pytest.approx(
        1e-3 * 0.1**3 / (np.sqrt(6) * L.m_norm(W_bar, a_bar))
    )


def test_kkt_candidates_rows_and_bent_residual(sym):
    search = L.search_max_margin(sym.X, sym.y, 0.5, width=4, starts=6, seed=0)
    cands = L.kkt_candidates(sym.X, sym.y, 0.5, search)
    assert cands.shape[1] == 2 and cands[:, 0].max() == pytest.approx(1.0)
    w = L.max_margin_separator(sym.X, sym.y)
    row = L.kkt_row(w[None] / 2**0.5, [2**-0.5], sym.X, sym.y, 0.5, 1.0, "one neuron")
    assert row["start"] == "one neuron" and row["nonlinearity"] < 1e-3
    assert row["stationarity"] < 1e-6  # ½φ(<w*,x>) is a KKT point on symmetric data
    assert L.kkt_row(-w[None], [1.0], sym.X, sym.y, 0.5, 1.0, "wrong") is None
    assert L.bent_kkt_residual(2.4, 0.5) < 1e-6 < L.bent_kkt_residual(2.0, 0.5)


# ---- the runs the Lyu pages call (moved out of the notebooks, issue 34) ----


def test_gradient_flow_from_init_reflects_the_named_neurons(sym):
    """The start of each reflection rule against the draw reflected by hand, and
    the unreflected run against flows.gradient_flow of the drawn net itself."""
    from twolayer import flows

    kw = dict(width=6, alpha=0.5, init_scale=0.1, init_seed=3, t_max=1e-3)
    drawn = TwoLayerNet(2, 6, 0.5, "balanced", init_scale=0.1, seed=3)
    W0, a0 = drawn.weights()
    direct = flows.gradient_flow(drawn, sym, 1e-3, n_snapshots=3)
    run = L.gradient_flow_from_init(sym, init="balanced", n_snapshots=3, **kw)
    np.testing.assert_allclose(run.final["W"], direct.final["W"], rtol=1e-12)
    start = L.gradient_flow_from_init(
        sym, init="balanced", reflect="a_positive", n_snapshots=3, **kw
    ).snapshots[0]
    flip = np.where(a0 > 0, -1.0, 1.0)
    np.testing.assert_allclose(start["W"], W0 * flip[:, None], atol=1e-15)
    assert (start["a"] <= 0).all()
    start = L.gradient_flow_from_init(
        sym, reflect="b_negative", n_snapshots=3, **kw
    ).snapshots[0]
    mu_hand = (sym.y[:, None] * sym.X).mean(axis=0)  # μ = (1/n) Σ y_i x_i
    assert (start["W"] @ mu_hand + start["a"] > 0).all()
    with pytest.raises(ValueError, match="reflect"):
        L.gradient_flow_from_init(sym, reflect="all", **kw)


def test_hinted_limit_statistics_in_units_of_half_eps(sym):
    """A run ending on a net gives its limit error, and its margin by hand
    (min_i y_i f(x_i) / ‖θ‖², 2-homogeneous) over ε/2."""
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    W, a = rng.standard_normal((3, 2)), rng.standard_normal(3)
    log_loss = np.log(np.exp(-np.linspace(1, 30, 40)) * 16)
    run = SimpleNamespace(
        snapshots=[dict(W=W, a=a)],
        records=dict(log_loss=log_loss, log_scale=np.linspace(0, 5, 40)),
    )
    grid, eps = rng.standard_normal((50, 2)), 0.2
    target = 0.5 * two_layer_output(W, a, grid, 0.5)
    err, ratio, smooth = L.hinted_limit_statistics([run], sym, grid, target, 0.5, eps)
    by_hand = (sym.y * two_layer_output(W, a, sym.X, 0.5)).min() / (
        np.sum(W**2) + np.sum(a**2)
    )
    assert ratio[0] == pytest.approx(by_hand / (eps / 2), rel=1e-12)
    assert err[0] == pytest.approx(L.limit_error(W, a, grid, target, 0.5), rel=1e-12)
    assert len(smooth) == 1
    with pytest.raises(ValueError, match="eps"):
        L.hinted_limit_statistics([run], sym, grid, target, 0.5, 0.0)


def test_lemma52_run_statistics_rate_on_an_exact_exponential_growth(sym):
    """Runs whose ‖θ‖_M grows exactly as σ e^{λ0 t} have rate 1 and
    t_r = ln(r/σ)/λ0; the rest is lemma52_statistics of the main run."""
    from types import SimpleNamespace

    W_bar, a_bar = TwoLayerNet(2, 4, 0.5, "gaussian", seed=1).weights()
    setting = L.phase1_setting(sym.X, sym.y, W_bar, a_bar, 0.5, 0.02, [0.4, 0.2])
    lam0, base = setting["lam0"], L.m_norm(W_bar, a_bar)
    t_end = 1.2 * np.log(10 / min(setting["sigma_main"], 1e-6)) / lam0
    times = np.linspace(0, t_end, 4001)

    def grown(sigma):
        c = sigma * np.exp(lam0 * times) / base
        return SimpleNamespace(
            times=times,
            snapshots=[dict(W=k * W_bar, a=k * a_bar) for k in c],
            param=lambda name: np.array(
                [k * (W_bar if name == "W" else a_bar) for k in c]
            ),
        )

    sigmas = [1e-4, 1e-6]
    run = dict(ds=sym, W_bar=W_bar, a_bar=a_bar, **setting)
    run.update(main=grown(setting["sigma_main"]), sweep=[grown(s) for s in sigmas])
    out = L.lemma52_run_statistics(run, [0.4, 0.2], 0.2, sigmas)
    assert out["rate"] == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_allclose(
        out["t_r"], np.log(0.2 / np.array(sigmas)) / lam0, rtol=1e-6
    )
    main = run["main"]
    direct = L.lemma52_statistics(
        main.times, main.param("W"), main.param("a"), W_bar, a_bar, sym.X, sym.y,
        setting["T1"], [0.4, 0.2], 0.2, setting["lam_eff"],
    )  # fmt: skip
    np.testing.assert_allclose(out["residuals"], direct["residuals"])


def test_lemma54_coupling_distance_shrinks_with_sigma(sym):
    """Lemma 5.4: the flow from σθ̄0 at T12 + t approaches the embedded
    two-neuron flow as σ → 0 (relative distance, by hand from the two runs'
    parameters in the lemma's ordering)."""
    lam0 = L.lambda0(sym.X, sym.y, 0.5)
    dist = L.lemma54_coupling(
        sym, 6, 0.5, 0, sigmas=[1e-2, 1e-5], r=1e-8, offsets=[0.0, 2.0], lam0=lam0
    )
    assert dist.shape == (2, 2)
    assert (dist[1] < dist[0]).all()
    assert dist[1].max() < 0.1


def test_thm55_two_neuron_start_is_balanced_on_either_side_of_w_star():
    w_star = np.array([0.6, 0.8])
    W0, a0 = L.thm55_two_neuron_start(w_star, 1e-3, np.random.default_rng(5))
    np.testing.assert_allclose(np.linalg.norm(W0, axis=1), 1e-3)
    assert W0[0] @ w_star > 0 > W0[1] @ w_star
    np.testing.assert_allclose(a0, [1e-3, -1e-3])
    with pytest.raises(ValueError, match="init_norm"):
        L.thm55_two_neuron_start(w_star, 0.0, np.random.default_rng(5))


def test_thm55_flow_starts_at_the_two_neuron_start(sym):
    w_star = L.max_margin_separator(sym.X, sym.y)
    run = L.thm55_flow(sym, w_star, 0.5, 1e-3, 7, 1.0)
    W0, a0 = L.thm55_two_neuron_start(w_star, 1e-3, np.random.default_rng(7))
    np.testing.assert_allclose(run.snapshots[0]["W"], W0, atol=1e-9)
    np.testing.assert_allclose(run.snapshots[0]["a"], a0, atol=1e-9)


def test_thm56_local_flow_after_no_time_is_where_it_started(sym):
    """With t_max ~ 0 the near start is at distance eps from θ̄* = π_b(limit)
    and every margin is unchanged."""
    w_star = L.max_margin_separator(sym.X, sym.y)
    limit = L.two_neuron_limit(w_star)
    gamma = L.global_max_margin_symmetric(sym.X, sym.y, 0.5)
    out = L.thm56_local_flow(sym, limit, 5, 0.5, 10.0, 0.05, gamma, 1e-12, seed=1)
    assert out["near"] == pytest.approx(0.05, rel=1e-6)
    assert out["near_margin"] == pytest.approx(out["near_margin0"], rel=1e-6)
    assert out["random_margin"] == pytest.approx(out["random_margin0"], rel=1e-6)
