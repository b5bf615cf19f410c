"""The dataset layer: IDX format, synthetic MNIST, verified preparation and loading.

No network: tests write their own real-format files; downloads come from a loopback HTTP server."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import devicebench.data.download as dl
from devicebench.data import (
    DATASETS,
    DataIntegrityError,
    IdxFormatError,
    load_dataset,
    prepare_dataset,
    sha256_file,
)
from devicebench.data.idx import read_idx, write_idx

REPO = Path(__file__).resolve().parents[1]
MNIST = DATASETS["mnist"]
REAL_TRAIN_IMAGES_SHA = "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"


def write_fake_mnist(folder: Path, n_train: int = 30, n_test: int = 20) -> dict[str, str]:
    """Tiny files in the real MNIST format and names; returns file name -> sha256."""
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": (np.arange(n_train) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte.gz": (np.arange(n_test) % 10).astype(np.uint8),
    }
    for name, arr in arrays.items():
        write_idx(folder / name, arr)
    return {name: sha256_file(folder / name) for name in arrays}


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture
def small_synthetic(tmp_path: Path) -> Path:
    return prepare_dataset(
        "mnist", "synthetic", tmp_path / "syn", train_samples=200, test_samples=100, seed=3
    )


# --- IDX format -----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".gz", ""])
@pytest.mark.parametrize(
    "array",
    [
        np.arange(3 * 28 * 28, dtype=np.uint8).reshape(3, 28, 28),
        np.array([7, 0, 9, 3], dtype=np.uint8),
        np.arange(12, dtype=np.int32).reshape(3, 4) - 5,
        np.linspace(-1, 1, 6, dtype=np.float32),
    ],
    ids=["images", "labels", "int32", "float32"],
)
def test_idx_round_trip(tmp_path: Path, suffix: str, array: np.ndarray) -> None:
    path = write_idx(tmp_path / f"a-idx{suffix}", array)
    back = read_idx(path)
    assert back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back, array)


def test_idx_header_is_the_real_one(tmp_path: Path) -> None:
    path = write_idx(tmp_path / "x-idx3-ubyte", np.zeros((2, 28, 28), np.uint8))
    raw = path.read_bytes()
    assert raw[:16] == bytes.fromhex("00000803000000020000001c0000001c")
    assert len(raw) == 16 + 2 * 28 * 28


def test_gzip_output_is_byte_identical(tmp_path: Path) -> None:
    arr = np.arange(100, dtype=np.uint8)
    a = write_idx(tmp_path / "a.gz", arr).read_bytes()
    b = write_idx(tmp_path / "b.gz", arr).read_bytes()
    assert a == b and gzip.decompress(a)[:4] == b"\x00\x00\x08\x01"


@pytest.mark.parametrize("head", [b"\x12\x34\x08\x01", b"\x00\x00\x07\x01"], ids=["magic", "dtype"])
def test_bad_magic_names_the_file(tmp_path: Path, head: bytes) -> None:
    path = tmp_path / "bad-idx1-ubyte"
    path.write_bytes(head + b"\x00\x00\x00\x02" + b"\x01\x02")
    with pytest.raises(IdxFormatError, match=r"bad-idx1-ubyte.*bad magic"):
        read_idx(path)


@pytest.mark.parametrize(
    ("name", "match"),
    [("t-idx3-ubyte", r"t-idx3-ubyte.*need 3136 data bytes.*3126"), ("t-idx3-ubyte.gz", "t-idx")],
)
def test_truncated_file_names_the_file(tmp_path: Path, name: str, match: str) -> None:
    path = write_idx(tmp_path / name, np.ones((4, 28, 28), np.uint8))
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(IdxFormatError, match=match):
        read_idx(path)


# --- synthetic ------------------------------------------------------------------------------


def test_synthetic_is_deterministic(tmp_path: Path) -> None:
    def sums(folder: str, seed: int) -> list[str]:
        m = prepare_dataset(
            "mnist", "synthetic", tmp_path / folder, train_samples=300, test_samples=100, seed=seed
        )
        return [f["sha256"] for f in json.loads(m.read_text())["files"]]

    assert sums("a", 1) == sums("b", 1)
    assert sums("a", 1)[0] != sums("c", 2)[0]


def test_synthetic_test_split_does_not_depend_on_train_size(tmp_path: Path) -> None:
    small = load_dataset(
        prepare_dataset(
            "mnist", "synthetic", tmp_path / "s", train_samples=50, test_samples=40, seed=5
        )
    )
    large = load_dataset(
        prepare_dataset(
            "mnist", "synthetic", tmp_path / "l", train_samples=90, test_samples=40, seed=5
        )
    )
    np.testing.assert_array_equal(small.x_test, large.x_test)


def test_synthetic_shapes_labels_and_provenance(small_synthetic: Path) -> None:
    data = load_dataset(small_synthetic)
    assert data.x_train.shape == (200, 28, 28) and data.x_train.dtype == np.uint8
    assert data.y_train.shape == (200,) and data.y_train.dtype == np.int64
    assert data.x_test.shape == (100, 28, 28) and data.y_test.dtype == np.int64
    assert np.bincount(data.y_train, minlength=10).tolist() == [20] * 10
    assert (data.name, data.source, data.synthetic, data.num_classes) == (
        "mnist",
        "synthetic",
        True,
        10,
    )
    manifest = json.loads(small_synthetic.read_text())
    assert manifest["synthetic"] is True and manifest["train_samples"] == 200
    assert {f["name"] for f in manifest["files"]} == {f.name for f in MNIST.files}


def test_synthetic_is_learnable_but_not_trivial(tmp_path: Path) -> None:
    """Softmax regression, 100 full-batch steps in numpy: well above chance, short of perfect."""
    m = prepare_dataset(
        "mnist", "synthetic", tmp_path / "l", train_samples=2000, test_samples=1000, seed=0
    )
    data = load_dataset(m)
    x = data.x_train.reshape(2000, -1).astype(np.float32) / 255
    xt = data.x_test.reshape(1000, -1).astype(np.float32) / 255
    mu, sd = x.mean(0), x.std(0) + 1e-6
    x, xt = (x - mu) / sd, (xt - mu) / sd
    w, b = np.zeros((784, 10), np.float32), np.zeros(10, np.float32)
    onehot = np.eye(10, dtype=np.float32)[data.y_train]
    for _ in range(100):
        z = x @ w + b
        p = np.exp(z - z.max(1, keepdims=True))
        g = (p / p.sum(1, keepdims=True) - onehot) / len(x)
        w -= 0.5 * (x.T @ g + 1e-3 * w)
        b -= 0.5 * g.sum(0)
    acc = float(((xt @ w + b).argmax(1) == data.y_test).mean())
    assert 0.5 < acc < 0.99, acc


# --- the path source and the real checksum table --------------------------------------------


def test_path_source_runs_the_real_verification(tmp_path: Path) -> None:
    sums = write_fake_mnist(tmp_path / "orig")
    with pytest.raises(DataIntegrityError) as err:
        prepare_dataset("mnist", "path", tmp_path / "out", path=str(tmp_path / "orig"))
    msg = str(err.value)
    assert "train-images-idx3-ubyte.gz" in msg and REAL_TRAIN_IMAGES_SHA in msg
    assert sums["train-images-idx3-ubyte.gz"] in msg


def test_path_source_with_overridden_sums_copies_and_loads(tmp_path: Path) -> None:
    sums = write_fake_mnist(tmp_path / "orig", n_train=30, n_test=20)
    m = prepare_dataset(
        "mnist",
        "path",
        tmp_path / "out",
        path=str(tmp_path / "orig"),
        train_samples=12,
        expected_sha256=sums,
    )
    info = json.loads(m.read_text())
    assert (info["synthetic"], info["train_samples"], info["test_samples"]) == (False, 12, 10_000)
    assert {f["name"]: f["sha256"] for f in info["files"]} == sums
    # Files are kept whole; the sample count is applied when loading.
    assert read_idx(tmp_path / "out" / "train-images-idx3-ubyte.gz").shape == (30, 28, 28)
    with pytest.raises(ValueError, match="test_samples=10000"):
        load_dataset(m)
    data = load_dataset(m, test_samples=20)
    assert data.x_train.shape == (12, 28, 28) and not data.synthetic and data.source == "path"
    expected = read_idx(tmp_path / "orig" / "train-images-idx3-ubyte.gz")[:12]
    np.testing.assert_array_equal(data.x_train, expected)
    assert load_dataset(m, train_samples=30, test_samples=5).x_train.shape[0] == 30


def test_download_verifies_over_real_http(tmp_path: Path) -> None:
    """A real HTTP server on loopback serves the file; the real download code fetches it."""
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    payload = b"pretend this is MNIST"
    (served / "f.gz").write_bytes(payload)
    (served / "g.gz").write_bytes(payload)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    out = tmp_path / "out"
    try:
        good = hashlib.sha256(payload).hexdigest()
        fetched = dl.fetch_verified(f"{base}/f.gz", out / "f.gz", good)
        assert fetched.read_bytes() == payload
        with pytest.raises(DataIntegrityError, match=rf"g\.gz.*expected sha256 {'0' * 64}"):
            dl.fetch_verified(f"{base}/g.gz", out / "g.gz", "0" * 64)
        with pytest.raises(dl.DownloadError, match="could not download"):
            dl.fetch_verified(f"{base}/missing.gz", out / "missing.gz", good)
    finally:
        server.shutdown()
        server.server_close()
    assert sorted(p.name for p in out.iterdir()) == ["f.gz"]  # nothing half-kept


# --- integrity checks when loading ----------------------------------------------------------


def _expected(manifest: Path, name: str) -> str:
    return next(f["sha256"] for f in json.loads(manifest.read_text())["files"] if f["name"] == name)


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_damaged_file_fails_before_parsing(small_synthetic: Path, damage: str) -> None:
    target = small_synthetic.parent / "t10k-labels-idx1-ubyte.gz"
    if damage == "flip":
        flip_byte(target, 30)
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:-5])
    else:
        target.unlink()
    with pytest.raises(DataIntegrityError) as err:
        load_dataset(small_synthetic)
    msg = str(err.value)
    assert str(target) in msg and _expected(small_synthetic, target.name) in msg
    if damage != "delete":
        assert f"actual sha256 {sha256_file(target)}" in msg and "snakemake -n" in msg


def test_corrupt_manifest_is_an_integrity_error(small_synthetic: Path) -> None:
    small_synthetic.write_text('{"dataset": "mnist"')
    with pytest.raises(DataIntegrityError, match="not a valid dataset manifest"):
        load_dataset(small_synthetic)


# --- command line ---------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "prepare_data.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_prepares_then_exits_2_on_a_corrupt_file(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    done = _cli(
        "--dataset",
        "mnist",
        "--source",
        "synthetic",
        "--out",
        str(out),
        "--train-samples",
        "60",
        "--test-samples",
        "20",
        "--seed",
        "1234",
    )
    assert done.returncode == 0, done.stderr
    assert "SYNTHETIC" in done.stdout and "train-images-idx3-ubyte.gz" in done.stdout
    expected = _expected(out / "manifest.json", "train-images-idx3-ubyte.gz")
    flip_byte(out / "train-images-idx3-ubyte.gz", 100)
    bad = _cli("--check", "--out", str(out))
    assert bad.returncode == 2
    assert "train-images-idx3-ubyte.gz" in bad.stderr and expected in bad.stderr


def test_cli_path_source_with_wrong_files_exits_2(tmp_path: Path) -> None:
    write_fake_mnist(tmp_path / "orig")
    done = _cli("--source", "path", "--path", str(tmp_path / "orig"), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and REAL_TRAIN_IMAGES_SHA in done.stderr
