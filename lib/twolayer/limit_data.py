"""The data sets of the synthesis chapter (book/synthesis), one home below
:mod:`twolayer.synthesis` (the pages' runs) and :mod:`twolayer.regimes` (the stored
grids), which both read them: the overlay's antipodal Gaussians
(:func:`synthesis_data`), Lyu et al.'s symmetric setting (:func:`lyu_data`),
Sarussi et al.'s antipodal Gaussians (:func:`sarussi_data`), the moves' non-mirrored
classes (:func:`nonsymmetric_data`) and Phuong & Lampert's max-margin pair of a set
(:func:`max_margin_pair`). Each draw is tied to its ``seed``."""

from __future__ import annotations

import numpy as np

from .data import Dataset, antipodal_gaussians
from .theory import lyu2021, phuong2021
from .theory.margins import NotSeparableError


def max_margin_pair(data: Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """``(w+, w−)`` of Phuong & Lampert eqs. (6)-(7), or None if a class admits none."""
    try:
        return phuong2021.max_margin_directions(data.X, data.y)
    except NotSeparableError:
        return None


def synthesis_data(
    n: int = 40,
    d: int = 5,
    mean: float = 3.0,
    std: float = 0.5,
    seed: int = 0,
    hinted: bool = False,
) -> Dataset:
    """Antipodal Gaussians scaled to ``‖x‖ ≤ 1``: symmetric (Lyu Assumption 4.1),
    linearly separable (Sarussi), and — for ``std`` small against ``mean`` —
    orthogonally separable with ``μ > 0`` (Phuong, Min Assumption 1).
    ``hinted=True`` appends Lyu et al.'s three hint points (Def. 6.1, with
    H=5, K=5, ε=0.05), which breaks the symmetry."""
    ds = antipodal_gaussians(n, d, mean=mean, std=std, seed=seed)
    X = ds.X / np.linalg.norm(ds.X, axis=1).max()
    ds = ds.with_data(X, ds.y, note="scaled to max norm 1")
    if not hinted:
        return ds
    w_star = lyu2021.max_margin_separator(ds.X, ds.y)
    e = np.eye(d)[np.argmin(np.abs(w_star))]
    w_perp = e - (e @ w_star) * w_star
    w_perp /= np.linalg.norm(w_perp)
    X2, y2 = lyu2021.hinted_dataset(ds.X, ds.y, H=5.0, K=5.0, eps=0.05, w_perp=w_perp)
    return ds.with_data(
        X2 / np.linalg.norm(X2, axis=1).max(),
        y2,
        name=ds.name + " + hints",
        note="Lyu Def. 6.1 hints (H=K=5, eps=0.05), rescaled to max norm 1",
    )


def lyu_data(seed: int, n: int = 20, d: int = 5):
    """Lyu et al.'s symmetric setting (the limits page's): two Gaussians
    (mean ±1, std 0.7), symmetrically augmented (Assumption 4.1), scaled to
    ``‖x‖ ≤ 1``; with 200 random evaluation points appended for the sup norm."""
    from .data import symmetric_augment, two_gaussians

    sym = symmetric_augment(two_gaussians(n, d, mean=1.0, std=0.7, seed=seed))
    sym = sym.with_data(
        sym.X / np.linalg.norm(sym.X, axis=1).max(),
        sym.y,
        name=sym.name + " scaled to norm <= 1",
        note="scaled to max norm 1",
    )
    rng = np.random.default_rng(seed)
    X_eval = np.vstack([sym.X, rng.standard_normal((200, d)) / np.sqrt(d)])
    return sym, X_eval


def sarussi_data(seed: int):
    """Sarussi et al.'s antipodal Gaussians (Lemma 6.1), the limits page's: 60 points in
    R^10."""
    from .data import antipodal_gaussians

    return antipodal_gaussians(60, 10, mean=1.0, std=0.5, seed=seed)


def nonsymmetric_data(
    n: int = 40, d: int = 5, std: float = 0.5, seed: int = 0
) -> Dataset:
    """Two Gaussian classes that are *not* mirror images: positives ``N(3e1, s²I)``,
    negatives ``N(−3e1 + 1.5e2, s²I)``, scaled to ``‖x‖ ≤ 1``. Unlike
    :func:`synthesis_data`, ``w−`` is not ``−w+`` and neither is along ``w*``, so
    a move of ``μ`` (through ``std``) can break Phuong's and Min's predictions."""
    from .data import Dataset as _Dataset

    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    centres = np.zeros((2, d))
    centres[0, 0], centres[1, 0], centres[1, 1] = 3.0, -3.0, 1.5
    X = np.where(y[:, None] > 0, centres[0], centres[1]) + std * rng.standard_normal(
        (n, d)
    )
    X = X / np.linalg.norm(X, axis=1).max()
    return _Dataset(
        X,
        y,
        f"non-symmetric Gaussians (n={n}, d={d}, std={std:g})",
        f"positives N(3e1, s²I), negatives N(−3e1 + 1.5e2, s²I), s = {std:g}, "
        f"seed {seed}, scaled to max norm 1",
    )
