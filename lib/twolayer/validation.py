"""Input checks shared by every public function: clear errors naming the argument."""

from __future__ import annotations

from typing import Any

import numpy as np


def to_numpy(a: Any) -> np.ndarray:
    """NumPy view of an array-like or a torch tensor (detached, on the CPU)."""
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a)


def as_matrix(X: Any, name: str = "X") -> np.ndarray:
    """``X`` as a non-empty, finite float64 matrix of shape (n, d)."""
    try:
        A = to_numpy(X).astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a numeric array, got {type(X).__name__}"
        ) from exc
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (n, d), got shape {A.shape}")
    if A.shape[0] == 0 or A.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return A


def as_vector(v: Any, name: str, dim: int | None = None) -> np.ndarray:
    """``v`` as a finite float64 vector, optionally of length ``dim``."""
    a = to_numpy(v).astype(np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if dim is not None and a.shape[0] != dim:
        raise ValueError(f"{name} must have length {dim}, got {a.shape[0]}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return a


def as_labels(y: Any, n: int, name: str = "y") -> np.ndarray:
    """``y`` as a float64 vector of length ``n`` with entries in {-1, +1}."""
    a = to_numpy(y)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D of length {n}, got shape {a.shape}")
    if a.shape[0] != n:
        raise ValueError(
            f"{name} must have length {n} (one label per row of X), got {a.shape[0]}"
        )
    a = a.astype(np.float64)
    bad = ~np.isin(a, (-1.0, 1.0))
    if bad.any():
        raise ValueError(
            f"{name} must contain only labels -1 and +1; "
            f"found {np.unique(a[bad])[:5].tolist()}"
        )
    return a


def as_xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(X, y)``: X of shape (n, d), y in {±1}^n."""
    A = as_matrix(X, "X")
    return A, as_labels(y, A.shape[0], "y")


def positive(value: float, name: str) -> float:
    """``value`` as a float, which must be > 0."""
    v = float(value)
    if not v > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return v
