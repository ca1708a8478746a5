"""Benchmark of ``twolayer sweep`` (``make bench-sweep``, also run by ``make bench``).

A 20-point sweep of a cheap page (``seed`` = 100..119, every point executed:
``force``, and a fresh run cache so no training run is reused) on a
LocalCluster with 1 and then 2 single-threaded workers. Reported:

- throughput (points per minute) with 1 and 2 workers, and their ratio
  (target: 2 workers >= 1.8x one);
- the page's own execution time per point (median of the points' ``seconds``,
  papermill in a kernel forked from the warm zygote, as ``twolayer execute``);
- the per-point overhead: each point's time in its task (``run_point``) minus
  the page's own time, median (target <= 0.3 s), and the worker time not spent
  in pages per point, cluster and zygote start included.

Results go to ``benchmarks/sweep_results.json`` and the README's table between
``<!-- SWEEP_TIMINGS -->`` markers is regenerated from them.

    .venv/bin/python benchmarks/sweep.py [--page lyu2021/phase1] [--points 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from readme import README, write_table  # benchmarks/readme.py

RESULTS = Path(__file__).resolve().parent / "sweep_results.json"
MARKERS = ("<!-- SWEEP_TIMINGS -->", "<!-- /SWEEP_TIMINGS -->")
SPEEDUP_TARGET, OVERHEAD_TARGET = 1.8, 0.3


def measure(page: str, n: int, workers: int) -> dict:
    from twolayer.flows.memo import RUN_CACHE_ENV
    from twolayer.pipeline import sweep as sw
    from twolayer.pipeline.pages import Paths, project_root

    paths = Paths(project_root())
    points = sw.make_points(paths, page, [{"seed": 100 + i} for i in range(n)])
    with tempfile.TemporaryDirectory(prefix="sweep-bench-runs-") as runs:
        previous = os.environ.get(RUN_CACHE_ENV)
        os.environ[RUN_CACHE_ENV] = (
            runs  # the workers inherit it: no training run reused
        )
        try:
            outcome = sw.run_points(
                paths, points, workers=workers, force=True, progress=False
            )
        finally:
            if previous is None:
                os.environ.pop(RUN_CACHE_ENV, None)
            else:
                os.environ[RUN_CACHE_ENV] = previous
    res = list(outcome.results.values())
    failed = [r["error"].splitlines()[0] for r in res if not r["ok"]]
    if failed:
        raise SystemExit(f"{page}: {len(failed)} point(s) failed, e.g. {failed[0]}")
    page_s = [float(r["seconds"]) for r in res]
    task_s = [float(r["wall"]) for r in res]
    return dict(
        workers=workers,
        points=n,
        wall=outcome.wall,
        per_minute=60 * n / outcome.wall,
        page_median=statistics.median(page_s),
        page_sum=sum(page_s),
        overhead_median=statistics.median(t - p for t, p in zip(task_s, page_s)),
        idle_per_point=(workers * outcome.wall - sum(page_s)) / n,
    )


def table(results: dict) -> str:
    one, two = results["runs"]
    rows = [
        "| workers | wall | points / min | page's own time (median) | overhead per "
        "point (median, in the task) "
        "| worker time not in pages, per point (cluster start included) |",
        "|---|---|---|---|---|---|",
    ]
    for r in (one, two):
        rows.append(
            f"| {r['workers']} | {r['wall']:.1f} s | {r['per_minute']:.1f} | "
            f"{r['page_median']:.2f} s | "
            f"{r['overhead_median']:.3f} s | {r['idle_per_point']:.2f} s |"
        )
    speedup = two["per_minute"] / one["per_minute"]
    ok = "met" if speedup >= SPEEDUP_TARGET else "missed"
    ok2 = (
        "met"
        if max(one["overhead_median"], two["overhead_median"]) <= OVERHEAD_TARGET
        else "missed"
    )
    return "\n".join(
        [
            f"Measured by `make bench-sweep` on {results['machine']} "
            f"({results['date']}): "
            f"{one['points']} points of `{results['page']}` (`-p seed "
            f"100:{99 + one['points']}`, "
            f"every point executed).",
            "",
            *rows,
            "",
            f"2 workers give {speedup:.2f}x the throughput of one (target "
            f"{SPEEDUP_TARGET}x: {ok}); "
            f"per-point overhead target {OVERHEAD_TARGET} s: {ok2}."
            + (f" {results['note']}" if results.get("note") else ""),
        ]
    )


def write_readme(results: dict) -> bool:
    return write_table(table(results), MARKERS, README)


def main() -> int:
    import platform

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", default="lyu2021/phase1")
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument(
        "--note",
        default="",
        help="a sentence added under the table (e.g. the host's load)",
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    runs = [measure(args.page, args.points, w) for w in (1, 2)]
    results = dict(
        page=args.page,
        runs=runs,
        date=time.strftime("%Y-%m-%d"),
        machine=(
            f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}"
        ),
        load_before=load,
        note=args.note,
    )
    RESULTS.write_text(json.dumps(results, indent=1))
    print(table(results))
    write_readme(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
