"""Run the points of a parameter sweep in parallel worker processes.

Each point is an independent, seeded computation (``fn(**point)``), so a sweep
is a map over a list of keyword dictionaries. Workers are separate processes
(``concurrent.futures.ProcessPoolExecutor``) with torch and BLAS limited to
one thread each, so ``max_workers=2`` uses the 2 cores without oversubscription.
Results come back in the order of the points, whatever order they finish in.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterable, Mapping


def _single_thread() -> None:
    os.environ["TWOLAYER_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover
        pass


def _call(fn: Callable[..., Any], point: Mapping[str, Any]) -> Any:
    return fn(**point)


def run_sweep(
    fn: Callable[..., Any], points: Iterable[Mapping[str, Any]], max_workers: int = 2
) -> list:
    """``[fn(**p) for p in points]``, computed by ``max_workers`` single-threaded
    processes.

    Parameters
    ----------
    fn
        A module-level (picklable) function; it must seed its own randomness.
    points
        Keyword dictionaries, one per sweep point.
    max_workers
        Worker processes (1 runs in this process, no pool).
    """
    points = [dict(p) for p in points]
    if int(max_workers) != max_workers or max_workers < 1:
        raise ValueError(f"max_workers must be a positive integer, got {max_workers!r}")
    if not callable(fn):
        raise ValueError("fn must be callable")
    if max_workers == 1 or len(points) <= 1:
        return [fn(**p) for p in points]
    with ProcessPoolExecutor(
        max_workers=int(max_workers), initializer=_single_thread
    ) as pool:
        return list(pool.map(_call, [fn] * len(points), points))
