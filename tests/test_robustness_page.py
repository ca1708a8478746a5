"""The robustness page (twolayer.pipeline.robustness) from stored held-out sweeps:
held-out seed blocks, claims that do not hold everywhere first, stale marking."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from twolayer import pipeline
from twolayer.pipeline import robustness
from twolayer.pipeline import sweep as sw
from twolayer.pipeline.pages import Paths, project_root

BOOK = Path(__file__).resolve().parents[1]


def test_held_out_seeds_are_fresh_blocks():
    paths = Paths(project_root())
    for page in ("lyu2021/phase1", "sarussi2021/fig4_par_svm"):
        decls = robustness.parameters(paths, page)
        seeds = robustness.seed_values(paths, page)
        block = int(decls["n_seeds"].default) if "n_seeds" in decls else 1
        first = int(decls["seed"].default)
        assert seeds[0] >= first + block  # none of the default run's seeds
        assert len(seeds) * block >= robustness.held_out_seeds(paths, page) >= 5


def test_mnist_pages_get_the_mnist_number_of_held_out_seeds():
    """An MNIST page loads its data through the library: its name says MNIST."""
    paths = Paths(project_root())
    mnist = [p for p in pipeline.book_pages(paths) if robustness.is_mnist(paths, p)]
    assert {p.split("__")[0] for p in mnist} == {
        "phuong2021/appd_mnist",
        "min2024/fig12_13_two_phases",
        "min2024/fig5_mnist_alignment",
        "sarussi2021/thm51_mnist_linear_regime",
    }
    assert robustness.held_out_seeds(paths, "lyu2021/phase1") == robustness.SEEDS
    assert robustness.held_out_seeds(paths, mnist[0]) == robustness.SEEDS_MNIST


@pytest.fixture
def root(tmp_path):
    """A copy of the book's sources (no build) with one stored sweep."""
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(BOOK / name, tmp_path / name)
    shutil.copytree(
        BOOK / "book", tmp_path / "book", ignore=shutil.ignore_patterns("*.png")
    )
    shutil.copytree(
        BOOK / "lib", tmp_path / "lib", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def _store(paths: Paths, page: str, flip: bool, stop: bool = False):
    points = sw.make_points(paths, page, [{"seed": 5}, {"seed": 10}])
    rival = {"name": "init", "measured": 2.0, "spread": [1.9, 2.0], "horizon": "t"}
    results = {
        i: dict(
            ok=not (flip and i),
            cached=False,
            seconds=1.0,
            worker="w",
            error="cell 9 raised ClaimFailed: 1 claim(s) fail" if (flip and i) else "",
            claims=[
                {
                    "id": "lyu2021.lem52.aligned",
                    "source": "Lemma 5.2",
                    "kind": "prediction",
                    "statement": "s",
                    "measured": 0.5 if (flip and i) else 1e-6,
                    "relation": "<=",
                    "threshold": 1e-4,
                    "why": "w",
                    "seeds": 5,
                    "spread": [1e-7, 0.5 if (flip and i) else 1e-6],
                    "horizon": "t",
                    "rival": rival,
                    "verdict": "fails" if (flip and i) else "holds",
                },
                {
                    "id": "lyu2021.lem52.other",
                    "source": "Lemma 5.2",
                    "kind": "prediction",
                    "statement": "s",
                    "measured": 1e-6,
                    "relation": "<=",
                    "threshold": 1e-4,
                    "why": "w",
                    "seeds": 5,
                    "spread": [1e-7, 1e-6],
                    "horizon": "t",
                    "rival": rival,
                    "verdict": "holds",
                },
            ],
        )
        for i in range(2)
    }
    if stop:  # the second point stopped on the first claim: nothing recorded
        error = "CannotDiscriminate: claim 'lyu2021.lem52.aligned' cannot discriminate"
        results[1] = dict(results[1], ok=False, error=error, claims=[])
    df = sw.table(points, sw.Outcome(results=results), dict(code_key="c", commit="abc"))
    sw.write_table(df, robustness.store_path(paths, page))


def test_a_claim_a_stopped_page_never_reached_is_counted_apart(root):
    paths = Paths(root)
    _store(paths, "lyu2021/phase1", flip=False, stop=True)
    text = robustness.markdown(paths, figures=False)
    other = next(line for line in text.splitlines() if "`lyu2021.lem52.other`" in line)
    assert "1/2 (1 not reached: the page stopped before this claim)" in other


def test_page_lists_claims_that_flip_first_and_marks_stale(root):
    paths = Paths(root)
    _store(paths, "lyu2021/phase1", flip=True)
    text = robustness.markdown(paths)
    weak = text.split("## Claims that do not hold on every held-out block")[1].split(
        "\n## "
    )[0]
    assert (
        "`lyu2021.lem52.aligned`" in weak
        and "1/2" in weak
        and "[lyu2021/phase1](lyu2021/phase1.ipynb)" in weak
    )
    assert (
        "lem52.other" not in weak
    )  # it holds on the point where the other claim failed
    assert (root / robustness.FIGURES / "lyu2021.png").exists()
    assert "stale" not in weak and robustness.stale_markdown(paths) == ""
    nb = root / "book" / "lyu2021" / "phase1.ipynb"
    nb.write_text(
        nb.read_text().replace(
            '"cells": [',
            '"cells": [{"cell_type": "markdown", "metadata": {}, "source": "prose"},',
            1,
        )
    )
    assert robustness.stale_markdown(paths) == "", "a prose edit made a sweep stale"
    nb.write_text(
        nb.read_text().replace(
            '"cells": [',
            '"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], '
            '"execution_count": null, "source": "edited = True"},',
            1,
        )
    )
    assert "lyu2021/phase1" in robustness.stale_markdown(paths)
    assert "(stale)" in robustness.markdown(paths, figures=False)


def test_page_without_sweeps_says_how_to_compute_them(root):
    text = robustness.markdown(Paths(root), figures=False)
    assert "No held-out sweep is stored yet: run `make sweeps`." in text


@pytest.mark.slow
def test_make_sweeps_stores_a_table_per_page_and_writes_the_page(tmp_path):
    import subprocess
    import sys

    import pandas as pd

    from test_sweep_engine import book_env, make_root

    root = tmp_path / "book"
    root.mkdir()
    make_root(root)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "twolayer.pipeline",
            "robustness",
            "run",
            "--workers",
            "2",
            "--first-seed",
            "1",
        ],
        env=book_env(root),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    df = pd.read_parquet(root / "data" / "sweeps" / "synthesis__a.parquet")
    n = robustness.SEEDS  # seed only: SEEDS seeds from 1; the page raises at 13
    assert sorted(df["seed"]) == list(range(1, n + 1))
    assert df["holds"].to_numpy().tolist() == [s != 13 for s in df["seed"]]
    assert set(df["commit"]) and df["code_key"].nunique() == 1
    text = (root / "book" / "robustness.md").read_text()
    assert "`synthesis.a.value`" in text and f"{n - 1}/{n}" in text
    assert "(stale)" not in text
