"""Checksums and verified downloads.

Every data file the study reads is pinned by SHA-256: a number measured on a silently different
(or half-downloaded) file is worse than no number, so a mismatch always stops the run with a
message that says which file, what was expected, what was found and how to recover.
"""

from __future__ import annotations

import hashlib
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from devicebench.atomic import atomic_path

_CHUNK = 1 << 20
# A command that works as written: the planning check (devicebench.plan.data_check) prints the
# preparation command with the config's sizes and seed, and stops before any record is touched.
RECOVERY = "Run `snakemake -n`: it names the command that prepares this data set again."


class DataIntegrityError(Exception):
    """A data file is missing or its SHA-256 differs from the one it was pinned to."""


class DownloadError(Exception):
    """A file could not be fetched (network off, URL gone, HTTP error)."""


def sha256_file(path: str | Path, algorithm: str = "sha256") -> str:
    """Hex SHA-256 (or another hashlib digest) of a file, read in chunks."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def mismatch_message(
    path: str | Path, expected: str, actual: str, *, hint: str = "", algorithm: str = "sha256"
) -> str:
    """The one wording for every checksum failure, so users learn to read it once."""
    size = Path(path).stat().st_size if Path(path).exists() else None
    return (
        f"checksum mismatch for {path}: expected {algorithm} {expected}, "
        f"actual {algorithm} {actual}"
        f" ({size} bytes). The file is corrupt, truncated or not the pinned version. "
        + (hint or RECOVERY)
    )


def verify_file(
    path: str | Path, expected_sha256: str, *, hint: str = "", algorithm: str = "sha256"
) -> str:
    """Raise DataIntegrityError unless ``path`` exists and has ``expected_sha256``."""
    path = Path(path)
    if not path.is_file():
        raise DataIntegrityError(
            f"missing data file {path} (expected {algorithm} {expected_sha256}). "
            + (hint or RECOVERY)
        )
    actual = sha256_file(path, algorithm)
    if actual != expected_sha256.lower():
        raise DataIntegrityError(
            mismatch_message(path, expected_sha256, actual, hint=hint, algorithm=algorithm)
        )
    return actual


def copy_verified(
    src: str | Path, dest: str | Path, expected_sha256: str, *, algorithm: str = "sha256"
) -> Path:
    """Copy a user-supplied original file into place, checking it before and after the copy."""
    src, dest = Path(src), Path(dest)
    hint = f"Replace {src} with the original, unmodified file and prepare again."
    verify_file(src, expected_sha256, hint=hint, algorithm=algorithm)
    if not dest.exists() or not src.samefile(dest):
        with atomic_path(dest) as tmp:
            shutil.copyfile(src, tmp)
    verify_file(dest, expected_sha256, algorithm=algorithm)
    return dest


def fetch_verified(
    url: str,
    dest: str | Path,
    expected_sha256: str,
    *,
    timeout: float = 60.0,
    algorithm: str = "sha256",
) -> Path:
    """Fetch ``url`` to ``dest`` and verify it; ``dest`` only ever holds a verified file.

    An existing ``dest`` with the right checksum is kept (no network use). The download goes to a
    temporary file in the same folder and is renamed only after its checksum matched.
    """
    dest = Path(dest)
    if dest.is_file() and sha256_file(dest, algorithm) == expected_sha256.lower():
        return dest
    with atomic_path(dest) as tmp:
        with open(tmp, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as resp:
                    shutil.copyfileobj(resp, out, _CHUNK)
            except (urllib.error.URLError, TimeoutError, OSError) as e:
                raise DownloadError(
                    f"could not download {url} to {dest}: {e}. This machine may be offline: "
                    "use source 'synthetic', or fetch the file elsewhere and use source 'path'."
                ) from e
        actual = sha256_file(tmp, algorithm)
        if actual != expected_sha256.lower():
            raise DataIntegrityError(
                f"checksum mismatch for {dest.name} downloaded from {url}: expected {algorithm} "
                f"{expected_sha256}, actual {algorithm} {actual} ({tmp.stat().st_size} bytes). "
                "The download was incomplete or the mirror serves a different file; nothing "
                "was kept. Try again later or fetch it elsewhere and use source 'path'."
            )
    return dest
