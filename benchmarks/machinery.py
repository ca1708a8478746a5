"""What each piece of the pipeline machinery saves (issue 34), measured.

    .venv/bin/python benchmarks/machinery.py [--pages 4] [--repeats 3]

On a throw-away book (``TWOLAYER_ROOT`` in a temporary folder, a copy of
``lib/twolayer``) of ``--pages`` notebooks that import what the book's pages
import (the STYLE.md header: numpy, torch, matplotlib and seaborn through
``twolayer.plots``) and compute next to nothing, so that the times are the
machinery's. Every timing is repeated ``--repeats`` times, configurations
interleaved, and the median is reported (the machine is shared).

1. **forked kernels**: ``twolayer execute --force --jobs 1`` with kernels forked
   from a zygote that imported the libraries (the default) against
   ``TWOLAYER_FORK_KERNELS=0`` (a fresh ``ipykernel`` per page);
2. **page cache**: a no-change ``twolayer execute`` (every page reused) against
   the forced one; and, read-only on this repository, the time to key every page
   of the real book (:func:`twolayer.pipeline.cache_key`), with the library
   hashed as syntax trees (:mod:`twolayer.codekey`) or as bytes;
3. **variants**: a ``variants.yml`` entry executes the same notebook with other
   parameters as its own page: the time of a variant page against a page of the
   same notebook, and the notebook code lines the real book's variants do not
   duplicate;
4. **lock**: ``twolayer lock`` of every page, and the second execution it exists
   for (``pytest --nbval-lax`` on the same pages, as ``make notebooks`` runs it).

The numbers are written to ``benchmarks/machinery_results.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "machinery_results.json"
sys.path.insert(0, str(REPO / "tests"))

HEADER = """import numpy as np

import twolayer
from twolayer import data, plots
from twolayer.claims import Ledger

twolayer.configure_threads()
plots.set_style()"""
BODY = """ds = data.two_gaussians(n, 3, seed=seed)
value = float(np.abs(ds.X).sum())"""


def make_book(root: Path, pages: int) -> list[str]:
    """The throw-away book: ``pages`` notebooks and one variant of the first."""
    from notebook_factory import write_test_notebook

    names = [f"synthesis/p{i}" for i in range(pages)]
    for nb in names:
        write_test_notebook(
            root,
            nb,
            f"# {nb}",
            "seed = 0  # seed of the data\nn = 20  # number of points",
            f"{HEADER}\n{BODY}",
            [f"'{nb.replace('/', '.')}.n', 'the size', ds.n, '==', n, 'parameter n'"],
        )
    (root / "book" / "synthesis" / "variants.yml").write_text(
        "- notebook: synthesis/p0\n  variant: big\n  parameters: {n: 40}\n"
    )
    toc = "".join(f"  - file: book/{nb}\n" for nb in names + ["synthesis/p0__big"])
    (root / "_toc.yml").write_text(
        f"format: jb-book\nroot: book/intro\nchapters:\n{toc}"
    )
    (root / "_config.yml").write_text(
        "title: bench\nexecute:\n  execute_notebooks: 'off'\n"
    )
    (root / "book" / "intro.md").write_text("# bench\n")
    shutil.copytree(
        REPO / "lib" / "twolayer",
        root / "lib" / "twolayer",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return names


def twolayer(root: Path, *args: str, env: dict | None = None) -> float:
    """Wall seconds of ``twolayer <args>`` on ``root`` (raises if it fails)."""
    env = {
        **os.environ,
        "TWOLAYER_ROOT": str(root),
        "TWOLAYER_THREADS": "1",
        **(env or {}),
    }
    start = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "twolayer.pipeline", *args],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if res.returncode:
        raise RuntimeError(f"twolayer {' '.join(args)}:\n{res.stdout}\n{res.stderr}")
    return seconds


def page_seconds(root: Path, nb: str) -> float:
    meta = root / "_build" / "executed" / f"{nb}.meta.json"
    return float(json.loads(meta.read_text())["seconds"])


def nbval(root: Path, names: list[str]) -> float:
    """Wall seconds of ``make notebooks``' nbval run on the pages (one process)."""
    env = {**os.environ, "TWOLAYER_THREADS": "1", "TWOLAYER_ROOT": str(root)}
    start = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-q"]
        + ["-p", "no:cacheprovider"]
        + [str(root / "book" / f"{nb}.ipynb") for nb in names],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if res.returncode:
        raise RuntimeError(f"nbval:\n{res.stdout[-3000:]}")
    return seconds


def key_every_page() -> dict:
    """Seconds to key every page of the real book (read-only): library as syntax
    trees (the pipeline's) and, for comparison, as bytes."""
    from twolayer import codekey, pipeline
    from twolayer.pipeline import imports

    paths = pipeline.Paths(REPO)
    pages = pipeline.book_pages(paths)

    def keys() -> float:
        imports.cached_digest.cache_clear()
        start = time.perf_counter()
        for nb in pages:
            pipeline.cache_key(paths, nb, pipeline.page_parameters(paths, nb))
        return time.perf_counter() - start

    files = sorted((REPO / "lib" / "twolayer").rglob("*.py"))

    def hashing(digest) -> float:
        start = time.perf_counter()
        for f in files:
            digest(f)
        return time.perf_counter() - start

    def raw(f: Path) -> bytes:
        return hashlib.sha256(f.read_bytes()).digest()

    return dict(
        pages=len(pages),
        key_every_page=statistics.median(keys() for _ in range(3)),
        library_files=len(files),
        hash_library_ast=statistics.median(
            hashing(codekey.file_digest) for _ in range(5)
        ),
        hash_library_bytes=statistics.median(hashing(raw) for _ in range(5)),
    )


def variant_code_lines() -> dict:
    """Code lines of the real book's notebooks that have variants, times the
    number of variants: what copies of the notebooks would duplicate."""
    import yaml

    out = {}
    for spec in sorted((REPO / "book").rglob("variants.yml")):
        for entry in yaml.safe_load(spec.read_text()):
            nb = json.loads((REPO / "book" / f"{entry['notebook']}.ipynb").read_text())
            lines = sum(
                len("".join(c["source"]).splitlines())
                for c in nb["cells"]
                if c["cell_type"] == "code"
            )
            out[f"{entry['notebook']}__{entry['variant']}"] = lines
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    runs: dict[str, list[float]] = {
        k: []
        for k in (
            "forked",
            "fresh",
            "cached",
            "variant_page",
            "base_page",
            "lock",
            "nbval",
        )
    }
    with tempfile.TemporaryDirectory(prefix="twolayer-machinery-") as tmp:
        root = Path(tmp)
        names = make_book(root, args.pages)
        every = names + ["synthesis/p0__big"]
        twolayer(root, "execute", "--jobs", "1")  # warm the file system and caches
        for _ in range(args.repeats):
            runs["forked"].append(twolayer(root, "execute", "--force", "--jobs", "1"))
            # the first page a worker runs also waits for its zygote's imports
            runs["base_page"].append(
                statistics.median(page_seconds(root, nb) for nb in names[1:])
            )
            runs["variant_page"].append(page_seconds(root, every[-1]))
            runs["cached"].append(twolayer(root, "execute", "--jobs", "1"))
            runs["fresh"].append(
                twolayer(
                    root,
                    "execute",
                    "--force",
                    "--jobs",
                    "1",
                    env={"TWOLAYER_FORK_KERNELS": "0"},
                )
            )
            runs["lock"].append(twolayer(root, "lock"))
            runs["nbval"].append(nbval(root, names))  # variants are not sources
    med = {k: statistics.median(v) for k, v in runs.items()}
    n = len(every)
    results = dict(
        pages=n,
        repeats=args.repeats,
        runs=runs,
        median=med,
        per_page=dict(
            forked=med["forked"] / n,
            fresh=med["fresh"] / n,
            saved_by_forking=(med["fresh"] - med["forked"]) / n,
            cached=med["cached"] / n,
            nbval=med["nbval"] / len(names),
        ),
        real_book=dict(**key_every_page(), variants=variant_code_lines()),
    )
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    pp, rb = results["per_page"], results["real_book"]
    print(f"tiny book: {n} pages, medians of {args.repeats} (seconds)")
    rows = [
        ("execute, forked kernels", med["forked"], pp["forked"]),
        ("execute, fresh kernel per page", med["fresh"], pp["fresh"]),
        ("no-change execute (all cached)", med["cached"], pp["cached"]),
        ("lock, every page", med["lock"], None),
        ("nbval, every source notebook", med["nbval"], pp["nbval"]),
    ]
    for label, total, each in rows:
        per = f"  ({each:.2f}/page)" if each is not None else ""
        print(f"  {label:32s} {total:7.1f}{per}")
    print(
        f"  variant page / a notebook's page {med['variant_page']:.2f} / "
        f"{med['base_page']:.2f}"
    )
    print(
        f"real book: key {rb['pages']} pages {rb['key_every_page']:.2f} s; hash "
        f"{rb['library_files']} library files as trees {rb['hash_library_ast']:.3f} "
        f"s, as bytes {rb['hash_library_bytes']:.4f} s; variants' code lines "
        f"{rb['variants']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
