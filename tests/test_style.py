"""Style is what CI checks: ruff's lint rules (``E``, ``F``, ``W``, ``I``) and its
formatter, lines <= 88 characters, on the library and the tests (configuration
in ``pyproject.toml``'s ``[tool.ruff]``). ``ruff format`` fixes the layout,
``ruff check --fix`` the import order; long strings, docstrings and comments are
wrapped by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["lib", "tests"]


@pytest.mark.parametrize(
    "command", [["check"], ["format", "--check"]], ids=["check", "format"]
)
def test_library_and_tests_pass_ruff(command):
    res = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, (
        f"`ruff {' '.join(command)} {' '.join(PATHS)}` found style violations "
        f"(fix with `ruff format` / `ruff check --fix`):\n{res.stdout}{res.stderr}"
    )
