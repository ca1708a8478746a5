"""flows.memo: a finished run is stored under every input and returned again."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from twolayer import data, flows, models
from twolayer.flows import memo


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(memo.RUN_CACHE_ENV, str(tmp_path))
    return tmp_path


@pytest.fixture
def ds():
    return data.orthant_data(n=20, d=3, seed=0)


def _entries(store):
    return sorted(p.name for p in store.glob("*/*.pkl"))


def test_a_repeated_gd_run_is_read_back_with_the_final_parameters(store, ds):
    first = models.TwoLayerNet(3, 8, init_scale=0.1, seed=0)
    a = flows.gd(first, ds, lr=0.5, steps=50, n_snapshots=5)
    assert len(_entries(store)) == 1
    second = models.TwoLayerNet(3, 8, init_scale=0.1, seed=0)
    b = flows.gd(second, ds, lr=0.5, steps=50, n_snapshots=5)
    assert len(_entries(store)) == 1, "the same run is not stored twice"
    np.testing.assert_array_equal(a.loss, b.loss)
    np.testing.assert_array_equal(a.final["W"], b.final["W"])
    assert torch.equal(first.W, second.W), "the model ends where the computed run ended"


def test_any_changed_input_is_a_different_run(store, ds):
    def run(**kw):
        args = dict(init_scale=0.1, seed=0, alpha=0.0)
        args.update({k: kw.pop(k) for k in list(kw) if k in args})
        net = models.TwoLayerNet(3, 8, **args)
        return flows.gd(
            net, kw.pop("data", ds), lr=kw.pop("lr", 0.5), steps=20, n_snapshots=3
        )

    run()
    run(seed=1)  # other initial parameters
    run(alpha=0.1)  # other configuration, same parameters
    run(lr=0.25)  # other trainer argument
    run(data=data.orthant_data(n=20, d=3, seed=1))  # other data
    assert len(_entries(store)) == 5


def test_gradient_flow_is_stored_and_leaves_the_model_alone(store, ds):
    net = models.TwoLayerNet(3, 6, init_scale=0.1, seed=0)
    W0 = net.W.detach().clone()
    a = flows.gradient_flow(net, ds, 1e3, n_snapshots=4)
    b = flows.gradient_flow(net, ds, 1e3, n_snapshots=4)
    assert len(_entries(store)) == 1
    np.testing.assert_array_equal(a.records["log_loss"], b.records["log_loss"])
    assert torch.equal(net.W, W0)


def test_runs_with_callbacks_or_without_a_store_are_computed(store, ds, monkeypatch):
    net = models.TwoLayerNet(3, 6, init_scale=0.1, seed=0)
    flows.gd(net, ds, lr=0.5, steps=5, callbacks={"norm": lambda m: float(m.W.norm())})
    assert _entries(store) == []
    monkeypatch.setenv(memo.RUN_CACHE_ENV, "")
    flows.gd(net, ds, lr=0.5, steps=5)
    assert _entries(store) == []


def test_an_unreadable_entry_is_recomputed(store, ds):
    first = flows.gd(
        models.TwoLayerNet(3, 6, seed=0), ds, lr=0.5, steps=5, n_snapshots=2
    )
    (entry,) = store.glob("*/*.pkl")
    entry.write_bytes(b"truncated")
    traj = flows.gd(
        models.TwoLayerNet(3, 6, seed=0), ds, lr=0.5, steps=5, n_snapshots=2
    )
    np.testing.assert_array_equal(traj.loss, first.loss)
    assert entry.read_bytes() != b"truncated"
    assert not list(store.glob("*/.*.tmp")), "no temporary file is left behind"


def test_a_failed_run_stores_nothing(store, ds):
    net = models.TwoLayerNet(3, 6, seed=0)
    with pytest.raises(flows.DivergenceError):
        flows.gd(net, ds, lr=1e30, steps=50)
    assert _entries(store) == []


def test_a_new_code_version_removes_the_old_versions_entries(store, ds, monkeypatch):
    old = store / "0123456789abcdef"
    old.mkdir()
    (old / "train-x.pkl").write_bytes(b"stale")
    flows.gd(models.TwoLayerNet(3, 6, seed=0), ds, lr=0.5, steps=5, n_snapshots=2)
    assert not old.exists()
    assert len(_entries(store)) == 1


def test_gd_many_is_stored_and_restores_every_network(store, ds):
    def nets():
        return [
            models.TwoLayerNet(3, 4, init_scale=sc, seed=s)
            for s, sc in ((0, 0.1), (1, 0.5))
        ]

    first, second = nets(), nets()
    a = flows.gd_many(first, ds, lr=0.5, steps=30, n_snapshots=3)
    b = flows.gd_many(second, ds, lr=0.5, steps=30, n_snapshots=3)
    assert len(_entries(store)) == 1
    for ta, tb, na, nb in zip(a, b, first, second):
        np.testing.assert_array_equal(ta.loss, tb.loss)
        assert torch.equal(na.W, nb.W) and torch.equal(na.a, nb.a)
    flows.gd_many(
        nets()[::-1], ds, lr=0.5, steps=30, n_snapshots=3
    )  # other order: other run
    assert len(_entries(store)) == 2
