"""Datasets: prepare them once (synthetic, downloaded or copied), then load them verified.

``prepare_dataset`` writes a dataset's files plus a ``manifest.json`` that pins each file's
SHA-256; ``load_dataset`` checks every pinned file before parsing any, so a run never measures
or scores a corrupt or half-written file. Synthetic files use the real on-disk format, so one
parser serves both sources and the real-format parser is exercised even offline.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from devicebench.atomic import atomic_path

from . import cifar10, conll, imdb, jpeg_images, nietzsche, synthetic
from .catalog import DATASETS, DatasetSpec, FileSpec
from .download import (
    DataIntegrityError,
    DownloadError,
    copy_verified,
    fetch_verified,
    sha256_file,
    verify_file,
)
from .idx import IdxFormatError, read_images, read_labels, write_idx

__all__ = [
    "DATASETS",
    "SOURCES",
    "DataIntegrityError",
    "Dataset",
    "DatasetSpec",
    "DownloadError",
    "FileSpec",
    "IdxFormatError",
    "MANIFEST",
    "load_dataset",
    "prepare_dataset",
    "sha256_file",
    "verify_manifest",
]

SOURCES = ("synthetic", "download", "path")
MANIFEST = "manifest.json"


@dataclass
class Dataset:
    """A loaded dataset: uint8 images (N×H×W), int64 labels, and where it came from."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    name: str
    source: str
    synthetic: bool


def _spec(name: str) -> DatasetSpec:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {sorted(DATASETS)}") from None


def _check_count(what: str, n: int | None, available: int) -> int:
    if n is None:
        return available
    if not 0 < n <= available:
        raise ValueError(f"{what}={n} must be between 1 and {available}, the number available")
    return n


def _write_synthetic(spec: DatasetSpec, out: Path, n_train: int, n_test: int, seed: int) -> None:
    first = out / spec.files[0].name
    if spec.format == "cifar_bin":
        splits = {
            s: cifar10.make_synthetic(seed, n, s) for s, n in (("train", n_train), ("test", n_test))
        }
        cifar10.write_archive(first, splits)
        return
    if spec.format == "aclimdb":
        imdb.write_synthetic(first, seed, n_train, n_test)
        return
    if spec.format == "text":
        nietzsche.write_synthetic(first, seed, n_train, n_test)
        return
    if spec.format == "conll":
        conll.write_synthetic(out, seed, {"train": n_train, "testa": n_test, "testb": n_test})
        return
    if spec.format == "jpeg_zip":
        splits = {
            s: jpeg_images.make_synthetic(seed, n, s)
            for s, n in (("train", n_train), ("test", n_test))
        }
        jpeg_images.write_archive(first, splits)
        return
    for split, n in (("train", n_train), ("test", n_test)):
        images, labels = synthetic.make_split(seed, n, split)
        write_idx(out / spec.file(f"{split}_images").name, images)
        write_idx(out / spec.file(f"{split}_labels").name, labels)


def _write_manifest(path: Path, manifest: dict) -> None:
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


def prepare_dataset(
    name: str,
    source: str,
    out_dir: str | Path,
    *,
    train_samples: int | None = None,
    test_samples: int | None = None,
    seed: int = 0,
    path: str | Path | None = None,
    expected_sha256: Mapping[str, str] | None = None,
    prepared_by: str = "hand",
) -> Path:
    """Produce ``name``'s files in ``out_dir`` and a manifest pinning them; return its path.

    ``synthetic`` writes exactly ``train_samples``/``test_samples`` samples (default: the real
    sizes) generated from ``seed``. ``download`` and ``path`` keep the real files whole, verified
    against the registry's SHA-256 (``expected_sha256`` maps file name to a replacement sum, for
    tests and private mirrors); their sample counts are recorded and applied when loading.
    """
    spec = _spec(name)
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; choose one of {SOURCES}")
    n_train = _check_count("train_samples", train_samples, spec.train_size)
    n_test = _check_count("test_samples", test_samples, spec.test_size)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # a half-prepared folder must not look ready
    sums = {f.name: f.sha256 for f in spec.files} | dict(expected_sha256 or {})

    if source == "synthetic":
        _write_synthetic(spec, out, n_train, n_test, seed)
    elif spec.format == "conll":
        if source != "path":
            raise ValueError(
                "conll2003 has no public download with a published checksum: use source path "
                "(a folder with eng.train, eng.testa, eng.testb) or synthetic"
            )
        if path is None:
            raise ValueError("source 'path' needs path=<folder holding the original files>")
        conll.copy_files(Path(path), out, sums)
    elif source == "download":
        if not spec.base_url:
            raise ValueError(
                f"dataset {name} has no public download; use source synthetic, or source path "
                "with a folder holding its files"
            )
        for f in spec.files:
            digest, algorithm = _expected(f, sums)
            fetch_verified(spec.base_url + f.name, out / f.name, digest, algorithm=algorithm)
    else:
        if path is None:
            raise ValueError("source 'path' needs path=<folder holding the original files>")
        for f in spec.files:
            digest, algorithm = _expected(f, sums)
            copy_verified(Path(path) / f.name, out / f.name, digest, algorithm=algorithm)

    manifest = {
        "dataset": name,
        "source": source,
        "synthetic": source == "synthetic",
        "train_samples": n_train,
        "test_samples": n_test,
        "seed": seed if source == "synthetic" else None,
        "prepared_by": prepared_by,  # "workflow": by its rule, whose params follow the config
        "files": [
            {
                "name": f.name,
                "role": f.role,
                "sha256": sha256_file(out / f.name),
                "size": (out / f.name).stat().st_size,
            }
            for f in spec.files
        ],
    }
    manifest_path = out / MANIFEST
    _write_manifest(manifest_path, manifest)
    return manifest_path


def _expected(f: FileSpec, sums: Mapping[str, str]) -> tuple[str, str]:
    """The checksum a real file is verified against: SHA-256, else the publisher's MD5."""
    if sums.get(f.name):
        return sums[f.name], "sha256"
    if f.md5:
        return f.md5, "md5"
    raise DataIntegrityError(
        f"no published checksum is known for {f.name} (expected sha256: none on record), so it "
        "cannot be verified: compute its SHA-256 from a copy you trust and pass it (config key "
        f"datasets.<name>.sha256: {{{f.name}: <hex>}}, or prepare_data.py --sha256 {f.name}=<hex>)"
    )


_MANIFEST_KEYS = ("dataset", "source", "synthetic", "train_samples", "test_samples", "files")


def _read_manifest(path: Path) -> dict:
    def invalid(why: str) -> DataIntegrityError:
        return DataIntegrityError(
            f"{path} is not a valid dataset manifest ({why}); delete its folder and prepare "
            "the dataset again (scripts/prepare_data.py)"
        )

    try:
        info = json.loads(path.read_text())
    except ValueError as e:
        raise invalid(f"not JSON: {e}") from e
    if not isinstance(info, dict) or any(k not in info for k in _MANIFEST_KEYS):
        raise invalid(f"it must be an object with keys {', '.join(_MANIFEST_KEYS)}")
    for entry in info["files"]:
        if not isinstance(entry, dict) or any(k not in entry for k in ("name", "role", "sha256")):
            raise invalid(f"file entry {entry!r} lacks name, role or sha256")
    return info


def _verified_paths(manifest: Path, info: dict) -> dict[str, Path]:
    paths = {}
    for entry in info["files"]:
        p = manifest.parent / entry["name"]
        verify_file(p, entry["sha256"])
        paths[entry["role"]] = p
    return paths


def verify_manifest(manifest: str | Path) -> dict:
    """Check every file the manifest pins against its SHA-256; return the manifest."""
    manifest = Path(manifest)
    info = _read_manifest(manifest)
    _verified_paths(manifest, info)
    return info


def load_dataset(
    manifest: str | Path,
    *,
    train_samples: int | None = None,
    test_samples: int | None = None,
) -> Dataset:
    """Verify every file the manifest pins, then parse; keep the first N samples of each split.

    The counts default to the manifest's; a count larger than the files hold is an error.
    """
    manifest = Path(manifest)
    info = _read_manifest(manifest)
    paths = _verified_paths(manifest, info)  # all files, before parsing any
    spec = _spec(info["dataset"])
    raw, num_classes = _parse(spec, paths)
    splits = {}
    for split, n in (("train", train_samples), ("test", test_samples)):
        x, y = raw[split]
        n = n if n is not None else info[f"{split}_samples"]
        n = _check_count(f"{split}_samples", n, len(x))
        splits[split] = (np.ascontiguousarray(x[:n]), np.ascontiguousarray(y[:n]))
    return Dataset(
        x_train=splits["train"][0],
        y_train=splits["train"][1],
        x_test=splits["test"][0],
        y_test=splits["test"][1],
        num_classes=num_classes,
        name=spec.name,
        source=info["source"],
        synthetic=bool(info["synthetic"]),
    )


def _parse(spec: DatasetSpec, paths: dict[str, Path]) -> tuple[dict, int]:
    """Every split's full arrays, by the dataset's format, and its number of classes."""
    if spec.format == "cifar_bin":
        return cifar10.read_archive(paths["archive"]), spec.num_classes
    if spec.format == "aclimdb":
        return imdb.read_archive(paths["archive"]), spec.num_classes
    if spec.format == "jpeg_zip":
        return jpeg_images.read_archive(paths["archive"]), spec.num_classes
    if spec.format == "text":
        splits, chars = nietzsche.read_windows(paths["text"])
        return splits, len(chars)
    if spec.format == "conll":
        return conll.read_splits(paths), spec.num_classes
    splits = {}
    for split in ("train", "test"):
        x = read_images(paths[f"{split}_images"], spec.image_shape)
        splits[split] = (x, read_labels(paths[f"{split}_labels"], len(x), spec.num_classes))
    return splits, spec.num_classes
