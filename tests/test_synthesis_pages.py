"""Unit tests of what the synthesis pages read: the per-seed tables and quotes of
twolayer.synthesis, the move summaries of twolayer.regimes, and the figures."""

import numpy as np
import pandas as pd
import pytest

from twolayer import regimes, synthesis
from twolayer.figures import synthesis as figures
from twolayer.theory.margins import NotSeparableError


def test_last_takes_the_final_entry_of_series_and_scalars():
    runs = [dict(g=np.array([3.0, 2.0, 1.0]), s=4.0), dict(g=[5.0, 0.5], s=2.0)]
    assert synthesis.last(runs, "g").tolist() == [1.0, 0.5]
    assert synthesis.last(runs, "s").tolist() == [4.0, 2.0]


def _fake_phuong(seed, init_scale, **kw):
    k = seed + (10 if init_scale > 0.1 else 0)
    return dict(
        gap=np.array([1.0, 1e-3 * (k + 1)]),
        rank3=np.array([1.0, 1e-4 * (k + 1)]),
        f_dist=0.01 * k,
        early_gap=0.1 + 0.01 * seed,
        f_dist_early=0.2 + 0.01 * seed,
        stable=1.0 + 0.1 * k,
        steps=100 + k,
        wall=0.5 * k,
    )


def test_phuong_limits_quotes_the_worst_seed_and_the_best_rival(monkeypatch):
    monkeypatch.setattr(synthesis, "phuong_limit_run", _fake_phuong)
    P = synthesis.phuong_limits(range(3), 1e-3, 1.0)
    assert P["gap"].tolist() == pytest.approx([1e-3, 2e-3, 3e-3])
    assert P["big_gap"].tolist() == pytest.approx([11e-3, 12e-3, 13e-3])
    q = P["quotes"]
    assert q["phuong_gap"] == pytest.approx(3e-3)  # worst small-init seed
    assert q["phuong_big_gap"] == pytest.approx(11e-3)  # best large-init seed
    assert q["phuong_early_gap"] == pytest.approx(0.1)
    assert q["phuong_steps"] == 102 and q["phuong_big_stable"] == pytest.approx(2.2)


def test_sarussi_limits_constant_is_ratio_times_log10_t(monkeypatch):
    def fake(seed, init_scale, **kw):
        ratio = 1e-5 if init_scale < 0.1 else 1e-2
        return dict(
            ratio=np.array([1.0, ratio * (seed + 1)]),
            log10_t=np.array([0.0, 300.0]),
            nar=0.9,
        )

    monkeypatch.setattr(synthesis, "sarussi_limit_run", fake)
    S = synthesis.sarussi_limits(range(2), 1e-3, 1.0, 1e-3, t_max=1e300)
    assert S["c_small"].tolist() == pytest.approx([3e-3, 6e-3])
    assert S["c_big"].tolist() == pytest.approx([3.0, 6.0])
    assert S["c_threshold"] == pytest.approx(0.3)
    assert S["quotes"]["sar_big_c_lo"] == pytest.approx(3.0)


def test_lyu_limits_counts_draws_from_the_first_seed(monkeypatch):
    seen = []

    def fake(seed, init_scale, n_snapshots=60, **kw):
        if seed == 12:
            raise NotSeparableError("draw 12")
        seen.append((seed, init_scale))
        err = 0.2 if seed == 7 else 0.01 * (seed + 1)
        return dict(
            log10_t=np.array([0.0, 300.0]),
            err=np.array([1.0, err]),
            err_phase1=0.5 - 0.01 * seed,
            margin=np.array([0.5, 0.9 if seed == 7 else 1.0]),
            good_embedding=True,
        )

    monkeypatch.setattr(synthesis, "lyu_limit_run", fake)
    L = synthesis.lyu_limits(range(5, 10), 1e-4, 3.0, n_draws=20)
    assert [s for s, sc in seen if sc == 1e-4] == [*range(5, 12), *range(13, 26)]
    assert L["skipped"] == [12] and L["quotes"]["lyu_skipped"] == 1
    assert [s for s, sc in seen if sc == 3.0] == list(range(5, 10))
    assert len(L["err"]) == 20 and len(L["runs"]) == 5
    assert L["phase1_best"] == pytest.approx(0.5 - 0.09)  # the best of draws 5-9
    assert L["quotes"]["lyu_err"] == pytest.approx(0.2)  # draw 7 is among the first
    assert L["margin_all"][2] == pytest.approx(0.9)


def test_lyu_sigma_check_reruns_the_missed_draws_at_every_sigma(monkeypatch):
    def fake(seed, init_scale, rtol=1e-5, **kw):
        err = 0.3 if seed == 13 else 0.01 * init_scale / 1e-4 + 1e-3 * seed
        return dict(log10_t=np.array([100.0, 300.0]), err=np.array([2 * err, err]))

    monkeypatch.setattr(synthesis, "lyu_limit_run", fake)
    monkeypatch.setattr(
        synthesis, "lyu_two_neuron_gap", lambda d, balanced=False, **kw: 0.5 * d
    )
    L = dict(err=np.array([0.01, 0.2, 0.3, 0.01]), skipped=[12])
    C = synthesis.lyu_sigma_check(L, 10, [1e-4, 1e-8], 0.05, rtol=1e-5)
    assert list(C["gaps"].index) == [11, 13]  # draw 12 skipped: 13 is the third
    assert list(C["gaps"].columns) == ["0.0001", "1e-08", "0", "balanced"]
    assert C["gaps"].loc[11, "0.0001"] == pytest.approx(0.021)
    assert C["worst"] == 13 and C["gap_200"] == pytest.approx(0.45)
    L["err"][:] = [0.01, 0.02, 0.03, 0.001]  # no miss: the draw of largest gap
    assert list(synthesis.lyu_sigma_check(L, 10, [1e-8], 0.05)["gaps"].index) == [13]


def test_lyu_two_neuron_gap_is_the_embedded_m_neuron_flow():
    """Lemma 5.3: the m-neuron flow from π_b̄(r θ̂) is the two-neuron flow, so its
    gap is the same (computed here through lyu2021.embed, independently)."""
    from twolayer.flows import gradient_flow
    from twolayer.models import TwoLayerNet
    from twolayer.theory import lyu2021

    sym, X_eval = regimes.lyu_data(15)
    mu = lyu2021.mu(sym.X, sym.y) / np.linalg.norm(lyu2021.mu(sym.X, sym.y))
    net = TwoLayerNet(sym.d, 10, alpha=0.5, init="gaussian", seed=15)
    b = lyu2021.embedding_vector(*net.weights(), mu)
    W, a = lyu2021.embed(*lyu2021.phase2_start(b, mu), b)
    wide = TwoLayerNet.from_weights(1e-6 * W, 1e-6 * a, alpha=0.5)
    end = gradient_flow(wide, sym, 1e8, rtol=1e-8, atol=1e-11).snapshots[-1]
    target = lyu2021.symmetric_limit_function(
        X_eval, lyu2021.max_margin_separator(sym.X, sym.y), 0.5
    )
    gap = lyu2021.limit_error(end["W"], end["a"], X_eval, target, 0.5)
    two = synthesis.lyu_two_neuron_gap(15, t_max=1e8, rtol=1e-8, atol=1e-11)
    assert two == pytest.approx(gap, rel=1e-5)
    balanced = synthesis.lyu_two_neuron_gap(15, balanced=True, t_max=1e8)
    assert abs(balanced - gap) > 0.05  # the imbalance is what the start changes


def test_failure_bounds_are_the_theorems():
    assert regimes.lyu_failure(2) == 0.5 and regimes.lyu_failure(6) == 1 / 32
    assert regimes.phuong_failure(2) == 0.25 and regimes.phuong_failure(6) == 1 / 64


def test_theorems_carry_the_page_thresholds():
    t = regimes.theorems(phuong=1e-3, lyu=0.05)
    assert t["phuong"][2] == 1e-3 and t["lyu"][2] == 0.05
    assert t["sarussi"][2] == regimes.THRESHOLDS["sarussi"]
    assert t["min_aligned"][3] == ">=" and t["stable_rank"][2] == 2.0


def _moves():
    rows = []
    for s in range(4):
        rows.append(dict(kind="alpha", value=0.0, seed=s, error=""))
        rows[-1].update({"gap_1e+100": 1e-2, "gap_1e+300": 1e-2 / 3})
        rows.append(dict(kind="alpha", value=0.5, seed=s, error=""))
        rows[-1].update({"gap_1e+100": 1e-1, "gap_1e+300": 1e-1})
        for v, gap in ((-1.0, 1e-3), (1.0, 0.3)):
            rows.append(dict(kind="width2", value=v, seed=s, error="", lyu=gap))
        for v, mu in ((0.3, 0.5), (1.3, -0.2 - 0.1 * s)):
            rows.append(
                dict(kind="mu", value=v, seed=s, error="", mu=mu, phuong=1e-4 * (s + 1))
            )
        rows.append(
            dict(kind="mu_large", value=1.3, seed=s, error="", mu=-0.3, phuong=0.5)
        )
    rows.append(dict(kind="mu", value=1.3, seed=9, error="DivergenceError: x"))
    frame = pd.DataFrame(rows)
    frame["t1"], frame["t_scale"] = 0.2, 3.0
    return frame


def test_alpha_drops_are_log10_ratios_per_slope():
    d = regimes.alpha_drops(_moves())
    assert d[0.0] == pytest.approx([-np.log10(3)] * 4) and d[0.5] == pytest.approx(
        [0] * 4
    )


def test_width2_gaps_split_by_forced_sign():
    mixed, same = regimes.width2_gaps(_moves())
    assert mixed.tolist() == [1e-3] * 4 and same.tolist() == [0.3] * 4


def test_mu_move_counts_negative_mu_and_leaves_stopped_points_out():
    m = regimes.mu_move(_moves(), threshold=2.5e-4)
    q = m["quotes"]
    assert q["mu_stopped"] == 1 and q["n_neg"] == 4 and q["n_draws"] == 4
    assert m["neg_pass"].tolist() == [True, True, False, False]
    assert q["mu_neg_pass"] == 0.5 and q["mu_large_pass"] == 0.0
    assert q["mu_lo"] == pytest.approx(-0.5) and q["large_std"] == 1.3


def _hints():
    rows = []
    for s in range(4):
        for kind, gap in (("hinted", 0.1 + 0.01 * s), ("symmetric", 0.01 * (s + 1))):
            rows.append(
                {
                    "kind": kind,
                    "seed": s,
                    "lyu_1e+100": 2 * gap,
                    "lyu_1e+300": gap,
                    "thm62": 0.3,
                    "mu": -1.0 if kind == "hinted" else 0.5,
                    "orthogonal": float(kind == "symmetric"),
                    "linear_margin": 0.01 if kind == "hinted" else 0.5,
                    "shrink": 0.2 if kind == "hinted" else 1.0,
                    "steps": 1000 * (s + 1),
                }
            )
    rows.append(dict(rows[0], kind="hinted_fine", **{"lyu_1e+300": 0.1 + 1e-5}))
    return pd.DataFrame(rows)


def test_hinted_move_quotes_and_the_tolerance_check():
    h = regimes.hinted_move(_hints())
    q = h["quotes"]
    assert q["h_draws"] == 4 and q["h_gap_lo"] == pytest.approx(0.1)
    assert q["h_sym_hi"] == pytest.approx(0.04) and q["h_orthogonal"] == 0
    assert q["h_steps"] == 4000 and q["h_fine_draws"] == 1
    assert q["h_fine_diff"] == pytest.approx(1e-5)
    assert h["symmetric"].index.tolist() == [0, 1, 2, 3]


def test_hinted_move_measures_what_the_hints_change():
    sym = synthesis.hinted_move(0, False, times=(1.0, 10.0))
    hinted = synthesis.hinted_move(0, True, times=(1.0, 10.0))
    assert sym["symmetric"] == 1.0 and hinted["symmetric"] == 0.0
    assert sym["shrink"] == pytest.approx(1.0) and hinted["shrink"] < 1.0
    assert hinted["linear_margin"] < sym["linear_margin"]
    assert set(sym) >= {"lyu_1e+00", "lyu_1e+01", "thm62", "mu", "steps"}
    with pytest.raises(ValueError, match="kind must be one of"):
        regimes.hinted_draws_point("nope", 0)


def test_load_grids_refuses_failed_points_where_none_may_stop(monkeypatch):
    frame = pd.DataFrame(dict(error=["", "x"], commit="c", code_key="k"))
    monkeypatch.setattr(regimes, "load", lambda name, base=None: (frame, False))
    grids, prov = regimes.load_grids(["moves_draws"])
    assert prov.loc["moves_draws", "rows"] == 2
    with pytest.raises(ValueError, match="failed points"):
        regimes.load_grids(["lyu"])


def test_move_figures_draw_one_marker_per_draw():
    m = _moves()
    fig = figures.alpha_move(regimes.alpha_drops(m), -0.24)
    assert sum(len(line.get_xdata()) for line in fig.axes[0].lines[:2]) == 8
    h = regimes.hinted_move(_hints())
    fig = figures.hinted_move(h["symmetric"], h["hinted"], 0.05)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()][1] == "hints: linear"
    mixed, same = regimes.width2_gaps(m)
    assert len(figures.width2_move(mixed, same, 0.05).axes) == 1


def _clause(failed, with_event, events, large_runs=100):
    return pd.DataFrame(
        dict(
            m=[2, 3],
            runs=[100, 100],
            bound=[0.5, 0.75],
            failed=failed,
            event=events,
            failed_with_event=with_event,
            fail_rate=[f / 100 for f in failed],
            large_runs=[large_runs, 100],
            large_fail_rate=[0.9, 0.8],
            successes=[None, None],
            no_event=[None, None],
            rival=[None, None],
        )
    )


def test_clause_summary_sums_over_widths():
    clauses = {
        "Lyu Thm 4.3": _clause([40, 30], [30, 20], [45, 25], large_runs=97),
        "Phuong Thm 1": _clause([0, 1], [0, 1], [5, 4]),
    }
    table, q = regimes.clause_summary(clauses)
    assert len(table) == 4 and "successes" not in table
    assert q["lyu_failed_total"] == 70 and q["lyu_failed_event"] == 50
    assert q["lyu_failed_outside"] == 20 and q["lyu_event_total"] == 70
    assert q["lyu_fail_m3"] == pytest.approx(0.3) and q["phuong_failed_total"] == 1
    assert q["large_fail_min"] == pytest.approx(0.8) and q["large_stopped"] == 3


def test_alpha_quotes_count_stalled_draws():
    drops = {0.0: np.array([-0.5, -0.6, -0.1]), 0.5: np.array([0.0, -0.3, 0.1])}
    q = regimes.alpha_quotes(drops, 0.5, -0.24)
    assert q["alpha_stalled"] == pytest.approx(2 / 3)
    assert q["relu_stalled"] == pytest.approx(1 / 3)
    assert q["relu_drop_hi"] == pytest.approx(-0.1) and q["leaky_drop_lo"] == -0.3


def test_lyu_probability_quotes_count_the_misses():
    L = dict(
        err=np.array([0.01, 0.2, 0.03, 0.3]), margin_all=np.array([1.0, 0.9, 1, 0.8])
    )
    q = synthesis.lyu_probability_quotes(L, 0.05, width=4)
    assert q["lyu_bound"] == 1 - 1 / 8 and q["lyu_once"] == 8
    assert q["lyu_draws"] == 4 and q["lyu_missed"] == 2
    assert q["lyu_worst_err"] == 0.3 and q["lyu_missed_margin"] == 0.9
    L["err"][:] = 0.01  # no miss: the margin quoted is the global maximum's
    assert synthesis.lyu_probability_quotes(L, 0.05, 4)["lyu_missed_margin"] == 1.0


def test_lyu_sigma_quotes_read_the_worst_draw_at_the_smallest_sigma():
    gaps = pd.DataFrame(
        {"0.0001": [0.2, 0.1], "1e-08": [0.19, 0.02], "0": [0.19, 0.02]},
        index=pd.Index([3, 7], name="draw"),
    )
    gaps["balanced"] = [0.001, 0.002]
    C = dict(gaps=gaps, worst=3, gap_200=0.21, gap_fine=0.19)
    q = synthesis.lyu_sigma_quotes(C, [1e-4, 1e-8], 0.05)
    assert q["lyu_sigma_min"] == 1e-8 and q["lyu_worst_draw"] == 3
    assert q["lyu_sigma_missed"] == 1 and q["lyu_sigma_checked"] == 2
    assert (q["lyu_sigma_gap"], q["lyu_zero_gap"]) == (0.19, 0.19)
    assert q["lyu_balanced_gap"] == 0.001 and q["lyu_gap_200"] == 0.21


def test_limit_figures_read_the_page_tables():
    run = dict(log10_t=np.array([2.0, 300.0]), err=np.array([0.5, 0.01]))
    L = dict(runs=[dict(run, margin=np.array([0.5, 0.99]))] * 2)
    L.update(phase1_best=0.3, big_margin=np.array([0.95, 0.97]))
    fig = figures.lyu_limit(L, 3.0, 0.05)
    assert 0.97 in [line.get_ydata()[0] for line in fig.axes[1].lines]
    runs = [dict(log10_t=np.array([2.0, 300.0]), ratio=np.array([0.1, 1e-5]))]
    S = dict(small=runs, large=runs, c_big=np.array([2.0, 4.0]))
    fig = figures.sarussi_limit(S, 1e-3, 1.0, 1e-3)
    rate = [line for line in fig.axes[0].lines if line.get_linestyle() == "--"][0]
    assert rate.get_ydata()[0] == pytest.approx(3.0 / 50)  # mean c over log10 t


def test_map_trials_quote_each_critical_scale_and_the_wide_stable_rank():
    rows = [
        dict(
            init_scale=sc, width=w, seed=s, gap=sc, stable_rank=1.5 + (sc > 1) * 0.4 * s
        )
        for sc in (1e-3, 1e-2, 1e-1, 3.0)
        for w in (4, 100)
        for s in range(4)
    ]
    grids = dict(phuong_min=pd.DataFrame(rows))
    specs = dict(toy=("phuong_min", "gap", 0.05, "<=", "gap"))
    trials, q = regimes.map_trials(grids, specs)
    crit = regimes.critical_scale(grids["phuong_min"], "gap", 0.05)
    assert q["crit_toy"] == crit["critical"] and trials["toy"]["lo"] == crit["lo"]
    assert trials["toy"]["below"].all() and trials["toy"]["above"].all()
    assert q["sr_w100_top"] == 0.5  # seeds 0, 1 of 4 have limsup <= 2 there


def test_freshness_says_whether_any_grid_is_stale():
    current = pd.DataFrame(dict(stale=[False, False]))
    assert regimes.freshness(current).startswith("current")
    assert regimes.freshness(current.assign(stale=[False, True])).startswith("stale")
