"""A prepared data set checked at planning, before Snakemake schedules the cells that read it.

A cell's input is its data set's manifest. When the manifest changes (one byte appended) or a
file it pins is broken, Snakemake removes the records of every cell of that data set before
running them again, and each cell then fails: hours of GPU measurements gone for a broken input.
`check_prepared` runs while the workflow is planned: a manifest that is not valid, that pins a
file that is missing or not its checksum, or whose sizes, seed or source are not the config's,
stops the run with the file and the exact command that prepares the data set again, and no
record is touched. SHA-256s are remembered by file size, mtime and inode (`.verified.json`), so
planning hashes a file again only when it changed.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

from devicebench.atomic import atomic_path

CACHE = ".verified.json"
KEYS = ("dataset", "source", "synthetic", "train_samples", "test_samples", "files")


class InputUnusable(RuntimeError):
    """A cell's input (its data set) cannot be used; nothing was measured, nothing replaced."""


def prepare_command(
    name: str, source: str, folder: str, args: list[str], script: str = "scripts/prepare_data.py"
) -> str:
    """The command that prepares data set `name` as the workflow's rule does (quoted), run
    from the workflow's working directory (`script` relative to it)."""
    words = ["python", script, "--dataset", name, "--source", source]
    return shlex.join([*words, "--out", folder, *args])


def read_manifest(manifest: Path) -> dict[str, Any]:
    """The manifest's content; InputUnusable naming the file when it is not a manifest."""
    try:
        info = json.loads(manifest.read_text())
    except (OSError, ValueError) as error:
        raise InputUnusable(f"dataset manifest {manifest} cannot be read: {error}") from None
    if not isinstance(info, dict) or any(key not in info for key in KEYS):
        raise InputUnusable(
            f"dataset manifest {manifest} is not a manifest: it needs the keys {', '.join(KEYS)}"
        )
    files = info["files"]
    if not isinstance(files, list) or not all(
        isinstance(f, dict) and isinstance(f.get("name"), str) and isinstance(f.get("sha256"), str)
        for f in files
    ):
        raise InputUnusable(f"dataset manifest {manifest}: its files lack a name or sha256")
    return info


def _sha256(path: Path, cache: dict[str, Any]) -> str:
    stat = path.stat()
    key = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
    known = cache.get(path.name)
    if isinstance(known, dict) and known.get("stat") == key:
        return str(known.get("sha256"))
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    cache[path.name] = {"stat": key, "sha256": digest.hexdigest()}
    return digest.hexdigest()


def _file_problem(folder: Path, info: dict[str, Any]) -> str | None:
    cache_path = folder / CACHE
    try:
        cache = json.loads(cache_path.read_text())
        cache = cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        cache = {}
    before = dict(cache)
    problem = None
    for entry in info["files"]:
        path = folder / entry["name"]
        if not path.is_file():
            problem = f"pins {path}, which is missing"
            break
        if "size" in entry and path.stat().st_size != entry["size"]:
            problem = f"pins {path} at {entry['size']} bytes; it has {path.stat().st_size}"
            break
        if _sha256(path, cache) != entry["sha256"].lower():
            problem = f"pins {path} at sha256 {entry['sha256']}; the file is not that"
            break
    if cache != before:
        try:
            with atomic_path(cache_path) as tmp:
                tmp.write_text(json.dumps(cache))
        except OSError:
            pass  # a read-only folder is checked again next time
    return problem


def settings_problem(info: dict[str, Any], expected: dict[str, Any]) -> str | None:
    """How the manifest differs from what the config would prepare (None: it does not). A
    manifest the workflow's rule wrote with other settings is no problem: the rule's params are
    the config's, so Snakemake prepares it again before any cell reads it (a config change); one
    prepared by hand is (the rule would not run again, and the cells would measure it)."""
    if info.get("prepared_by") == "workflow":
        return None
    for key in ("dataset", "source", "train_samples", "test_samples", "seed"):
        if key in expected and info.get(key) != expected[key]:
            return f"holds {key} {info.get(key)!r}, the config asks for {expected[key]!r}"
    return None


def check_prepared(manifest: Path, expected: dict[str, Any], command: str) -> None:
    """Raise InputUnusable (naming the file and `command`) unless `manifest` is a manifest
    whose files are all there, as pinned, and whose settings are `expected`."""
    if not manifest.exists():
        return  # not prepared yet: the workflow prepares it
    info = read_manifest_or_say(manifest, command)
    problem = settings_problem(info, expected) or _file_problem(manifest.parent, info)
    if problem:
        raise InputUnusable(
            f"dataset manifest {manifest} {problem}. No cell was run and no record was touched. "
            f"Prepare the data set again with: {command}"
        )


def read_manifest_or_say(manifest: Path, command: str) -> dict[str, Any]:
    try:
        return read_manifest(manifest)
    except InputUnusable as error:
        raise InputUnusable(
            f"{error}. No cell was run and no record was touched. Prepare the data set again "
            f"with: {command}"
        ) from None


def expected_settings(name: str, settings: dict[str, Any], seed: int) -> dict[str, Any]:
    """What a manifest prepared from the config's `settings` for data set `name` holds."""
    from devicebench.data.catalog import DATASETS

    spec = DATASETS[name]
    source = settings.get("source", "synthetic")
    expected = {
        "dataset": name,
        "source": source,
        "train_samples": settings.get("train_samples") or spec.train_size,
        "test_samples": settings.get("test_samples") or spec.test_size,
    }
    if source == "synthetic":
        expected["seed"] = seed
    return expected
