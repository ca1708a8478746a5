"""Tests of twolayer.synthesis.early_phase (Min cones, Lyu phase-I direction, Sarussi
NAR/PAR)."""

import numpy as np

from twolayer import synthesis as S
from twolayer.theory import lyu2021


def _data():
    return S.synthesis_data(n=20, d=3, std=0.3, seed=1)


def test_aligned_neurons_are_in_cones_par_and_along_mu():
    data = _data()
    mbar = lyu2021.mu(data.X, data.y)
    mbar /= np.linalg.norm(mbar)
    W = np.array([mbar, 2 * mbar, -mbar, -3 * mbar])
    a = np.array([1.0, 2.0, -1.0, -3.0])
    out = S.early_phase(W[None], a[None], [1.0], data, alpha=0.0)
    assert out["in_cones"][0] == 1.0
    assert np.isclose(out["mu_cos"][0], 1.0)
    assert out["par"][0] == 1.0 and out["nar"][0] == 1.0


def test_misaligned_neuron_counts_against_each_measure():
    data = _data()
    mbar = lyu2021.mu(data.X, data.y)
    mbar /= np.linalg.norm(mbar)
    # the last neuron has a > 0 but points along -mu: in S- (not its own cone), votes -y
    # (not PAR)
    W = np.array([mbar, -mbar, -mbar])
    a = np.array([1.0, -1.0, 1.0])
    out = S.early_phase(W[None], a[None], [1.0], data, alpha=0.0)
    assert np.isclose(out["in_cones"][0], 2 / 3)
    assert np.isclose(out["mu_cos"][0], 1 / 3)
    assert np.isclose(out["par"][0], 2 / 3)


def test_one_sided_signs_give_nan_regimes():
    data = _data()
    W = np.eye(3)[:2]
    out = S.early_phase(W[None], np.ones((1, 2)), [0.0], data, alpha=0.0)
    assert np.isnan(out["par"][0]) and np.isnan(out["nar"][0])
