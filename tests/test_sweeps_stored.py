"""The stored held-out sweeps (``data/sweeps``) are reproducible: two random
points of each of the two cheapest swept pages are executed again (on dask,
every point executed, no training run reused) and must give the same verdict
for every claim. Runs in ``make test`` (the ``slow`` tests, after the book is
built). A sweep whose page changed since it was stored is stale and not checked
(the robustness page marks it; ``make sweeps`` recomputes it)."""

from __future__ import annotations

import random

import pytest

from twolayer.flows.memo import RUN_CACHE_ENV
from twolayer.pipeline import robustness
from twolayer.pipeline import sweep as sw
from twolayer.pipeline.pages import Paths, project_root

pytestmark = pytest.mark.slow

PAGES, POINTS = 2, 2


def _sample(paths: Paths, rng: random.Random):
    df = robustness.load(paths)
    if not len(df):
        pytest.skip("no held-out sweep stored in data/sweeps (make sweeps)")
    fresh = df[~df["stale"]]
    if not len(fresh):
        pytest.skip(
            "every stored sweep is stale (its page changed since): run make sweeps"
        )
    cost = fresh.groupby("page")["seconds"].median().sort_values()
    chosen = []
    for page in list(cost.index[:PAGES]):
        g = fresh[fresh["page"] == page]
        for point in rng.sample(
            sorted(set(g["point"])), min(POINTS, g["point"].nunique())
        ):
            chosen.append(g[g["point"] == point])
    return chosen


def test_two_stored_points_of_two_cheap_pages_give_the_same_verdicts(
    tmp_path, monkeypatch
):
    paths = Paths(project_root())
    rng = random.Random()
    stored = _sample(paths, rng)
    points = []
    for g in stored:
        page = g["page"].iloc[0]
        params = {"seed": int(g["seed"].iloc[0])} if "seed" in g else {}
        (p,) = sw.make_points(paths, page, [params])
        p.index = int(
            g["point"].iloc[0]
        )  # (its key may differ from the stored one by package versions)
        points.append(p)
    monkeypatch.setenv(RUN_CACHE_ENV, str(tmp_path / "runs"))  # the workers inherit it
    outcome = sw.run_points(paths, points, workers=2, force=True, progress=False)
    assert len(outcome.results) == len(points) and not outcome.interrupted
    again = sw.table(points, outcome)
    for g, p in zip(stored, points):
        now = again[again["key"] == p.key]
        was = {
            r.claim: (r.verdict, bool(r.holds))
            for r in g.itertuples()
            if isinstance(r.claim, str)
        }
        got = {
            r.claim: (r.verdict, bool(r.holds))
            for r in now.itertuples()
            if isinstance(r.claim, str)
        }
        assert got == was, (
            f"{p.page} seed {p.values.get('seed')}: stored {was}, now {got}"
        )
