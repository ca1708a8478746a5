"""The networks: initialisations, the fixed second layer, the activation, bad
arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from twolayer import data, flows, models


def test_balanced_init_has_a_equal_plus_minus_norm_w():
    net = models.TwoLayerNet(5, 200, init="balanced", init_scale=0.3, seed=1)
    W, a = net.weights()
    assert W.shape == (200, 5) and a.shape == (200,)
    assert np.allclose(np.abs(a), np.linalg.norm(W, axis=1))
    assert (a > 0).any() and (a < 0).any()
    assert np.isclose(np.sqrt((W**2).sum(1).mean()), 0.3, rtol=0.1), (
        "w_j ~ N(0, I/d)·init_scale"
    )


def test_balanced_init_with_given_signs():
    s = np.array([1, -1, 1, -1])
    W, a = models.TwoLayerNet(3, 4, signs=s, seed=0).weights()
    assert np.array_equal(np.sign(a), s) and np.allclose(
        np.abs(a), np.linalg.norm(W, axis=1)
    )
    with pytest.raises(ValueError, match="signs must be a ±1 vector of length 4"):
        models.TwoLayerNet(3, 4, signs=[1, 0, 1, 1])


def test_gaussian_init_scales():
    W, a = models.TwoLayerNet(
        50, 400, init="gaussian", init_scale=0.01, second_layer_scale=3.0, seed=0
    ).weights()
    assert np.isclose(W.std(), 0.01, rtol=0.05)
    assert np.isclose(a.std(), 0.03, rtol=0.15)


def test_default_init_is_scaled_pytorch_uniform():
    d, m, scale = 16, 100, 0.5
    W, a = models.TwoLayerNet(d, m, init="default", init_scale=scale, seed=0).weights()
    assert np.abs(W).max() <= scale / np.sqrt(d) and np.abs(
        W
    ).max() > 0.9 * scale / np.sqrt(d)
    assert np.abs(a).max() <= scale / np.sqrt(m)


@pytest.mark.parametrize("init", models.INITS)
def test_init_scale_multiplies_every_parameter(init):
    """One meaning for every init: (W, a)(λ) = λ·(W, a)(1) for the same seed."""
    lam = 0.037
    W1, a1 = models.TwoLayerNet(4, 9, init=init, second_layer_scale=2.0).weights()
    W, a = models.TwoLayerNet(
        4, 9, init=init, init_scale=lam, second_layer_scale=2.0
    ).weights()
    assert np.allclose(W, lam * W1, rtol=1e-14) and np.allclose(a, lam * a1, rtol=1e-14)
    R1 = models.ResidualNet(4, width=5, seed=1).weight_matrices()
    R = models.ResidualNet(4, width=5, init_scale=lam, seed=1).weight_matrices()
    assert all(np.allclose(x, lam * y, rtol=1e-14) for x, y in zip(R, R1))


def test_scale_is_a_deprecated_alias_of_init_scale():
    def same(a, b):
        return all(np.array_equal(x, y) for x, y in zip(a, b))

    assert same(
        models.TwoLayerNet(3, 5, init="gaussian", scale=0.2).weights(),
        models.TwoLayerNet(3, 5, init="gaussian", init_scale=0.2).weights(),
    )
    assert same(
        models.TwoLayerNet.fixed_second_layer(2, 3, 0.2, scale=0.1).weights(),
        models.TwoLayerNet.fixed_second_layer(2, 3, 0.2, init_scale=0.1).weights(),
    )
    assert same(
        models.ResidualNet(3, width=4, scale=0.5).weight_matrices(),
        models.ResidualNet(3, width=4, init_scale=0.5).weight_matrices(),
    )
    with pytest.raises(TypeError, match="not both"):
        models.TwoLayerNet(3, 5, init_scale=0.2, scale=0.1)


def test_init_is_deterministic_in_the_seed():
    a = models.TwoLayerNet(4, 10, seed=3).weights()
    b = models.TwoLayerNet(4, 10, seed=3).weights()
    c = models.TwoLayerNet(4, 10, seed=4).weights()
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], c[0])


def test_fixed_second_layer_is_not_trained():
    net = models.TwoLayerNet.fixed_second_layer(
        3, k=4, alpha=0.1, init_scale=0.1, seed=0
    )
    assert not net.trains_second_layer
    assert [n for n, _ in net.named_parameters()] == ["W"]
    _, a0 = net.weights()
    assert np.array_equal(a0, [1, 1, 1, 1, -1, -1, -1, -1])
    W0 = net.weights()[0]
    flows.gd(net, data.two_gaussians(20, 3, seed=0), lr=0.5, steps=5)
    W1, a1 = net.weights()
    assert np.array_equal(a1, a0) and not np.allclose(W1, W0)
    with pytest.raises(ValueError, match="fixed_signs must be a ±1 vector of length 3"):
        models.TwoLayerNet(2, 3, fixed_signs=[1, -1])


def test_leaky_activation_and_forward():
    net = models.TwoLayerNet(2, 3, alpha=0.2, seed=0)
    z = torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64)
    assert torch.allclose(
        net.activation(z), torch.tensor([-0.4, 0.0, 3.0], dtype=torch.float64)
    )
    relu = models.TwoLayerNet(2, 3, alpha=0.0, seed=0)
    assert torch.equal(
        relu.activation(z), torch.tensor([0.0, 0.0, 3.0], dtype=torch.float64)
    )
    X = np.random.default_rng(0).standard_normal((7, 2))
    W, a = net.weights()
    assert np.allclose(net.predict(X), models.two_layer_output(W, a, X, alpha=0.2))
    assert np.allclose(
        relu.predict(X), np.maximum(X @ relu.weights()[0].T, 0) @ relu.weights()[1]
    )


def test_predict_on_a_read_only_dataset_copies_without_warning(recwarn):
    ds = data.two_gaussians(5, 2, seed=0)
    net = models.TwoLayerNet(2, 3, seed=0)
    out = net.predict(ds.X)
    assert out.shape == (5,) and not [
        w for w in recwarn if "not writable" in str(w.message)
    ]


def test_two_layer_net_is_two_homogeneous():
    net = models.TwoLayerNet(3, 5, alpha=0.1, seed=0)
    X = np.random.default_rng(1).standard_normal((4, 3))
    W, a = net.weights()
    assert np.allclose(
        models.two_layer_output(2 * W, 2 * a, X, 0.1), 4 * net.predict(X)
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(d=0, width=3), "d must be a positive integer"),
        (dict(d=2.5, width=3), "d must be a positive integer"),
        (dict(d=2, width=0), "width must be a positive integer"),
        (dict(d=2, width=3, alpha=1.0), r"alpha must be in \[0, 1\)"),
        (dict(d=2, width=3, alpha=-0.1), r"alpha must be in \[0, 1\)"),
        (dict(d=2, width=3, init="xavier"), "init must be one of"),
        (dict(d=2, width=3, init_scale=0.0), "init_scale must be > 0"),
        (dict(d=2, width=3, scale=0.0), "init_scale must be > 0"),
    ],
)
def test_two_layer_net_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        models.TwoLayerNet(**kwargs)


def test_residual_net_forward_shape_and_bad_depth():
    net = models.ResidualNet(6, width=10, depth=4, init_scale=0.5, seed=0)
    out = net(torch.randn(9, 6, dtype=torch.float64))
    assert out.shape == (9,)
    mats = net.weight_matrices()
    assert [m.shape for m in mats] == [(10, 6), (10, 10), (10, 10), (1, 10)]
    with pytest.raises(ValueError, match="depth must be >= 3"):
        models.ResidualNet(6, depth=2)
    with pytest.raises(ValueError, match="init_scale must be > 0"):
        models.ResidualNet(6, init_scale=-1)


def test_conv_net_forward_shape_and_representations():
    net = models.ConvNet(channels=(4, 8), fc_width=16, seed=0)
    x = torch.rand(3, 784)
    assert net(x).shape == (3,)
    reps = net.representations(x)
    assert len(reps) == 8
    assert [r.shape[1] for r in reps] == [
        784,
        4 * 784,
        4 * 196,
        8 * 196,
        8 * 49,
        64 * 49,
        64 * 49,
        16,
    ]
    with pytest.raises(ValueError, match="fc_scale must be > 0"):
        models.ConvNet(fc_scale=0)


def test_building_residual_or_conv_nets_leaves_the_global_generator_alone():
    """Every network seeds its own initialisation (like TwoLayerNet's generator):
    the numbers a caller draws after building one do not depend on it."""
    import torch

    from twolayer import models

    for build in (
        lambda: models.ResidualNet(3, 4, seed=5),
        lambda: models.ConvNet(seed=5),
    ):
        torch.manual_seed(123)
        expected = torch.rand(3)
        torch.manual_seed(123)
        first = build()
        assert torch.equal(torch.rand(3), expected)
        second = build()  # same seed, same weights, whatever the global state
        assert all(
            torch.equal(p, q) for p, q in zip(first.parameters(), second.parameters())
        )


def test_homogeneity_counts_only_trainable_layers():
    """f is 2-homogeneous in (W, a) but 1-homogeneous in W under a fixed second
    layer."""
    import torch

    from twolayer import models

    free = models.TwoLayerNet(3, 4, seed=0)
    fixed = models.TwoLayerNet.fixed_second_layer(3, 2, 0.2, seed=0)
    x = torch.randn(5, 3, dtype=torch.float64)
    for net in (free, fixed):
        before = net(x)
        with torch.no_grad():
            for p in net.parameters():
                p.mul_(3.0)
        assert torch.allclose(net(x), 3.0**net.homogeneity * before)
    assert (free.homogeneity, fixed.homogeneity) == (2, 1)


def test_convnet_without_fc_biases():
    net = models.ConvNet((4, 4), fc_bias=False, seed=0)
    assert net.fc7.bias is None and net.fc8.bias is None
    assert net(torch.zeros(2, 784)).shape == (2,)
    with_bias = models.ConvNet((4, 4), seed=0)

    def count(m):
        return sum(p.numel() for p in m.parameters())

    assert count(with_bias) - count(net) == 128 + 1
