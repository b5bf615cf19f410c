"""Reader and writer for the IDX format, the container MNIST ships in.

Real and synthetic MNIST share this one format so that one loader reads both: whatever the
synthetic generator writes is parsed by exactly the code that parses the real files.

Layout: two zero bytes, a dtype code, the number of dimensions, then one big-endian uint32 per
dimension, then the data in C order, big-endian. A file whose name ends in ``.gz`` is gzip'd.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

from devicebench.atomic import atomic_path

# IDX dtype code -> big-endian numpy dtype (from the format's description on the MNIST page).
DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {(dt.kind, dt.itemsize): code for code, dt in DTYPES.items()}


class IdxFormatError(ValueError):
    """A file is not a well-formed IDX file; the message names the file and what is wrong."""


def _read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (OSError, EOFError, zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise IdxFormatError(f"{path}: cannot decompress ({e}); the file is damaged") from e


def parse_idx(data: bytes, name: str = "<bytes>") -> np.ndarray:
    """Parse IDX bytes, checking the header against the payload length exactly."""
    if len(data) < 4:
        raise IdxFormatError(f"{name}: {len(data)} bytes is too short for an IDX header")
    zero, code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or code not in DTYPES:
        raise IdxFormatError(
            f"{name}: bad magic number 0x{data[:4].hex()} (expected 0x0000 then a dtype code "
            f"in {sorted(hex(c) for c in DTYPES)} and the number of dimensions)"
        )
    if ndim == 0:
        raise IdxFormatError(f"{name}: bad magic number 0x{data[:4].hex()}: zero dimensions")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IdxFormatError(f"{name}: truncated header ({len(data)} < {header} bytes)")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = DTYPES[code]
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    actual = len(data) - header
    if actual != expected:
        raise IdxFormatError(
            f"{name}: dimensions {dims} of {dtype.name} need {expected} data bytes, "
            f"the file has {actual}; it is truncated or not an IDX file"
        )
    arr = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=True)


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (gzip'd if the name ends in .gz) into a native-endian array."""
    path = Path(path)
    return parse_idx(_read_bytes(path), str(path))


def read_images(path: str | Path, image_shape: tuple[int, ...]) -> np.ndarray:
    """Read an image file, insisting on uint8 pixels of ``image_shape`` (N×H×W for MNIST)."""
    arr = read_idx(path)
    if arr.dtype != np.uint8 or arr.shape[1:] != tuple(image_shape):
        raise IdxFormatError(
            f"{path}: expected uint8 images N×{tuple(image_shape)}, got {arr.dtype} {arr.shape}"
        )
    return arr


def read_labels(path: str | Path, count: int, num_classes: int) -> np.ndarray:
    """Read a label file as int64, insisting on ``count`` labels in 0..num_classes-1."""
    arr = read_idx(path)
    if arr.ndim != 1 or len(arr) != count or arr.dtype.kind not in "iu":
        raise IdxFormatError(
            f"{path}: expected {count} integer labels, got {arr.dtype} {arr.shape}"
        )
    if len(arr) and (int(arr.min()) < 0 or int(arr.max()) >= num_classes):
        raise IdxFormatError(f"{path}: labels must lie in 0..{num_classes - 1}")
    return arr.astype(np.int64)


def encode_idx(array: np.ndarray) -> bytes:
    """Encode an array as IDX bytes (uncompressed)."""
    arr = np.asarray(array)
    code = _CODES.get((arr.dtype.kind, arr.dtype.itemsize))
    if code is None or arr.ndim == 0 or arr.ndim > 255:
        raise IdxFormatError(f"cannot encode dtype {arr.dtype} with {arr.ndim} dimensions as IDX")
    if any(d >= 2**32 for d in arr.shape):
        raise IdxFormatError(f"dimension too large for IDX: {arr.shape}")
    header = struct.pack(f">HBB{arr.ndim}I", 0, code, arr.ndim, *arr.shape)
    return header + np.ascontiguousarray(arr, dtype=DTYPES[code]).tobytes()


def write_idx(path: str | Path, array: np.ndarray, *, compresslevel: int = 6) -> Path:
    """Write an array as IDX, gzip'd if the name ends in .gz, atomically.

    The gzip header carries no timestamp or file name, so the same array always gives the same
    bytes (and so the same SHA-256) on every run.
    """
    path = Path(path)
    payload = encode_idx(array)
    with atomic_path(path) as tmp, open(tmp, "wb") as raw:
        if path.suffix == ".gz":
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0
            ) as gz:
                gz.write(payload)
        else:
            raw.write(payload)
    return path
