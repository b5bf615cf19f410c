"""Real-format loaders of the catalog's datasets (CIFAR-10 binary, aclImdb, Nietzsche text).

Every file here is written by the test itself in the published format; no network.
"""

from __future__ import annotations

import io
import tarfile
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
from devicebench.data.cifar10 import CifarFormatError, read_archive
from devicebench.workloads import get


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def write_fake_cifar(folder: Path) -> tuple[Path, np.ndarray]:
    """cifar-10-binary.tar.gz with 2 records per training file and 3 test records."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (13, 3072), dtype=np.uint8)
    records = np.concatenate([(np.arange(13) % 10).astype(np.uint8)[:, None], pixels], axis=1)
    members = {"cifar-10-batches-bin/batches.meta.txt": b"airplane\n"}
    for i in range(5):
        members[f"cifar-10-batches-bin/data_batch_{i + 1}.bin"] = records[
            2 * i : 2 * i + 2
        ].tobytes()
    members["cifar-10-batches-bin/test_batch.bin"] = records[10:].tobytes()
    return _tar(folder / "cifar-10-binary.tar.gz", members), records


def test_cifar_binary_records_load(tmp_path):
    archive, records = write_fake_cifar(tmp_path / "orig")
    manifest = prepare_dataset(
        "cifar10",
        "path",
        tmp_path / "out",
        path=tmp_path / "orig",
        train_samples=10,
        test_samples=3,
        expected_sha256={archive.name: sha256_file(archive)},
    )
    data = load_dataset(manifest)
    assert data.x_train.shape == (10, 3, 32, 32) and data.x_test.shape == (3, 3, 32, 32)
    assert list(data.y_train) == list(range(10))
    # the red plane comes first, row-major, as the format's documentation says
    assert np.array_equal(data.x_train[3, 0].ravel(), records[3, 1:1025])
    assert np.array_equal(data.x_test[2, 2].ravel(), records[12, 2049:])


def test_cifar_download_is_checked_against_the_published_md5(tmp_path):
    write_fake_cifar(tmp_path / "orig")
    with pytest.raises(DataIntegrityError) as error:
        prepare_dataset("cifar10", "path", tmp_path / "out", path=tmp_path / "orig")
    message = str(error.value)
    assert "cifar-10-binary.tar.gz" in message
    assert DATASETS["cifar10"].file("archive").md5 in message


def test_truncated_cifar_records_are_named(tmp_path):
    bad = _tar(
        tmp_path / "bad.tar.gz",
        {
            f"cifar-10-batches-bin/{n}": b"\x01" * 100
            for n in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
        },
    )
    with pytest.raises(CifarFormatError, match="data_batch_1.bin.*3073-byte records"):
        read_archive(bad)


def write_fake_imdb(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    reviews = {
        "aclImdb/train/pos/0_9.txt": b"A great film, great acting.<br />Great!",
        "aclImdb/train/pos/1_8.txt": b"great fun",
        "aclImdb/train/neg/0_1.txt": b"Awful film. Boring, awful.",
        "aclImdb/test/pos/0_10.txt": b"great great unseenword",
        "aclImdb/test/neg/0_2.txt": b"awful",
        "aclImdb/README": b"not a review",
    }
    return _tar(folder / "aclImdb_v1.tar.gz", reviews)


def test_imdb_text_archive_is_tokenised(tmp_path):
    archive = write_fake_imdb(tmp_path / "orig")
    manifest = prepare_dataset(
        "imdb",
        "path",
        tmp_path / "out",
        path=tmp_path / "orig",
        train_samples=3,
        test_samples=2,
        expected_sha256={archive.name: sha256_file(archive)},
    )
    data = load_dataset(manifest)
    assert data.x_train.shape == (3, 400) and data.num_classes == 2
    # vocabulary by training frequency: great (5) -> 2, awful (2) -> 3, film (2) -> 4 ...
    test = {tuple(row[row > 0]): label for row, label in zip(data.x_test, data.y_test, strict=True)}
    assert test == {(2, 2, 1): 1, (3,): 0}  # unseenword is out of vocabulary (1)
    assert sorted(data.y_train.tolist()) == [0, 1, 1]
    assert (data.x_train[:, :390] == 0).all()  # right-aligned, left-padded


def test_imdb_checksum_mismatch_names_file_and_expected_sum(tmp_path):
    write_fake_imdb(tmp_path / "orig")
    expected = DATASETS["imdb"].file("archive").sha256
    with pytest.raises(DataIntegrityError) as error:
        prepare_dataset("imdb", "path", tmp_path / "out", path=tmp_path / "orig")
    assert "aclImdb_v1.tar.gz" in str(error.value) and expected in str(error.value)


def test_nietzsche_windows_and_a_required_checksum(tmp_path):
    orig = tmp_path / "orig"
    orig.mkdir()
    text = "Supposing that Truth is a woman--what then? " * 20
    (orig / "nietzsche.txt").write_text(text)
    with pytest.raises(DataIntegrityError, match="nietzsche.txt.*no published checksum|sha256"):
        prepare_dataset("nietzsche", "path", tmp_path / "out", path=orig)
    digest = sha256_file(orig / "nietzsche.txt")
    manifest = prepare_dataset(
        "nietzsche",
        "path",
        tmp_path / "out",
        path=orig,
        train_samples=100,
        test_samples=10,
        expected_sha256={"nietzsche.txt": digest},
    )
    data = load_dataset(manifest)
    chars = sorted(set(text.lower()))
    assert data.num_classes == len(chars) and data.x_train.shape == (100, 40)
    decode = "".join
    assert decode(chars[i] for i in data.x_train[1]) == text.lower()[3:43]
    assert chars[data.y_train[1]] == text.lower()[43]


def test_a_corrupted_prepared_file_names_file_and_expected_checksum(tmp_path):
    archive = write_fake_imdb(tmp_path / "orig")
    digest = sha256_file(archive)
    manifest = prepare_dataset(
        "imdb",
        "path",
        tmp_path / "out",
        path=tmp_path / "orig",
        train_samples=3,
        test_samples=2,
        expected_sha256={archive.name: digest},
    )
    prepared = tmp_path / "out" / "aclImdb_v1.tar.gz"
    prepared.write_bytes(prepared.read_bytes()[:50])  # truncated
    with pytest.raises(DataIntegrityError) as error:
        load_dataset(manifest)
    assert str(prepared) in str(error.value) and digest in str(error.value)


@pytest.mark.parametrize(
    ("name", "shape", "classes"),
    [("cifar10", (3, 32, 32), 10), ("imdb", (400,), 2), ("nietzsche", (40,), 57)],
)
def test_synthetic_sources_have_the_real_shapes(tmp_path, name, shape, classes):
    data = load_dataset(
        prepare_dataset(name, "synthetic", tmp_path, train_samples=64, test_samples=16, seed=3)
    )
    assert data.synthetic and data.x_train.shape == (64, *shape) and data.x_test.shape[0] == 16
    assert data.num_classes == classes
    assert set(np.unique(data.y_train)) == set(range(classes)) or name == "nietzsche"
    if name == "imdb":
        assert data.x_train.max() < 20_000


def test_fasttext_inputs_add_hashed_bigrams(tmp_path):
    data = load_dataset(
        prepare_dataset("imdb", "synthetic", tmp_path, train_samples=16, test_samples=4, seed=1)
    )
    workload = get("imdb_fasttext")
    spec = workload.spec
    arrays = workload.arrays(data)
    vocab = int(spec.option("vocab_size"))
    assert arrays.x_train.shape == (16, 400) and arrays.outputs == 1
    assert (arrays.x_train >= vocab).any()  # bigram features follow the words
    assert arrays.x_train.max() < vocab + int(spec.option("bigram_buckets"))
    assert get("imdb_bilstm").arrays(data).x_train.shape == (16, 100)
