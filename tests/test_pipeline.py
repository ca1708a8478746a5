"""The cache rule, determinism and ``twolayer rerun``, end to end.

A throw-away project root (``TWOLAYER_ROOT``) holds two tiny notebooks that
import ``twolayer``, compute something seeded and record a claim, and a copy of
``lib/twolayer`` (the library fingerprint hashes ``<root>/lib/twolayer/**/*.py``;
the kernels import the installed package). The real ``twolayer`` command runs
in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from notebook_factory import write_test_notebook

pytestmark = pytest.mark.slow

LIB = Path(__file__).resolve().parents[1] / "lib" / "twolayer"
BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "build.py"

BODY = """import twolayer
twolayer.configure_threads()
from twolayer import data
ds = data.two_gaussians(n, 3, seed=seed)
value = float(ds.X.sum())
from myst_nb import glue
glue("value", value, display=False)"""


def write_notebook(root: Path, nb: str) -> None:
    key = nb.replace("/", ".")
    write_test_notebook(
        root,
        nb,
        f"# {nb}\n\nThe value is {{glue:text}}`value:.3f`.",
        "seed = 0  # seed of the data\nn = 20  # number of points",
        BODY,
        [
            f"'{key}.value', 'the seeded sum', value, '<', 1e6, 'finite by "
            "construction'",
            f"'{key}.n', 'the size', ds.n, '==', n, 'parameter n'",
        ],
    )


def make_root(root: Path) -> Path:
    """A tiny book: intro page, two notebooks, a copy of the library."""
    (root / "_config.yml").write_text(
        "title: test book\nonly_build_toc_files: true\n"
        "execute:\n  execute_notebooks: 'off'\n"
    )
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        "  - file: book/synthesis/a\n  - file: book/synthesis/b\n"
    )
    (root / "book").mkdir(parents=True, exist_ok=True)
    (root / "book" / "intro.md").write_text("# Test book\n")
    for nb in ("synthesis/a", "synthesis/b"):
        write_notebook(root, nb)
    shutil.copytree(
        LIB, root / "lib" / "twolayer", ignore=shutil.ignore_patterns("__pycache__")
    )
    return root


def run(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "TWOLAYER_ROOT": str(root), "TWOLAYER_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "twolayer.pipeline", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def entries(root: Path) -> set[str]:
    cache = root / "_build" / "cache"
    return (
        {p.name for p in cache.iterdir() if not p.name.startswith(".")}
        if cache.exists()
        else set()
    )


def claims_text(root: Path, nb: str) -> str:
    return (root / "_build" / "executed" / f"{nb}.claims.json").read_text()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return make_root(tmp_path_factory.mktemp("book"))


def test_cache_reuse_and_invalidation(root):
    first = run(root, "execute", "--jobs", "2")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "executing 2 notebook(s) (0 cached)" in first.stdout
    keys = entries(root)
    assert len(keys) == 2
    meta = json.loads(
        (root / "_build" / "executed" / "synthesis" / "a.meta.json").read_text()
    )
    assert meta["seconds"] > 0 and meta["effective_parameters"] == {
        "seed": "0",
        "n": "20",
    }

    start = time.perf_counter()
    again = run(root, "execute", "--jobs", "2")
    elapsed = time.perf_counter() - start
    assert again.returncode == 0, again.stderr
    assert "executing" not in again.stdout, "unchanged inputs: everything is reused"
    assert entries(root) == keys
    assert elapsed < meta["seconds"] + 30, "a cached run starts no kernel"

    unused = root / "lib" / "twolayer" / "metrics.py"  # the notebooks do not import it
    unused.write_text(unused.read_text() + "\nTOUCHED = 1  # by the test\n")
    untouched = run(root, "execute", "--jobs", "2")
    assert "executing" not in untouched.stdout, (
        "an edit of a module no page imports re-executes nothing"
    )

    lib_file = root / "lib" / "twolayer" / "data.py"
    original = lib_file.read_text()
    lib_file.write_text(original + "\n# a comment and a blank line: the same code\n\n")
    reformatted = run(root, "execute", "--jobs", "2")
    assert "executing" not in reformatted.stdout, (
        "a comment or layout edit of an imported module re-executes nothing"
    )
    lib_file.write_text(original + "\nTOUCHED = 1  # by the test\n")
    touched = run(root, "execute", "--jobs", "2")
    assert touched.returncode == 0, touched.stderr
    assert "executing 2 notebook(s) (0 cached)" in touched.stdout, (
        "an imported module's edit re-executes"
    )
    assert len(entries(root) - keys) == 2

    lib_file.write_text(original)
    back = run(root, "execute", "--jobs", "2")
    assert "executing" not in back.stdout, "restoring the library reuses the first runs"

    nb = root / "book" / "synthesis" / "b.ipynb"
    text = nb.read_text()
    nb.write_text(text.replace("The value is", "The sum is"))
    assert nb.read_text() != text
    edited = run(root, "execute", "--jobs", "2")
    assert "executing 1 notebook(s) (1 cached)" in edited.stdout, (
        "only the edited notebook re-executes"
    )
    nb.write_text(text)


def test_changing_a_parameter_re_executes_and_rerun_prints_claims(root):
    run(root, "execute", "synthesis/a")
    res = run(root, "rerun", "synthesis/a", "-p", "seed", "3")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "executing 1 notebook(s) (0 cached)" in res.stdout, (
        "new parameters: a new run"
    )
    assert (
        "[holds] synthesis.a.value" in res.stdout
        and "[holds] synthesis.a.n" in res.stdout
    )
    reruns = list((root / "_build" / "reruns" / "synthesis").glob("a-*.ipynb"))
    assert len(reruns) == 1
    page = reruns[0].with_suffix(".html")
    assert page.is_file() and str(page) in res.stdout, (
        "a rerun leaves an HTML page and prints its path"
    )
    assert "synthesis.a.value" in page.read_text()
    assert "`seed = 3`" in reruns[0].read_text(), "the run record names the seed"
    cached = run(root, "rerun", "synthesis/a", "-p", "seed", "3")
    assert "(cached)" in cached.stdout and "executing" not in cached.stdout
    default = json.loads(claims_text(root, "synthesis/a"))
    assert (
        default["claims"][0]["measured"]
        != json.loads(
            (
                next(
                    p
                    for p in (root / "_build" / "cache").iterdir()
                    if json.loads((p / "meta.json").read_text()).get("parameters")
                    == {"seed": 3}
                )
                / "claims.json"
            ).read_text()
        )["claims"][0]["measured"]
    ), "the parameter reached the notebook"
    same = run(
        root, "rerun", "synthesis/a", "-p", "seed", "0"
    )  # the default, given explicitly
    assert (
        same.returncode == 0
        and "(cached)" in same.stdout
        and "executing" not in same.stdout
    ), same.stdout


def test_rerun_with_an_unknown_parameter_lists_the_valid_ones(root):
    res = run(root, "rerun", "synthesis/a", "-p", "width", "5")
    assert res.returncode == 2
    assert "unknown parameter 'width'; valid: seed, n" in res.stderr, res.stderr
    bad = run(root, "rerun", "synthesis/a", "-p", "n", "abc")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0, bad.stderr
    assert "parameter n = 'abc': expected int" in bad.stderr
    unknown_nb = run(root, "rerun", "synthesis/zzz")
    assert (
        unknown_nb.returncode != 0
        and "synthesis/a" in unknown_nb.stderr
        and "synthesis/b" in unknown_nb.stderr
    )


def test_two_forced_executions_give_identical_claims(root):
    first = run(root, "execute", "--force", "--jobs", "2")
    assert first.returncode == 0, first.stderr
    a1, b1 = claims_text(root, "synthesis/a"), claims_text(root, "synthesis/b")
    second = run(root, "execute", "--force", "--jobs", "2")
    assert second.returncode == 0, second.stderr
    assert "executing 2 notebook(s)" in second.stdout
    assert (
        claims_text(root, "synthesis/a") == a1
        and claims_text(root, "synthesis/b") == b1
    )


def test_build_benchmark_on_the_tiny_book(root):
    env = {**os.environ, "TWOLAYER_ROOT": str(root), "TWOLAYER_THREADS": "1"}
    res = subprocess.run(
        [sys.executable, str(BENCH), "--execute-only"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "clean execute (empty _build/):" not in out
    for needle in (
        "clean build (empty _build/):",
        "no-change rebuild:",
        "synthesis/a",
        "synthesis/b",
        "total",
    ):
        assert needle in out, out
    nochange = run(root, "execute")
    assert "executing" not in nochange.stdout, "the benchmark left a complete cache"
    res2 = subprocess.run(
        [sys.executable, str(BENCH), "--execute-only", "--no-clean"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        res2.returncode == 0
        and "clean build" not in res2.stdout
        and "no-change rebuild" in res2.stdout
    )


def test_a_notebook_nbval_passed_is_the_page_the_build_renders(tmp_path):
    """``make notebooks`` (nbval with ``twolayer.pipeline.nbval_entries``): a
    notebook whose cells all pass becomes its page's cache entry, which the build
    takes instead of executing the page again; a failing one leaves nothing."""
    (tmp_path / "book").mkdir()
    book = make_root(tmp_path / "book")
    nb = book / "book" / "synthesis" / "b.ipynb"
    broken = json.loads(nb.read_text())
    broken["cells"][2]["source"] += "\nraise RuntimeError('broken page')"
    nb.write_text(json.dumps(broken))
    env = {**os.environ, "TWOLAYER_ROOT": str(book), "TWOLAYER_THREADS": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env"]
        + ["-q", "-p", "no:cacheprovider", "-p", "twolayer.pipeline.nbval_entries"]
        + ["book/synthesis/a.ipynb", "book/synthesis/b.ipynb"],
        cwd=book,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 1 and "broken page" in res.stdout, res.stdout[-3000:]
    assert "nbval: seconds per notebook" in res.stdout, res.stdout[-3000:]
    assert "s  book/synthesis/a.ipynb" in res.stdout, res.stdout[-3000:]
    assert len(entries(book)) == 1, "only the passing notebook is an entry"
    build = run(book, "execute", "synthesis/a", "synthesis/b", "--jobs", "1")
    assert build.returncode == 1, "b still fails in the build"
    assert "executing 1 notebook(s) (1 cached)" in build.stdout, build.stdout
    page = json.loads((book / "_build/executed/synthesis/a.ipynb").read_text())
    record = "".join(page["cells"][-1]["source"])
    assert "Executed by nbval" in record, record
    assert "synthesis.a.value" in json.dumps(page["cells"][3]["outputs"]), (
        "the claims table nbval compared is the page's output"
    )
    assert page["metadata"]["language_info"]["name"] == "python"
    assert json.loads(claims_text(book, "synthesis/a"))["notebook"] == "synthesis/a"
