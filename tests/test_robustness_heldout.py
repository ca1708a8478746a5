"""The held-out record of each claim (claims format v3 ``heldout``), computed in
one place (robustness.heldout_record) from a page's stored sweep: blocks, blocks
where it holds with its rival failing, init seeds, data draws, stale; sweeps
record each point's data draw."""

from __future__ import annotations

import json

import pytest

import test_robustness_page
from twolayer import protocol
from twolayer.pipeline import robustness
from twolayer.pipeline import sweep as sw
from twolayer.pipeline.pages import Paths

root = test_robustness_page.root  # the fixture: a copy of the book's sources

PAGE = "lyu2021/phase1"


def _claim(cid, measured, verdict, seeds=5, kind="prediction", why="w", **kw):
    return {
        "id": cid,
        "source": "Lemma 5.2",
        "kind": kind,
        "statement": "s",
        "measured": measured,
        "relation": "<=" if kind != "probability" else ">=",
        "threshold": 1e-4,
        "why": why,
        "seeds": seeds,
        "spread": None,
        "horizon": "t",
        "rival": {
            "name": "init",
            "measured": 2.0,
            "spread": [1.9, 2.0],
            "horizon": "t",
        },
        "verdict": verdict,
        **kw,
    }


def _table(values, outcomes, mode="block", page=PAGE):
    """A stored sweep: one point per ``values`` dict, ``outcomes[i]`` its claims."""
    points = [sw.Point(page, i, v, v, f"k{i}", "code") for i, v in enumerate(values)]
    results = {
        i: dict(ok=True, cached=False, seconds=1.0, worker="w", error="", claims=c)
        for i, c in enumerate(outcomes)
    }
    extra = dict(code_key="c", commit="abc", data=mode)
    return sw.table(points, sw.Outcome(results=results), extra)


def test_sweeps_record_the_data_draw_of_every_point():
    blocks = [{"seed": 1000, "data_seed": 1000}, {"seed": 1005, "data_seed": 1005}]
    ok = [_claim("lyu2021.lem52.a", 1e-6, "holds")]
    df = _table(blocks, [ok, ok])
    assert df["data_seed"].tolist() == [1000, 1005] and set(df["data"]) == {"block"}
    df = _table([{"seed": 1000}, {"seed": 1005}], [ok, ok])
    assert df["data_seed"].tolist() == [1000, 1005]  # drawn from seed
    df = _table([{"seed": 1000}, {"seed": 1005}], [ok, ok], mode="fixed: the paper's")
    assert df["data_seed"].isna().all()
    assert sw.data_draw({"seed": 3, "data_seed": 7}, "block") == 7
    assert sw.data_draw({"seed": 3}, None) == 3
    assert sw.data_draw({"x": 1}, "block") is None


def test_heldout_counts_blocks_holds_seeds_and_draws():
    blocks = [{"seed": s, "data_seed": s} for s in (1000, 1005, 1010)]
    outcomes = [
        [
            _claim("lyu2021.lem52.a", 1e-6, "holds"),
            _claim("lyu2021.lem52.b", 1e-6, "holds"),
        ],
        [
            _claim("lyu2021.lem52.a", 0.5, "fails"),
            _claim("lyu2021.lem52.b", 0.5, "not resolved"),
        ],
        [
            _claim("lyu2021.lem52.a", 1e-6, "holds"),
            _claim("lyu2021.lem52.b", 1e-6, "holds"),
        ],
    ]
    rec = robustness.heldout_from_table(_table(blocks, outcomes))
    a, b = rec["lyu2021.lem52.a"], rec["lyu2021.lem52.b"]
    assert (a["blocks"], a["holds"], a["seeds"], a["data_draws"]) == (3, 2, 15, 3)
    assert a["misses"] == [1005] and a["block_seeds"] == [1000, 1005, 1010]
    assert (a["exempt"], b["exempt"], b["holds"]) == (0, 1, 2)
    assert a["stale"] is False and a["pooled_frequency"] is None
    # data fixed: one draw; per seed: one per init seed
    fixed = robustness.heldout_from_table(_table(blocks, outcomes), "fixed: paper's")
    assert fixed["lyu2021.lem52.a"]["data_draws"] == 1
    per_seed = robustness.heldout_from_table(_table(blocks, outcomes), "per_seed")
    assert per_seed["lyu2021.lem52.a"]["data_draws"] == 15


def test_a_sweep_stored_before_draws_were_recorded_has_unknown_draws():
    df = _table(
        [{"seed": 5}, {"seed": 10}], [[_claim("lyu2021.x.a", 1e-6, "holds")]] * 2
    )
    rec = robustness.heldout_from_table(df.drop(columns=["data", "data_seed"]))
    assert rec["lyu2021.x.a"]["data_draws"] is None


def test_a_claim_missing_from_a_block_misses_it_and_probability_is_pooled():
    why = "the bound — bound 0.75 less the one-sided 95% binomial margin at n = 20"
    p1 = _claim("lyu2021.x.p", 0.9, "holds", seeds=20, why=why)
    p2 = _claim("lyu2021.x.p", 0.7, "fails", seeds=20, why=why)
    q = _claim("lyu2021.x.q", 1e-6, "holds")
    df = _table([{"seed": 5}, {"seed": 10}], [[p1, q], [p2]])
    rec = robustness.heldout_from_table(df)
    assert rec["lyu2021.x.p"]["pooled_frequency"] == pytest.approx(0.8)
    assert rec["lyu2021.x.p"]["seeds"] == 40
    assert rec["lyu2021.x.q"]["misses"] == [10] and rec["lyu2021.x.q"]["holds"] == 1


def test_heldout_record_reads_the_stored_sweep_and_refreshes_published_json(root):
    paths = Paths(root)
    assert robustness.heldout_record(paths, PAGE) is None  # nothing stored
    points = sw.make_points(paths, PAGE, [{"seed": 1000}, {"seed": 1005}])
    ok = [_claim("lyu2021.lem52.aligned", 1e-6, "holds")]
    bad = [_claim("lyu2021.lem52.aligned", 0.5, "fails")]
    results = {
        i: dict(ok=True, cached=False, seconds=1.0, worker="w", error="", claims=c)
        for i, c in enumerate([ok, bad])
    }
    extra = dict(code_key="c", commit="abc", data="block")
    df = sw.table(points, sw.Outcome(results=results), extra)
    sw.write_table(df, robustness.store_path(paths, PAGE))
    rec = robustness.heldout_record(paths, PAGE)["lyu2021.lem52.aligned"]
    assert (rec["blocks"], rec["holds"], rec["stale"]) == (2, 1, False)
    published = root / "x.claims.json"
    published.write_text(
        json.dumps(
            {
                "notebook": PAGE,
                "claims": [
                    {"id": "lyu2021.lem52.aligned", "heldout": None},
                    {"id": "lyu2021.lem52.new", "heldout": None},
                ],
            }
        )
    )
    assert robustness.refresh_heldout(paths, PAGE, published)
    claims = json.loads(published.read_text())["claims"]
    assert claims[0]["heldout"] == rec and claims[1]["heldout"] is None
    assert not robustness.refresh_heldout(paths, PAGE, published)  # unchanged


def test_block_plan_redraws_the_data_unless_the_page_says_it_is_fixed(root):
    paths = Paths(root)
    assert robustness.seed_values(paths, PAGE) == [
        robustness.HELDOUT_FIRST + 5 * k for k in range(3)
    ]
    assert robustness.block_point(paths, "lyu2021/hinted", 1000) == {
        "seed": 1000,
        "data_seed": 1000,
    }
    registry = root / "book" / "lyu2021" / "hinted.claims.yml"
    registry.write_text(registry.read_text() + "\ndata: 'fixed: the paper set'\n")
    assert robustness.data_mode(paths, "lyu2021/hinted") == "fixed: the paper set"
    assert robustness.block_point(paths, "lyu2021/hinted", 1000) == {"seed": 1000}
    protocol.load(registry)  # the page-level entry is not a claim
    registry.write_text(registry.read_text() + "\n")
    with pytest.raises(ValueError, match="data: expected one of block, per_seed"):
        protocol.check_data("fixed:")


def test_the_page_lists_every_miss_first_with_its_record_and_history(root):
    paths = Paths(root)
    registry = root / "book" / "lyu2021" / "phase1.claims.yml"
    registry.write_text(
        registry.read_text().replace(
            "  horizon: 'T1(r), r = {r_main:g}'\n",
            "  horizon: 'T1(r), r = {r_main:g}'\n  changed: 2026-11-28 (rival in "
            "decades)\n  chosen_on: '116-120'\n  tested_on: [1000, 1005]\n",
            1,
        )
    )
    stated = dict(diagnosis="d (causes measured: x)")
    outcomes = [
        [
            _claim("lyu2021.lem52.aligned", 1e-6, "holds"),
            _claim("lyu2021.lem52.other", 1e-6, "holds"),
        ],
        [
            _claim("lyu2021.lem52.aligned", 0.5, "does not reproduce", **stated),
            _claim("lyu2021.lem52.other", 1e-6, "holds"),
        ],
    ]
    points = sw.make_points(paths, PAGE, [{"seed": 1000}, {"seed": 1005}])
    results = {
        i: dict(ok=True, cached=False, seconds=1.0, worker="w", error="", claims=c)
        for i, c in enumerate(outcomes)
    }
    extra = dict(code_key="c", commit="abc", data="block")
    df = sw.table(points, sw.Outcome(results=results), extra)
    sw.write_table(df, robustness.store_path(paths, PAGE))
    text = robustness.markdown(paths, figures=False)
    weak = text.split("## Claims that do not hold on every held-out block")[1].split(
        "\n## "
    )[0]
    row = next(x for x in weak.splitlines() if "`lyu2021.lem52.aligned`" in x)
    assert "1/2 (+1 as stated); misses block(s) 1005" in row
    # 5 init seeds per block; one data draw per block, or one per seed when the
    # page's registry says data: per_seed (phase1 does)
    per_seed = robustness.data_mode(paths, PAGE) == "per_seed"
    assert ("| 10 / 10 |" if per_seed else "| 10 / 2 |") in row
    assert (
        "changed 2026-11-28 (rival in decades); chosen on 116-120; tested since "
        "on 1000, 1005" in row
    )
    assert "lem52.other" not in weak
    assert "Fresh blocks" in text and "Data draws" in text


def test_every_seeded_page_gets_at_least_three_blocks_mnist_one(root):
    paths = Paths(root)
    nb = root / "book" / "lyu2021" / "phase1.ipynb"
    nb.write_text(nb.read_text().replace("n_seeds: int = 5", "n_seeds: int = 10", 1))
    assert robustness.seed_values(paths, PAGE) == [1000, 1010, 1020]
    assert robustness.seed_values(paths, PAGE, first=7) == [7, 17, 27]
    assert robustness.seed_values(paths, "phuong2021/appd_mnist") == [1000]


def test_old_and_new_sweeps_concatenated_keep_unknown_draws_unknown():
    import pandas as pd

    ok = [_claim("lyu2021.x.a", 1e-6, "holds")]
    new = _table([{"seed": 5}, {"seed": 10}], [ok, ok])
    old = new.drop(columns=["data", "data_seed"]).assign(page="lyu2021/other")
    both = pd.concat([new, old], ignore_index=True)
    assert (
        robustness.heldout_from_table(both[both.page == PAGE])["lyu2021.x.a"][
            "data_draws"
        ]
        == 2
    )
    assert (
        robustness.heldout_from_table(both[both.page == "lyu2021/other"])[
            "lyu2021.x.a"
        ]["data_draws"]
        is None
    )
