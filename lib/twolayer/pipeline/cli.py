"""The ``twolayer`` command: ``build | execute | rerun | params | claims | lock``."""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import signal
import sys
import threading
import time

from .. import claims as claims_mod
from .. import parameters as params_mod
from .lock import lock
from .pages import Paths, book_pages, check_parameters, notebook_ids, page_id, parameters, project_root
from .render import render, stage, write_html
from .runner import RunResult, _raise_interrupted, execute_all, publish


def report_failures(results: list[RunResult]) -> int:
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"\n=== {r.nb} FAILED ===\n{r.error}", file=sys.stderr)
    return len(failed)


def print_claims(claims: list[dict]) -> None:
    sig = claims_mod.significant
    for c in claims:
        rival = f" (rival {c['rival']['name']}: {sig(c['rival']['measured'], 4)})" if c.get("rival") else ""
        print(f"  [{c['verdict']}] {c['id']} ({c['kind']}, {c['source']}): measured {sig(c['measured'], 4)} "
              f"{c['relation']} {sig(c['threshold'], 4)}{rival} — {c['statement']}")


def cmd_execute(args, paths: Paths) -> int:
    nbs = [page_id(paths, n) for n in args.notebooks] if args.notebooks else book_pages(paths)
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
    result = execute_all(paths, [nb], jobs=1, params=params, force=args.force, progress=True)[0]
    if result.ok:
        out = paths.build / "reruns" / f"{nb}-{result.key[:10]}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(result.entry / "notebook.ipynb", out)
        html = write_html(out)
        print(f"{nb} with {params or 'default parameters'}{' (cached)' if result.cached else ''}:\n"
              f"  notebook {out}\n  page     {html}")
        if getattr(args, "open", False):
            import webbrowser

            webbrowser.open(html.resolve().as_uri())
    print("claims:")
    print_claims(result.claims)
    if not result.claims:
        print("  (no claims recorded)")
    return 1 if report_failures([result]) else 0


def cmd_params(args, paths: Paths) -> int:
    nb = page_id(paths, args.notebook)
    for name, p in parameters(paths, nb).items():
        print(f"{name}: {p.describe()} = {p.default_text}" + (f"   # {p.help}" if p.help else ""))
    return 0


def cmd_claims(args, paths: Paths) -> int:
    rows = claims_mod.load_all(paths.executed)
    if not rows:
        print("twolayer claims: no claims recorded yet; build the book first (`make book`)", file=sys.stderr)
        return 2
    print_claims(rows)
    print(f"{len(rows)} claims, {sum(r['verdict'] == 'holds' for r in rows)} hold, "
          f"{sum(r['verdict'] == 'does not reproduce' for r in rows)} do not reproduce")
    return 0 if all(r["verdict"] != "fails" or (r["kind"] == "assumption" and r.get("note")) for r in rows) else 1


def cmd_lock(args, paths: Paths) -> int:
    nbs = [page_id(paths, n) for n in args.notebooks] if args.notebooks else notebook_ids(paths)
    for nb in lock(paths, nbs):
        print(f"locked {nb}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="twolayer", description="Execute, cache and render the companion book.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn in (("execute", cmd_execute), ("build", cmd_build)):
        p = sub.add_parser(name, help=f"{name} the book's notebooks (cached)")
        p.add_argument("notebooks", nargs="*", help="chapter/name (default: all)")
        p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
        p.add_argument("--force", action="store_true", help="ignore the cache")
        p.set_defaults(fn=fn)
    p = sub.add_parser("rerun", help="rerun one notebook with new parameters")
    p.add_argument("notebook", help="chapter/name (or a variant page), e.g. phuong2021/fig1_two_layer")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="set parameter NAME to VALUE (a Python literal; repeat for several); "
                        "see `twolayer params NOTEBOOK`")
    p.add_argument("--force", action="store_true", help="execute even if a cached run exists")
    p.add_argument("--open", action="store_true", help="open the HTML page of the rerun in a browser")
    p.set_defaults(fn=cmd_rerun)
    p = sub.add_parser("params", help="list a notebook's parameters")
    p.add_argument("notebook")
    p.set_defaults(fn=cmd_params)
    p = sub.add_parser("claims", help="print the claims ledger of the last build")
    p.set_defaults(fn=cmd_claims)
    p = sub.add_parser("lock", help="store each notebook's claims table from the last build "
                       "in its source (what nbval compares)")
    p.add_argument("notebooks", nargs="*", help="chapter/name (default: all)")
    p.set_defaults(fn=cmd_lock)
    args = parser.parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupted) if main_thread else None
    try:
        return args.fn(args, Paths(project_root()))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        print(f"twolayer: {str(exc) or 'interrupted'}; nothing partial was cached", file=sys.stderr)
        return 128 + int(signum)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
