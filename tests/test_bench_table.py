"""The README's timing table is generated from a benchmark results file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "build.py"
sys.path.insert(0, str(BENCH.parent))  # build.py imports benchmarks/readme.py
spec = importlib.util.spec_from_file_location("bench_build", BENCH)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_critical_path_is_longest_first_on_the_workers():
    assert bench.critical_path({"a": 10, "b": 6, "c": 5, "d": 1}, 2) == 11
    assert bench.critical_path({"a": 3}, 2) == 3 and bench.critical_path({}, 2) == 0


def test_readme_table_is_regenerated_between_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "intro\n<!-- TIMINGS -->\nold typed numbers\n<!-- /TIMINGS -->\nrest\n"
    )
    results = dict(
        machine="x86_64, 2 cores",
        date="2026-11-22",
        jobs=2,
        clean=250.4,
        nochange=9.87,
        critical_path=240.0,
        times={"a/x": 100.0, "b/y": 40.0},
    )
    assert bench.update_readme(readme, results)
    text = readme.read_text()
    assert (
        "old typed numbers" not in text
        and text.startswith("intro\n")
        and text.endswith("rest\n")
    )
    assert (
        "x86_64, 2 cores" in text
        and "| 250 |" in text
        and "| 9.9 |" in text
        and "`a/x` | 100 |" in text
    )
    loop = dict(
        setting="min2024", steps=2000, threads=1, loop=3.0, products=2.5, ratio=1.2
    )
    assert bench.update_readme(readme, {**results, "mnist_loops": [loop]})
    assert (
        "host speed reference" in readme.read_text()
        and "| 2.50 |" in readme.read_text()
    )
    assert not bench.update_readme(
        tmp_path / "other.md" if (tmp_path / "other.md").write_text("x") else None,
        results,
    )
