"""Tests of the stored MNIST runs of Thm 5.1 / Figs 2 and 6 (Sarussi, Brutzkus &
Globerson, ICML 2021): the resolved and halved plans, the store's lookup by code
key, and the horizons' step check."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from twolayer.experiments import sarussi2021 as ex


def _flow_time(plan):
    return sum(lr * n for lr, n, _ in plan)


@pytest.mark.parametrize("name", ["resolved", "halved"])
def test_plan_reaches_every_horizon_from_a_step_below_the_init(name):
    plan = ex.mnist_plan(name, [150.0, 1e4])
    assert _flow_time(plan) == pytest.approx(1e4, rel=1e-12)
    first_lr, first_n, _ = plan[0]
    assert first_n == 1 and first_lr <= 1e-3 * 1e-6  # a thousandth of the init
    # the steps grow with t: each stage's step is at most 1% of its start time
    t = 0.0
    for lr, n, _ in plan:
        if t > 0:
            assert lr <= 0.01 * t * (1 + 1e-9) or lr <= 0.002
        t += lr * n
    # the stated horizon t = 150 is a stage boundary
    times = np.cumsum([lr * n for lr, n, _ in plan])
    assert np.isclose(times, 150.0, rtol=1e-12).any()


def test_halved_plan_halves_every_step():
    full = ex.mnist_plan("resolved", [150.0])
    half = ex.mnist_plan("halved", [150.0])
    n_full = sum(n for _, n, _ in full)
    n_half = sum(n for _, n, _ in half)
    assert 1.9 < n_half / n_full < 2.1
    assert max(lr for lr, _, _ in half) == pytest.approx(
        max(lr for lr, _, _ in full) / 2, rel=0.05
    )
    with pytest.raises(ValueError, match="plan"):
        ex.mnist_plan("coarse", [150.0])


def _fake_rows(pair, setting, inits, plan, end):
    rows = []
    for label, scale, seed in inits:
        for i, t in enumerate([0.0, 1.0, 150.0]):
            rows.append(
                dict(
                    pair=f"{pair[0]} vs {pair[1]}",
                    setting=setting,
                    init=label,
                    seed=seed,
                    t=t,
                    loss=0.7 / (1 + i),
                    acc=1.0 if i == 2 else 0.5,
                    outside=0.5 * (2 - i) / 2,
                    outside_test=0.0,
                    **dict.fromkeys(("R", "spread", "ratio", "off_line"), 0.1),
                    **dict.fromkeys(("disagree", "angle"), 0.0),
                    n=10,
                    init_scale=scale,
                    plan=plan,
                    end=float(end),
                )
            )
    return pd.DataFrame(rows)


def test_store_is_read_at_the_current_code_key_and_missing_runs_computed(
    tmp_path, monkeypatch
):
    calls = []

    def compute(pair, setting, inits, plan, end):
        calls.append((tuple(pair), setting, tuple(inits), plan, end))
        return _fake_rows(pair, setting, inits, plan, end)

    monkeypatch.setattr(ex, "_mnist_compute", compute)
    store = tmp_path / "store.parquet"
    inits = [("small", 1e-6, 0), ("large", 0.05, 0)]
    frame = _fake_rows((3, 5), "centred", inits, "resolved", 150.0)
    frame["code_key"] = ex.mnist_code_key()
    frame.to_parquet(store)

    rows, computed = ex.mnist_stored([(3, 5)], [150.0], ["centred"], inits, store=store)
    assert computed == 0 and not calls
    assert list(dict.fromkeys(zip(rows.init, rows.seed))) == [
        ("small", 0),
        ("large", 0),
    ]

    # a seed the store lacks is computed, alone; the stored ones are reused
    more = inits + [("small", 1e-6, 7)]
    rows, computed = ex.mnist_stored([(3, 5)], [150.0], ["centred"], more, store=store)
    assert computed == 1 and calls[-1][2] == (("small", 1e-6, 7),)
    assert sorted(set(rows.seed)) == [0, 7]

    # a store computed with other code is not read
    frame["code_key"] = "0" * 12
    frame.to_parquet(store)
    calls.clear()
    ex.mnist_stored([(3, 5)], [150.0], ["centred"], inits, store=store)
    assert len(calls) == 1 and len(calls[0][2]) == 2


def test_horizons_refuse_a_rising_loss():
    rows = _fake_rows((0, 1), "centred", [("small", 1e-6, 0)], "resolved", 150.0)
    runs = ex.mnist_horizons(rows, 150.0)
    assert runs.t_fit.iloc[0] == 150.0 and runs.entered.iloc[0] == 0.0
    rows.loc[rows.t == 150.0, "loss"] = 0.8
    with pytest.raises(RuntimeError, match="loss rose"):
        ex.mnist_horizons(rows, 150.0)


def test_computed_runs_carry_each_init_its_own_scale(monkeypatch):
    def rows(pair, setting, inits, plan, **net):
        return [
            dict(pair="0 vs 1", setting=setting, init=label, seed=seed, t=0.0)
            for label, _, seed in inits
        ]

    monkeypatch.setattr(ex.theory, "mnist_pair_rows", rows)
    inits = [("small", 1e-6, 3), ("large", 0.05, 3)]  # one seed, two scales
    frame = ex._mnist_compute((0, 1), "centred", inits, "resolved", 150.0)
    assert dict(zip(frame.init, frame.init_scale)) == {"small": 1e-6, "large": 0.05}
    assert set(frame.plan) == {"resolved"} and set(frame.end) == {150.0}
