"""``twolayer sweep`` (twolayer.pipeline.sweep): the grid, the rows, the summary
(fast); a sweep of a tiny book on a LocalCluster, and on a real ``dask
scheduler`` with two ``dask worker`` processes one of which is killed with
SIGKILL mid-sweep (slow)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from notebook_factory import write_test_notebook
from twolayer.pipeline import sweep as sw
from twolayer.pipeline.cli import main

LIB = Path(__file__).resolve().parents[1] / "lib" / "twolayer"
DASK = Path(sys.executable).with_name("dask")


# ---------------------------------------------------------------------------
# the grid


def test_values():
    assert sw.parse_values("0:4") == [0, 1, 2, 3, 4]
    assert sw.parse_values("0:20:5") == [0, 5, 10, 15, 20]
    assert sw.parse_values("1e-4..1:5") == [1e-4, 1e-3, 1e-2, 0.1, 1.0]
    assert sw.parse_values("1,2.5,'mean'") == [1, 2.5, "mean"]
    assert sw.parse_values("[0.1, 0.2]") == [[0.1, 0.2]]
    assert sw.parse_values("7") == [7]
    for bad in ("4:0", "0:4:0", "1..0:3", "1e-3..1:1", ""):
        with pytest.raises(sw.GridError):
            sw.parse_values(bad)


def test_grid_is_the_product_and_names_a_repeated_parameter():
    assert sw.grid([("a", "0:1"), ("b", "x,y")]) == [
        dict(a=0, b="x"),
        dict(a=0, b="y"),
        dict(a=1, b="x"),
        dict(a=1, b="y"),
    ]
    assert sw.grid([]) == [{}]
    with pytest.raises(sw.GridError, match="'a' is given twice"):
        sw.grid([("a", "1"), ("a", "2")])


def test_every_point_is_validated_before_anything_runs(capsys):
    assert main(["sweep", "lyu2021/phase1", "-p", "seed", "0,-1"]) == 2
    err = capsys.readouterr().err
    assert (
        "parameter seed = -1: expected int >= 0" in err
        and len(err.strip().splitlines()) == 1
    )
    assert main(["sweep", "lyu2021/phase1", "-p", "widht", "3"]) == 2
    assert "unknown parameter 'widht'" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# rows and the summary

RIVAL = {"name": "large init", "measured": 0.2, "spread": [0.1, 0.2], "horizon": "t=10"}


def _claim(
    cid, measured, verdict="holds", kind="prediction", rival=RIVAL, why="theory", **kw
):
    return {
        "id": cid,
        "source": "Thm 1",
        "kind": kind,
        "statement": "s",
        "measured": measured,
        "relation": ">=",
        "threshold": 0.5,
        "why": why,
        "seeds": 5,
        "spread": [measured, measured + 0.1],
        "horizon": "t=10",
        "rival": rival,
        "verdict": verdict,
        "diagnosis": "",
        **kw,
    }


def _points(n):
    return [
        sw.Point("lyu2021/phase1", i, {"seed": 5 * i}, {"seed": 5 * i}, f"k{i}", "c")
        for i in range(n)
    ]


def test_rows_one_per_claim_and_a_failed_point_keeps_its_error():
    pts = _points(3)
    ok = dict(
        ok=True,
        cached=False,
        seconds=2.0,
        error="",
        worker="w",
        claims=[
            _claim("lyu2021.a.x", 0.9),
            _claim("lyu2021.a.y", 1e-12, kind="identity", rival=None),
        ],
    )
    failed = dict(
        ok=False,
        cached=False,
        seconds=1.0,
        worker="w",
        claims=[],
        error="cell 3 (execution count 3) raised CannotDiscriminate: claim "
        "'lyu2021.a.x' cannot discriminate: its rival 'large init' measures 0.6\n"
        "--- cell source ---\n...",
    )
    out = sw.Outcome(results={0: ok, 1: failed})
    df = sw.table(pts, out, extra=dict(code_key="ck", commit="abc"))
    assert list(df.columns[:1]) == ["seed"] and set(sw.COLUMNS) <= set(df.columns)
    assert len(df) == 4
    first = df[df.point == 0].set_index("claim")
    assert first.loc["lyu2021.a.x", "holds"] and first.loc["lyu2021.a.x", "rival_fails"]
    assert (
        first.loc["lyu2021.a.x", "rival_spread_max"] == 0.2
        and first.loc["lyu2021.a.x", "spread_min"] == 0.9
    )
    assert first.loc["lyu2021.a.y", "holds"] and pd.isna(
        first.loc["lyu2021.a.y", "rival_fails"]
    )
    bad = df[df.point == 1].iloc[0]
    assert (
        bad["claim"] == "lyu2021.a.x"
        and not bad["holds"]
        and bad["rival_fails"] == False  # noqa: E712
    )
    assert bad["error"].startswith("CannotDiscriminate: claim 'lyu2021.a.x'")
    assert df[df.point == 2].iloc[0]["error"].startswith("not executed")
    assert (df["commit"] == "abc").all() and (df["code_key"] == "ck").all()


def test_summary_counts_points_where_a_claim_holds_with_its_rival_failing():
    pts = _points(5)
    results = {
        i: dict(
            ok=True,
            cached=True,
            seconds=1.0,
            error="",
            worker="w",
            claims=[
                _claim("lyu2021.a.x", 0.6 + 0.1 * i),
                _claim(
                    "lyu2021.a.dnr",
                    0.1,
                    verdict="does not reproduce",
                    diagnosis="finite time",
                ),
                _claim(
                    "lyu2021.a.flip",
                    0.9 if i else 0.3,
                    verdict="holds" if i else "fails",
                ),
            ],
        )
        for i in range(5)
    }
    df = sw.table(pts, sw.Outcome(results=results))
    rows, ok = sw.summarize(df)
    by = {r["claim"]: r for r in rows}
    assert by["lyu2021.a.x"]["holds"] == 5 and by["lyu2021.a.x"]["enough"]
    assert by["lyu2021.a.x"]["min"] == 0.6 and by["lyu2021.a.x"][
        "max"
    ] == pytest.approx(1.0)
    assert by["lyu2021.a.dnr"]["enough"] and by["lyu2021.a.dnr"]["exempt"] == 5
    assert by["lyu2021.a.flip"]["holds"] == 4 and not by["lyu2021.a.flip"]["enough"]
    assert not ok
    lines, _ = sw.summary_lines(df)
    assert any(line.strip().startswith("FEW  lyu2021.a.flip") for line in lines)


def test_a_probability_claim_needs_its_bound_not_every_point():
    why = (
        "paper: p >= 0.5 — bound 0.75 less the one-sided 95% binomial margin at n = 20"
    )
    assert sw.required_points(20, 0.75) < 20 and sw.required_points(20, None) == 20
    pts = _points(20)
    results = {
        i: dict(
            ok=True,
            cached=True,
            seconds=1.0,
            error="",
            worker="w",
            claims=[
                _claim(
                    "lyu2021.a.p",
                    0.8 if i < 17 else 0.2,
                    verdict="holds" if i < 17 else "fails",
                    why=why,
                    rival=None,
                )
            ],
        )
        for i in range(20)
    }
    rows, ok = sw.summarize(sw.table(pts, sw.Outcome(results=results)))
    assert (
        rows[0]["holds"] == 17
        and rows[0]["need"] == sw.required_points(20, 0.75)
        and ok
    )
    # a point that stopped on the claim (its row is named from the error, no why)
    error = "CannotDiscriminate: claim 'lyu2021.a.p' cannot discriminate: its rival"
    results = {i + 1: r for i, r in results.items()}
    results[0] = dict(results[1], ok=False, error=error, claims=[])
    table = sw.table(_points(21), sw.Outcome(results=results))
    rows, _ = sw.summarize(table)
    assert rows[0]["need"] == sw.required_points(20, 0.75)
    lines, _ = sw.summary_lines(table)
    assert any("lyu2021.a.p" in line and ">=" in line for line in lines), lines


def test_a_worker_with_another_library_refuses_the_task():
    with pytest.raises(
        sw.LibraryMismatch, match="twolayer library .* differs from the client's"
    ):
        sw.run_point(
            "lyu2021/phase1", {}, "key", "0" * 16, "nb", origin="otherhost:/lib:/book"
        )
    from twolayer.pipeline.pages import Paths, project_root

    nb = sw.page_code(Paths(project_root()), "lyu2021/phase1")
    with pytest.raises(
        sw.LibraryMismatch, match="its notebook's code .* differs from the client's"
    ):
        sw.run_point(
            "lyu2021/phase1",
            {},
            "key",
            sw.worker_code_key(),
            "0" * 16,
            origin="otherhost:/lib:/book",
        )
    assert nb != "0" * 16


# ---------------------------------------------------------------------------
# end to end on a tiny book (slow)

BODY = """import time
time.sleep(delay)
if seed == 13:
    raise RuntimeError('seed 13 is unlucky')
value = float(seed) + x"""


def make_root(root: Path) -> Path:
    (root / "_config.yml").write_text("title: test book\n")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/synthesis/a\n"
    )
    (root / "book").mkdir(parents=True, exist_ok=True)
    (root / "book" / "intro.md").write_text("# Test book\n")
    write_test_notebook(
        root,
        "synthesis/a",
        "# a",
        "seed: int = 0  # >= 0; seed\nx: float = 1.0  # > 0; offset\n"
        "delay: float = 0.0  # >= 0; seconds the page sleeps",
        BODY,
        ["'synthesis.a.value', 'the value', value, '<', 100, 'small'"],
    )
    shutil.copytree(
        LIB, root / "lib" / "twolayer", ignore=shutil.ignore_patterns("__pycache__")
    )
    return root


def book_env(root: Path) -> dict:
    # the client, the workers and the kernels import the root's copy of the
    # library (the code key is of the library each imports; the checkout's own
    # may be edited while the test runs)
    return {
        **os.environ,
        "TWOLAYER_ROOT": str(root),
        "TWOLAYER_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(
            [str(root / "lib"), os.environ.get("PYTHONPATH", "")]
        ),
        "TWOLAYER_RUN_CACHE": str(root / "_build" / "runs"),
    }


def sweep(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "twolayer.pipeline", "sweep", *args],
        env=book_env(root),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return make_root(tmp_path_factory.mktemp("sweepbook"))


@pytest.mark.slow
def test_local_cluster_sweep_table_failure_and_resume(root):
    out = root / "t.parquet"
    r = sweep(
        root,
        "synthesis/a",
        "-p",
        "seed",
        "11:13",
        "-p",
        "x",
        "1,2",
        "--workers",
        "2",
        "--out",
        str(out),
    )
    assert r.returncode == 1, r.stdout + r.stderr  # seed 13 raises: a failed point
    df = pd.read_parquet(out)
    assert len(df) == 6 and df["point"].nunique() == 6
    good = df[df.seed < 13]
    assert good["holds"].all() and good["error"].isna().all()
    assert sorted(good["measured"]) == [12.0, 13.0, 13.0, 14.0]
    bad = df[df.seed == 13]
    assert (
        bad["claim"].isna().all()
        and bad["error"].str.contains("seed 13 is unlucky").all()
    )
    assert (
        "6/6 point(s)" in r.stdout
        and "point 4 failed: RuntimeError: seed 13 is unlucky" in r.stdout
    )
    again = sweep(
        root, "synthesis/a", "-p", "seed", "11:12", "-p", "x", "1,2", "--out", str(out)
    )
    assert again.returncode == 0 and "4 cached, 0 to execute" in again.stdout
    assert pd.read_parquet(out)["cached"].all()


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_loses_nothing(root, tmp_path):
    """A real scheduler and two workers on 127.0.0.1; one is killed (SIGKILL, its
    whole process group) once points are running; every point completes, with
    the values a LocalCluster gives."""
    env = book_env(root)
    sched_file = tmp_path / "scheduler.json"
    procs = []

    def start(*args):
        p = subprocess.Popen(
            [str(DASK), *args],
            env=env,
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        procs.append(p)
        return p

    try:
        start(
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(sched_file),
        )
        deadline = time.monotonic() + 120
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        workers = [
            start(
                "worker",
                address,
                "--nthreads",
                "1",
                "--nworkers",
                "1",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
            )
            for _ in range(2)
        ]
        out = tmp_path / "killed.parquet"
        run = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "twolayer.pipeline",
                "sweep",
                "synthesis/a",
                "-p",
                "seed",
                "20:25",
                "-p",
                "delay",
                "3.0",
                "--scheduler",
                address,
                "--out",
                str(out),
            ],
            env=env,
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # kill a worker while it runs a page: once its kernel is up (a forked kernel
        # of this tiny book is running the 3 s sleep)
        victim, deadline = workers[0], time.monotonic() + 240
        while time.monotonic() < deadline and not _running_kernel(victim.pid):
            time.sleep(0.2)
        assert _running_kernel(victim.pid), "no page started on the first worker"
        time.sleep(1.0)
        os.killpg(victim.pid, signal.SIGKILL)
        stdout, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stdout + stderr
        df = pd.read_parquet(out)
        assert (
            sorted(df["seed"]) == list(range(20, 26))
            and df["holds"].all()
            and df["error"].isna().all()
        )
        assert sorted(df["measured"]) == [float(s) + 1.0 for s in range(20, 26)]
        assert not list((root / "_build" / "cache").glob(".tmp-*")), (
            "a killed run left its folder"
        )
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _running_kernel(pid: int) -> bool:
    """Does the process tree under ``pid`` hold a kernel running a page?"""
    import psutil

    try:
        return any(
            c.name() in ("forked-kernel", "python")
            and "ipykernel" in " ".join(c.cmdline())
            or c.name() == "forked-kernel"
            for c in psutil.Process(pid).children(recursive=True)
        )
    except psutil.Error:
        return False


@pytest.mark.slow
def test_ctrl_c_keeps_the_finished_points_and_the_same_command_resumes(root):
    out = root / "interrupted.parquet"
    args = [
        "synthesis/a",
        "-p",
        "seed",
        "40:45",
        "-p",
        "delay",
        "1.0",
        "--workers",
        "2",
        "--out",
        str(out),
    ]
    run = subprocess.Popen(
        [sys.executable, "-m", "twolayer.pipeline", "sweep", *args],
        env=book_env(root),
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = []
    for line in run.stdout:
        seen.append(line)
        if line.strip().startswith("[2/6]"):
            break
    run.send_signal(signal.SIGINT)
    rest, err = run.communicate(timeout=120)
    assert run.returncode == 130, "".join(seen) + rest + err
    assert "finished point(s) kept" in err
    df = pd.read_parquet(out)
    done = df[df["error"].isna()]
    assert len(done) >= 2 and done["holds"].all()
    assert not list((root / "_build" / "cache").glob(".tmp-*"))
    again = sweep(root, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    import re

    # the points finished before the interrupt are not executed again (those that
    # finished while the cluster was closing may be cached too)
    cached = int(re.search(r"(\d+) cached", again.stdout).group(1))
    assert cached >= len(done), again.stdout


def test_points_are_keyed_exactly_as_rerun_keys_them():
    from twolayer.pipeline.cache import cache_key
    from twolayer.pipeline.pages import Paths, project_root

    paths = Paths(project_root())
    pts = sw.make_points(paths, "lyu2021/phase1", sw.grid([("seed", "0:2")]))
    assert pts[0].run_params == {} and pts[1].run_params == {"seed": 1}
    assert [p.key for p in pts] == [
        cache_key(paths, "lyu2021/phase1", p.run_params) for p in pts
    ]
