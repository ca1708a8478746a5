"""The trainers: GD/SGD/Adam, snapshots, the Trajectory, divergence and bad
arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from twolayer import data, flows, models


@pytest.fixture
def ds():
    return data.orthant_data(n=30, d=4, seed=0)


def test_gd_decreases_the_loss_on_separable_data(ds):
    net = models.TwoLayerNet(4, 20, scale=0.1, seed=0)
    traj = flows.gd(net, ds, lr=0.5, steps=200, n_snapshots=10)
    assert traj.loss[-1] < 0.5 * traj.loss[0]
    assert np.all(np.diff(traj.step_loss) <= 1e-12), (
        "small-step GD decreases the loss monotonically"
    )
    assert np.all(ds.y * net.predict(ds.X) > 0), (
        "separable data end up classified correctly"
    )


def test_reductions_differ_by_n(ds):
    q = torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64)
    assert torch.isclose(
        flows.logistic_loss(q, "sum"), 3 * flows.logistic_loss(q, "mean")
    )
    assert torch.isclose(
        flows.logistic_loss(torch.zeros(1, dtype=torch.float64)),
        torch.tensor(np.log(2.0), dtype=torch.float64),
    )


class Recorder(nn.Module):
    """A linear model that records which examples (column 0 = index) it saw."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.lin = nn.Linear(d, 1, bias=False, dtype=torch.float64)
        self.seen: list[list[int]] = []

    def forward(self, x):
        self.seen.append(x[:, 0].round().long().tolist())
        return self.lin(x).squeeze(-1)


def test_sgd_visits_each_point_once_per_epoch():
    n = 10
    X = np.column_stack([np.arange(n), np.ones(n)])
    toy = data.Dataset(X, np.where(np.arange(n) % 2, 1, -1), "indexed", "test")
    model = Recorder(2)
    traj = flows.sgd(
        model, toy, lr=0.01, epochs=3, batch_size=4, snapshot_steps=[], seed=5
    )
    assert traj.config["steps"] == 9, "ceil(10/4) = 3 batches per epoch"
    batches = model.seen
    assert [len(b) for b in batches] == [4, 4, 2] * 3
    epochs = [sum(batches[3 * e : 3 * e + 3], []) for e in range(3)]
    for e in epochs:
        assert sorted(e) == list(range(n)), (
            "without replacement: every point exactly once"
        )
    assert epochs[0] != epochs[1], "a fresh permutation each epoch"
    model2 = Recorder(2)
    flows.sgd(model2, toy, lr=0.01, epochs=3, batch_size=4, snapshot_steps=[], seed=5)
    assert model2.seen == batches, "the order is seeded"


def test_snapshots_at_requested_steps_and_accessors(ds):
    net = models.TwoLayerNet(4, 6, scale=0.1, seed=0)
    norms = lambda m: float(m.W.detach().norm())  # noqa: E731
    traj = flows.gd(
        net,
        ds,
        lr=0.2,
        steps=10,
        snapshot_steps=[0, 3, 7, 50],
        callbacks={"norm": norms},
    )
    assert traj.steps.tolist() == [0, 3, 7, 10], (
        "requested steps, clipped to the run length"
    )
    assert np.allclose(traj.times, traj.steps * 0.2)
    assert traj.param("W").shape == (4, 6, 4) and traj.param("a").shape == (4, 6)
    assert np.array_equal(traj.final["W"], net.weights()[0])
    assert np.allclose(
        traj.record("norm"), [np.linalg.norm(s["W"]) for s in traj.snapshots]
    )
    assert len(traj.loss) == 4 and len(traj.step_loss) == 10
    assert traj.config["optimizer"] == "gd" and traj.wall_time > 0
    with pytest.raises(KeyError, match="no record 'margin'; recorded: \\['norm'\\]"):
        traj.record("margin")


def test_default_snapshot_schedule():
    s = flows.snapshot_schedule(1000, count=20)
    assert s[0] == 0 and s[-1] == 1000 and np.all(np.diff(s) > 0)
    assert (s < 100).sum() >= 5, "log-spaced early part"


def test_snapshots_are_copies(ds):
    net = models.TwoLayerNet(4, 3, seed=0)
    traj = flows.gd(net, ds, lr=0.5, steps=3, snapshot_steps=[0, 3])
    assert not np.array_equal(traj.snapshots[0]["W"], traj.snapshots[1]["W"])
    clone = flows.load_state(net, traj.snapshots[0])
    assert np.array_equal(clone.weights()[0], traj.snapshots[0]["W"])


def test_adam_runs_and_records_step_counts(ds):
    net = models.TwoLayerNet(4, 5, scale=0.1, seed=0)
    traj = flows.adam(net, ds, lr=1e-2, epochs=2, batch_size=10, snapshot_steps=[0, 6])
    assert traj.steps.tolist() == [0, 6] and traj.times.tolist() == [0.0, 6.0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(optimizer="lbfgs", lr=0.1, steps=1), "optimizer must be one of"),
        (
            dict(optimizer="gd", lr=0.1, steps=1, reduction="max"),
            "reduction must be one of",
        ),
        (dict(optimizer="gd", lr=0.0, steps=1), "lr must be > 0"),
        (dict(optimizer="gd", lr=0.1), "steps must be a non-negative integer"),
        (
            dict(optimizer="gd", lr=0.1, steps=-1),
            "steps must be a non-negative integer",
        ),
        (
            dict(optimizer="sgd", lr=0.1, batch_size=2),
            "epochs must be a non-negative integer",
        ),
        (dict(optimizer="sgd", lr=0.1, epochs=1), r"batch_size must be in \[1, 30\]"),
        (
            dict(optimizer="adam", lr=0.1, epochs=1, batch_size=31),
            r"batch_size must be in \[1, 30\]",
        ),
    ],
)
def test_bad_arguments(ds, kwargs, match):
    with pytest.raises(ValueError, match=match):
        flows.train(models.TwoLayerNet(4, 3), ds, **kwargs)


def test_data_must_be_a_dataset(ds):
    with pytest.raises(ValueError, match="data must be a twolayer.data.Dataset"):
        flows.gd(models.TwoLayerNet(4, 3), (ds.X, ds.y), lr=0.1, steps=1)


@pytest.mark.parametrize(
    "alpha, fixed, reduction",
    [(0.0, False, "sum"), (0.2, False, "mean"), (0.2, True, "mean")],
)
def test_written_out_gd_step_equals_autograd(alpha, fixed, reduction):
    """flows.gd's TwoLayerNet step (gradient written out) = an autograd SGD step."""
    import copy

    import torch

    from twolayer import data, models
    from twolayer.flows import steps

    ds = data.two_gaussians(40, 5, seed=1)
    signs = np.r_[np.ones(4), -np.ones(4)] if fixed else None
    net = models.TwoLayerNet(
        ds.d, 8, alpha=alpha, init="gaussian", scale=0.3, seed=2, fixed_signs=signs
    )
    ref, W0 = copy.deepcopy(net), net.W.detach().clone()
    X, y = torch.tensor(ds.X), torch.tensor(ds.y)
    loss = steps._two_layer_gd_step(net, X, y, 0.1, reduction)
    params = [p for p in ref.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.1)
    expected = steps.logistic_loss(y * ref(X), reduction)
    expected.backward()
    opt.step()
    assert loss == pytest.approx(expected.item(), rel=1e-12)
    assert torch.allclose(net.W, ref.W, atol=1e-14) and torch.allclose(
        net.a, ref.a, atol=1e-14
    )
    assert (net.W - W0).abs().max() > 1e-6  # the step moved the weights


class _AutogradNet(models.TwoLayerNet):
    """A TwoLayerNet the trainers do not recognise: trained through autograd."""


def _autograd_copy(net):
    import copy

    clone = copy.deepcopy(net)
    clone.__class__ = _AutogradNet
    return clone


@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_written_out_sgd_equals_autograd_sgd(alpha):
    """flows.sgd on a TwoLayerNet takes the written-out step on each
    mini-batch: the run equals SGD through autograd (same batches)."""
    import copy

    ds = data.two_gaussians(60, 4, seed=3)
    net = models.TwoLayerNet(4, 8, alpha=alpha, init="default", scale=0.5, seed=1)
    fast = flows.sgd(
        copy.deepcopy(net), ds, lr=0.2, epochs=15, batch_size=16, seed=4, n_snapshots=3
    )
    ref = flows.sgd(
        _autograd_copy(net), ds, lr=0.2, epochs=15, batch_size=16, seed=4, n_snapshots=3
    )
    np.testing.assert_allclose(fast.step_loss, ref.step_loss, rtol=1e-12)
    np.testing.assert_allclose(fast.final["W"], ref.final["W"], atol=1e-12)
    np.testing.assert_allclose(fast.final["a"], ref.final["a"], atol=1e-12)
    assert np.abs(fast.final["W"] - net.W.detach().numpy()).max() > 1e-3


def test_gd_skips_blank_input_columns_exactly():
    """Columns that are zero on every point (MNIST's border) are skipped: the
    run equals full-batch SGD through autograd, and their weights stay put."""
    import copy

    from twolayer import data, models

    base = data.two_gaussians(40, 5, seed=1)
    X = np.hstack([np.zeros((40, 2)), base.X[:, :3], np.zeros((40, 1)), base.X[:, 3:]])
    ds = base.with_data(X, base.y, name="padded", note="three blank columns")
    net = models.TwoLayerNet(ds.d, 6, alpha=0.2, init="gaussian", scale=0.3, seed=2)
    W0 = net.W.detach().clone().numpy()
    fast = flows.gd(copy.deepcopy(net), ds, lr=0.1, steps=20, n_snapshots=2)
    ref = flows.sgd(
        _autograd_copy(net), ds, lr=0.1, epochs=20, batch_size=40, n_snapshots=2
    )
    np.testing.assert_allclose(fast.final["W"], ref.final["W"], atol=1e-12)
    np.testing.assert_allclose(fast.final["a"], ref.final["a"], atol=1e-12)
    np.testing.assert_array_equal(fast.final["W"][:, [0, 1, 5]], W0[:, [0, 1, 5]])
    assert np.abs(fast.final["W"] - W0).max() > 1e-4


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_gd_step_losses_taken_by_block_equal_autograd(reduction):
    """GD writes each step's margins into a block and takes the losses of 16
    steps at once: every step's loss (blocks cut short by snapshots too) is
    the loss autograd's full-batch SGD computes before that step."""
    import copy

    ds = data.two_gaussians(30, 4, seed=5)
    net = models.TwoLayerNet(4, 6, alpha=0.1, init="gaussian", scale=0.4, seed=3)
    marks = [0, 5, 21, 37, 50]
    fast = flows.gd(
        copy.deepcopy(net),
        ds,
        lr=0.1,
        steps=50,
        reduction=reduction,
        snapshot_steps=marks,
    )
    ref = flows.sgd(
        _autograd_copy(net),
        ds,
        lr=0.1,
        epochs=50,
        batch_size=30,
        reduction=reduction,
        snapshot_steps=marks,
    )
    assert fast.step_loss.shape == (50,)
    np.testing.assert_allclose(fast.step_loss, ref.step_loss, rtol=1e-12)
    np.testing.assert_allclose(fast.loss, ref.loss, rtol=1e-12)
    assert (
        fast.step_loss[-1] < 0.9 * fast.step_loss[0]
    )  # the losses move: not one value repeated


@pytest.mark.parametrize(
    "fixed, alpha, reduction",
    [(False, 0.0, "mean"), (True, 0.2, "mean"), (False, 0.3, "sum")],
)
def test_gd_many_equals_one_gd_run_per_network(fixed, alpha, reduction):
    """Several networks trained as one stacked tensor: each run equals its own
    flows.gd run (snapshots, losses, final parameters left in the model)."""
    import copy

    base = data.two_gaussians(30, 4, seed=2)
    X = np.hstack(
        [base.X, np.zeros((30, 1))]
    )  # a blank column: the live-column path too
    ds = base.with_data(X, base.y, name="padded", note="one blank column")

    def make(seed, scale):
        if fixed:
            return models.TwoLayerNet.fixed_second_layer(
                5, 3, alpha, scale=scale, seed=seed
            )
        return models.TwoLayerNet(
            5, 6, alpha=alpha, init="gaussian", scale=scale, seed=seed
        )

    nets = [make(s, sc) for s, sc in ((0, 0.1), (1, 0.5), (2, 1.0))]
    alone = [
        flows.gd(
            copy.deepcopy(n), ds, lr=0.2, steps=40, reduction=reduction, n_snapshots=5
        )
        for n in nets
    ]
    many = flows.gd_many(nets, ds, lr=0.2, steps=40, reduction=reduction, n_snapshots=5)
    for one, batched, net in zip(alone, many, nets):
        np.testing.assert_array_equal(one.steps, batched.steps)
        np.testing.assert_allclose(batched.loss, one.loss, rtol=1e-10)
        np.testing.assert_allclose(batched.step_loss, one.step_loss, rtol=1e-10)
        for key in ("W", "a"):
            np.testing.assert_allclose(batched.final[key], one.final[key], atol=1e-12)
        np.testing.assert_allclose(net.W.detach().numpy(), one.final["W"], atol=1e-12)
    assert abs(many[0].loss[-1] - many[2].loss[-1]) > 1e-3, "the networks differ"


def test_gd_many_of_one_network_equals_gd_without_warnings():
    """A stack of one network writes its (1, n) margins row without torch
    resizing the output (deprecated: a future torch refuses it)."""
    import copy
    import warnings

    ds = data.two_gaussians(20, 3, seed=1)
    net = models.TwoLayerNet(3, 4, init="gaussian", scale=0.5, seed=3)
    alone = flows.gd(copy.deepcopy(net), ds, lr=0.2, steps=30, n_snapshots=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (many,) = flows.gd_many([net], ds, lr=0.2, steps=30, n_snapshots=3)
    np.testing.assert_allclose(many.step_loss, alone.step_loss, rtol=1e-12)
    np.testing.assert_allclose(many.final["W"], alone.final["W"], atol=1e-12)


def test_gd_many_refuses_networks_of_different_shapes():
    ds = data.two_gaussians(10, 3, seed=0)
    with pytest.raises(ValueError, match="one shape"):
        flows.gd_many(
            [models.TwoLayerNet(3, 4), models.TwoLayerNet(3, 5)], ds, lr=0.1, steps=2
        )
    with pytest.raises(ValueError, match="at least one"):
        flows.gd_many([], ds, lr=0.1, steps=2)


def test_sgd_of_any_model_is_torch_sgd_bit_for_bit():
    """flows.sgd of a model without a written-out step (here the residual net)
    updates p ← p − η∇p itself: the run equals torch.optim.SGD (no momentum)
    on the same mini-batches, bit for bit."""
    import copy

    ds = data.two_gaussians(40, 3, seed=2)
    net = models.ResidualNet(3, width=6, depth=3, scale=0.5, seed=1)
    run = flows.sgd(
        copy.deepcopy(net), ds, lr=0.3, epochs=4, batch_size=16, seed=5, n_snapshots=2
    )
    ref = copy.deepcopy(net)
    opt = torch.optim.SGD(ref.parameters(), lr=0.3)
    X, y = torch.tensor(ds.X), torch.tensor(ds.y)
    gen = torch.Generator().manual_seed(5)
    for _ in range(4):
        order = torch.randperm(ds.n, generator=gen)
        for j in range(0, ds.n, 16):
            idx = order[j : j + 16]
            opt.zero_grad(set_to_none=True)
            flows.logistic_loss(y[idx] * ref(X[idx])).backward()
            opt.step()
    for name, p in ref.named_parameters():
        np.testing.assert_array_equal(run.final[name], p.detach().numpy())
    assert any(
        np.abs(run.final[k] - p.detach().numpy()).max() > 1e-3
        for k, p in net.named_parameters()
    )
