"""Parameter declarations of the notebooks and the check of a rerun's values."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from twolayer.pipeline import declarations as P

BOOK = Path(__file__).resolve().parents[1] / "book"

CELL = """width: int = 100  # >= 1; hidden neurons p
alpha: float = 0.1  # [0, 1); leaky-ReLU slope
mu_pos: list[float] = [1.0, 0.5]  # len 2; mean of the positive class
step_rule: str = "mean"  # one of "mean", "sum"; how the step scales
centre: bool = True  # -; subtract the mean
n = 500  # older form: a help text only (with a # inside 'strings')
"""


@pytest.fixture
def decls(tmp_path):
    cell = new_code_cell(CELL)
    cell.metadata["tags"] = ["parameters"]
    path = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[cell]), path)
    return P.declarations(path)


def test_declarations_read_type_constraint_help(decls):
    assert list(decls) == ["width", "alpha", "mu_pos", "step_rule", "centre", "n"]
    assert (
        decls["width"].describe() == "int >= 1"
        and decls["width"].help == "hidden neurons p"
    )
    assert decls["mu_pos"].default == [1.0, 0.5] and decls["centre"].constraint == ""
    assert decls["n"].type == "int" and decls["n"].help.startswith("older form")


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("width", "abc", "expected int >= 1"),
        ("width", 3.0, "expected int >= 1"),
        ("width", -3, "expected int >= 1"),
        ("width", 0, "expected int >= 1"),
        ("alpha", 1.0, "expected float [0, 1)"),
        ("mu_pos", 3, "expected list[float] len 2"),
        ("mu_pos", [1.0], "expected list[float] len 2"),
        ("step_rule", "fast", "one of"),
        ("centre", 1, "expected bool"),
        ("alpha", float("nan"), "expected float"),
    ],
)
def test_bad_values_are_one_line_errors_naming_parameter_and_value(
    decls, name, value, expected
):
    with pytest.raises(P.ParameterError) as info:
        P.validate(decls, {name: value}, page="ch/nb")
    msg = str(info.value)
    assert (
        "\n" not in msg
        and msg.startswith(f"ch/nb: parameter {name} = {value!r}")
        and expected in msg
    )


def test_good_values_are_coerced_and_defaults_dropped(decls):
    ok = P.validate(
        decls, {"width": 3, "alpha": 0, "mu_pos": [1, 2], "step_rule": "sum"}
    )
    assert ok == {"width": 3, "alpha": 0.0, "mu_pos": [1.0, 2.0], "step_rule": "sum"}
    assert P.non_default(decls, P.validate(decls, {"width": 100, "alpha": 0.2})) == {
        "alpha": 0.2
    }
    with pytest.raises(
        P.ParameterError, match="unknown parameter 'widht'; valid: width"
    ):
        P.validate(decls, {"widht": 3})


def test_every_book_notebook_declares_readable_parameters_with_valid_defaults():
    for path in sorted(BOOK.rglob("*.ipynb")):
        decls = P.declarations(path)
        assert decls, f"{path} declares no parameters"
        for name, p in decls.items():
            assert p.type in P.TYPES, (path, name)
            P.validate(decls, {name: p.default})


@pytest.mark.parametrize(
    "page, name, value, expected",
    [
        ("sarussi2021/fig4_par_svm", "mu_pos", "3", "mu_pos"),
        ("lyu2021/two_neuron", "lr", "fast", "lr"),
        ("min2024/fig5_mnist_alignment__digits_1_7", "width", "-3", "width"),
    ],
)
def test_a_rerun_with_bad_values_is_refused_before_any_kernel(
    tmp_path, page, name, value, expected
):
    """The real ``twolayer rerun`` on the book: one line naming the parameter,
    exit 2, and no run started (no cache folder is created in a fresh build dir)."""
    import os
    import shutil
    import subprocess
    import sys

    root = BOOK.parent
    for item in ("_toc.yml", "_config.yml"):
        shutil.copy(root / item, tmp_path / item)
    shutil.copytree(BOOK, tmp_path / "book")
    env = {**os.environ, "TWOLAYER_ROOT": str(tmp_path)}
    res = subprocess.run(
        [sys.executable, "-m", "twolayer.pipeline", "rerun", page, "-p", name, value],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert (
        res.stderr.strip().count("\n") == 0 and f"parameter {expected}" in res.stderr
    ), res.stderr
    assert (
        "executing" not in res.stdout and not (tmp_path / "_build" / "cache").exists()
    )
