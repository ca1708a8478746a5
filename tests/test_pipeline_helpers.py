"""Fast checks of the pipeline's helpers (the slow, end-to-end behaviour is in
``test_pipeline_reliability.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from twolayer import pipeline
from twolayer.pipeline import cache


def test_tmp_folder_names_carry_their_owner(tmp_path):
    tmp = pipeline.cache.tmp_dir(tmp_path / "cache", "ab" * 12)
    assert tmp.name.startswith(".tmp-" + "ab" * 12)
    assert pipeline.cache.tmp_owner(tmp) == os.getpid()
    assert not pipeline.cache.abandoned(tmp)
    assert pipeline.cache.tmp_owner(tmp.with_name(".tmp-abc-xyz")) is None


def test_a_dead_owner_makes_a_folder_abandoned(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    stale = tmp_path / f".tmp-{'0' * 24}-{proc.pid}-q1w2"
    assert pipeline.cache.tmp_owner(stale) == proc.pid
    assert pipeline.cache.abandoned(stale)


def test_kernel_start_failures_are_recognised():
    assert pipeline.runner.kernel_start_failed(
        RuntimeError("Kernel died before replying to kernel_info")
    )
    assert not pipeline.runner.kernel_start_failed(RuntimeError("something else"))
    assert not pipeline.runner.kernel_start_failed(
        ValueError("Kernel died before replying to kernel_info")
    )


def test_seeds_are_the_parameters_named_seed():
    effective = {"n": "5", "seed": "0", "data_seed": "3"}
    assert pipeline.record.seed_parameters(effective) == {"seed": "0", "data_seed": "3"}
    assert pipeline.record.seed_parameters({"n": "5"}) == {}


def test_run_record_cell_lists_seed_versions_parameters_time():
    meta = dict(
        key="k" * 24,
        parameters={"lr": 0.2},
        effective_parameters={"lr": "0.2", "seed": "0", "s": "'a|b'"},
        seeds={"seed": "0"},
        seconds=12.34,
        threads=1,
        machine="x86_64, 2 cores",
        finished="2026-01-01 00:00:00",
        data="embedded",
        versions={
            "python": "3.11.7",
            "torch": "2.13.0",
            "numpy": "2.0",
            "cvxpy": "1.5",
        },
    )
    cell = pipeline.record.run_record_cell(meta)
    assert cell.metadata["tags"] == ["run-record"]
    for needle in (
        "wall time **12.3 s**",
        "seed: `seed = 0`",
        "changed from the defaults: `lr`",
        "python 3.11.7, torch 2.13.0, numpy 2.0, cvxpy 1.5",
        "| `lr` | `0.2` |",
        "`'a\\|b'`",
    ):
        assert needle in cell.source, needle


def test_claims_ledger_summary(tmp_path):
    paths = pipeline.Paths(tmp_path)
    out = paths.executed / "lyu2021"
    out.mkdir(parents=True)
    base = dict(
        source="Thm 4.2", relation="<=", threshold=2.0, why="w", diagnosis="", note=""
    )
    claims = [
        dict(
            base,
            id="lyu2021.a.b",
            kind="prediction",
            statement="a | b",
            measured=1.0,
            seeds=5,
            spread=[0.5, 1.0],
            horizon="t = 1e300",
            rival=dict(
                name="linear model",
                measured=7.5e-9,
                spread=[7.5e-9, 9e-9],
                horizon="early phase",
            ),
            verdict="holds",
        ),
        dict(
            base,
            id="lyu2021.a.f",
            kind="finding",
            statement="f",
            measured=1.0,
            seeds=5,
            spread=[0.9, 1.0],
            horizon="t = 1e300",
            verdict="holds",
            rival=dict(
                name="large init", measured=3.0, spread=[3.0, 4.0], horizon="t = 1e300"
            ),
        ),
        dict(
            base,
            id="lyu2021.a.c",
            kind="identity",
            statement="c",
            measured=3.0,
            rival=None,
            verdict="fails",
        ),
        dict(
            base,
            id="lyu2021.a.d",
            kind="prediction",
            statement="d",
            measured=3.0e12,
            verdict="does not reproduce",
            rival=dict(name="r", measured=4.0),
            diagnosis="ran longer: same",
        ),
    ]
    (out / "nb.claims.json").write_text(
        json.dumps({"notebook": "lyu2021/nb", "claims": claims})
    )
    text = pipeline.claims_markdown(paths)
    assert (
        "**4 claims: 2 hold, 1 do not reproduce, 0 assumption(s) not met, 1 fail.**"
        in text
    )
    assert "| lyu2021 | 4 (2 · 1 · 1 · 0) | 2 | 1 | 0 | 1 |" in text, text
    assert (
        "| prediction | 2 | 1 | 1 | 0 | 0 |" in text
        and "| identity | 1 | 0 | 0 | 0 | 1 |" in text
    )
    assert "| finding | 1 | 1 | 0 | 0 | 0 |" in text
    assert "a \\| b" in text and "{bdg-success}`holds`" in text
    assert "{bdg-danger}`fails`" in text
    # real values (3 significant digits, the exponent kept on its line), verdict
    # second, the claims that do not reproduce first
    assert "linear model: 7.5\u00a0×\u00a010{sup}`−9`" in text
    assert "3\u00a0×\u00a010{sup}`12`" in text and "ran longer: same" in text
    assert "{bdg-danger}`does not reproduce`" in text
    assert text.index("lyu2021.\u200ba.\u200bd") < text.index("lyu2021.\u200ba.\u200bb")


def test_placeholders_name_the_page_setting():
    nb = {
        "cells": [
            {"cell_type": "code", "source": "x = {{a}}"},
            {
                "cell_type": "markdown",
                "source": ["# Digits {{pos_digit}} vs {{ neg_digit }}\n", "text"],
            },
        ]
    }
    out = pipeline.fill_placeholders(
        nb, {"pos_digit": 3, "neg_digit": 8}, "min2024/fig5__digits_3_8"
    )
    assert (
        out["cells"][1]["source"] == "# Digits 3 vs 8\ntext"
        and out["cells"][0]["source"] == "x = {{a}}"
    )
    with pytest.raises(
        ValueError, match=r"min2024/x: placeholder \{\{nope\}\} names no parameter"
    ):
        pipeline.fill_placeholders(
            {"cells": [{"cell_type": "markdown", "source": "{{nope}}"}]},
            {},
            "min2024/x",
        )


def test_placeholders_in_figure_captions_name_the_run_value():
    figure = {
        "mystnb": {
            "figure": {"caption": "points (1, ±h), h = {{bent_h}}.", "name": "f"}
        }
    }
    nb = {"cells": [{"cell_type": "code", "source": "plot()", "metadata": figure}]}
    out = pipeline.fill_placeholders(nb, {"bent_h": 3.5}, "lyu2021/fig1")
    assert (
        out["cells"][0]["metadata"]["mystnb"]["figure"]["caption"]
        == "points (1, ±h), h = 3.5."
    )
    nb["cells"][0]["metadata"]["mystnb"]["figure"]["caption"] = (
        "to t = {{t_max}}, {{steps}} steps"
    )
    out = pipeline.fill_placeholders(
        nb, {"t_max": 1e300, "steps": 3000}, "lyu2021/fig1"
    )
    assert (
        out["cells"][0]["metadata"]["mystnb"]["figure"]["caption"]
        == "to t = 1e+300, 3000 steps"
    )
    with pytest.raises(ValueError, match=r"lyu2021/fig1: placeholder \{\{bent_h\}\}"):
        pipeline.fill_placeholders(
            nb
            | {
                "cells": [
                    {
                        "cell_type": "code",
                        "source": "",
                        "metadata": {
                            "mystnb": {"figure": {"caption": "h = {{bent_h}}"}}
                        },
                    }
                ]
            },
            {},
            "lyu2021/fig1",
        )


def test_a_package_version_change_misses_the_cache(tmp_path, monkeypatch):
    from notebook_factory import write_test_notebook

    (tmp_path / "_toc.yml").write_text("root: x\n")
    write_test_notebook(
        tmp_path,
        "synthesis/a",
        "# a",
        "n = 1  # n",
        "x = n",
        ["'synthesis.a.x', 'x', x, '==', 1, 'w'"],
    )
    paths = pipeline.Paths(tmp_path)
    before = pipeline.cache_key(paths, "synthesis/a", {})
    assert pipeline.cache_key(paths, "synthesis/a", {}) == before
    versions = pipeline.cache.versions()
    monkeypatch.setattr(
        pipeline.cache, "versions", lambda: {**versions, "torch": "9.9.9"}
    )
    assert pipeline.cache_key(paths, "synthesis/a", {}) != before


def test_a_clean_build_orders_pages_by_the_last_benchmark(tmp_path):
    """No _build yet: the page's stored sweep, else benchmarks/results.json, order
    the schedule."""
    import json as _json

    from twolayer.pipeline import runner

    paths = pipeline.Paths(tmp_path)
    assert runner.last_seconds(paths, "ch/a") == 0.0
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "results.json").write_text(
        _json.dumps({"times": {"ch/a": 12.5}})
    )
    assert runner.last_seconds(paths, "ch/a") == 12.5
    # a stored held-out sweep (fresh executions of the current page) comes first
    import pandas as pd

    from twolayer.pipeline import robustness

    store = robustness.store_path(paths, "ch/a")
    store.parent.mkdir(parents=True)
    pd.DataFrame(
        {
            "point": [0, 0, 1, 2],
            "seconds": [40.0, 40.0, 50.0, 90.0],
            "claim": list("xyxx"),
        }
    ).to_parquet(store)
    assert runner.last_seconds(paths, "ch/a") == 50.0  # the median point
    store.write_bytes(b"not parquet")
    assert runner.last_seconds(paths, "ch/a") == 12.5
    meta = paths.executed / "ch" / "a.meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(_json.dumps({"seconds": 3.0}))
    assert runner.last_seconds(paths, "ch/a") == 3.0  # the last run wins


def test_a_page_error_is_a_message_and_status_1(tmp_path, monkeypatch, capsys):
    """Library code raises PageError (not SystemExit); the command prints it."""
    from notebook_factory import write_test_notebook

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    paths = pipeline.Paths(tmp_path)
    with pytest.raises(pipeline.PageError, match="unknown notebook 'ch/missing'"):
        pipeline.resolve(paths, "ch/missing")
    monkeypatch.setenv(pipeline.ROOT_ENV, str(tmp_path))
    assert pipeline.main(["lock", "ch/missing"]) == 1
    assert "unknown notebook 'ch/missing'" in capsys.readouterr().err
    write_test_notebook(
        tmp_path,
        "ch/a",
        "# a",
        "n = 1  # n",
        "x = n",
        ["'ch.a.x', 'x', x, '==', 1, 'w'"],
    )
    assert pipeline.main(["lock", "ch/a"]) == 1
    assert "ch/a: not built yet" in capsys.readouterr().err
    (tmp_path / "book" / "ch" / "variants.yml").write_text(
        "- notebook: ch/a\n  variant: two\n  parameters: {n: 2}\n"
    )
    before = (tmp_path / "book" / "ch" / "a.ipynb").read_text()
    assert pipeline.main(["lock", "ch/a__two"]) == 1
    assert "ch/a__two: a variant page shares the source notebook of ch/a" in (
        capsys.readouterr().err
    )
    assert (tmp_path / "book" / "ch" / "a.ipynb").read_text() == before


def test_a_recomputed_stored_grid_re_executes_the_page_that_reads_it(tmp_path):
    real = pipeline.Paths(Path(__file__).resolve().parents[1])
    root = tmp_path / "book_root"
    (root / "data" / "sweeps").mkdir(parents=True)
    (root / "lib").symlink_to(real.lib.parent)
    pages = ("synthesis/regimes", "lyu2021/phase1")
    for page in pages:
        (root / "book" / page).parent.mkdir(parents=True, exist_ok=True)
        src = real.book / f"{page}.ipynb"
        (root / "book" / f"{page}.ipynb").write_bytes(src.read_bytes())
    paths = pipeline.Paths(root)
    grid = root / "data" / "sweeps" / "synthesis_lyu.parquet"
    grid.write_bytes(b"one")
    before = [cache.stored_grids_fingerprint(paths, p) for p in pages]
    grid.write_bytes(b"two")
    after = [cache.stored_grids_fingerprint(paths, p) for p in pages]
    assert before[0] != after[0], "the regimes page reads the grids: its key moves"
    assert before[1] == after[1], "a page that does not read them keeps its key"


def test_placeholders_in_later_markdown_cells_print_the_value():
    """Prose after the statement names a setting by value ({{name}}); a double
    brace that names no parameter is left alone there (LaTeX), but not in the
    first cell."""
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": "# Title"},
            {
                "cell_type": "markdown",
                "source": ["trains {{epochs}} epochs", " $x^{{2}}$"],
            },
        ]
    }
    out = pipeline.fill_placeholders(nb, {"epochs": 50}, "phuong2021/appd_mnist")
    assert out["cells"][1]["source"] == "trains 50 epochs $x^{{2}}$"
    with pytest.raises(ValueError, match=r"names no parameter"):
        pipeline.fill_placeholders(
            {"cells": [{"cell_type": "markdown", "source": "# {{epochs}}"}]},
            {},
            "phuong2021/appd_mnist",
        )
