"""twolayer: the shared library of the companion book on the implicit bias of
two-layer (leaky) ReLU networks trained from small initialization.

Rooms (one idea each):

- :mod:`data` — the datasets (synthetic generators of the four papers, MNIST);
- :mod:`models` — the networks (two-layer, residual, conv) and the activation;
- :mod:`flows` — training: step-by-step trainers (``flows.steps``), the
  gradient-flow integrator (``flows.integrator``), the
  ``Trajectory`` record (``flows.trajectory``), finished runs reused from
  ``_build/runs`` (``flows.memo``);
- :mod:`metrics` — measurements shared by several papers;
- :mod:`theory` — one module per paper (``phuong2021``, ``sarussi2021``,
  ``min2024``, ``lyu2021``) and ``margins`` (SVMs and KKT checks);
- :mod:`limit_data` — the data sets the synthesis pages and the regime maps share;
- :mod:`synthesis`, :mod:`regimes` — the four predictions on one run; the regime
  maps over init scale, width and seeds (stored grids);
- :mod:`sweeps` — a function over points in parallel processes;
- :mod:`claims` — the claims ledger (predictions and findings over seeds with
  rivals, probabilities, identities, assumptions);
- :mod:`protocol` — a page's claims registered before its run
  (``<page>.claims.yml``: what each claim asserts, its threshold and why);
- :mod:`plots` — the book's figure style and shared figures;
- :mod:`figures` — the chapters' figures, one module per paper (``phuong2021``,
  ...): each draws from measured arrays, no training;
- :mod:`experiments` — the chapters' experiments, one module per paper: the
  networks of a figure trained over seeds and settings, and their summary;
- :mod:`prose` — ``glue`` for numbers quoted in the text;
- :mod:`validation` — argument checks;
- :mod:`codekey` — what a stored result was computed with: code as a syntax tree
  (the keys of the run cache, the page cache, the held-out sweeps and the stored
  grids, with ``source_closure``: the library code a stored point runs;
  reformatting keeps them);
- :mod:`pipeline` — executing, caching and rendering the book (the ``twolayer``
  command), one job per module: ``pages``, ``declarations`` (notebooks' parameter
  declarations and the check of rerun values), ``imports`` (the import graph that
  keys the cache), ``cache``, ``record``, ``runner``, ``kernels``, ``generated``,
  ``render``, ``lock``, ``nbval_entries``, ``sweep``, ``robustness``, ``cli``.
"""

from __future__ import annotations

import os

__version__ = "0.1.0"


def configure_threads(n: int | None = None) -> int:
    """Set torch's intra-op thread count deliberately.

    The pipeline runs several notebooks at once on a 2-core machine and tells
    each kernel its share through ``TWOLAYER_THREADS``; interactive use gets all
    cores. Returns the number of threads set.
    """
    import torch

    if n is None:
        n = int(os.environ.get("TWOLAYER_THREADS", os.cpu_count() or 1))
    n = max(1, int(n))
    torch.set_num_threads(n)
    return n
