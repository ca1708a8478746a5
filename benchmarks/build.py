"""Benchmark of the book build (``make bench``).

Prints the wall time of ``twolayer build`` (what ``make book`` runs) from a clean
``_build/``, the wall time of a second build with nothing changed (every notebook
reused from the cache), and each notebook's execution time as recorded in
``_build/executed/**/*.meta.json`` (``seconds``), sorted, with the critical
path of a longest-first schedule on the build's workers. Targets (issue 17):
the whole book from a clean ``_build/`` within 5 minutes wall on 2 cores; a
no-change rebuild within 30 s; a one-module edit of ``lib/`` re-executes only
the pages importing that module (the bench appends a line of code to
``EDITED_MODULE``, rebuilds, restores it); the MNIST GD loops within 1.5× of
their own matrix products (``benchmarks/mnist_loops.py``). The results are written to
``benchmarks/results.json`` and the README's timing table (between
``<!-- TIMINGS -->`` markers) is regenerated from them.

    .venv/bin/python benchmarks/build.py [--no-clean] [--jobs 2] [--execute-only]

The project root is ``$TWOLAYER_ROOT`` if set (e.g. a small test book), else this
repository. A clean build deletes ``<root>/_build`` first (cache included).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from readme import write_table  # benchmarks/readme.py

NO_CHANGE_TARGET = 30.0
CLEAN_TARGET = 300.0
CHAPTER_TARGETS: dict[str, float] = {}
RESULTS = Path(__file__).resolve().parent / "results.json"
EDITED_MODULE = "lib/twolayer/theory/sarussi2021.py"
MARKERS = ("<!-- TIMINGS -->", "<!-- /TIMINGS -->")


def project_root() -> Path:
    env = os.environ.get("TWOLAYER_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[1]


def twolayer_command() -> list[str]:
    return [sys.executable, "-m", "twolayer.pipeline"]


def timed_build(root: Path, command: str, jobs: int) -> tuple[float, int]:
    """Run ``twolayer <command> --jobs N`` on ``root``; (wall seconds, exit status)."""
    env = {**os.environ, "TWOLAYER_ROOT": str(root)}
    start = time.perf_counter()
    rc = subprocess.call(
        twolayer_command() + [command, "--jobs", str(jobs)], env=env, cwd=root
    )
    return time.perf_counter() - start, rc


def notebook_times(root: Path) -> dict[str, float]:
    """``chapter/name -> seconds`` from the executed notebooks' meta.json."""
    executed = root / "_build" / "executed"
    out = {}
    for meta in sorted(executed.rglob("*.meta.json")):
        nb = str(meta.relative_to(executed)).removesuffix(".meta.json")
        out[nb] = float(json.loads(meta.read_text())["seconds"])
    return out


def critical_path(times: dict[str, float], jobs: int) -> float:
    """Wall time of executing the pages longest-first on ``jobs`` workers
    (the order ``twolayer build`` uses): the lower bound the schedule reaches."""
    workers = [0.0] * max(1, jobs)
    for s in sorted(times.values(), reverse=True):
        workers[workers.index(min(workers))] += s
    return max(workers) if times else 0.0


def machine() -> str:
    import platform

    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}"
    )


def readme_table(results: dict) -> str:
    """The README's timing table, from a results file (never typed by hand)."""
    rows = ["| what | seconds |", "|---|---|"]
    if results.get("clean") is not None:
        rows.append(
            f"| clean build, `twolayer build --jobs {results['jobs']}` (empty "
            f"`_build/`) "
            f"| {results['clean']:.0f} |"
        )
    rows.append(f"| no-change rebuild | {results['nochange']:.1f} |")
    rows.append(
        f"| critical path of the notebook schedule on {results['jobs']} workers "
        f"| {results['critical_path']:.0f} |"
    )
    rows.append(
        f"| sum of notebook execution times | {sum(results['times'].values()):.0f} |"
    )
    edit = results.get("module_edit")
    if edit:
        rows.append(
            f"| edit of `{edit['module']}`: rebuild ({edit['executed']} of "
            f"{edit['pages']} pages "
            f"re-executed) | {edit['seconds']:.0f} |"
        )
    for loop in results.get("mnist_loops", []):
        rows.append(
            f"| MNIST GD loop `{loop['setting']}`, {loop['steps']} steps, "
            f"{loop['threads']} torch "
            f"thread(s) (ratio to its matrix products: {loop['ratio']:.2f}, target "
            f"≤ 1.5) "
            f"| {loop['loop']:.1f} |"
        )
    for loop in results.get("mnist_loops", [])[:1]:
        rows.append(
            f"| host speed reference: the `{loop['setting']}` loop's matrix "
            f"products alone "
            f"({loop['steps']} steps, 1 thread; compare hosts by it, the build "
            f"scales with it) "
            f"| {loop['products']:.2f} |"
        )
    for nb, sec in sorted(results["times"].items(), key=lambda kv: -kv[1])[:6]:
        rows.append(f"| slowest pages: `{nb}` | {sec:.0f} |")
    return "\n".join(
        [f"Measured by `make bench` on {results['machine']} ({results['date']}):", ""]
        + rows
    )


def update_readme(readme: Path, results: dict) -> bool:
    """Replace the text between the README's timing markers; False if absent."""
    return write_table(readme_table(results), MARKERS, readme)


def module_edit(root: Path, command: str, jobs: int) -> dict | None:
    """Append a line of code to ``EDITED_MODULE`` (a comment would keep every key:
    they hash syntax trees), rebuild, restore it: how many pages re-executed (those
    whose notebooks import it) and the rebuild's wall time."""
    module = root / EDITED_MODULE
    if not module.exists():
        return None
    original = module.read_text()
    try:
        module.write_text(original + "\nBENCHMARK_EDIT = 1  # by benchmarks/build.py\n")
        start = time.perf_counter()
        res = subprocess.run(
            twolayer_command() + [command, "--jobs", str(jobs)],
            cwd=root,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
    finally:
        module.write_text(original)
    ran = [line.split() for line in res.stdout.splitlines() if line.startswith("  ok ")]
    pages = len(list((root / "_build" / "executed").rglob("*.meta.json")))
    return dict(
        module=EDITED_MODULE,
        executed=len(ran),
        pages=pages,
        seconds=seconds,
        rc=res.returncode,
        page_seconds={words[1]: float(words[2]) for words in ran},
    )


def _loops_module():
    """``benchmarks/mnist_loops.py``, imported from this folder."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mnist_loops

    return mnist_loops


def measure_mnist_loops(steps: int = 2000) -> list[dict]:
    """The MNIST GD loops against their matrix products (``mnist_loops.py``),
    with the torch threads of a page's kernel in the build
    (``pipeline.runner.kernel_threads``)."""
    import twolayer
    from twolayer.pipeline.runner import kernel_threads

    twolayer.configure_threads(kernel_threads())
    module = _loops_module()
    return [module.measure(s, steps) for s in module.SETTINGS]


def report(
    clean: float | None, nochange: float, times: dict[str, float], jobs: int = 2
) -> list[str]:
    """The benchmark's table, one line each; the verdict of each target."""
    lines = []
    if clean is not None:
        lines.append(
            f"clean build (empty _build/):      {clean:8.1f} s   "
            f"(target < {CLEAN_TARGET:.0f} s: "
            f"{'met' if clean < CLEAN_TARGET else 'MISSED'})"
        )
    lines.append(
        f"critical path on {jobs} workers:     {critical_path(times, jobs):8.1f} s"
    )
    ok = nochange < NO_CHANGE_TARGET
    lines.append(
        f"no-change rebuild:                {nochange:8.1f} s   "
        f"(target < {NO_CHANGE_TARGET:.0f} s: {'met' if ok else 'MISSED'})"
    )
    lines.append("")
    lines.append(
        "per notebook (execution seconds, from _build/executed/**/*.meta.json):"
    )
    chapters: dict[str, float] = {}
    for nb, s in sorted(times.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {s:8.1f} s  {nb}")
        chapters[nb.split("/")[0]] = chapters.get(nb.split("/")[0], 0.0) + s
    lines.append("")
    lines.append("per chapter (sum of its notebooks' execution seconds):")
    for ch, s in sorted(chapters.items()):
        target = CHAPTER_TARGETS.get(ch)
        verdict = (
            f"   (target < {target:.0f} s: {'met' if s < target else 'MISSED'})"
            if target
            else ""
        )
        lines.append(f"  {s:8.1f} s  {ch}{verdict}")
    lines.append(f"  {sum(times.values()):8.1f} s  total")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--no-clean",
        action="store_true",
        help="skip the clean build (time only the no-change rebuild)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="notebooks executed at a time (make book: 2)",
    )
    parser.add_argument(
        "--execute-only",
        action="store_true",
        help="time `twolayer execute` (no rendering) instead of `twolayer build`",
    )
    args = parser.parse_args(argv)
    root = project_root()
    if not (root / "_toc.yml").exists():
        parser.error(f"{root} is not the book's root (no _toc.yml); set TWOLAYER_ROOT")
    command = "execute" if args.execute_only else "build"
    clean = None
    if not args.no_clean:
        shutil.rmtree(root / "_build", ignore_errors=True)
        print(f"clean {command} of {root} ...", flush=True)
        clean, rc = timed_build(root, command, args.jobs)
        if rc:
            print(
                f"the clean {command} failed (exit {rc}); no timings", file=sys.stderr
            )
            return rc
    print(f"no-change {command} ...", flush=True)
    nochange, rc = timed_build(root, command, args.jobs)
    if rc:
        print(f"the no-change {command} failed (exit {rc})", file=sys.stderr)
        return rc
    times = notebook_times(root)
    edit = loops = None
    if not args.execute_only and root == Path(__file__).resolve().parents[1]:
        print(f"edit of {EDITED_MODULE} ...", flush=True)
        edit = module_edit(root, command, args.jobs)
        print("restoring it (cached) ...", flush=True)
        timed_build(root, command, args.jobs)
        print("MNIST GD loops ...", flush=True)
        loops = measure_mnist_loops()
    print(
        "\n".join(
            [
                "",
                f"benchmark of `twolayer {command} --jobs {args.jobs}` on {root} "
                f"({machine()})",
                "",
            ]
            + report(clean, nochange, times, args.jobs)
        )
    )
    if edit:
        print(
            f"one-module edit ({edit['module']}): {edit['executed']} of "
            f"{edit['pages']} pages re-executed, "
            f"{edit['seconds']:.1f} s wall (their execution: "
            + ", ".join(f"{nb} {sec:.1f} s" for nb, sec in edit["page_seconds"].items())
            + ")"
        )
    if loops:
        print("\n".join(_loops_module().describe(r) for r in loops))
    results = dict(
        machine=machine(),
        date=time.strftime("%Y-%m-%d"),
        jobs=args.jobs,
        clean=clean,
        nochange=nochange,
        critical_path=critical_path(times, args.jobs),
        times=times,
        module_edit=edit,
        mnist_loops=loops or [],
    )
    if root == Path(__file__).resolve().parents[1]:
        RESULTS.write_text(json.dumps(results, indent=1))
        if update_readme(root / "README.md", results):
            print(f"README timing table regenerated from {RESULTS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
