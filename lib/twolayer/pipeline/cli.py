"""The ``twolayer`` command:
``build | execute | rerun | sweep | params | claims | lock``."""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

from .. import claims as claims_mod
from . import declarations as params_mod
from . import robustness
from .lock import lock
from .pages import (
    PageError,
    Paths,
    book_pages,
    check_parameters,
    notebook_ids,
    page_id,
    parameters,
    project_root,
    variants,
)
from .render import render, stage, write_html
from .runner import RunResult, execute_all, publish, raise_interrupted


def report_failures(results: list[RunResult]) -> int:
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"\n=== {r.nb} FAILED ===\n{r.error}", file=sys.stderr)
    return len(failed)


def print_claims(claims: list[dict]) -> None:
    sig = claims_mod.significant
    for c in claims:
        rival = (
            f" (rival {c['rival']['name']}: {sig(c['rival']['measured'], 4)})"
            if c.get("rival")
            else ""
        )
        print(
            f"  [{c['verdict']}] {c['id']} ({c['kind']}, {c['source']}): measured "
            f"{sig(c['measured'], 4)} {c['relation']} {sig(c['threshold'], 4)}{rival} "
            f"— {c['statement']}"
        )


def cmd_execute(args, paths: Paths) -> int:
    if getattr(args, "variants", False):
        nbs = sorted(variants(paths))
    elif args.notebooks:
        nbs = [page_id(paths, n) for n in args.notebooks]
    else:
        nbs = book_pages(paths)
    start = time.perf_counter()
    results = execute_all(paths, nbs, jobs=args.jobs, force=args.force)
    publish(paths, results)
    print(f"executed in {time.perf_counter() - start:.1f} s wall")
    return 1 if report_failures(results) else 0


def cmd_build(args, paths: Paths) -> int:
    rc = cmd_execute(args, paths)
    if rc:
        print("not rendering: a notebook failed (see above)", file=sys.stderr)
        return rc
    stage(paths)
    return render(paths)


def cmd_render(args, paths: Paths) -> int:
    """Stage and render the site from what ``_build/executed`` holds (nothing is
    executed: a page not executed yet is an error naming it)."""
    stage(paths)
    return render(paths)


def _parse_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def cmd_rerun(args, paths: Paths) -> int:
    nb = page_id(paths, args.notebook)
    params = {name: _parse_value(value) for name, value in (args.param or [])}
    try:
        params = check_parameters(paths, nb, params)
    except params_mod.ParameterError as exc:
        print(f"twolayer rerun: {exc}", file=sys.stderr)
        return 2
    result = execute_all(
        paths, [nb], jobs=1, params=params, force=args.force, progress=True
    )[0]
    if result.ok:
        out = paths.build / "reruns" / f"{nb}-{result.key[:10]}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(result.entry / "notebook.ipynb", out)
        html = write_html(out)
        print(
            f"{nb} with {params or 'default parameters'}"
            f"{' (cached)' if result.cached else ''}:\n"
            f"  notebook {out}\n  page     {html}"
        )
        if getattr(args, "open", False):
            import webbrowser

            webbrowser.open(html.resolve().as_uri())
    print("claims:")
    print_claims(result.claims)
    if not result.claims:
        print("  (no claims recorded)")
    return 1 if report_failures([result]) else 0


def cmd_sweep(args, paths: Paths) -> int:
    """``twolayer sweep PAGE -p NAME VALUES ...``: the page over the grid, on dask
    (:mod:`.sweep`); a Parquet table and a summary per claim. Exit 1 if a claim
    holds on fewer points than it should or a point failed, 130 on Ctrl-C (the
    finished points are kept)."""
    from . import sweep as sw

    nb = page_id(paths, args.notebook)
    if args.workers is not None and args.workers < 1:
        print(
            f"twolayer sweep: --workers must be >= 1, got {args.workers}",
            file=sys.stderr,
        )
        return 2
    specs = [(name, values) for name, values in (args.param or [])]
    try:
        points = sw.make_points(paths, nb, sw.grid(specs))
    except (params_mod.ParameterError, sw.GridError) as exc:
        print(f"twolayer sweep: {exc}", file=sys.stderr)
        return 2
    outcome = sw.run_points(
        paths,
        points,
        workers=args.workers,
        scheduler=args.scheduler,
        force=args.force,
        progress=not args.quiet,
    )
    df = sw.table(
        points,
        outcome,
        extra=dict(code_key=sw.code_key(), commit=sw.commit(paths.root)),
    )
    out = sw.write_table(
        df, Path(args.out) if args.out else sw.default_table_path(paths, nb, specs)
    )
    done = len(outcome.results)
    print(
        f"{nb}: {done}/{len(points)} point(s) in {outcome.wall:.1f} s wall; table "
        f"{out}\n  (pandas.read_parquet('{out}'): one row per point and claim)"
    )
    lines, ok = sw.summary_lines(df)
    print("claims over the grid:")
    print("\n".join(lines) if lines else "  (no claims recorded)")
    if outcome.aborted:
        print(f"twolayer sweep: stopped: {outcome.aborted}", file=sys.stderr)
        return 2
    if outcome.interrupted:
        print(
            f"twolayer sweep: interrupted; {done} finished point(s) kept (cached and "
            "in the table); the same command resumes",
            file=sys.stderr,
        )
        return 130
    return 0 if ok else 1


def cmd_params(args, paths: Paths) -> int:
    nb = page_id(paths, args.notebook)
    for name, p in parameters(paths, nb).items():
        print(
            f"{name}: {p.describe()} = {p.default_text}"
            + (f"   # {p.help}" if p.help else "")
        )
    return 0


def cmd_claims(args, paths: Paths) -> int:
    rows = claims_mod.load_all(paths.executed)
    if not rows:
        print(
            "twolayer claims: no claims recorded yet; build the book first (`make "
            "book`)",
            file=sys.stderr,
        )
        return 2
    print_claims(rows)
    print(
        f"{len(rows)} claims, {sum(r['verdict'] == 'holds' for r in rows)} hold, "
        f"{sum(r['verdict'] == 'does not reproduce' for r in rows)} do not reproduce"
    )
    return (
        0
        if all(
            r["verdict"] != "fails" or (r["kind"] == "assumption" and r.get("note"))
            for r in rows
        )
        else 1
    )


def cmd_lock(args, paths: Paths) -> int:
    nbs = (
        [page_id(paths, n) for n in args.notebooks]
        if args.notebooks
        else notebook_ids(paths)
    )
    for nb in lock(paths, nbs):
        print(f"locked {nb}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="twolayer", description="Execute, cache and render the companion book."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn in (("execute", cmd_execute), ("build", cmd_build)):
        p = sub.add_parser(name, help=f"{name} the book's notebooks (cached)")
        p.add_argument("notebooks", nargs="*", help="chapter/name (default: all)")
        p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
        p.add_argument("--force", action="store_true", help="ignore the cache")
        p.set_defaults(fn=fn)
        if name == "execute":
            p.add_argument(
                "--variants",
                action="store_true",
                help="only the variant pages (variants.yml): `make test` runs them "
                "beside nbval, which executes the notebooks",
            )
    p = sub.add_parser("rerun", help="rerun one notebook with new parameters")
    p.add_argument(
        "notebook",
        help="chapter/name (or a variant page), e.g. phuong2021/fig1_two_layer",
    )
    p.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="set parameter NAME to VALUE (a Python literal; repeat for several); "
        "see `twolayer params NOTEBOOK`",
    )
    p.add_argument(
        "--force", action="store_true", help="execute even if a cached run exists"
    )
    p.add_argument(
        "--open",
        action="store_true",
        help="open the HTML page of the rerun in a browser",
    )
    p.set_defaults(fn=cmd_rerun)
    p = sub.add_parser(
        "sweep", help="execute a page over a grid of parameters on dask.distributed"
    )
    p.add_argument(
        "notebook", help="chapter/name (or a variant page), e.g. lyu2021/phase1"
    )
    p.add_argument(
        "-p",
        "--param",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUES"),
        help="values of NAME: a:b (inclusive integer range), a:b:step, v1,v2,... "
        "(Python literals), lo..hi:n (n log-spaced floats), [..] (one list); the grid "
        "is the product over every -p",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="LocalCluster worker processes (default: one per core)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="an existing dask scheduler, e.g. tcp://host:8786 (default: "
        "$TWOLAYER_DASK_SCHEDULER, else a LocalCluster)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="the Parquet table (default: _build/sweeps/<page>-<grid>.parquet)",
    )
    p.add_argument(
        "--force", action="store_true", help="execute even the points in the cache"
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(fn=cmd_sweep)
    p = sub.add_parser(
        "render",
        help="stage and render the site from the executed pages, executing nothing",
    )
    p.set_defaults(fn=cmd_render)
    p = sub.add_parser("params", help="list a notebook's parameters")
    p.add_argument("notebook")
    p.set_defaults(fn=cmd_params)
    p = sub.add_parser("claims", help="print the claims ledger of the last build")
    p.set_defaults(fn=cmd_claims)
    p = sub.add_parser(
        "lock",
        help="store each notebook's claims table from the last build "
        "in its source (what nbval compares)",
    )
    p.add_argument("notebooks", nargs="*", help="chapter/name (default: all)")
    p.set_defaults(fn=cmd_lock)
    robustness.add_parser(sub)
    args = parser.parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, raise_interrupted) if main_thread else None
    try:
        return args.fn(args, Paths(project_root()))
    except PageError as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(
            f"twolayer: {str(exc) or 'interrupted'}; nothing partial was cached",
            file=sys.stderr,
        )
        return 128 + int(signum)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
