"""Executing notebooks with papermill in worker processes: parallel, cached,
interruptible (a worker dies with its build and never publishes for a dead one)."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import platform
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import claims as claims_mod
from . import declarations as params_mod
from . import kernels
from .cache import alive, cache_key, clean_abandoned, tmp_dir, versions
from .pages import Paths, check_parameters, page_parameters, resolve
from .record import (
    data_description,
    effective_parameters,
    run_record_cell,
    seed_parameters,
)


@dataclass
class RunResult:
    nb: str
    key: str
    ok: bool
    cached: bool
    seconds: float
    entry: Path | None = None
    error: str = ""
    claims: list = field(default_factory=list)


KERNEL_START_ATTEMPTS = 3


_KERNEL_START_FAILURES = (
    "Kernel died before replying to kernel_info",
    "Kernel didn't respond in",
)


class Interrupted(KeyboardInterrupt):
    """The build was stopped by a signal (SIGINT, SIGTERM)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = int(signum)


def raise_interrupted(signum, frame) -> None:
    """A signal handler: stop the build with :class:`Interrupted`."""
    raise Interrupted(signum)


_RUNNING = False  # in a worker: is a notebook being executed?


def _worker_terminated(signum, frame) -> None:
    if _RUNNING:
        raise Interrupted(signum)
    os._exit(128 + signum)  # idle: nothing to clean up


def worker_signals() -> None:
    """In a worker: SIGTERM (what the parent sends on an interrupt) unwinds the
    run, so that its temporary folder is removed (papermill's kernel client
    handles it itself, shutting the kernel down, while a cell runs); an idle
    worker just exits."""
    signal.signal(signal.SIGTERM, _worker_terminated)
    _die_with_parent()


def _die_with_parent() -> None:
    """On Linux, ask the kernel to send this worker SIGTERM when the build
    process dies (even by ``kill -9``), so no orphan keeps computing."""
    kernels.prctl(kernels.PR_SET_PDEATHSIG, signal.SIGTERM)


def _parent_alive(parent: int) -> bool:
    """An entry is published only while the build that asked for it runs."""
    return os.getppid() == parent and alive(parent)


def kernel_start_failed(exc: BaseException) -> bool:
    """A kernel that died while starting (e.g. a port taken by a kernel started
    at the same moment by another worker): no cell ran, so the run is retried."""
    return isinstance(exc, RuntimeError) and any(
        m in str(exc) for m in _KERNEL_START_FAILURES
    )


# The kernel's "running over TCP without encryption" notice (the kernel is local),
# the ZMQ traceback it logs when an interrupt closes its sockets, and papermill's
# own parameter inspection (the book validates parameters itself, see
# pipeline.declarations) are noise. Errors in cells still reach the notebook (they
# travel as messages, not as kernel log lines).
KERNEL_QUIET = ["--IPKernelApp.log_level=CRITICAL"]


def _quiet_papermill() -> None:
    import logging

    logging.getLogger("papermill").setLevel(logging.ERROR)


def kernel_threads() -> int:
    """Torch threads of each notebook's kernel: one unless ``TWOLAYER_THREADS``
    says otherwise. The book's networks are small, and a second thread costs
    more in synchronisation than it gains (measured 20x slower on a loaded
    machine); parallelism comes from jobs."""
    return int(os.environ.get("TWOLAYER_THREADS", 1))


def execute_one(
    root: str, nb: str, params: dict, key: str, threads: int, progress: bool
) -> dict:
    """Run one notebook into a fresh temporary directory and rename it into the
    cache when, and only when, it completed. Runs in a worker process."""
    import papermill as pm

    from ..flows.memo import RUN_CACHE_ENV

    global _RUNNING
    parent = os.getppid()
    worker_signals()
    _quiet_papermill()
    paths = Paths(Path(root))
    src = resolve(paths, nb)
    start = time.perf_counter()
    tmp: Path | None = None
    _RUNNING = True
    try:
        for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
            tmp = tmp_dir(paths.cache, key)
            os.environ.update(
                {
                    claims_mod.CLAIMS_ENV: str(tmp / "claims.json"),
                    claims_mod.PAGE_ENV: nb,
                    "TWOLAYER_THREADS": str(threads),
                    RUN_CACHE_ENV: os.environ.get(RUN_CACHE_ENV, str(paths.runs)),
                    "OMP_NUM_THREADS": str(threads),
                    "MKL_NUM_THREADS": str(threads),
                    "OPENBLAS_NUM_THREADS": str(threads),
                    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
                    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
                }
            )
            try:
                pm.execute_notebook(
                    str(src),
                    str(tmp / "notebook.ipynb"),
                    parameters=params,
                    cwd=str(src.parent),
                    kernel_name="python3",
                    progress_bar=progress,
                    log_output=False,
                    extra_arguments=KERNEL_QUIET,
                    kernel_manager_class=kernels.manager_class(),
                )
                break
            except Exception as exc:
                if attempt < KERNEL_START_ATTEMPTS and kernel_start_failed(exc):
                    print(
                        f"  {nb}: {exc}; starting a new kernel (attempt {attempt + 1})",
                        flush=True,
                    )
                    shutil.rmtree(tmp, ignore_errors=True)
                    continue
                raise
        seconds = time.perf_counter() - start
        finish_entry(paths, nb, key, params, tmp, seconds, threads)
        if not _parent_alive(parent):
            raise KeyboardInterrupt(
                "the build that started this run is gone; nothing is cached"
            )
        final = commit_entry(paths, key, tmp)
        claims = (
            json.loads((final / "claims.json").read_text())["claims"]
            if (final / "claims.json").exists()
            else []
        )
        return dict(ok=True, seconds=seconds, error="", claims=claims)
    except (
        BaseException
    ) as exc:  # report, keep the failed notebook for inspection, cache nothing
        failed = paths.build / "failed" / f"{nb}.ipynb"
        claims = []
        if tmp is not None and (tmp / "notebook.ipynb").exists():
            failed.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp / "notebook.ipynb", failed)
        if tmp is not None and (tmp / "claims.json").exists():
            claims = json.loads((tmp / "claims.json").read_text())["claims"]
        return dict(
            ok=False,
            seconds=time.perf_counter() - start,
            error=_describe(exc, failed),
            claims=claims,
        )
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        _RUNNING = False
        if not _parent_alive(
            parent
        ):  # the build died: no one will read a result or send work
            os._exit(128 + signal.SIGTERM)


def finish_entry(
    paths: Paths,
    nb: str,
    key: str,
    params: dict,
    tmp: Path,
    seconds: float,
    threads: int,
    executor: str = "`twolayer`",
) -> dict:
    """Complete a run's folder ``tmp`` (the executed ``notebook.ipynb``, the
    ledger's ``claims.json``): the run record cell and ``meta.json``."""
    import nbformat

    src = resolve(paths, nb)
    effective = effective_parameters(src, params)
    meta = dict(
        notebook=nb,
        key=key,
        parameters=params,
        effective_parameters=effective,
        seeds=seed_parameters(effective),
        seconds=seconds,
        threads=threads,
        versions=versions(),
        machine=f"{platform.machine()}, {os.cpu_count()} cores",
        finished=time.strftime("%Y-%m-%d %H:%M:%S"),
        data=data_description(src),
        executor=executor,
    )
    out = nbformat.read(tmp / "notebook.ipynb", as_version=4)
    out.cells.append(run_record_cell(meta))
    nbformat.write(out, tmp / "notebook.ipynb")
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    return meta


def commit_entry(paths: Paths, key: str, tmp: Path) -> Path:
    """Rename a completed run folder into the cache as the entry of ``key``."""
    final = paths.cache / key
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def run_parameters(paths: Paths, nb: str, params: dict) -> dict:
    """What a page runs with: a variant's own parameters (checked against its
    notebook's declarations), then ``params`` (checked)."""
    own = page_parameters(paths, nb)
    params_mod.validate(params_mod.declarations(resolve(paths, nb)), own, page=nb)
    return {**own, **check_parameters(paths, nb, params)}


def _describe(exc: BaseException, failed: Path) -> str:
    cell = getattr(exc, "cell_index", None)
    if cell is not None:
        tb = "\n".join(getattr(exc, "traceback", []) or [])
        import re

        tb = re.sub(r"\x1b\[[0-9;]*m", "", tb)
        return (
            f"cell {cell} (execution count {getattr(exc, 'exec_count', '?')}) raised "
            f"{exc.ename}: {exc.evalue}\n--- cell source ---\n{exc.source}\n--- "
            f"traceback ---\n{tb}\n(failed notebook kept at {failed})"
        )
    return f"{type(exc).__name__}: {exc}"


def execute_all(
    paths: Paths,
    nbs: list[str],
    jobs: int = 2,
    params: dict | None = None,
    force: bool = False,
    progress: bool = False,
) -> list[RunResult]:
    """Execute notebooks (cached, in parallel). Returns one result per notebook."""
    params = params or {}
    results, todo = {}, []
    run_params = {nb: run_parameters(paths, nb, params) for nb in nbs}
    for nb in nbs:
        key = cache_key(paths, nb, run_params[nb])
        entry = paths.cache / key
        if not force and (entry / "meta.json").exists():
            claims = (
                json.loads((entry / "claims.json").read_text())["claims"]
                if (entry / "claims.json").exists()
                else []
            )
            results[nb] = RunResult(nb, key, True, True, 0.0, entry, claims=claims)
        else:
            todo.append((nb, key))
    jobs = max(1, min(jobs, len(todo) or 1))
    threads = kernel_threads()
    if todo:
        print(
            f"executing {len(todo)} notebook(s) ({len(nbs) - len(todo)} cached), "
            f"{jobs} at a time, {threads} torch thread(s) each",
            flush=True,
        )
    clean_abandoned(paths)
    if not todo:
        return [results[nb] for nb in nbs]
    # Longest-running first keeps both cores busy to the end.
    todo.sort(key=lambda t: -last_seconds(paths, t[0]))
    pool = cf.ProcessPoolExecutor(max_workers=jobs, initializer=worker_signals)
    futs: dict = {}
    try:
        futs = {
            pool.submit(
                execute_one, str(paths.root), nb, run_params[nb], key, threads, progress
            ): (nb, key)
            for nb, key in todo
        }
        for fut in cf.as_completed(futs):
            nb, key = futs[fut]
            try:
                r = fut.result()
            except (
                Exception
            ) as exc:  # the worker process itself died (e.g. killed for memory)
                r = dict(
                    ok=False,
                    seconds=0.0,
                    error=f"the worker process running it died: {exc!r}",
                    claims=[],
                )
            res = RunResult(
                nb,
                key,
                r["ok"],
                False,
                r["seconds"],
                paths.cache / key if r["ok"] else None,
                r["error"],
                r["claims"],
            )
            results[nb] = res
            print(
                f"  {'ok    ' if res.ok else 'FAILED'} {nb}  {res.seconds:6.1f} s",
                flush=True,
            )
    except BaseException:
        unfinished = [nb for nb, _ in futs.values() if nb not in results] or [
            nb for nb, _ in todo
        ]
        _stop_pool(pool)
        clean_abandoned(paths)
        print(
            f"interrupted: {len(unfinished)} notebook(s) not finished and not cached: "
            f"{', '.join(unfinished)}",
            file=sys.stderr,
            flush=True,
        )
        raise
    pool.shutdown(wait=True)
    clean_abandoned(paths)
    return [results[nb] for nb in nbs]


def _stop_pool(pool: cf.ProcessPoolExecutor, grace: float = 5.0) -> None:
    """Stop the workers of an interrupted build: SIGTERM (each shuts its kernel
    down and removes its temporary folder), then SIGKILL after ``grace`` s
    (:func:`clean_abandoned` then stops what a killed worker left behind)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(5)


BENCH_RESULTS = Path("benchmarks") / "results.json"


def last_seconds(paths: Paths, nb: str) -> float:
    """How long a page took last time: its last run in ``_build/executed``, else
    the median point of its stored held-out sweep (``data/sweeps``, tracked: each
    point a fresh execution, training included, at a recent version of the page),
    else the last ``make bench`` (``benchmarks/results.json``, tracked), so that a
    clean build (and ``make test``'s nbval in a fresh clone) also starts with the
    longest pages; 0 if unknown."""
    meta = paths.executed / f"{nb}.meta.json"
    try:
        return float(json.loads(meta.read_text())["seconds"])
    except (OSError, ValueError, KeyError):
        pass
    swept = _sweep_seconds(paths, nb)
    if swept is not None:
        return swept
    try:
        return float(json.loads((paths.root / BENCH_RESULTS).read_text())["times"][nb])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _sweep_seconds(paths: Paths, nb: str) -> float | None:
    """The median seconds of a point of ``nb``'s stored held-out sweep; None if
    there is none (or it cannot be read)."""
    from .robustness import store_path

    path = store_path(paths, nb)
    if not path.exists():
        return None
    try:
        import pandas as pd

        df = pd.read_parquet(path, columns=["point", "seconds"])
        seconds = float(df.groupby("point")["seconds"].first().median())
    except Exception:  # an estimate only: the next source decides
        return None
    return seconds if seconds > 0 else None  # (NaN > 0 is False)


def publish(paths: Paths, results: list[RunResult]) -> None:
    """Copy the default-parameter runs into ``_build/executed`` (atomically per
    file)."""
    for r in results:
        if not r.ok:
            continue
        dest = paths.executed / r.nb
        dest.parent.mkdir(parents=True, exist_ok=True)
        for src_name, suffix in (
            ("notebook.ipynb", ".ipynb"),
            ("claims.json", ".claims.json"),
            ("meta.json", ".meta.json"),
        ):
            src = r.entry / src_name
            if src.exists():
                tmp = dest.with_name(dest.name + suffix + ".tmp")
                shutil.copyfile(src, tmp)
                os.replace(tmp, dest.with_name(dest.name + suffix))
        claims_json = dest.with_name(dest.name + ".claims.json")
        if claims_json.exists():  # the held-out record as stored now (format v3)
            from .robustness import refresh_heldout

            refresh_heldout(paths, r.nb, claims_json)
