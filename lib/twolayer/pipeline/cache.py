"""Cache entries: the key of a run, and the temporary folders a run works in.

A run's key hashes the notebook's source (without outputs), the library modules
the notebook imports (:mod:`.imports`), the data, the parameters and the
versions of the packages that compute. A run works in
``_build/cache/.tmp-<key>-<pid>-<random>`` and is renamed to
``_build/cache/<key>`` only when complete; a folder whose owner is gone was
abandoned by a killed build and is removed (with any kernel it left running).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import tempfile
from pathlib import Path

from .. import claims as claims_mod
from .. import data as data_mod
from .. import protocol
from .imports import library_fingerprint, notebook_modules
from .pages import Paths, resolve


def notebook_source(path: Path) -> bytes:
    """A notebook's cells without outputs (locking the claims output, ``twolayer
    lock``, does not change what a run computes) and its claims registry."""
    nb = json.loads(path.read_text())
    cells = [
        {k: v for k, v in c.items() if k not in ("outputs", "execution_count")}
        for c in nb["cells"]
    ]
    return json.dumps(cells, sort_keys=True).encode() + protocol.fingerprint(path)


def notebook_tree(path: Path) -> bytes:
    """What a notebook computes with: its code cells, joined in order, as a syntax
    tree (:func:`twolayer.codekey.canonical`). Prose, cell boundaries, comments and
    layout are left out, so editing the text of a page or splitting a cell keeps
    its stored held-out sweeps current; a code cell that does not parse (a magic)
    counts by its text. The claims registry (:mod:`twolayer.protocol`) counts by
    what it says."""
    from ..codekey import canonical

    nb = json.loads(path.read_text())
    code = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
    )
    try:
        tree = canonical(code)
    except (SyntaxError, ValueError):
        tree = b"unparsed " + code.encode()
    return tree + protocol.fingerprint(path)


def cache_key(paths: Paths, nb: str, params: dict) -> str:
    """The key of a run: notebook source, the library modules it imports, data,
    parameters, and the versions of the packages that compute (an upgraded
    environment recomputes)."""
    h = hashlib.sha256()
    for part in (
        notebook_source(resolve(paths, nb)),
        library_fingerprint(paths.lib, resolve(paths, nb)).encode(),
        stored_grids_fingerprint(paths, nb).encode(),
        data_mod.fingerprint().encode(),
        json.dumps(params, sort_keys=True).encode(),
        nb.encode(),
        json.dumps(versions(), sort_keys=True).encode(),
    ):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:24]


STORED_GRIDS = {"twolayer.regimes": "synthesis_*.parquet"}  # module -> files it reads


def stored_grids_fingerprint(paths: Paths, nb: str) -> str:
    """Hash of the stored grids (``data/sweeps``) a page reads through the module
    that loads them: a recomputed grid re-executes the page that plots it."""
    h = hashlib.sha256()
    modules = notebook_modules(paths.lib, resolve(paths, nb))
    for module, pattern in STORED_GRIDS.items():
        if module in modules:
            for f in sorted((paths.root / "data" / "sweeps").glob(pattern)):
                h.update(f.name.encode())
                h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def versions() -> dict:
    """Versions of Python and of the packages that compute (part of the cache key)."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("torch", "numpy", "scipy", "cvxpy", "clarabel", "papermill"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


TMP_PREFIX = ".tmp-"


def tmp_dir(cache: Path, key: str) -> Path:
    """A fresh temporary folder for a run of ``key``, named with this process's pid
    (so :func:`clean_abandoned` can tell when its owner has died)."""
    cache.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{key}-{os.getpid()}-", dir=cache))


def tmp_owner(path: Path) -> int | None:
    """The pid in a temporary run folder's name (None for another naming)."""
    m = re.fullmatch(r"\.tmp-[0-9a-f]+-(\d+)-.+", path.name)
    return int(m.group(1)) if m else None


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
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


def abandoned(path: Path) -> bool:
    """Whether a temporary run folder's owner is gone (or its name names none)."""
    owner = tmp_owner(path)
    return owner is None or not alive(owner)


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
        if out.startswith(prefix) and abandoned(Path(out).parent):
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
        if tmp.is_dir() and abandoned(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed
