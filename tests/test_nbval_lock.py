"""Locked claims under nbval: a changed value in a claims table is a test failure.

A throw-away book with one tiny notebook is executed by the pipeline,
``twolayer lock`` stores its claims-cell output in the source notebook, and
nbval (in the mode ``make test`` uses: ``--nbval-lax``, so only the cell
tagged ``nbval-check-output`` is compared) passes on it. Then one value in the
notebook is perturbed: nbval must fail and show the two tables.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from notebook_factory import write_test_notebook

pytestmark = pytest.mark.slow

LIB = Path(__file__).resolve().parents[1] / "lib" / "twolayer"
NB = "synthesis/locked"
BODY = "import numpy as np\nvalue = float(np.arange(n).sum()) * 1.0"


def make_root(root: Path) -> Path:
    (root / "_config.yml").write_text("title: test book\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (root / "book").mkdir(parents=True)
    (root / "book" / "intro.md").write_text("# Test book\n")
    write_test_notebook(
        root,
        NB,
        "# Locked",
        "n = 20  # number of terms",
        BODY,
        [
            "'synthesis.locked.value', 'the sum', value, '<', 1e6, 'finite by "
            "construction'"
        ],
    )
    shutil.copytree(
        LIB, root / "lib" / "twolayer", ignore=shutil.ignore_patterns("__pycache__")
    )
    return root


def twolayer(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TWOLAYER_ROOT": str(root), "TWOLAYER_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "twolayer.pipeline", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def nbval(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval-lax",
            "--nbval-current-env",
            "-q",
            "-p",
            "no:cacheprovider",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=path.parent,
    )


def test_nbval_reports_a_changed_claim_value(tmp_path):
    root = make_root(tmp_path)
    done = twolayer(root, "execute", NB)
    assert done.returncode == 0, done.stdout + done.stderr
    locked = twolayer(root, "lock", NB)
    assert locked.returncode == 0 and f"locked {NB}" in locked.stdout, (
        locked.stdout + locked.stderr
    )

    source = root / "book" / f"{NB}.ipynb"
    cells = json.loads(source.read_text())["cells"]
    stored = [c for c in cells if c["cell_type"] == "code" and c["outputs"]]
    assert len(stored) == 1 and "nbval-check-output" in stored[0]["metadata"]["tags"], (
        "only the claims cell keeps its output"
    )
    table = "".join(stored[0]["outputs"][0]["text"])
    assert "synthesis.locked.value" in table and "190" in table, table

    same = nbval(source)
    assert same.returncode == 0, same.stdout + same.stderr

    source.write_text(source.read_text().replace("* 1.0", "* 1.5"))
    changed = nbval(source)
    assert changed.returncode != 0, "nbval must fail when a claim's value changes"
    assert "190" in changed.stdout and "280" in changed.stdout, changed.stdout
