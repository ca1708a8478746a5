"""Sweeps: a page executed over a grid of parameters, as dask.distributed tasks.

``twolayer sweep PAGE -p NAME VALUES ...`` (:func:`twolayer.pipeline.cli.cmd_sweep`)

1. reads the grid (:func:`parse_values`: ``a:b`` or ``a:b:step`` an inclusive
   integer range, ``v1,v2,...`` a list, ``lo..hi:n`` ``n`` log-spaced floats,
   ``[...]`` one list value) and takes the product of the parameters' values;
2. validates every point before anything starts (:func:`make_points`, the same
   one-line :class:`~.declarations.ParameterError` as ``rerun``) and keys
   it exactly as ``rerun`` does (:func:`~twolayer.pipeline.cache.cache_key`), so
   a finished point is never recomputed and an interrupted sweep resumes;
3. submits the points not in the cache as tasks (:func:`run_point`) to a
   ``LocalCluster`` with one single-threaded worker process per core, or to an
   existing scheduler (``--scheduler`` / ``$TWOLAYER_DASK_SCHEDULER``). Each
   task runs the page with :func:`twolayer.pipeline.runner.execute_one` — what
   ``rerun`` runs — in one process the worker keeps for the whole sweep, so the
   warm kernel zygote of :mod:`.kernels` is reused: a point pays neither a
   fresh kernel start nor the imports. A worker whose ``twolayer`` library
   differs from the client's (:func:`code_key`) refuses the task;
4. turns each point's claims into rows (:func:`rows_for`): one per (point,
   claim), with every parameter, the claim's kind, measured value, seed spread,
   rival, verdict, the seconds and the error of a point that failed; written
   as Parquet (:func:`write_table`) and summarised per claim
   (:func:`summarize`).

A worker killed mid-sweep loses nothing: the scheduler gives its task to
another worker (and the process executing the page dies with its worker,
removing its temporary folder). Ctrl-C cancels what is running and keeps every
finished point (in the cache and in the table).
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import functools
import hashlib
import itertools
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..codekey import file_digest
from . import declarations as params_mod
from .cache import cache_key, clean_abandoned, notebook_tree
from .imports import library_fingerprint
from .pages import (
    Paths,
    check_parameters,
    page_parameters,
    parameters,
    project_root,
    resolve,
)

SCHEDULER_ENV = "TWOLAYER_DASK_SCHEDULER"
SWEEPS_DIR = "sweeps"  # under _build/

# Columns of the table other than the parameters (a parameter with one of
# these names is stored as ``param_<name>``).
COLUMNS = (
    "page",
    "point",
    "key",
    "claim",
    "kind",
    "source",
    "statement",
    "relation",
    "threshold",
    "measured",
    "spread_min",
    "spread_max",
    "seeds",
    "horizon",
    "rival",
    "rival_measured",
    "rival_spread_min",
    "rival_spread_max",
    "rival_fails",
    "verdict",
    "holds",
    "error",
    "seconds",
    "cached",
    "worker",
    "page_code",
    "code_key",
    "commit",
    "why",
    "note",
    "data",
    "data_seed",
)


class GridError(ValueError):
    """A grid that cannot be read (one line)."""


class LibraryMismatch(RuntimeError):
    """A worker's book library (or page) differs from the client's."""


# ---------------------------------------------------------------------------
# the grid


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_values(text: str) -> list:
    """The values one ``-p NAME VALUES`` names.

    ``0:4`` -> 0, 1, 2, 3, 4 (inclusive); ``0:20:5`` -> 0, 5, 10, 15, 20;
    ``1e-4..1:5`` -> five log-spaced floats from 1e-4 to 1 (12 significant
    digits); ``a,b,c`` -> each a Python literal; ``[1, 2]`` -> one list value;
    anything else -> one literal.
    """
    text = str(text).strip()
    if not text:
        raise GridError("an empty value list")
    if text.startswith("["):
        return [_literal(text)]
    if m := re.fullmatch(r"(-?\d+):(-?\d+)(?::(\d+))?", text):
        a, b, step = int(m[1]), int(m[2]), int(m[3] or 1)
        if step < 1 or b < a:
            raise GridError(
                f"range {text!r}: expected a:b or a:b:step with a <= b and step >= 1"
            )
        return list(range(a, b + 1, step))
    if ".." in text:
        lo, _, rest = text.partition("..")
        hi, sep, n = rest.rpartition(":")
        try:
            lo_v, hi_v, count = float(lo), float(hi), int(n)
        except ValueError:
            raise GridError(
                f"log range {text!r}: expected lo..hi:n, e.g. 1e-4..1:9"
            ) from None
        if not sep or count < 2 or lo_v <= 0 or hi_v <= 0:
            raise GridError(
                f"log range {text!r}: expected lo..hi:n with lo, hi > 0 and n >= 2"
            )
        step = (math.log(hi_v) - math.log(lo_v)) / (count - 1)
        return [
            float(f"{math.exp(math.log(lo_v) + i * step):.12g}") for i in range(count)
        ]
    if "," in text:
        return [_literal(v.strip()) for v in text.split(",") if v.strip()]
    return [_literal(text)]


def grid(specs: list[tuple[str, str]] | None) -> list[dict]:
    """The product of the values of each ``(name, values)``, in the order given
    (the last parameter varies fastest); one empty point if there are none."""
    specs = list(specs or [])
    names = [n for n, _ in specs]
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise GridError(
            f"parameter {dup[0]!r} is given twice; list its values once: -p {dup[0]} "
            "a,b,c"
        )
    values = [parse_values(v) for _, v in specs]
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


@dataclass
class Point:
    """One grid point of a page: its values (as declared types), the
    parameters it runs with (the non-default ones, as ``rerun``) and its cache key."""

    page: str
    index: int
    values: dict
    run_params: dict
    key: str
    page_code: str


def page_code(paths: Paths, page: str) -> str:
    """What a page computes from: its notebook's code (:func:`.cache.notebook_tree`:
    prose and cell boundaries left out) and the library modules it imports (a
    stored sweep with another code is stale)."""
    src = resolve(paths, page)
    h = hashlib.sha256(notebook_tree(src))
    h.update(library_fingerprint(paths.lib, src).encode())
    return h.hexdigest()[:16]


def make_points(paths: Paths, page: str, points: list[dict]) -> list[Point]:
    """Validate every point (raises :class:`~.declarations.ParameterError`,
    one line, before anything runs) and key it as ``rerun`` would."""
    decls = parameters(paths, page)
    own = page_parameters(paths, page)
    params_mod.validate(params_mod.declarations(resolve(paths, page)), own, page=page)
    code = page_code(paths, page)
    out = []
    with _fingerprint_once():
        for i, p in enumerate(points):
            values = params_mod.validate(decls, p, page=page)
            run = {**own, **check_parameters(paths, page, p)}
            out.append(Point(page, i, values, run, cache_key(paths, page, run), code))
    return out


@contextlib.contextmanager
def _fingerprint_once():
    """The page's library fingerprint (its import graph, ~0.5 s) computed once
    for all its points, not once per point (same function, memoised)."""
    from . import cache

    original = cache.library_fingerprint
    cache.library_fingerprint = functools.lru_cache(maxsize=None)(original)
    try:
        yield
    finally:
        cache.library_fingerprint = original


# ---------------------------------------------------------------------------
# the code a worker runs


def code_key() -> str:
    """Hash of the installed ``twolayer`` package's code (every ``.py``, as a
    syntax tree: :func:`twolayer.codekey.file_digest`) and of the computing
    packages' versions."""
    import twolayer

    from . import cache

    versions = cache.versions
    base = Path(twolayer.__file__).resolve().parent
    h = hashlib.sha256(json.dumps(versions(), sort_keys=True).encode())
    for f in sorted(base.rglob("*.py")):
        if "__pycache__" in f.parts:
            continue
        h.update(str(f.relative_to(base)).encode())
        h.update(file_digest(f))
    return h.hexdigest()[:16]


@functools.cache
def worker_code_key() -> str:
    """A worker's :func:`code_key`, taken at its first task."""
    return code_key()


def installation() -> str:
    """Where this process's book lives: host, ``twolayer`` package folder, project root.
    A worker with the client's installation reads the very files the client
    read: there is nothing to compare (and a file edited during a sweep is
    treated as ``make book`` treats it)."""
    import socket

    import twolayer

    lib = Path(twolayer.__file__).resolve().parent
    return f"{socket.gethostname()}:{lib}:{project_root()}"


def commit(root: Path) -> str:
    """The git commit of ``root`` (with ``+dirty`` if ``lib/`` or ``book/`` has
    uncommitted changes), or ``unknown``."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "lib", "book"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("+dirty" if dirty else "")) if head else "unknown"


_POOL: cf.ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> cf.ProcessPoolExecutor:
    """This worker's one executing process, kept for the whole sweep (its kernel
    zygote too). It is started from a thread that lives as long as the worker:
    the parent-death signal it sets (``runner.worker_signals``) follows the
    thread that started it, not the process."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            return _POOL
        import multiprocessing as mp

        from . import runner

        # a dask worker under a nanny is a daemonic process, which multiprocessing
        # forbids to have children; the executing process dies with the worker anyway
        mp.current_process()._config["daemon"] = False
        box: dict = {}
        ready = threading.Event()

        def owner() -> None:
            try:
                pool = cf.ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=mp.get_context("spawn"),
                    initializer=runner.worker_signals,
                )
                pool.submit(int).result()  # start the process now, from this thread
                box["pool"] = pool
            except BaseException as exc:  # pragma: no cover - reported to the caller
                box["error"] = exc
            finally:
                ready.set()
            if "pool" in box:
                box["stop"] = threading.Event()
                box["stop"].wait()

        threading.Thread(
            target=owner, name="twolayer-sweep-executor", daemon=True
        ).start()
        ready.wait()
        if "error" in box:
            raise box["error"]
        _POOL = box["pool"]
        return _POOL


def _drop_pool() -> None:
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL.shutdown(wait=False, cancel_futures=True)
        _POOL = None


def _where() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def _from_cache(entry: Path) -> dict:
    meta = json.loads((entry / "meta.json").read_text())
    claims = (
        json.loads((entry / "claims.json").read_text())["claims"]
        if (entry / "claims.json").exists()
        else []
    )
    return dict(
        ok=True,
        cached=True,
        seconds=float(meta.get("seconds", 0.0)),
        error="",
        claims=claims,
    )


def run_point(
    page: str,
    run_params: dict,
    key: str,
    client_code: str,
    client_page: str,
    force: bool = False,
    origin: str = "",
) -> dict:
    """A dask task: execute one point of ``page`` on this worker as ``rerun``
    does (the page cache, papermill, a kernel forked from the warm zygote).
    Unless the worker shares the client's installation (``origin``), raises
    :class:`LibraryMismatch` if its library (``client_code``) or the page's
    code (:func:`page_code`, ``client_page``) differs from the client's."""
    from . import runner

    where = _where()
    same = origin == installation()
    mine = worker_code_key()
    if not same and mine != client_code:
        raise LibraryMismatch(
            f"worker {where} refuses {page}: its twolayer library (code key {mine}) "
            f"differs from the client's ({client_code}); install the same commit "
            f"and package versions on every worker"
        )
    paths = Paths(project_root())
    if not same and (code := page_code(paths, page)) != client_page:
        raise LibraryMismatch(
            f"worker {where} refuses {page}: its notebook's code (hash {code}) "
            f"differs from the client's ({client_page}); check out the same commit "
            "on every worker"
        )
    entry = paths.cache / key
    if not force and (entry / "meta.json").exists():
        return {**_from_cache(entry), "worker": where, "wall": 0.0}
    start = time.perf_counter()
    try:
        out = (
            _pool()
            .submit(
                runner.execute_one,
                str(paths.root),
                page,
                dict(run_params),
                key,
                runner.kernel_threads(),
                False,
            )
            .result()
        )
    except cf.process.BrokenProcessPool as exc:
        _drop_pool()
        out = dict(
            ok=False,
            seconds=time.perf_counter() - start,
            claims=[],
            error=f"the process executing the page died: {exc}",
        )
    return {
        **out,
        "cached": False,
        "worker": where,
        "wall": time.perf_counter() - start,
    }


# ---------------------------------------------------------------------------
# the client


@dataclass
class Outcome:
    """What became of the points: one result dict per finished point (by index)."""

    results: dict = field(default_factory=dict)
    interrupted: bool = False
    aborted: str = ""
    wall: float = 0.0


def _cluster(workers: int | None, scheduler: str | None):
    """(client, cluster or None): an existing scheduler's client, or a
    LocalCluster of ``workers`` single-threaded processes (default: one per core)."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler, timeout="30s"), None
    n = int(workers or os.cpu_count() or 1)
    with dask.config.set(
        {
            "distributed.worker.daemon": False,
            "distributed.scheduler.work-stealing": True,
        }
    ):
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
    return Client(cluster), cluster


class _deferred_interrupt:
    """Hold SIGINT while the block runs (main thread only); true afterwards if one
    came."""

    def __enter__(self) -> list:
        import signal

        self.pending: list = []
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(
                signal.SIGINT, lambda *_: self.pending.append(1)
            )
        return self.pending

    def __exit__(self, *exc) -> None:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


class _Progress:
    """Points done / total and failed: a tqdm bar on a terminal, else one line per
    point."""

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        self.total, self.done, self.failed = total, done, 0
        self.bar = None
        if enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=total, initial=done, unit="point", desc="sweep", file=sys.stderr
            )
        self.enabled = enabled

    def update(self, label: str, ok: bool, seconds: float) -> None:
        self.done += 1
        self.failed += not ok
        if self.bar is not None:
            self.bar.set_postfix(failed=self.failed)
            self.bar.update(1)
        elif self.enabled:
            print(
                f"  [{self.done}/{self.total}] {'ok    ' if ok else 'FAILED'} {label}  "
                f"{seconds:6.1f} s"
                + (f"  ({self.failed} failed)" if self.failed else ""),
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _label(p: Point) -> str:
    return f"{p.page} " + (
        " ".join(f"{k}={v!r}" for k, v in p.values.items()) or "(defaults)"
    )


def run_points(
    paths: Paths,
    points: list[Point],
    workers: int | None = None,
    scheduler: str | None = None,
    force: bool = False,
    progress: bool = True,
) -> Outcome:
    """Execute ``points`` (of any pages) on dask.distributed; cached points are
    read, not submitted. Returns as many results as finished (Ctrl-C: the
    finished ones, with ``interrupted`` set)."""
    outcome = Outcome()
    start = time.perf_counter()
    todo = []
    for i, p in enumerate(points):
        entry = paths.cache / p.key
        if not force and (entry / "meta.json").exists():
            outcome.results[i] = {**_from_cache(entry), "worker": "cache", "wall": 0.0}
        else:
            todo.append(i)
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV) or None
    if progress:
        where = (
            f"scheduler {scheduler}"
            if scheduler
            else f"a LocalCluster of {workers or os.cpu_count()} "
            "single-threaded worker(s)"
        )
        print(
            f"sweep: {len(points)} point(s), {len(points) - len(todo)} cached, "
            f"{len(todo)} to execute on {where}",
            flush=True,
        )
    if not todo:
        outcome.wall = time.perf_counter() - start
        return outcome
    clean_abandoned(paths)
    client = cluster = None
    bar = _Progress(len(points), len(points) - len(todo), progress)
    futures = {}
    try:
        from distributed import as_completed

        code, origin = code_key(), installation()
        # a cluster half started could not be closed
        with _deferred_interrupt() as pending:
            client, cluster = _cluster(workers, scheduler)
        if pending:
            raise KeyboardInterrupt
        for i in todo:
            p = points[i]
            fut = client.submit(
                run_point,
                p.page,
                p.run_params,
                p.key,
                code,
                p.page_code,
                force,
                origin,
                key=f"twolayer-point-{p.key}-{i}-{os.getpid()}",
                pure=False,
            )
            futures[fut] = i
        for fut in as_completed(list(futures)):
            i = futures[fut]
            try:
                r = fut.result()
            except LibraryMismatch as exc:
                outcome.aborted = str(exc)
                outcome.results[i] = dict(
                    ok=False,
                    cached=False,
                    seconds=0.0,
                    error=str(exc),
                    claims=[],
                    worker="",
                    wall=0.0,
                )
                bar.update(_label(points[i]), False, 0.0)
                break
            # a task error, or KilledWorker after repeated worker deaths
            except Exception as exc:
                r = dict(
                    ok=False,
                    cached=False,
                    seconds=0.0,
                    claims=[],
                    worker="",
                    wall=0.0,
                    error=f"{type(exc).__name__}: {exc}",
                )
            outcome.results[i] = r
            bar.update(_label(points[i]), r["ok"], float(r.get("seconds", 0.0)))
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        bar.close()
        if client is not None:
            try:
                client.cancel(list(futures), force=True)
            except Exception:  # noqa: BLE001 - closing anyway
                pass
            client.close(timeout=10)
        if cluster is not None:
            cluster.close(timeout=20)
        clean_abandoned(paths)
    outcome.wall = time.perf_counter() - start
    return outcome


# ---------------------------------------------------------------------------
# the table


def _rival_fails(claim: dict) -> bool | None:
    """Whether the rival fails the claim's relation on its whole spread (the
    ledger only records a rival that does); None if the claim has no rival."""
    from ..claims import RELATIONS, best

    rival = claim.get("rival")
    if not rival:
        return None
    values = rival.get("spread") or [rival["measured"]]
    return not RELATIONS[claim["relation"]](
        best(values, claim["relation"]), claim["threshold"]
    )


def data_draw(values: dict, mode: str | None) -> int | None:
    """The data draw of a point (DESIGN.md "Sweeps", STYLE.md "Claims v3"): None
    for a page whose data are fixed (``mode`` "fixed: ..."), else its
    ``data_seed`` if the point sets one, else its ``seed`` (a page's data are
    drawn from ``seed`` unless it has a ``data_seed`` parameter)."""
    if isinstance(mode, str) and mode.startswith("fixed"):
        return None
    value = values.get("data_seed", values.get("seed"))
    return int(value) if isinstance(value, (int, float)) and value == value else None


_CLAIM_IN_ERROR = re.compile(r"claim '([a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+)'")


def rows_for(
    point: Point, result: dict | None, param_names: list[str], extra: dict | None = None
) -> list[dict]:
    """The table rows of one point: one per claim it recorded; a point that
    failed keeps the claims it recorded and carries its one-line error; a point
    that recorded none is one row without a claim (a claim named in the error,
    e.g. a rival that cannot be told apart, is named in ``claim``)."""
    base = {
        "page": point.page,
        "point": point.index,
        "key": point.key,
        "page_code": point.page_code,
        **(extra or {}),
    }
    base["data_seed"] = data_draw(point.values, base.get("data"))
    for name in param_names:
        col = f"param_{name}" if name in COLUMNS else name
        base[col] = point.values.get(name)
    if result is None:
        return [
            {
                **base,
                "error": "not executed (the sweep stopped before it)",
                "holds": False,
            }
        ]
    error = (result.get("error") or "").strip()
    first_line = error.splitlines()[0] if error else ""
    if error.startswith("cell "):  # a cell raised: name the exception line
        m = re.search(r"raised (.*)", error.splitlines()[0])
        first_line = m.group(1) if m else first_line
    common = {
        **base,
        "seconds": float(result.get("seconds", 0.0)),
        "cached": bool(result.get("cached")),
        "worker": result.get("worker", ""),
        "error": first_line or None,
    }
    rows = []
    for c in result.get("claims") or []:
        spread = c.get("spread") or [None, None]
        rival = c.get("rival") or {}
        rspread = rival.get("spread") or [None, None]
        fails = _rival_fails(c)
        ok_verdict = c["verdict"] == "holds"
        rows.append(
            {
                **common,
                "claim": c["id"],
                "kind": c["kind"],
                "source": c.get("source"),
                "statement": c.get("statement"),
                "relation": c["relation"],
                "threshold": float(c["threshold"]),
                "measured": float(c["measured"]),
                "spread_min": spread[0],
                "spread_max": spread[1],
                "seeds": int(c.get("seeds", 1)),
                "horizon": c.get("horizon", ""),
                "rival": rival.get("name"),
                "rival_measured": rival.get("measured"),
                "rival_spread_min": rspread[0],
                "rival_spread_max": rspread[1],
                "rival_fails": fails,
                "verdict": c["verdict"],
                "holds": bool(ok_verdict and fails is not False),
                "why": c.get("why", ""),
                "note": c.get("note", ""),
            }
        )
    if not rows:
        m = _CLAIM_IN_ERROR.search(error)
        rows.append(
            {
                **common,
                "claim": m.group(1) if m else None,
                "holds": False,
                "rival_fails": False if m and "discriminate" in error else None,
            }
        )
    elif error:
        m = _CLAIM_IN_ERROR.search(error)
        named = m.group(1) if m else None
        # the claim that stopped the page
        if named and named not in {r["claim"] for r in rows}:
            rows.append(
                {
                    **common,
                    "claim": named,
                    "holds": False,
                    "rival_fails": False if "discriminate" in error else None,
                }
            )
    return rows


def table(points: list[Point], outcome: Outcome, extra: dict | None = None):
    """The tidy table (pandas): one row per (point, claim)."""
    import pandas as pd

    names = list(dict.fromkeys(n for p in points for n in p.values))
    rows = []
    for i, p in enumerate(points):
        rows.extend(rows_for(p, outcome.results.get(i), names, extra))
    df = pd.DataFrame(rows)
    for col in COLUMNS:
        if col not in df.columns:
            df[col] = None
    for col in (
        "threshold",
        "measured",
        "spread_min",
        "spread_max",
        "rival_measured",
        "rival_spread_min",
        "rival_spread_max",
        "seconds",
    ):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    df["seeds"] = pd.to_numeric(df["seeds"], errors="coerce").astype("Int64")
    df["data_seed"] = pd.to_numeric(df["data_seed"], errors="coerce").astype("Int64")
    for col in ("rival_fails", "cached"):
        df[col] = df[col].astype("boolean")
    df["holds"] = df["holds"].fillna(False).astype(bool)
    params = [c for c in df.columns if c not in COLUMNS]
    return df[[*params, *COLUMNS]]


def write_table(df, path: Path) -> Path:
    """Write ``df`` as Parquet (pyarrow), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    df.to_parquet(tmp, engine="pyarrow", index=False)
    os.replace(tmp, path)
    return path


def default_table_path(paths: Paths, page: str, specs: list[tuple[str, str]]) -> Path:
    """``_build/sweeps/<chapter>__<name>-<grid hash>.parquet``: the same command
    writes the same file."""
    tag = hashlib.sha256(json.dumps(specs).encode()).hexdigest()[:8]
    return paths.build / SWEEPS_DIR / f"{page.replace('/', '__')}-{tag}.parquet"


# ---------------------------------------------------------------------------
# the summary


def _probability_bound(why) -> float | None:
    """The bound of a probability claim, read from its ``why`` (None for any other
    claim, or a row without one: a point that recorded no claim)."""
    if not isinstance(why, str):
        return None
    m = re.search(r"bound ([0-9.eE+-]+) less the one-sided", why)
    return float(m.group(1)) if m else None


def required_points(n: int, bound: float | None) -> int:
    """On how many of ``n`` points a claim must hold: all, or for a claim
    "with probability >= bound" the fewest not significantly below the bound
    (one-sided 95 % binomial test)."""
    if bound is None:
        return n
    from ..claims import clopper_pearson_floor

    return clopper_pearson_floor(n, bound)


def _exempt(r) -> bool:
    """A point where the claim is, as the page states, a non-reproduction, a
    limit not resolved at the horizon reached, or an unmet assumption the page
    discusses: the page is green there."""
    return r["verdict"] in ("does not reproduce", "not resolved") or (
        r["verdict"] == "fails" and r["kind"] == "assumption" and bool(r.get("note"))
    )


def summarize(df) -> tuple[list[dict], bool]:
    """Per claim: points where it holds with its rival failing, of the points
    executed; min / median / max of the measured value; whether that is enough.
    Returns (one dict per claim, all enough and every point executed)."""
    skipped = df["error"].fillna("").str.startswith("not executed")
    # points the sweep never reached are not counted, but it is not complete
    ok = not skipped.any()
    df = df[~skipped]
    n_points = int(df["point"].nunique()) if len(df) else 0
    out = []
    for (page, claim), g in df[df["claim"].notna()].groupby(
        ["page", "claim"], sort=False
    ):
        measured = g["measured"].dropna()
        holds = int(g["holds"].fillna(False).astype(bool).sum())
        exempt = int(
            sum(
                _exempt(r) for _, r in g.iterrows() if isinstance(r.get("verdict"), str)
            )
        )
        # the claim's own fields from a point that recorded it (a point that
        # stopped on the claim names it in its error, with no fields)
        recorded = g[g["relation"].notna()] if "relation" in g else g.iloc[:0]
        first = recorded.iloc[0] if len(recorded) else g.iloc[0]
        bound = _probability_bound(first.get("why")) if len(recorded) else None
        need = required_points(n_points, bound)
        enough = holds + exempt >= need
        ok &= enough
        out.append(
            dict(
                page=page,
                claim=claim,
                kind=first.get("kind"),
                points=n_points,
                holds=holds,
                exempt=exempt,
                need=need,
                enough=enough,
                relation=first.get("relation"),
                threshold=first.get("threshold"),
                min=float(measured.min()) if len(measured) else None,
                median=float(measured.median()) if len(measured) else None,
                max=float(measured.max()) if len(measured) else None,
                rival_min=_min(g, "rival_spread_min", "rival_measured"),
                rival_max=_max(g, "rival_spread_max", "rival_measured"),
            )
        )
    failed_points = df[df["error"].notna() & df["claim"].isna()]
    if len(failed_points):
        ok = False
    return out, ok


def _min(g, col, fallback):
    vals = g[col].where(g[col].notna(), g[fallback]).dropna()
    return float(vals.min()) if len(vals) else None


def _max(g, col, fallback):
    vals = g[col].where(g[col].notna(), g[fallback]).dropna()
    return float(vals.max()) if len(vals) else None


def summary_lines(df) -> tuple[list[str], bool]:
    from ..claims import significant as sig

    rows, ok = summarize(df)
    lines = []
    for s in rows:
        rng = (
            "-"
            if s["min"] is None
            else f"min {sig(s['min'], 4)} / median {sig(s['median'], 4)} "
            f"/ max {sig(s['max'], 4)}"
        )
        test = (
            f"{s['relation']} {sig(s['threshold'], 4)}"
            if isinstance(s["relation"], str)
            else ""
        )
        rival = (
            ""
            if s["rival_min"] is None
            else f"; rival {sig(s['rival_min'], 4)}..{sig(s['rival_max'], 4)}"
        )
        flag = "ok  " if s["enough"] else "FEW "
        extra = f" (+{s['exempt']} as the page states)" if s["exempt"] else ""
        need = "" if s["need"] == s["points"] else f", needs {s['need']}"
        held = "holds, rival failing," if s["rival_min"] is not None else "holds"
        lines.append(
            f"  {flag} {s['claim']} ({s['kind']}): {held} on {s['holds']}/{s['points']}"
            f"{extra}{need}; measured {rng} {test}{rival}"
        )
    failed = df[df["error"].notna()].drop_duplicates("point")
    skipped = failed["error"].str.startswith("not executed")
    for _, r in failed[~skipped].iterrows():
        lines.append(f"  point {r['point']} failed: {r['error']}")
    if skipped.any():
        lines.append(
            f"  {int(skipped.sum())} point(s) not executed (the sweep stopped before "
            "them)"
        )
    return lines, ok
