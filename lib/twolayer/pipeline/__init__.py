"""Execute the book's notebooks with papermill, cache the results, render the site.

A result is reused only when the notebook, the library modules it imports, the
data, the parameters and the computing packages' versions are all unchanged
(Jupyter Book's own cache cannot see ``lib/``, so execution is off there and
done here). A cache entry is a directory made in a temporary place and renamed
into ``_build/cache/<key>/`` only once complete, so a crash or an interrupt
never leaves a half-written entry.

Layout under ``_build/``::

    cache/<key>/{notebook.ipynb, claims.json, meta.json}   one entry per run
    executed/<chapter>/<name>.ipynb (+ .claims.json)       the book's default runs
    src/                                                   staged book source
    html/                                                  the rendered site
    reruns/<chapter>/<name>-<key>.ipynb (+ .html)          ``twolayer rerun`` results

One job per module:

- :mod:`.pages` — the project root, the notebooks, variants, page parameters;
- :mod:`.declarations` — a notebook's declared parameters and the check of a
  rerun's values;
- :mod:`.imports` — the library modules a notebook imports (the import graph);
- :mod:`.cache` — cache keys and the temporary folders runs work in;
- :mod:`.record` — the run-record cell appended to each executed notebook;
- :mod:`.runner` — worker processes executing notebooks (signals, publishing);
- :mod:`.kernels` — each worker's kernels forked from a process with the libraries
  imported;
- :mod:`.generated` — the claims ledger and parameters pages (Markdown);
- :mod:`.verdicts` — the verdict boxes, verdict tables and scorecards generated
  from the claims JSON;
- :mod:`.render` — staging the book source and rendering it with Jupyter Book;
- :mod:`.lock` — storing claims tables in the source notebooks (for nbval);
- :mod:`.nbval_entries` — a pytest plugin of ``make notebooks``: each notebook
  nbval executed with every cell passing becomes its page's cache entry (the
  build renders it instead of executing it again);
- :mod:`.sweep` — a page over a grid of parameters as dask.distributed tasks
  (``twolayer sweep``), one tidy Parquet table;
- :mod:`.robustness` — the held-out-seed sweeps of every page (``make sweeps``)
  and the robustness page;
- :mod:`.cli` — the ``twolayer`` command.
"""

from __future__ import annotations

from .cache import TMP_PREFIX, cache_key, clean_abandoned, notebook_source
from .cli import main
from .generated import claims_markdown, parameters_markdown
from .imports import library_fingerprint, notebook_modules
from .lock import CHECK_TAG, lock
from .pages import (
    ROOT_ENV,
    PageError,
    Paths,
    book_pages,
    check_parameters,
    notebook_ids,
    page_id,
    page_parameters,
    parameters,
    project_root,
    resolve,
    variants,
)
from .render import fill_placeholders, render, stage, write_html
from .runner import Interrupted, RunResult, execute_all, publish

__all__ = [
    "CHECK_TAG",
    "Interrupted",
    "PageError",
    "Paths",
    "ROOT_ENV",
    "RunResult",
    "TMP_PREFIX",
    "book_pages",
    "cache_key",
    "check_parameters",
    "claims_markdown",
    "clean_abandoned",
    "execute_all",
    "fill_placeholders",
    "library_fingerprint",
    "lock",
    "main",
    "notebook_ids",
    "notebook_modules",
    "notebook_source",
    "page_id",
    "page_parameters",
    "parameters",
    "parameters_markdown",
    "project_root",
    "publish",
    "render",
    "resolve",
    "stage",
    "variants",
    "write_html",
]
