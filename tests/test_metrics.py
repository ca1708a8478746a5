"""Shared measurements: spectra, ranks, cosines, patterns, margins."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from twolayer import metrics


def test_singular_values_and_ranks():
    W = np.diag([3.0, 2.0, 1.0])
    assert np.allclose(metrics.singular_values(W), [3, 2, 1])
    assert np.allclose(metrics.singular_values(W, 2), [3, 2])
    assert np.isclose(metrics.rank_ratio(W, 1), 2 / 3) and np.isclose(
        metrics.rank_ratio(W, 2), 1 / 3
    )
    assert metrics.rank_ratio(np.outer([1, 2], [3, 4]), 1) < 1e-12
    assert metrics.rank_ratio(W, 5) == 0.0
    assert np.isclose(metrics.stable_rank(W), 14 / 9)
    assert np.isclose(metrics.spectral_norm_sq(W), 9.0)
    assert metrics.stable_rank(np.zeros((2, 2))) == 0.0


def test_top_singular_directions():
    W = np.outer([1.0, 1.0, 1.0], [0.0, 3.0, 4.0]) / 5
    v = metrics.top_singular_directions(W, 1)[0]
    assert np.isclose(abs(v @ [0, 0.6, 0.8]), 1.0)
    assert metrics.top_singular_directions(np.eye(4), 2).shape == (2, 4)


def test_cosines():
    assert np.isclose(metrics.cosine([1, 0], [1, 1]), 1 / np.sqrt(2))
    assert metrics.cosine([0, 0], [1, 1]) == 0.0
    assert np.isclose(
        metrics.cosine(torch.tensor([1.0, 2.0]), np.array([2.0, 4.0])), 1.0
    )
    c = metrics.row_cosines(np.array([[1.0, 0], [0, 2], [0, 0], [-1, 0]]), [3.0, 0])
    assert np.allclose(c, [1, 0, 0, -1])
    with pytest.raises(ValueError, match="ref must have length 2"):
        metrics.row_cosines(np.eye(2), [1, 2, 3])


def test_neuron_norms_patterns_and_dead_neurons():
    W = np.array([[1.0, 0], [-1, -1], [0, 1]])
    X = np.array([[1.0, 0], [0, 1]])
    assert np.allclose(metrics.neuron_norms(W), [1, np.sqrt(2), 1])
    assert metrics.activation_pattern(W, X).tolist() == [[1, 0], [-1, -1], [0, 1]]
    assert metrics.dead_neurons(W, X).tolist() == [False, True, False]
    with pytest.raises(ValueError, match="W has 2 columns but X has 3"):
        metrics.activation_pattern(W, np.ones((2, 3)))


def test_margins_and_norms():
    assert metrics.margins([2.0, -1.0], [1, -1]).tolist() == [2.0, 1.0]
    assert np.isclose(
        metrics.normalized_margin([2.0, -1.0], [1, -1], param_norm=2.0, homogeneity=2),
        0.25,
    )
    assert np.isclose(metrics.normalized_margin([8.0], [1], 2.0, homogeneity=3), 1.0)
    with pytest.raises(ValueError, match="param_norm must be > 0"):
        metrics.normalized_margin([1.0], [1], 0.0, homogeneity=2)
    with pytest.raises(TypeError):
        metrics.normalized_margin([1.0], [1], 1.0)  # the degree is never assumed
    assert np.isclose(metrics.normalized_margin([3.0], [1], 3.0, homogeneity=1), 1.0)
    assert np.isclose(metrics.parameter_norm(np.ones((2, 2)), np.ones(5)), 3.0)


def test_gram_sign_violations_and_class_separation():
    R = np.array([[1.0, 0], [1, 0.1], [-1, 0]])
    y = np.array([1, 1, -1])
    assert metrics.gram_sign_violations(R, y) == 0.0
    assert np.isclose(metrics.gram_sign_violations(R, np.array([1, -1, -1])), 2 / 3)
    assert metrics.gram_sign_violations(R[:1], y[:1]) == 0.0
    assert metrics.class_separation(R, y) > 1.5
    assert metrics.class_separation(np.ones((4, 2)), [1, -1, 1, -1]) == pytest.approx(
        0.0
    )


@pytest.mark.parametrize(
    "fn", [metrics.singular_values, metrics.neuron_norms, metrics.stable_rank]
)
@pytest.mark.parametrize(
    "bad, match",
    [
        (np.ones(3), "W must be 2-D"),
        (np.ones((0, 3)), "W must be non-empty"),
        ([[np.inf, 1.0]], "W contains NaN"),
        ("abc", "W must be a numeric array"),
    ],
)
def test_bad_matrices_name_the_argument(fn, bad, match):
    with pytest.raises(ValueError, match=match):
        fn(bad)


def test_cross_class_positive_and_shared_units():
    # classes on disjoint units: orthogonally separable, no shared unit
    R = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 3.0]])
    y = np.array([1, 1, -1])
    assert metrics.cross_class_positive(R, y) == 0.0
    assert metrics.shared_units(R, y) == 0.0
    # one negative example touches unit 0: both cross pairs with it are positive
    R2 = np.vstack([R, [0.5, 1.0, 0.0]])
    y2 = np.array([1, 1, -1, -1])
    assert metrics.cross_class_positive(R2, y2) == 0.5
    assert np.isclose(metrics.shared_units(R2, y2), 1 / 3)


def test_smoothed_margin_matches_formula_and_stays_below_the_margin():
    from twolayer import metrics as M

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    X = X[np.abs(X[:, 0]) > 0.3]
    y = np.sign(X[:, 0])
    checked = 0
    for scale in (1.0, 5.0, 40.0):
        W, a = scale * np.array([[1.0, 0.0]]), scale * np.array([1.0])
        q = y * (a @ np.maximum(W @ X.T, 0.5 * W @ X.T))
        L = np.log1p(np.exp(-q)).sum()
        if L >= np.log(2):
            continue
        rho = np.sqrt((W**2).sum() + (a**2).sum())
        got = M.smoothed_margin(np.log(L), np.log(rho), homogeneity=2)
        assert got == pytest.approx(np.log(1 / np.expm1(L)) / rho**2, rel=1e-9)
        assert got <= q.min() / rho**2
        checked += 1
    assert checked >= 2
    with pytest.raises(ValueError, match="below log 2"):
        M.smoothed_margin(0.0, 0.0, homogeneity=2)
    with pytest.raises(ValueError, match="homogeneity"):
        M.smoothed_margin(-5.0, 0.0, homogeneity=0)
