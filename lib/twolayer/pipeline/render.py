"""Staging the book source with the executed notebooks (placeholders filled,
generated tables inserted) and rendering it with Jupyter Book; a rerun's HTML page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .generated import claims_markdown, parameters_markdown
from .pages import Paths, book_pages, parameters
from .robustness import stale_markdown

# Markers in the book's Markdown and the functions whose output replaces them.
GENERATED = {
    "<!-- CLAIMS_TABLE -->": claims_markdown,
    "<!-- PARAMETERS_TABLE -->": parameters_markdown,
    "<!-- SWEEPS_STALE -->": stale_markdown,
}


def stage(paths: Paths) -> None:
    """Assemble the book source with executed notebooks in ``_build/src``."""
    staged = paths.staged
    tmp = Path(tempfile.mkdtemp(prefix=".src-", dir=paths.build))
    try:
        _stage_into(paths, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if staged.exists():
        shutil.rmtree(staged)
    os.replace(tmp, staged)


def _stage_into(paths: Paths, tmp: Path) -> None:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(paths.root / name, tmp / name)
    shutil.copytree(
        paths.book,
        tmp / "book",
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb"),
    )
    for nb in book_pages(paths):
        src = paths.executed / f"{nb}.ipynb"
        if not src.exists():
            raise RuntimeError(f"{nb} has not been executed")
        values = {k: p.default for k, p in parameters(paths, nb).items()}
        text = fill_placeholders(json.loads(src.read_text()), values, nb)
        (tmp / "book" / f"{nb}.ipynb").write_text(
            json.dumps(text, indent=1, ensure_ascii=False)
        )
    for md in (tmp / "book").rglob("*.md"):
        text = md.read_text()
        for marker, fn in GENERATED.items():
            if marker in text:
                text = text.replace(marker, fn(paths))
        md.write_text(text)


PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def fill_placeholders(nb: dict, values: dict, page: str) -> dict:
    """A page's title and first paragraph, and its figure captions, name its
    setting: ``{{name}}`` in the notebook's first markdown cell and in a cell's
    ``mystnb.figure.caption`` is replaced by the page's parameter value (a
    variant page gets its own). An unknown name is an error naming the page."""

    def value(m: re.Match) -> str:
        if m.group(1) not in values:
            raise ValueError(
                f"{page}: placeholder {{{{{m.group(1)}}}}} names no parameter of the "
                "page"
            )
        v = values[m.group(1)]
        return format(v, "g") if isinstance(v, float) else str(v)

    cell = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
    if cell is not None:
        text = (
            "".join(cell["source"])
            if isinstance(cell["source"], list)
            else cell["source"]
        )
        cell["source"] = PLACEHOLDER.sub(value, text)
    for cell in nb["cells"]:
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if isinstance(figure.get("caption"), str):
            figure["caption"] = PLACEHOLDER.sub(value, figure["caption"])
    return nb


def render(paths: Paths) -> int:
    """Jupyter Book (execution off) from the staged source into ``_build/html``."""
    cmd = [
        sys.executable,
        "-m",
        "jupyter_book",
        "build",
        str(paths.staged),
        "--path-output",
        str(paths.root),
        "-W",
        "-n",
        "--keep-going",
    ]
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    if jb:
        cmd = [jb] + cmd[3:]
    return subprocess.call(cmd)


def write_html(notebook: Path) -> Path:
    """An HTML page of an executed notebook beside it (nbconvert's classic
    template, code and figures included): a rerun can be read without a
    notebook front end."""
    import nbconvert
    import nbformat

    body, _ = nbconvert.HTMLExporter(template_name="classic").from_notebook_node(
        nbformat.read(notebook, as_version=4)
    )
    html = notebook.with_suffix(".html")
    tmp = html.with_name(html.name + ".tmp")
    tmp.write_text(body)
    os.replace(tmp, html)
    return html
