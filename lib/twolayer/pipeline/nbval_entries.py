"""nbval's executions as the pages' cache entries (a pytest plugin of ``make
notebooks``: ``-p twolayer.pipeline.nbval_entries``).

``make test`` executes every notebook under nbval (an independent execution from
the committed source, its claims table compared with the stored one) and then
builds the book. The build of a default page would execute the very same
notebook again, at the same cache key, only to render it. With this plugin, a
notebook whose every cell passed under nbval becomes its page's cache entry
(``_build/cache/<key>``, as :func:`.runner.execute_one` writes it: the executed
notebook with nbval's outputs, the ledger's ``claims.json``, ``meta.json`` and
the run record, which names nbval and the CPU capability it ran under), and the
build renders it. A notebook with a failing or skipped cell leaves nothing; the
variant pages (other parameters) are not nbval's and the build executes them.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from ..claims import CLAIMS_ENV, PAGE_ENV

_RUNS: dict = {}  # nbval's file collector -> its run (None: not a book page)
_SECONDS: dict[str, float] = {}  # notebook -> its cells' setup, call and teardown


class _Run:
    """One notebook under nbval: the entry it becomes if every cell passes."""

    def __init__(self, fspath) -> None:
        from .cache import cache_key, tmp_dir
        from .pages import Paths, notebook_ids, project_root
        from .runner import run_parameters

        self.paths = Paths(project_root())
        rel = Path(str(fspath)).resolve().relative_to(self.paths.book.resolve())
        self.nb = rel.with_suffix("").as_posix()
        if self.nb not in notebook_ids(self.paths):
            raise LookupError(f"{rel} is not a page of the book")
        self.params = run_parameters(self.paths, self.nb, {})
        self.key = cache_key(self.paths, self.nb, self.params)
        self.tmp = tmp_dir(self.paths.cache, self.key)
        self.outputs: dict[int, list] = {}
        self.ok = True
        self.start = time.perf_counter()
        # the kernel nbval starts next inherits them, as the runner's do
        os.environ[CLAIMS_ENV] = str(self.tmp / "claims.json")
        os.environ[PAGE_ENV] = self.nb

    def finish(self) -> None:
        import nbformat

        from .runner import commit_entry, finish_entry, kernel_threads

        seconds = time.perf_counter() - self.start
        for name in (CLAIMS_ENV, PAGE_ENV):
            os.environ.pop(name, None)
        try:
            nb = nbformat.read(self.paths.book / f"{self.nb}.ipynb", as_version=4)
            code = [c for c in nb.cells if c.cell_type == "code"]
            if not self.ok or sorted(self.outputs) != list(range(len(code))):
                return
            for i, cell in enumerate(code):
                cell.outputs = [nbformat.from_dict(o) for o in self.outputs[i]]
                cell.execution_count = i + 1
            nb.metadata["language_info"] = _language_info()
            nbformat.write(nb, self.tmp / "notebook.ipynb")
            capability = os.environ.get("ATEN_CPU_CAPABILITY", "native")
            executor = f"nbval (`make notebooks`, ATEN_CPU_CAPABILITY={capability})"
            finish_entry(
                self.paths,
                self.nb,
                self.key,
                self.params,
                self.tmp,
                seconds,
                kernel_threads(),
                executor=executor,
            )
            commit_entry(self.paths, self.key, self.tmp)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _language_info() -> dict:
    """What the kernel reports of its language (nbval does not keep it; Jupyter
    Book's code highlighting reads it): nbval's kernel is this environment's."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def _cell(item) -> bool:
    from nbval.plugin import IPyNbCell

    return isinstance(item, IPyNbCell)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    """Before a notebook's first cell (and so before its kernel starts)."""
    if _cell(item) and item.parent not in _RUNS:
        try:
            _RUNS[item.parent] = _Run(item.parent.fspath)
        except Exception as exc:  # never a test failure: the build executes it
            _RUNS[item.parent] = None
            print(f"\nnbval_entries: {exc}", file=sys.stderr)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    run = _RUNS.get(item.parent) if _cell(item) else None
    if run is None:
        return
    report = outcome.get_result()
    if report.failed or report.skipped:
        run.ok = False
    elif report.when == "call":
        run.outputs[item.cell_num] = list(item.test_outputs or [])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a notebook's last cell (its kernel stopped)."""
    yield
    run = _RUNS.get(item.parent) if _cell(item) else None
    if run is None or (nextitem is not None and nextitem.parent is item.parent):
        return
    _RUNS[item.parent] = None
    try:
        run.finish()
    except Exception as exc:  # never a test failure: the build executes it
        print(f"\nnbval_entries: {run.nb}: {exc}", file=sys.stderr)


def pytest_collection_modifyitems(session, config, items):
    """The longest notebooks first (their last run, else ``make bench``'s), so
    that both nbval workers stay busy to the end."""
    from .pages import Paths, project_root
    from .runner import last_seconds

    try:
        paths, cost = Paths(project_root()), {}
    except FileNotFoundError:  # not the book's notebooks: their order stays
        return

    def seconds(item) -> float:
        if not _cell(item):
            return 0.0
        if item.parent not in cost:
            path = Path(str(item.parent.fspath)).resolve()
            try:
                nb = path.relative_to(paths.book.resolve()).with_suffix("")
            except ValueError:
                nb = path.with_suffix("")
            cost[item.parent] = last_seconds(paths, nb.as_posix())
        return cost[item.parent]

    items.sort(key=lambda item: -seconds(item))


def pytest_runtest_logreport(report) -> None:
    """Each notebook's time under nbval (its kernel's start is in its first cell's
    setup); on the controller under xdist, which receives every worker's reports."""
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _SECONDS[path] = _SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter) -> None:
    """The seconds of every notebook, longest first (``make test``'s log says where
    nbval's time goes)."""
    if not _SECONDS:
        return
    tr = terminalreporter
    tr.write_sep("-", f"nbval: seconds per notebook ({sum(_SECONDS.values()):.0f} s)")
    for path, seconds in sorted(_SECONDS.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{seconds:8.1f} s  {path}")
