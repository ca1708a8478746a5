"""Tiny notebooks for the pipeline tests: a parameters cell, a body, a claims cell."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def write_test_notebook(
    root: Path, nb: str, markdown: str, parameters: str, body: str, checks: list[str]
) -> Path:
    """Write ``<root>/book/<nb>.ipynb``; ``checks`` are argument strings
    ``'id', statement, measured, relation, threshold, why`` of assumption claims."""
    check = (
        "def check(id, statement, measured, relation, threshold, why):\n    "
        "ledger.assumption(id=id, source='test fixture', statement=statement,\n        "
        "              measured=measured, relation=relation, threshold=threshold, "
        "why=why)"
    )
    claims = "\n".join(
        ["from twolayer.claims import Ledger\nledger = Ledger()", check]
        + [f"check({c})" for c in checks]
        + ["ledger.finish()"]
    )
    cells = [
        new_markdown_cell(markdown),
        new_code_cell(parameters),
        new_code_cell(body),
        new_code_cell(claims),
    ]
    cells[1].metadata["tags"] = ["parameters"]
    cells[3].metadata["tags"] = ["nbval-check-output"]
    out = new_notebook(cells=cells)
    out.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = root / "book" / f"{nb}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(out, path)
    return path
