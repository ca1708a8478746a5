"""Hard-margin SVMs and the KKT check of the two-layer margin problem."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer import data
from twolayer.theory import margins
from twolayer.theory.phuong2021 import lemma_c1_check


def test_max_margin_hand_solvable():
    # constraints 2 w1 >= 1 and w2 >= 1 (both positive): w = (1/2, 1)
    w = margins.max_margin([[2.0, 0.0], [0.0, 1.0]], [1, 1])
    assert np.allclose(w, [0.5, 1.0], atol=1e-6)
    # symmetric pair: w = (1, 0), margin 1
    sol = margins.svm([[1.0, 0.5], [-1.0, 0.5]], [1, -1])
    assert np.allclose(sol.w, [1.0, 0.0], atol=1e-6)
    assert np.isclose(sol.margin, 1.0, atol=1e-6)
    assert sol.support.tolist() == [True, True]


def test_svm_duals_reconstruct_w_and_mark_support():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]])
    sol = margins.svm(X, [1, 1, 1])
    assert np.allclose(sol.w, [1, 1], atol=1e-6)
    assert sol.support.tolist() == [True, True, False]
    assert np.allclose(sol.duals @ X, sol.w, atol=1e-5), "w = Σ α_i y_i x_i"
    assert sol.duals[2] < 1e-6


def test_not_separable_raises_with_a_message():
    with pytest.raises(
        margins.NotSeparableError, match="not linearly separable through the origin"
    ):
        margins.max_margin([[1.0, 0.0], [1.0, 0.0]], [1, -1])
    with pytest.raises(margins.NotSeparableError):
        margins.max_margin([[1.0, 0.0], [-1.0, 0.0]], [1, 1])
    assert issubclass(margins.NotSeparableError, ValueError)


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.ones(4), [1, 1, 1, 1], "X must be 2-D"),
        (np.ones((0, 2)), [], "X must be non-empty"),
        (np.ones((2, 2)), [1, 2], r"y must contain only labels -1 and \+1"),
        (np.ones((3, 2)), [1, -1], "y must have length 3"),
        (np.ones((2, 2)), [[1, -1]], "y must be 1-D"),
    ],
)
def test_bad_input_names_the_argument(X, y, match):
    with pytest.raises(ValueError, match=match) as info:
        margins.max_margin(X, y)
    assert not isinstance(info.value, margins.NotSeparableError)


@pytest.fixture(scope="module")
def orthant():
    return data.orthant_data(n=16, d=3, seed=0)


def test_kkt_vanishes_at_the_lemma_c1_point_and_not_elsewhere(orthant):
    X, y = orthant.X, orthant.y
    c1 = lemma_c1_check(X, y, u=[1.0, 0.0, 0.5], z=[0.0, 2.0, 0.0])
    rep = margins.kkt_two_layer(c1.W, c1.a, X, y)
    assert rep.stationarity < 1e-4
    assert np.isclose(rep.min_margin_before, 1.0, atol=1e-5)
    assert rep.tight.any() and np.all(rep.lambdas[~rep.tight] == 0)
    rng = np.random.default_rng(0)
    W = c1.W + 0.3 * rng.standard_normal(c1.W.shape) * np.abs(c1.W).max()
    other = margins.kkt_two_layer(W, c1.a, X, y)
    assert other.min_margin_before > 0, "the perturbed net still classifies every point"
    assert other.stationarity > 0.05


def test_kkt_two_layer_bad_input(orthant):
    X, y = orthant.X, orthant.y
    with pytest.raises(ValueError, match="does not classify every point correctly"):
        margins.kkt_two_layer(np.ones((2, 3)), [1.0, 1.0], X, y)
    with pytest.raises(ValueError, match="a must have length 2"):
        margins.kkt_two_layer(np.ones((2, 3)), [1.0], X, y)
    with pytest.raises(ValueError, match="W must be 2-D"):
        margins.kkt_two_layer(np.ones(3), [1.0], X, y)


def test_margin_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    W, a, X = (
        rng.standard_normal((3, 2)),
        rng.standard_normal(3),
        rng.standard_normal((4, 2)),
    )
    y = np.array([1.0, -1.0, 1.0, -1.0])
    G = margins.margin_gradients(W, a, X, y, 0.1)
    theta = np.concatenate([W.ravel(), a])

    def q(t):
        Wt, at = t[:6].reshape(3, 2), t[6:]
        Z = X @ Wt.T
        return y * (np.where(Z > 0, Z, 0.1 * Z) @ at)

    eps = 1e-6
    num = np.stack(
        [(q(theta + eps * e) - q(theta - eps * e)) / (2 * eps) for e in np.eye(9)],
        axis=1,
    )
    assert np.allclose(G, num, atol=1e-6)
