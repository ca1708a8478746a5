"""Divergence is an error, not a NaN plot: the trainers stop at the first
non-finite loss and say at which step and with which step size."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from twolayer import data, flows, models


@pytest.fixture
def ds():
    return data.two_gaussians(40, 3, seed=0)


@pytest.mark.parametrize("optimizer", ["gd", "sgd"])
def test_too_large_step_size_raises_naming_step_and_lr(ds, optimizer):
    net = models.TwoLayerNet(3, 20, init="balanced", scale=1.0, seed=0)
    kw = dict(steps=50) if optimizer == "gd" else dict(epochs=5, batch_size=10)
    with pytest.raises(flows.DivergenceError) as info:
        flows.train(net, ds, optimizer=optimizer, lr=1e200, **kw)
    msg = str(info.value)
    assert re.search(r"at step \d+", msg), msg
    assert "lr=1e+200" in msg, msg
    assert optimizer in msg and ("inf" in msg or "nan" in msg), msg
    step = int(re.search(r"at step (\d+)", msg).group(1))
    assert 0 < step < 50, "it diverges after a few updates, and is caught there"


def test_nan_parameters_stop_at_step_zero(ds):
    net = models.TwoLayerNet(3, 5, seed=0)
    with torch.no_grad():
        next(net.parameters())[0, 0] = float("nan")
    with pytest.raises(
        flows.DivergenceError, match=r"loss became nan at step 0 with step size lr=0\.1"
    ):
        flows.gd(net, ds, lr=0.1, steps=10)


def test_nan_input_diverges_at_step_zero():
    bad = data.Dataset(np.ones((3, 2)), [1, -1, 1], "x", "")
    object.__setattr__(bad, "X", np.array([[np.nan, 1.0], [1.0, 1.0], [0.0, 1.0]]))
    net = models.TwoLayerNet(2, 3, seed=0)
    with pytest.raises(
        flows.DivergenceError, match=r"at step 0 with step size lr=0\.1"
    ):
        flows.gd(net, bad, lr=0.1, steps=5)


def test_overflowing_parameters_stop_the_run_even_with_a_finite_loss(ds):
    positive = data.Dataset(np.abs(ds.X), ds.y, "positive inputs", "test")
    net = models.TwoLayerNet(3, 5, seed=0)
    with (
        torch.no_grad()
    ):  # a neuron at -inf is inactive everywhere: the loss stays finite
        next(net.parameters())[0] = torch.tensor(
            [-float("inf"), 0.0, 0.0], dtype=torch.float64
        )
    with pytest.raises(
        flows.DivergenceError,
        match=r"parameter .* became non-finite by step 16 .* lower the step size",
    ):
        flows.gd(net, positive, lr=0.1, steps=40, snapshot_steps=[0, 40])


def test_divergence_error_is_a_floating_point_error():
    assert issubclass(flows.DivergenceError, FloatingPointError)


def test_a_sane_step_size_does_not_raise(ds):
    net = models.TwoLayerNet(3, 5, scale=0.1, seed=0)
    traj = flows.gd(net, ds, lr=0.1, steps=20)
    assert np.all(np.isfinite(traj.loss))
