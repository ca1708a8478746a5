"""twolayer: the shared library of the companion book on the implicit bias of
two-layer (leaky) ReLU networks trained from small initialization.

Rooms (one idea each): :mod:`data`, :mod:`models`, :mod:`flows`,
:mod:`metrics`, :mod:`theory`, :mod:`claims`, :mod:`plots`, :mod:`pipeline`.
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
