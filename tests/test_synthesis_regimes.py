"""Unit tests of twolayer.regimes (regime maps) and the synthesis pages' library
functions."""

import numpy as np
import pandas as pd
import pytest

from twolayer import regimes, synthesis
from twolayer.theory import min2024


def _frame(rates):
    """A grid whose pass rate at scale i is rates[i] (10 seeds, one width; gap 0
    passes, 1 fails)."""
    rows = []
    for i, rate in enumerate(rates):
        for s in range(10):
            rows.append(
                dict(
                    init_scale=10.0 ** (i - 3),
                    width=4,
                    seed=s,
                    gap=0.0 if s < rate * 10 else 1.0,
                )
            )
    return pd.DataFrame(rows)


def test_critical_scale_brackets_the_crossing():
    c = regimes.critical_scale(_frame([1, 1, 0.6, 0.2, 0]), "gap", 0.5)
    assert (c["lo"], c["hi"]) == (pytest.approx(1e-1), pytest.approx(1.0))
    assert c["rate_lo"] == pytest.approx(0.6) and c["rate_hi"] == pytest.approx(0.2)
    assert c["critical"] == pytest.approx(np.sqrt(1e-1))


def test_critical_scale_without_crossing_and_from_the_start():
    assert np.isnan(regimes.critical_scale(_frame([1, 1, 1]), "gap", 0.5)["critical"])
    c = regimes.critical_scale(_frame([0.1, 0, 0]), "gap", 0.5)
    assert np.isnan(c["lo"]) and c["hi"] == pytest.approx(1e-3)


def test_pass_rates_and_relation():
    f = _frame([1, 0.3])
    r = regimes.pass_rates(f, "gap", 0.5)
    assert r["pass_rate"].tolist() == pytest.approx([1.0, 0.3])
    r = regimes.pass_rates(f, "gap", 0.5, ">=")
    assert r["pass_rate"].tolist() == pytest.approx([0.0, 0.7])


def test_per_seed_takes_the_worst_width():
    f = pd.DataFrame(
        dict(
            init_scale=[1.0] * 4,
            width=[4, 20, 4, 20],
            seed=[0, 0, 1, 1],
            gap=[1, 3, 2, 0],
        )
    )
    assert regimes.per_seed(f, 1.0, "gap").tolist() == [3, 2]


def test_code_key_is_stable_and_short():
    assert regimes.code_key() == regimes.code_key()
    assert len(regimes.code_key()) == 12


def test_own_cone_exits_counts_leaving_own_cone_or_dead():
    P, M, D, N = min2024.S_PLUS, min2024.S_MINUS, min2024.S_DEAD, min2024.S_NONE
    record = np.array([[N, M], [P, M], [P, D], [N, D]])
    signs = np.array([1.0, -1.0])
    assert synthesis.own_cone_exits(record, signs) == 1  # neuron 0 leaves S+ at the end
    assert synthesis.own_cone_exits(record, signs, start=3) == 0
    assert (
        synthesis.own_cone_exits(np.array([[M], [N]]), np.array([1.0])) == 0
    )  # not its own cone


def test_group_mass_ratio():
    W = np.array([[3.0, 4.0], [0.0, 1.0], [1.0, 0.0]])
    assert synthesis.group_mass_ratio(W, np.array([1.0, -1.0, -1.0])) == pytest.approx(
        5 / np.sqrt(2)
    )


def test_grid_point_runs_and_is_seeded():
    a = regimes.sarussi_point(1e-3, 4, 0, t_max=1e3)
    b = regimes.sarussi_point(1e-3, 4, 0, t_max=1e3)
    assert a["sarussi"] == b["sarussi"] and 0 <= a["nar"] <= 1
    p = regimes.phuong_min_point(
        1e-3, 4, 0, t_max=1e120
    )  # reaches the first late snapshot
    assert set(p) >= {"phuong", "min_aligned", "stable_rank", "j0_event"}


def test_compute_records_errors_and_keys():
    f = regimes.compute(
        "sarussi",
        points=[
            dict(init_scale=1e-3, width=4, seed=0, t_max=1e2),
            dict(init_scale=-1.0, width=4, seed=0, t_max=1e2),
        ],
    )
    assert f["error"].iloc[0] == "" and f["error"].iloc[1] != ""
    assert (f["code_key"] == regimes.grid_key("sarussi")).all()
    with pytest.raises(ValueError, match="name must be one of"):
        regimes.compute("nope")


def test_nonsymmetric_data_is_not_mirrored_and_mu_falls_with_spread():
    from twolayer.theory import min2024

    tight, wide = (
        synthesis.nonsymmetric_data(std=0.3, seed=1),
        synthesis.nonsymmetric_data(std=1.5, seed=1),
    )
    assert np.abs(tight.X).max() <= 1 + 1e-12
    w_plus, w_minus = synthesis.max_margin_pair(tight)
    assert (
        np.linalg.norm(
            w_plus / np.linalg.norm(w_plus) + w_minus / np.linalg.norm(w_minus)
        )
        > 0.1
    )
    assert (
        min2024.separability(tight.X, tight.y)
        > 0
        > min2024.separability(wide.X, wide.y)
    )


def test_live_gap_is_zero_on_the_limit_and_nan_when_all_dead():
    data = synthesis.synthesis_data(seed=0)
    w_plus, w_minus = synthesis.max_margin_pair(data)
    W = np.stack([w_plus, 2 * w_minus])
    assert synthesis.live_gap(
        W, np.array([1.0, -1.0]), data.X, w_plus, w_minus
    ) == pytest.approx(0, abs=1e-12)
    assert np.isnan(
        synthesis.live_gap(np.zeros((2, data.d)), np.ones(2), data.X, w_plus, w_minus)
    )


def test_phase1_alignment_small_init_points_along_mu():
    out = synthesis.phase1_alignment(0, 0.1, 1.0, alpha=0.5, width=6)
    assert out["small"] > 1 - 2 * 0.1**2 > out["large"]
    assert out["T1"] > 0 and out["sigma"] < 1e-2


def test_move_point_reports_the_hypotheses():
    out = synthesis.move_point(
        synthesis.nonsymmetric_data(std=0.3, seed=0), width=4, t_max=1e20
    )
    assert out["orthogonal"] and out["mu"] > 0 and np.isfinite(out["t_scale"])
    assert out["t1"] <= out["t_scale"] * 10


def test_scale_trials_flags_each_run_of_the_bracket_and_the_ends():
    f = _frame([1, 1, 0.6, 0.2, 0])
    s = regimes.scale_trials(f, "gap", 0.5)
    assert s["lo"] == pytest.approx(1e-1) and s["hi"] == pytest.approx(1.0)
    # counted independently: pass flags at lo, fail flags at hi and at the ends
    assert s["below"].sum() == 6 and s["above"].sum() == 8
    assert s["top"].sum() == 0 and s["bottom"].sum() == 0
    assert len(s["below"]) == len(s["top"]) == 10
    assert "below" not in regimes.scale_trials(_frame([1, 1]), "gap", 0.5)


def test_clause_table_counts_failures_and_events():
    small = pd.DataFrame(
        dict(
            width=[2] * 4 + [3] * 4,
            gap=[0, 1, 1, 0, 0, 0, 0, 1],
            ev=[False, True, False, False, False, False, False, True],
        )
    )
    large = small.assign(gap=1.0)
    t = regimes.clause_table(small, large, "gap", 0.5, "ev", lambda m: 2.0**-m)
    assert t["m"].tolist() == [2, 3]
    assert t["failed"].tolist() == [2, 1] and t["failed_with_event"].tolist() == [1, 1]
    assert t["bound"].tolist() == pytest.approx([0.75, 0.875])
    assert t["large_fail_rate"].tolist() == [1.0, 1.0]
    assert t["successes"].iloc[0].tolist() == [True, False, False, True]
    assert not t["rival"].iloc[1].any()


def test_mirror_gap_and_span_rank_on_antipodal_data():
    data = synthesis.synthesis_data(seed=0)
    assert synthesis.mirror_gap(data) < 1e-5  # mirror images of the linear problem
    w_plus, w_minus = synthesis.max_margin_pair(data)
    # independently: on antipodal data w− = −w+
    assert np.allclose(
        w_plus / np.linalg.norm(w_plus), -w_minus / np.linalg.norm(w_minus), atol=1e-5
    )
    assert 1 <= synthesis.support_span_rank(data) <= data.d
    assert synthesis.mirror_gap(synthesis.nonsymmetric_data(std=0.3, seed=1)) > 0.05


def test_moves_draws_point_kinds():
    out = regimes.moves_draws_point("alpha", 0.5, 0)
    assert set(out) >= {"gap_1e+100", "gap_1e+300"}
    with pytest.raises(ValueError, match="kind must be one of"):
        regimes.moves_draws_point("nope", 0.0, 0)


def test_grid_key_follows_the_code_its_points_run(monkeypatch):
    """A grid's key covers the library functions its points call, transitively, and
    the constants they read; a function no point calls does not enter it."""
    from twolayer.theory import lyu2021, sarussi2021

    names = dict(regimes.source_closure([regimes.lyu_point]))
    assert "twolayer.theory.lyu2021.limit_error" in names
    assert not any(n.startswith("twolayer.theory.sarussi2021") for n in names)
    key = regimes.grid_key("lyu")
    monkeypatch.setattr(sarussi2021, "par_svm", lambda *a: None)
    assert regimes.grid_key("lyu") == key, "an unrelated edit made the grid stale"

    def limit_error(*args):  # an edit of a function the points call
        return 0.0

    limit_error.__module__ = "twolayer.theory.lyu2021"
    monkeypatch.setattr(lyu2021, "limit_error", limit_error)
    assert regimes.grid_key("lyu") != key, "an edit of a called function kept the key"


def test_lyu_clause_misses_measures_the_imbalance_and_the_stall():
    from twolayer.flows import gradient_flow
    from twolayer.models import TwoLayerNet
    from twolayer.theory import lyu2021

    # width 2: draw 83 misses with b̄ of both signs, draw 88 reaches the limit,
    # draw 1 has the event (left out)
    frame = pd.DataFrame(
        dict(
            width=[2, 2, 2],
            seed=[83, 88, 1],
            lyu=[0.06, 0.02, 0.33],
            same_sign_b=[False, False, True],
        )
    )
    out = regimes.lyu_clause_misses(frame, 0.05)
    miss = out["misses"].iloc[0]
    assert len(out["misses"]) == 1 and out["quotes"]["stall_n"] == 1
    data, _ = regimes.lyu_data(0)
    mu = lyu2021.mu(data.X, data.y)

    def ratio(v):  # positive mass over negative mass, folded to >= 1
        r = np.sqrt((v[v > 0] ** 2).sum() / (v[v < 0] ** 2).sum())
        return max(r, 1 / r)

    # independently: b̄_k ∝ <w_k, μ̄> + a_k of the σ = 1e-4 init itself
    nets = {
        s: TwoLayerNet(5, 2, alpha=0.5, init="gaussian", init_scale=1e-4, seed=s)
        for s in (83, 88)
    }
    b = {
        s: n.weights()[0] @ (mu / np.linalg.norm(mu)) + n.weights()[1]
        for s, n in nets.items()
    }
    assert miss.imbalance == pytest.approx(ratio(b[83]), rel=1e-9)
    assert out["hit_imbalance"] == pytest.approx(ratio(b[88]), rel=1e-9)
    # the σ → 0 flow's gap is the m-neuron flow's at σ = 1e-4, and still falls
    assert miss.gap0_300 == pytest.approx(
        regimes.lyu_probability_point(2, 83)["lyu"], abs=1e-3
    )
    assert miss.gap0_200 > miss.gap0_300 and miss.gap_sigma > 0.05
    # Lemma 5.3: the m-neuron flow's output masses are the two-neuron flow's
    run = gradient_flow(nets[83], data, 1e300, rtol=1e-5, atol=1e-8, n_snapshots=3)
    assert miss.a_ratio == pytest.approx(ratio(run.final["a"]), rel=1e-2)
