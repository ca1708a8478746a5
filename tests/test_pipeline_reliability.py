"""The pipeline never lies: a failing notebook is reported (which notebook,
which cell, the traceback) with a non-zero exit; an interrupted build leaves
no partial cache entry and no running kernel, and the next build recomputes
only what is missing.

Each test builds a throw-away book of tiny notebooks (no torch) in a temporary
folder and runs the real ``twolayer`` command on it through ``TWOLAYER_ROOT``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from notebook_factory import write_test_notebook
from twolayer.pipeline import kernels

pytestmark = pytest.mark.slow

SLEEP_ENV = "TWOLAYER_TEST_SLEEP"


def twolayer_cmd() -> list[str]:
    script = Path(sys.executable).with_name("twolayer")
    return (
        [str(script)]
        if script.exists()
        else [sys.executable, "-m", "twolayer.pipeline"]
    )


def write_notebook(root: Path, nb: str, body: str) -> None:
    """``book/<nb>.ipynb``: a parameters cell, ``body``, and a claims cell."""
    write_test_notebook(
        root,
        nb,
        f"# {nb}",
        "seed = 0  # seed of nothing in particular",
        body,
        [f"'{nb.replace('/', '.')}.ran', 'the notebook ran', 1, '==', 1, 'trivial'"],
    )


def make_book(root: Path, notebooks: dict[str, str]) -> Path:
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (root / "book").mkdir(parents=True, exist_ok=True)
    for nb, body in notebooks.items():
        write_notebook(root, nb, body)
    return root


def run(
    root: Path, *args: str, sleep: float = 0.0, timeout: float = 300
) -> subprocess.CompletedProcess:
    env = {**os.environ, "TWOLAYER_ROOT": str(root), SLEEP_ENV: str(sleep)}
    return subprocess.run(
        twolayer_cmd() + list(args),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cache_state(root: Path) -> tuple[list[Path], list[Path]]:
    """(complete entries, temporary folders) under ``_build/cache``."""
    cache = root / "_build" / "cache"
    if not cache.exists():
        return [], []
    entries = [p for p in cache.iterdir() if not p.name.startswith(".")]
    tmps = [p for p in cache.iterdir() if p.name.startswith(".tmp-")]
    return entries, tmps


def interruptible() -> None:
    """Child setup: SIGINT back to its default, as in a terminal. A command
    started in the background of a non-interactive shell (how CI may run
    ``make test``) inherits SIGINT *ignored*, and Python then never installs
    its KeyboardInterrupt handler: the interrupt tests would test nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kernels_of(root: Path) -> list[int]:
    """Kernels still running for this book: started as ``ipykernel_launcher``
    with the book's cache in their environment, or forked by a worker's zygote
    (named ``forked-kernel``, with the environment of a build of this book)."""
    cache, mark = str(root / "_build" / "cache"), f"TWOLAYER_ROOT={root}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            comm = (proc / "comm").read_bytes().strip()
        except OSError:
            continue
        forked = comm == kernels.KERNEL_NAME and mark in environ.split(b"\0")
        if forked or f"TWOLAYER_CLAIMS_OUT={cache}".encode() in environ:
            pids.append(int(proc.name))
    return pids


SLOW = (
    "import os, time\n"
    f"time.sleep(float(os.environ.get({SLEEP_ENV!r}, '0')))\n"
    "slept = True"
)
FAST = "x = sum(range(10))"


def test_failing_notebook_is_reported_and_build_exits_nonzero(tmp_path):
    root = make_book(
        tmp_path,
        {
            "synthesis/good": FAST,
            "synthesis/broken": "def ratio(a, b):\n    return a / b\n\nratio(1, 0)",
        },
    )
    res = run(root, "build", "--jobs", "2")
    assert res.returncode != 0, res.stdout + res.stderr
    err = res.stderr
    assert "=== synthesis/broken FAILED ===" in err, err
    assert "cell 2" in err, "the failing cell is named"
    assert "ZeroDivisionError" in err and "division by zero" in err, err
    assert "return a / b" in err, "the traceback (with the failing line) is shown"
    assert "ratio(1, 0)" in err, "the failing cell's source is shown"
    assert "not rendering" in err
    assert (
        "FAILED synthesis/broken" in res.stdout
        and "ok     synthesis/good" in res.stdout
    ), res.stdout
    assert "synthesis/good FAILED" not in err
    assert (root / "_build" / "failed" / "synthesis" / "broken.ipynb").exists(), (
        "the failed notebook is kept"
    )
    entries, tmps = cache_state(root)
    assert not tmps
    assert len(entries) == 1 and (entries[0] / "meta.json").exists(), (
        "only the good notebook is cached"
    )
    assert (root / "_build" / "executed" / "synthesis" / "good.ipynb").exists()
    assert not (root / "_build" / "executed" / "synthesis" / "broken.ipynb").exists()


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"]
)
def test_interrupted_build_leaves_no_partial_entry(tmp_path, sig):
    root = make_book(tmp_path, {"synthesis/fast": FAST, "synthesis/slow": SLOW})
    env = {**os.environ, "TWOLAYER_ROOT": str(root), SLEEP_ENV: "600"}
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen(
            twolayer_cmd() + ["execute", "--jobs", "2"],
            env=env,
            stdout=fo,
            stderr=fe,
            preexec_fn=interruptible,
        )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:  # the fast one done, the slow one mid-run
            entries, tmps = cache_state(root)
            if entries and tmps and kernels_of(root):
                break
            assert proc.poll() is None, f"the build ended early: {err.read_text()}"
            time.sleep(0.5)
        else:
            pytest.fail(
                f"the build never reached the state to interrupt: {out.read_text()} "
                f"{err.read_text()}"
            )
        time.sleep(1.0)
        proc.send_signal(sig)
        rc = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 128 + sig, f"exit status {rc}: {err.read_text()}"
    assert "interrupted" in err.read_text() and "synthesis/slow" in err.read_text(), (
        err.read_text()
    )
    entries, tmps = cache_state(root)
    assert not tmps, f"partial entries left: {tmps}"
    assert len(entries) == 1, entries
    assert all(
        (entries[0] / name).exists()
        for name in ("notebook.ipynb", "meta.json", "claims.json")
    )
    assert (
        json.loads((entries[0] / "meta.json").read_text())["notebook"]
        == "synthesis/fast"
    )
    time.sleep(0.5)
    assert not kernels_of(root), "a kernel of the interrupted build is still running"

    fast_meta = (entries[0] / "meta.json").read_text()
    again = run(root, "execute", "--jobs", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "executing 1 notebook(s) (1 cached)" in again.stdout, again.stdout
    assert (
        "ok     synthesis/slow" in again.stdout and "synthesis/fast" not in again.stdout
    ), again.stdout
    entries, tmps = cache_state(root)
    assert len(entries) == 2 and not tmps
    assert (root / "_build" / "cache" / entries[0].name / "meta.json").exists()
    assert fast_meta in [(e / "meta.json").read_text() for e in entries], (
        "the cached run was reused"
    )


def test_abandoned_temporary_folders_are_removed(tmp_path):
    """A build killed with SIGKILL cannot clean up: the next one does."""
    root = make_book(tmp_path, {"synthesis/fast": FAST})
    cache = root / "_build" / "cache"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = cache / f".tmp-{'0' * 24}-{dead.pid}-abc123"
    stale.mkdir(parents=True)
    (stale / "notebook.ipynb").write_text("{}")
    live = cache / f".tmp-{'1' * 24}-{os.getpid()}-def456"  # a concurrent build's: kept
    live.mkdir()
    res = run(root, "execute")
    assert res.returncode == 0, res.stderr
    assert not stale.exists()
    assert live.exists()
    live.rmdir()


def test_run_record_shows_versions_seed_parameters_and_time(tmp_path):
    root = make_book(tmp_path, {"synthesis/fast": FAST})
    res = run(root, "rerun", "synthesis/fast", "-p", "seed", "7")
    assert res.returncode == 0, res.stderr
    entry = next(
        p for p in (root / "_build" / "cache").iterdir() if not p.name.startswith(".")
    )
    nb = nbformat.read(entry / "notebook.ipynb", as_version=4)
    record = nb.cells[-1]
    assert record.cell_type == "markdown" and "run-record" in record.metadata["tags"]
    text = record.source
    for needle in (
        "## Run record",
        "wall time",
        "seed: `seed = 7`",
        "python 3.",
        "torch ",
        "numpy ",
        "cvxpy ",
        "| `seed` | `7` |",
        "parameters changed from the defaults: `seed`",
    ):
        assert needle in text, f"{needle!r} not in the run record:\n{text}"
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["seeds"] == {"seed": "7"} and meta["seconds"] > 0


def processes_of(root: Path) -> list[int]:
    """Every process of a build of this book: the build, its workers (forked:
    they show the build's environment) and their kernels."""
    mark = f"TWOLAYER_ROOT={root}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if mark in (proc / "environ").read_bytes().split(b"\0"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def test_a_killed_build_leaves_no_process_and_publishes_nothing(tmp_path):
    """``kill -9`` of the ``twolayer`` process: its worker gets the parent-death
    signal, stops its kernel and publishes no entry; nothing keeps computing."""
    root = make_book(tmp_path, {"synthesis/slow": SLOW})
    env = {**os.environ, "TWOLAYER_ROOT": str(root), SLEEP_ENV: "20"}
    proc = subprocess.Popen(
        twolayer_cmd() + ["execute", "--jobs", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (
            cache_state(root)[1] and kernels_of(root)
        ):
            assert proc.poll() is None, "the build ended before the notebook started"
            time.sleep(0.5)
        assert kernels_of(root), "the notebook never started"
        time.sleep(1.0)
        proc.kill()  # SIGKILL: no handler of the build runs
        proc.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and processes_of(root):
            time.sleep(0.5)
        assert not processes_of(root), (
            "a worker or kernel of the killed build is still running"
        )
        time.sleep(25)  # longer than the notebook would have taken
        entries, _ = cache_state(root)
        assert not entries, f"a killed build's run was published: {entries}"
    finally:
        for pid in processes_of(root):
            os.kill(pid, signal.SIGKILL)


def test_an_interrupt_prints_no_traceback(tmp_path):
    root = make_book(tmp_path, {"synthesis/slow": SLOW})
    env = {**os.environ, "TWOLAYER_ROOT": str(root), SLEEP_ENV: "600"}
    proc = subprocess.Popen(
        twolayer_cmd() + ["execute", "--jobs", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not kernels_of(root):
            time.sleep(0.5)
        time.sleep(2.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT
    assert "Traceback" not in out + err and "zmq" not in (out + err).lower(), out + err
    assert "nothing partial was cached" in err
