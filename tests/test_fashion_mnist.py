"""Fashion-MNIST from a local copy of its four IDX files (source `path`), verified by SHA-256."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from devicebench.data import (
    DATASETS,
    DataIntegrityError,
    load_dataset,
    prepare_dataset,
    sha256_file,
)
from devicebench.data.idx import write_idx

DEBIAN = Path("/usr/share/datasets/fashion-mnist")  # dataset-fashion-mnist's install folder
SPEC = DATASETS["fashion_mnist"]


def _write_copy(folder: Path, n_train: int = 30, n_test: int = 20) -> dict[str, np.ndarray]:
    """The four files in the real format (gzip'd IDX) under their published names."""
    rng = np.random.default_rng(7)
    arrays = {
        "train_images": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train_labels": rng.integers(0, 10, n_train, dtype=np.uint8),
        "test_images": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "test_labels": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for role, array in arrays.items():
        write_idx(folder / SPEC.file(role).name, array)
    return arrays


def test_reads_a_copy_of_the_four_idx_files(tmp_path):
    arrays = _write_copy(tmp_path / "copy")
    sums = {f.name: sha256_file(tmp_path / "copy" / f.name) for f in SPEC.files}
    manifest = prepare_dataset(
        "fashion_mnist", "path", tmp_path / "out", path=tmp_path / "copy", expected_sha256=sums,
        train_samples=30, test_samples=20,
    )  # fmt: skip
    data = load_dataset(manifest)
    assert data.name == "fashion_mnist" and data.source == "path" and not data.synthetic
    assert np.array_equal(data.x_train, arrays["train_images"])
    assert np.array_equal(data.y_train, arrays["train_labels"])
    assert np.array_equal(data.x_test, arrays["test_images"])
    assert np.array_equal(data.y_test, arrays["test_labels"])
    assert data.num_classes == 10


def test_a_copy_that_is_not_the_pinned_files_is_refused(tmp_path):
    _write_copy(tmp_path / "copy")
    with pytest.raises(DataIntegrityError, match="train-images-idx3-ubyte.gz"):
        prepare_dataset("fashion_mnist", "path", tmp_path / "out", path=tmp_path / "copy")
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.skipif(not DEBIAN.exists(), reason="dataset-fashion-mnist is not installed")
def test_the_debian_package_files_match_the_pinned_sums(tmp_path):
    manifest = prepare_dataset("fashion_mnist", "path", tmp_path / "out", path=DEBIAN)
    data = load_dataset(manifest, train_samples=100, test_samples=100)
    assert data.x_train.shape == (100, 28, 28) and data.x_train.dtype == np.uint8
    assert set(np.unique(data.y_test)) <= set(range(10))
