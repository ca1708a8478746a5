"""Tests of twolayer.theory.sarussi2021 (Sarussi, Brutzkus & Globerson, ICML 2021)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from twolayer import data, flows, models
from twolayer.models import TwoLayerNet
from twolayer.theory import margins
from twolayer.theory import sarussi2021 as s
from twolayer.theory.margins import NotSeparableError, max_margin

# ----------------------------------------------------------------- the network


def test_network_output_matches_the_library_model():
    net = TwoLayerNet.fixed_second_layer(d=3, k=4, alpha=0.2, scale=1.0, seed=1)
    X = np.random.default_rng(0).standard_normal((25, 3))
    P, Q = s.split_neurons(net.weights()[0])
    assert P.shape == Q.shape == (4, 3)
    np.testing.assert_allclose(
        s.network_output(P, Q, X, 0.2), net.predict(X), atol=1e-12
    )


def test_split_neurons_rejects_odd_rows_and_wrong_k():
    with pytest.raises(ValueError, match="even number"):
        s.split_neurons(np.ones((3, 2)))
    with pytest.raises(ValueError, match="k must"):
        s.split_neurons(np.ones((4, 2)), k=3)


def test_leaky_relu_rejects_bad_alpha():
    with pytest.raises(ValueError, match="alpha"):
        models.check_alpha(1.5)
    with pytest.raises(ValueError, match="alpha"):
        models.check_alpha(-0.1)


# ----------------------------------------------------------------- clustering


def test_clusters_radius_and_ratio_by_hand():
    P = np.array([[1.0, 0.0], [3.0, 0.0]])  # centre (2, 0), radius 1
    Q = np.array([[0.0, 1.0], [0.0, -1.0]])  # centre (0, 0), radius 1
    c = s.clusters(P, Q)
    np.testing.assert_allclose(c.w_bar, [2, 0])
    np.testing.assert_allclose(c.u_bar, [0, 0])
    assert c.radius == pytest.approx(1.0)
    assert s.clustering_ratio(P, Q) == pytest.approx(0.5)
    assert s.max_cluster_angles(P, Q) == (pytest.approx(0.0), pytest.approx(180.0))


def test_ratio_is_infinite_when_centres_coincide():
    P = np.array([[1.0, 0.0], [-1.0, 0.0]])
    assert s.clustering_ratio(P, P) == float("inf")


def test_max_cluster_angle_skips_zero_rows():
    assert s.max_cluster_angle(
        np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    ) == pytest.approx(90.0)
    assert s.max_cluster_angle(np.array([[1.0, 0.0]])) == 0.0


def test_linear_regime_by_hand_and_zero_input():
    P = np.array([[1.0, 0.0], [1.0, 0.2]])
    Q = np.array([[-1.0, 0.0], [-1.0, -0.2]])
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [-2.0, 0.5]])
    # w̄-ū = (2, 0.2), R = 0.1: condition |2x1 + 0.2x2| > 0.2‖x‖
    np.testing.assert_array_equal(s.linear_regime(P, Q, X), [True, False, False, True])
    assert s.fraction_outside_linear_regime(P, Q, X) == pytest.approx(0.5)


def test_linear_regime_accepts_torch_tensors():
    P = torch.tensor([[1.0, 0.0]])
    Q = torch.tensor([[-1.0, 0.0]])
    assert s.linear_regime(P, Q, torch.tensor([[1.0, 1.0]])).tolist() == [True]


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.ones((2, 3)), np.ones((3, 3)), np.ones((4, 3))), "same shape"),
        ((np.ones((2, 3)), np.ones((2, 3)), np.ones((4, 2))), "columns"),
        ((np.ones(3), np.ones((2, 3)), np.ones((4, 3))), "W_pos must be 2-D"),
        ((np.ones((2, 3)), np.ones((2, 3)), np.full((4, 3), np.nan)), "X contains NaN"),
        ((np.ones((2, 3)), np.ones((2, 3)), np.ones((0, 3))), "X must be non-empty"),
        (("abc", np.ones((2, 3)), np.ones((4, 3))), "W_pos must be a numeric array"),
    ],
)
def test_linear_regime_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        s.linear_regime(*args)


def test_relu_breaks_theorem_5_1_but_leaky_relu_does_not():
    """Cor 6.1 fails for ReLU (Fig 5): where both neurons are off, N = 0."""
    P, Q = np.array([[1.0, 1.0]]), np.array([[1.0, -1.0]])
    x = np.array([[-1.0, 0.5]])
    assert s.linear_regime(P, Q, x)[0]  # R = 0: every x ≠ 0 is in the regime
    assert s.network_output(P, Q, x, 0.0)[0] == 0.0  # ReLU: no decision
    assert s.network_output(P, Q, x, 0.1)[0] > 0  # leaky: sign((w̄-ū)·x) = +1


@st.composite
def clustered_networks(draw):
    """A random clustered network (k neurons around each of two centres) and inputs."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 6))
    k = draw(st.integers(1, 8))
    spread = draw(st.floats(0.0, 2.0))
    alpha = draw(st.floats(0.01, 0.99))
    w_bar, u_bar = rng.standard_normal(d), rng.standard_normal(d)
    P = w_bar + spread * rng.standard_normal((k, d)) / np.sqrt(d)
    Q = u_bar + spread * rng.standard_normal((k, d)) / np.sqrt(d)
    X = rng.standard_normal((200, d)) * rng.exponential(1.0, (200, 1))
    return P, Q, X, alpha


@settings(max_examples=200, deadline=None)
@given(clustered_networks())
def test_theorem_5_1_property(net):
    """Thm 5.1: every point in the linear regime is classified as sign((w̄−ū)·x)."""
    P, Q, X, alpha = net
    inside = s.linear_regime(P, Q, X)
    N = s.network_output(P, Q, X, alpha)
    lin = s.linear_prediction(P, Q, X)
    assert np.all(np.sign(N[inside]) == lin[inside])
    assert np.all(lin[inside] != 0)


@settings(max_examples=50, deadline=None)
@given(clustered_networks())
def test_perfect_clustering_gives_an_exactly_linear_boundary(net):
    """Cor 6.1: R = 0 makes the regime every x with (w̄−ū)·x ≠ 0."""
    P, Q, X, alpha = net
    P, Q = np.repeat(P[:1], len(P), 0), np.repeat(Q[:1], len(Q), 0)
    inside = s.linear_regime(P, Q, X)
    assert np.array_equal(inside, X @ (P[0] - Q[0]) != 0)
    assert np.all(
        np.sign(s.network_output(P, Q, X, alpha)[inside])
        == s.linear_prediction(P, Q, X)[inside]
    )


# ----------------------------------------------------------------- NAR and PAR


def _par_example():
    X = np.array([[2.0, 0.3], [1.5, -0.4], [-2.0, 0.1], [-1.0, -0.5]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    return X, y


def test_par_and_nar_membership():
    X, y = _par_example()
    P = np.array([[1.0, 0.0], [1.0, 0.5]])
    Q = np.array([[-1.0, 0.1], [-1.0, -0.2]])
    par = s.par_membership(P, Q, X, y)
    assert par.network and par.fraction == 1.0
    assert s.nar_membership(P, Q, X).network
    assert s.same_type_disagreements(P, Q, X) == (0, 0)


def test_nar_without_par_and_disagreement_counts():
    X, y = _par_example()
    P = np.array([[-1.0, 0.0], [-1.0, 0.5]])  # all w's agree but classify like -y
    Q = np.array([[-1.0, 0.1], [1.0, 0.0]])  # the u's disagree on all 4 points
    nar, par = s.nar_membership(P, Q, X), s.par_membership(P, Q, X, y)
    assert nar.w_neurons.all() and not par.w_neurons.any()
    assert not nar.network
    assert s.same_type_disagreements(P, Q, X) == (0, 4)
    np.testing.assert_array_equal(par.u_neurons, [True, False])
    assert par.fraction == pytest.approx(0.25)


def test_margin_makes_membership_stricter():
    X, y = _par_example()
    P = np.array(
        [[1.0, 0.0], [1.0, 2.0]]
    )  # second w barely classifies point 1 (cos ≈ 0.2)
    Q = -P
    assert s.par_membership(P, Q, X, y, margin=0.0).network
    loose, strict = (
        s.par_membership(P, Q, X, y, margin=0.5),
        s.nar_membership(P, Q, X, margin=0.5),
    )
    assert not loose.w_neurons[1] and loose.w_neurons[0]
    assert not strict.network


def test_membership_bad_input():
    X, y = _par_example()
    P = np.ones((2, 2))
    with pytest.raises(ValueError, match="margin"):
        s.par_membership(P, P, X, y, margin=-1)
    with pytest.raises(ValueError, match="y must contain only labels"):
        s.par_membership(P, P, X, np.array([1, 0, 1, -1]))
    with pytest.raises(ValueError, match="y must have length"):
        s.par_membership(P, P, X, y[:3])
    with pytest.raises(ValueError, match="columns"):
        s.nar_membership(P, P, np.ones((3, 5)))


# ----------------------------------------------------------------- the PAR SVM


def _gaussians(seed=0, n=40, d=3, shift=3.0):
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = rng.standard_normal((n, d)) * 0.5
    X[:, 0] += shift * y
    X[:, 1] += 1.0 + 0.5 * y
    return X, y


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5, 0.9])
def test_par_svm_kernel_form_equals_primal(alpha):
    X, y = _gaussians()
    w, u = s.par_svm(X, y, alpha)
    ker = s.par_svm_kernel(X, y, alpha)
    np.testing.assert_allclose(ker.w, w, atol=1e-5)
    np.testing.assert_allclose(ker.u, u, atol=1e-5)
    assert np.all(ker.beta >= 0)


def test_par_svm_constraints_and_kernel():
    X, y = _gaussians(seed=3)
    alpha = 0.2
    w, u = s.par_svm(X, y, alpha)
    pos, neg = y > 0, y < 0
    assert np.all(X[pos] @ w - alpha * X[pos] @ u >= 1 - 1e-6)
    assert np.all(X[neg] @ u - alpha * X[neg] @ w >= 1 - 1e-6)
    assert min(
        (X[pos] @ w - alpha * X[pos] @ u).min(), (X[neg] @ u - alpha * X[neg] @ w).min()
    ) == pytest.approx(1.0, abs=1e-5)
    Phi = s.par_features(X, y, alpha)
    np.testing.assert_allclose(s.par_kernel(X, y, alpha), Phi @ Phi.T, atol=1e-12)
    # the PAR network built from (w, u) attains margin 1 with output k(w·x - αu·x) etc.
    N = s.network_output(np.repeat(w[None], 3, 0), np.repeat(u[None], 3, 0), X, alpha)
    assert np.all(y * N >= 3 * (1 - 1e-6))


def test_par_svm_on_symmetric_data_is_the_linear_svm():
    """Exactly symmetric data: u = −w and w ∝ the max-margin separator."""
    X, y = _gaussians(seed=5)
    Xs, ys = (
        np.vstack([X[y > 0], -X[y > 0]]),
        np.concatenate([np.ones(20), -np.ones(20)]),
    )
    w, u = s.par_svm(Xs, ys, 0.3)
    np.testing.assert_allclose(u, -w, atol=1e-5)
    assert s.angle_degrees(w, max_margin(Xs, ys)) < 1e-3


def test_par_svm_infeasible_and_bad_input():
    X = np.array([[1.0, 0.0], [-1.0, 0.0]])  # x and -x both positive: no (w, u)
    with pytest.raises(NotSeparableError):
        s.par_svm(X, np.array([1.0, 1.0]), 0.2)
    with pytest.raises(NotSeparableError):
        s.par_svm_kernel(X, np.array([1.0, 1.0]), 0.2)
    with pytest.raises(ValueError, match="alpha"):
        s.par_svm(*_gaussians(), alpha=1.0)
    with pytest.raises(ValueError, match="alpha"):
        s.par_svm(*_gaussians(), alpha="big")
    with pytest.raises(ValueError, match="y must"):
        s.par_svm(np.ones((3, 2)), np.array([1, 2, 1]), 0.2)
    with pytest.raises(ValueError, match="X must be 2-D"):
        s.par_svm(np.ones(3), np.ones(3), 0.2)


def test_par_prediction_and_angle():
    X, y = _gaussians(seed=1)
    assert np.all(s.par_prediction(X, y, 0.2) == y)
    assert s.angle_degrees([1, 0], [0, 2]) == pytest.approx(90.0)
    with pytest.raises(ValueError, match="non-zero"):
        s.angle_degrees([0, 0], [1, 0])


# ----------------------------------------------------------------- Thm 4.1


def test_violating_epochs():
    losses = np.array([0.5, 0.1, 0.05, 0.01, 0.001, 0.002])
    np.testing.assert_array_equal(
        s.violating_epochs(losses, 2, 0.05), [True, True, False]
    )
    with pytest.raises(ValueError, match="whole number"):
        s.violating_epochs(losses, 4, 0.1)
    with pytest.raises(ValueError, match="eps"):
        s.violating_epochs(losses, 2, 0)
    with pytest.raises(ValueError, match="n must"):
        s.violating_epochs(losses, 0, 0.1)


def test_disagreements_ignore_votes_on_the_kink():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    P = np.array(
        [[1.0, 1e-6], [1.0, -1e-6]]
    )  # opposite signs on x_2, both within 1e-5 of the kink
    Q = np.array([[-1.0, 0.0], [-1.0, 0.0]])
    assert s.same_type_disagreements(P, Q, X) == (1, 0)
    assert s.same_type_disagreements(P, Q, X, margin=1e-3) == (0, 0)


def test_reflection_cones_decide_assumption_4():
    rng = np.random.default_rng(0)
    pos = rng.normal([2.0, 1.0], 0.5, size=(30, 2))
    sym = data.rescaled_mirror(pos, (1.0, 1.0))  # Lemma 6.1: symmetric
    assert s.reflection_cones(sym.X, sym.y).holds
    resc = data.rescaled_mirror(
        pos, (0.5, 4.0), seed=1
    )  # every reflection on a ray of the other class
    assert s.reflection_cones(resc.X, resc.y).holds
    # a negative point whose reflection lies outside the positive cone breaks it
    X = np.vstack([pos, -pos, [[-1.0, 3.0]]])
    y = np.r_[np.ones(30), -np.ones(31)]
    cones = s.reflection_cones(X, y)
    assert not cones.holds and cones.violations == 1 and not cones.neg_inside[-1]
    # ... and a v positive on all positives, non-negative on that point, exists (Farkas)
    v = np.array([np.cos(np.pi / 3), np.sin(np.pi / 3)])
    assert (pos @ v > 0).all() and v @ np.array([-1.0, 3.0]) >= 0
    with pytest.raises(ValueError, match="both classes"):
        s.reflection_cones(pos, np.ones(30))


def test_sgd_epoch_bound_holds_and_grows_with_init():
    ds = data.uniform_disk_linear(20, margin=0.3, w_star=np.array([1.0, 0.5]), seed=0)
    w_svm = margins.max_margin(ds.X, ds.y)
    gamma, radius = 1 / np.linalg.norm(w_svm), np.linalg.norm(ds.X, axis=1).max()
    net = models.TwoLayerNet.fixed_second_layer(2, 2, 0.1, scale=1.0, seed=0)
    init = float(np.linalg.norm(net.weights()[0]))
    traj = flows.sgd(net, ds, lr=1.0, epochs=30, batch_size=1, seed=0, n_snapshots=2)
    lead = s.leading_violating_epochs(s.violating_epochs(traj.step_loss, ds.n, 0.05))
    bound = s.sgd_epoch_bound(ds.n, 2, 0.1, gamma, 1.0, 0.05, radius, init)
    assert 0 < lead <= bound
    assert s.sgd_epoch_bound(ds.n, 2, 0.1, gamma, 1.0, 0.05, radius, 10 * init) > bound
    assert s.leading_violating_epochs(np.array([True, True, False, True])) == 2
    assert s.leading_violating_epochs(np.array([True, True])) == 2
    with pytest.raises(ValueError, match="alpha must be in"):
        s.sgd_epoch_bound(20, 2, 0.0, gamma, 1.0, 0.05, radius, init)


# ----------------------------------------------------------------- along a run (Figs 2,
# 6)


def test_cluster_radii_max_and_median_by_hand():
    P = np.array(
        [[0.0, 0.0], [2.0, 0.0], [1.0, 0.0]]
    )  # centre (1, 0): distances 1, 1, 0
    Q = np.array(
        [[0.0, 5.0], [0.0, 1.0], [0.0, 3.0]]
    )  # centre (0, 3): distances 2, 2, 0
    R, R_med = s.cluster_radii(P, Q)
    assert R == pytest.approx(2.0)
    assert R_med == pytest.approx(1.0)  # median of 1, 1, 0, 2, 2, 0


def test_first_time_lowest_until_value_at():
    t = np.array([0.0, 1.0, 2.0, 4.0, 8.0])
    v = np.array([1.0, 0.3, 0.1, 0.5, 0.0])
    assert s.first_time(t, v < 0.2) == 2.0
    assert s.first_time(t, v < -1) == float("inf")
    assert s.lowest_until(t, v, 4.0) == pytest.approx(0.1)
    assert s.lowest_until(t, v, 1.5) == pytest.approx(0.3)
    assert s.value_at(t, v, 3.0) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="before the horizon"):
        s.value_at(t, v, 9.0)
    with pytest.raises(ValueError, match="no snapshot"):
        s.lowest_until(t + 1, v, 0.5)
    with pytest.raises(ValueError, match="non-decreasing"):
        s.first_time(t[::-1], v > 0)


def test_geometric_gd_stages_end_at_t_end_with_steps_proportional_to_time():
    stages = s.geometric_gd_stages(150.0, 3e4, 0.01, 24)
    assert sum(lr * n for lr, n in stages) == pytest.approx(3e4 - 150.0)
    t = 150.0
    for lr, n in stages:
        assert lr <= 0.01 * t * (1 + 1e-12)  # never above rel_step * t
        t += lr * n
    with pytest.raises(ValueError, match="rel_step"):
        s.geometric_gd_stages(1.0, 2.0, 1.5, 3)
    with pytest.raises(ValueError, match="t_start"):
        s.geometric_gd_stages(2.0, 1.0, 0.1, 3)


def test_input_scaling_is_init_and_time_scaling():
    # N(c x; W) = N(x; c W): a scalar normalisation of the inputs is a rescaled init
    # (and, for gradient flow, time scaled by c^2), not a new setting
    rng = np.random.default_rng(3)
    P, Q, X, c = (
        rng.standard_normal((4, 6)),
        rng.standard_normal((4, 6)),
        rng.standard_normal((9, 6)),
        0.37,
    )
    np.testing.assert_allclose(
        s.network_output(P, Q, c * X, 0.2),
        s.network_output(c * P, c * Q, X, 0.2),
        rtol=1e-12,
    )
    np.testing.assert_array_equal(
        s.linear_regime(P, Q, c * X), s.linear_regime(P, Q, X)
    )


# ----------------------------------------------------------------- Fig 1: departure
# from a line


def test_departure_from_best_line_is_zero_if_clustered_and_positive_if_bent():
    g = np.linspace(-1, 1, 81)
    G = np.array([(a, b) for a in g for b in g if 0 < a * a + b * b <= 1])
    P, Q = np.array([[1.0, 0.2]]), np.array([[-1.0, -0.2]])  # one line: exactly linear
    assert s.departure_from_best_line(P, Q, G, 0.2) == pytest.approx(0.0, abs=2e-3)
    # a ReLU-like bend: the w's see two directions, the u's one
    P2 = np.array([[3.0, 0.0], [0.0, 3.0]])
    Q2 = np.array([[-1.0, -1.0], [-1.0, -1.0]])
    d = s.departure_from_best_line(P2, Q2, G, 0.01)
    assert 0.0 <= d <= 0.5
    with pytest.raises(ValueError, match="2-D"):
        s.departure_from_best_line(
            np.ones((1, 3)), np.ones((1, 3)), np.ones((2, 3)), 0.2
        )


def test_staged_gd_equals_one_gd_run_and_keeps_each_snapshot_once():
    ds = data.uniform_disk_linear(30, margin=0.1, w_star=np.array([1.0, 0.3]), seed=0)

    def make(sd):
        return TwoLayerNet.fixed_second_layer(2, 3, 0.2, scale=0.1, seed=sd)

    runs = s.staged_gd([make(0), make(1)], ds, [(0.1, 10, [0, 5]), (0.1, 10, [4])])
    ref = flows.gd(make(1), ds, lr=0.1, steps=20, snapshot_steps=[0, 5, 10, 14, 20])
    np.testing.assert_allclose(runs[1]["times"], [0.0, 0.5, 1.0, 1.4, 2.0])
    np.testing.assert_allclose(runs[1]["W"][-1], ref.final["W"], atol=1e-10)
    np.testing.assert_allclose(runs[1]["loss"], ref.loss, rtol=1e-8)


def test_regime_record_counts_and_signs():
    P = np.array([[1.0, 0.0], [1.0, 0.2]])
    Q = np.array([[-1.0, 0.0], [-1.0, -0.2]])
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-2.0, 0.5]])
    r = s.regime_record(np.vstack([P, Q]), X, 0.2)
    assert r["outside"] == pytest.approx(1 / 3)
    assert r["violations"] == 0 and r["disagree"] == 0
    assert r["ratio"] == pytest.approx(s.clustering_ratio(P, Q))


# ----------------------------------------------------------------- Thm 4.1: SGD, many
# runs at once


def test_sgd_batch1_equals_the_library_sgd_run_by_run():
    ds = data.uniform_disk_linear(12, margin=0.2, w_star=np.array([1.0, 0.5]), seed=1)
    nets = [
        TwoLayerNet.fixed_second_layer(2, 3, 0.1, scale=0.5, seed=sd) for sd in (0, 1)
    ]
    W0 = np.stack([n.weights()[0] for n in nets])
    orders = s.sgd_orders(ds.n, 4, [5, 6])
    loss, W = s.sgd_batch1(W0, ds.X, ds.y, 0.1, [1.0, 0.5], orders)
    for b, (net, lr, sd) in enumerate(zip(nets, (1.0, 0.5), (5, 6))):
        ref = flows.sgd(net, ds, lr=lr, epochs=4, batch_size=1, seed=sd, n_snapshots=2)
        np.testing.assert_allclose(loss[b], ref.step_loss, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(W[b], ref.final["W"], atol=1e-10)
    with pytest.raises(ValueError, match="W0"):
        s.sgd_batch1(np.ones((2, 3, 2)), ds.X, ds.y, 0.1, 1.0, orders)


def test_run_rows_one_row_per_snapshot():
    ds = data.uniform_disk_linear(30, margin=0.1, w_star=np.array([1.0, 0.3]), seed=0)
    run = s.staged_gd(
        [TwoLayerNet.fixed_second_layer(2, 3, 0.2, scale=0.1, seed=0)],
        ds,
        [(0.1, 10, [0, 5])],
    )[0]
    rows = s.run_rows(run, ds, ds, 0.2)
    assert [r["t"] for r in rows] == pytest.approx([0.0, 0.5, 1.0])
    assert all(r["violations"] == 0 and 0 <= r["outside"] <= 1 for r in rows)
    assert rows[-1]["acc"] == rows[-1]["test_acc"]


def test_regime_record_equals_the_definitions_on_random_networks():
    rng = np.random.default_rng(7)
    for _ in range(5):
        W, X = rng.standard_normal((8, 6)), rng.standard_normal((200, 6))
        W[4:] = W[:4].mean(axis=0) + 0.3 * rng.standard_normal((4, 6))  # a u-cluster
        P, Q = s.split_neurons(W)
        r = s.regime_record(W, X, 0.2, 0.05)
        assert r["outside"] == pytest.approx(s.fraction_outside_linear_regime(P, Q, X))
        np.testing.assert_array_equal(
            r["sign"], np.sign(s.network_output(P, Q, X, 0.2))
        )
        assert r["disagree"] == max(s.same_type_disagreements(P, Q, X, 0.05))
        assert r["off_line"] == pytest.approx(
            np.mean(
                np.sign(s.network_output(P, Q, X, 0.2)) != s.linear_prediction(P, Q, X)
            )
        )
        assert (r["R"], r["R_med"]) == pytest.approx(s.cluster_radii(P, Q))


def test_par_entry_time_first_snapshot_of_the_final_stay():
    X, y = np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1.0, -1.0])
    good = np.array([[1.0, 0.0], [-1.0, 0.0]])  # w votes like y, u like -y
    bad = np.array([[-1.0, 0.0], [-1.0, 0.0]])
    assert s.par_entry_time([0, 1, 2, 3], [bad, good, bad, good], X, y) == 3.0
    assert s.par_entry_time([0, 1], [good, good], X, y) == 0.0
    assert np.isnan(s.par_entry_time([0, 1], [good, bad], X, y))


def test_par_svm_in_par_on_symmetric_data_and_a_broken_set():
    # symmetric data: the PAR SVM is (w_lin, -w_lin) up to scale, in the PAR
    X, y = _gaussians(seed=1, n=30, d=2)
    sym = data.symmetric_augment(data.Dataset(X[y > 0], y[y > 0], "", ""))
    assert s.par_svm_in_par(sym.X, sym.y, 0.2) == 1.0
    # the Fig 4 Gaussians of data draw 5: the PAR SVM's u is positive on some
    # positive points (checked by hand from the solution), so the value is < 1
    pos = data.two_gaussians(100, 2, mean=np.array([2.0, 1.5]), std=0.5, seed=5)
    neg = data.two_gaussians(100, 2, mean=np.array([2.0, -0.5]), std=0.5, seed=6)
    X2 = np.vstack([pos.positives, neg.negatives])
    y2 = np.r_[np.ones(50), -np.ones(50)]
    w, u = s.par_svm(X2, y2, 0.2)
    by_hand = np.mean((np.sign(X2 @ w) == y2) & (np.sign(X2 @ u) == -y2))
    assert by_hand < 1.0
    assert s.par_svm_in_par(X2, y2, 0.2) == pytest.approx(by_hand)


def test_regime_history_rows_by_hand():
    X, y = _par_example()
    P = np.array([[1.0, 0.0], [1.0, 0.5]])
    Q = np.array([[-1.0, 0.1], [1.0, 0.0]])  # the second u classifies like y
    W0, W1 = np.vstack([P, Q]), np.vstack([P, -P])
    rows = s.regime_history([W0, W1], [0, 7], X, y, 0.2)
    assert [r["step"] for r in rows] == [0, 7]
    assert rows[0]["par_w"] == 1.0 and rows[0]["par_u"] == 0.5
    assert not rows[0]["in_nar"] and rows[1]["in_par"] and rows[1]["in_nar"]
    assert rows[0]["disagree_u"] == 4 and rows[1]["disagree_w"] == 0
    # R of the second snapshot: both clusters have half-distance ‖(0, 0.25)‖
    assert rows[1]["radius"] == pytest.approx(0.25)
    assert rows[1]["accuracy"] == 1.0


# ----------------------------------------------------------------- page summaries


def _row(step, **kw):
    base = dict(step=step, ratio=0.1, radius=1.0, angle_w=1.0, angle_u=2.0, par=0.0,
                par_w=0.0, par_u=0.0, in_nar=False, in_par=False, disagree_w=0,
                disagree_u=0, accuracy=1.0)  # fmt: skip
    return {**base, **kw}


def test_outlier_cosines_by_hand():
    W = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    np.testing.assert_allclose(
        s.outlier_cosines(W, [0.0, 5.0]), [0.0, 1.0, np.sqrt(0.5)], atol=1e-15
    )
    with pytest.raises(ValueError, match="vector of length 2"):
        s.outlier_cosines(W, [1.0, 2.0, 3.0])


def test_agreement_run_counts_by_hand():
    W0 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])  # k = 2
    W1 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    hist = [
        _row(0, disagree_w=7, disagree_u=9, accuracy=0.5),
        _row(1, in_nar=True, accuracy=0.9),  # NAR, not fitted
        _row(2, in_nar=True),  # NAR, not PAR, fitted: counts
        _row(3, in_nar=True, in_par=True),  # the PAR: does not count
        _row(4, disagree_w=1, par_w=0.5),
    ]
    out = s.agreement_run(hist, W0, W1, [0.0, 1.0])
    assert out["nar_snaps"] == 3 and out["nar_not_par_snaps"] == 1
    assert out["split_w_fit"] == 0 and out["disagree_init"] == 9
    unfitted = [dict(r, accuracy=0.5) for r in hist]
    assert s.agreement_run(unfitted, W0, W1, [0.0, 1.0])["split_w_fit"] == -1
    assert out["disagree"] == 1 and out["w_off_par"] == 1
    assert out["in_nar"] is False and out["in_par"] is False
    assert out["cos_u_init"] == pytest.approx(np.sqrt(0.5))
    assert out["cos_u"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="two snapshots"):
        s.agreement_run(hist[:1], W0, W1, [0.0, 1.0])


def test_par_run_entry_drift_and_never():
    hist = [_row(0.0, par=0.2, ratio=0.9, angle_u=90.0, radius=2.0),
            _row(1.0, in_par=True, par=1.0, radius=3.0),
            _row(10.0, in_par=True, par=1.0, radius=3.3, ratio=0.01)]  # fmt: skip
    out = s.par_run(hist)
    assert out["entry"] == 1 and out["par_entry"] == 1.0
    assert out["par_init"] == 0.2 and out["par_end"] == 1.0
    assert out["ratio_init"] == 0.9 and out["ratio_end"] == 0.01
    assert out["angle_init"] == 90.0 and out["angle_end"] == 2.0
    assert out["radius_drift"] == pytest.approx(0.1)
    never = s.par_run([_row(0.0), _row(1.0)])
    assert never["par_entry"] == np.inf and never["entry"] == 1


def test_log_log_slope_and_runs_at():
    import pandas as pd

    k = np.array([1, 4, 16, 64])
    assert s.log_log_slope(k, 40.0 / k) == pytest.approx(-1.0)
    assert s.log_log_slope(k, np.full(4, 3.0)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="positive"):
        s.log_log_slope(k, np.zeros(4))
    t = pd.DataFrame(dict(alpha=[0.1, 0.1, 0.0], init_scale=[1.0, 2.0, 1.0],
                          mode=["η", "η", "η"], v=[1, 2, 3]))  # fmt: skip
    assert s.runs_at(t, 0.1, 1.0, "η").v.tolist() == [1]


def test_run_horizons_reads_each_horizon():
    import pandas as pd

    n = 4
    run = pd.DataFrame(dict(t=[0.0, 1.0, 2.0, 3.0], acc=[0.5, 0.9, 1.0, 1.0],
                            loss=[0.7, 0.5, 0.1, 0.1], n=n,
                            outside=[1.0, 0.02, 0.3, 0.4],
                            outside_test=[1.0, 0.05, 0.2, 0.6]))  # fmt: skip
    for col in s.HORIZON_COLUMNS[2:]:
        run[col] = run.t * 10
    out = s.run_horizons(run, t_mid=2.5)
    assert out["t_fit"] == 2.0 and out["t_ll"] == 2.0  # 0.1 < log 2 / 4
    assert out["entered"] == 0.02 and out["entered_test"] == 0.05
    assert out["outside@fit"] == 0.3 and out["outside@mid"] == 0.4
    assert out["R@mid"] == 30.0
    never = s.run_horizons(run.assign(acc=0.5), t_mid=9.0)  # read at the end
    assert never["t_fit"] == np.inf and never["entered"] == 0.02
    assert never["outside@fit"] == 0.4


def test_boundary_record_residual_and_par_angles():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (400, 2))
    P = np.tile([1.0, 0.5], (3, 1))
    Q = np.tile([-1.0, -0.5], (3, 1))
    rec = s.boundary_record(P, Q, X, 0.2)
    assert rec["departure"] == 0.0 and rec["outside"] == 0.0 and rec["ratio"] == 0.0
    assert s.linear_fit_residual(X, X @ [2.0, -1.0]) < 1e-12
    relu = np.maximum(X[:, 0], 0)  # |relu − fit| by an independent lstsq
    beta = np.linalg.solve(X.T @ X, X.T @ relu)
    want = np.linalg.norm(relu - X @ beta) / np.linalg.norm(relu)
    assert s.linear_fit_residual(X, relu) == pytest.approx(want)
    W = np.vstack([P, Q])
    ang = s.par_angles(W, [1.0, 0.5], [0.0, -1.0])
    assert ang["w"] == pytest.approx(0.0, abs=1e-5)  # arccos near 1
    assert ang["u"] == pytest.approx(np.degrees(np.arccos(0.5 / np.sqrt(1.25))))
    assert ang["boundary"] == pytest.approx(
        np.degrees(np.arccos(np.dot([2, 1], [1, 1.5]) / np.sqrt(5 * 3.25)))
    )


def test_sgd_run_record_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, -1.0])
    W = np.array([[2.0, 0.0], [0.0, 3.0]])  # N(x1) = 2, N(x2) = -3
    loss = np.array([0.9, 0.1, 0.01, 0.2, 0.01, 0.01])  # 3 epochs of 2 points
    rec = s.sgd_run_record(loss, W, X, y, 0.1, eps=0.05)
    np.testing.assert_allclose(rec["curve"], [0.9, 0.2, 0.01])
    assert rec["leading"] == 2 and rec["last"] == 2
    want = (np.log1p(np.exp(-2.0)) + np.log1p(np.exp(-3.0))) / 2
    assert rec["final_loss"] == pytest.approx(want)
    with pytest.raises(ValueError, match="whole epochs"):
        s.sgd_run_record(loss[:5], W, X, y, 0.1, eps=0.05)


def test_fig4_gaussians_classes_and_seeds():
    ds = s.fig4_gaussians(7, [2.0, 1.5], [-2.0, 0.5], 0.5, seed=3)
    assert ds.X.shape == (14, 2) and (ds.y[:7] == 1).all() and (ds.y[7:] == -1).all()
    want_pos = data.two_gaussians(14, 2, mean=np.array([2.0, 1.5]), std=0.5, seed=3)
    np.testing.assert_array_equal(ds.X[:7], want_pos.positives)
    assert abs(ds.X[7:].mean(axis=0) - [-2.0, 0.5]).max() < 0.6


def test_mnist_schedule_is_the_early_phase_then_geometric_stages():
    plan = s.mnist_schedule(0.01, 1.0, 5, 0.1, [3.0, 9.0], 2)
    lr0, n0, marks = plan[0]
    assert (lr0, n0) == (0.01, 100)
    np.testing.assert_array_equal(marks, np.round(np.geomspace(1, 100, 5)))
    rest = s.geometric_gd_stages(1.0, 3.0, 0.1, 2) + s.geometric_gd_stages(
        3.0, 9.0, 0.1, 2
    )
    assert [(lr, n) for lr, n, _ in plan[1:]] == rest
    assert all(m == [n] for _, n, m in plan[1:])
    assert sum(lr * n for lr, n, _ in plan) == pytest.approx(9.0)
    with pytest.raises(ValueError, match="lr_early"):
        s.mnist_schedule(0.0, 1.0, 5, 0.1, [3.0], 2)


def test_mnist_pair_rows_centres_by_the_training_mean_and_tags_each_run():
    plan = [(0.05, 4, [0, 2, 4])]
    inits = [("small", 1e-3, 0), ("large", 0.05, 1)]
    rows = s.mnist_pair_rows([0, 1], "centred", inits, plan, 2, 0.2)
    raw, raw_te = data.mnist_pair(0, 1, "train"), data.mnist_pair(0, 1, "test")
    mu = raw.X.mean(axis=0)
    train, test = (
        raw.with_data(raw.X - mu, raw.y),
        raw_te.with_data(raw_te.X - mu, raw_te.y),
    )
    net = TwoLayerNet.fixed_second_layer(
        train.d, 2, 0.2, init_scale=0.05, seed=1, dtype=torch.float32
    )
    ref = flows.gd(net, train, lr=0.05, steps=4, snapshot_steps=[0, 2, 4])
    W = np.asarray(ref.final["W"], dtype=float)
    last = [r for r in rows if r["init"] == "large"][-1]
    assert (
        last["pair"] == "0 vs 1" and last["setting"] == "centred" and last["seed"] == 1
    )
    assert last["t"] == pytest.approx(0.2)
    rec = s.regime_record(W, test.X, 0.2)
    assert last["outside_test"] == pytest.approx(rec["outside"], abs=1e-2)
    assert len(rows) == 6
    with pytest.raises(ValueError, match="setting"):
        s.mnist_pair_rows([0, 1], "scaled", inits, plan, 2, 0.2)
