"""One timed cell at a time on a host, whatever started it: a host-wide lock (flock).

Snakemake's `bench` resource keeps one run's timed cells apart, but two runs are two schedulers:
after `snakemake --unlock` a second run on the same folder (or a run in another folder, or a
cell by hand) timed cells beside the first and both records looked clean. Every timed cell takes
this lock around its worker; a second one waits, says whom it waits for, and its record says how
long it waited (provenance.bench_lock).

DEVICEBENCH_LOCK names the lock file (default: devicebench-timed-cells.lock in the temporary
folder, one per host); `off` disables it (a cluster node shared on purpose, at the user's word).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ENV = "DEVICEBENCH_LOCK"
POLL_S = 0.2


def lock_path() -> Path | None:
    """The host's lock file, or None when DEVICEBENCH_LOCK=off."""
    given = os.environ.get(ENV, "")
    if given.lower() == "off":
        return None
    return Path(given) if given else Path(tempfile.gettempdir()) / "devicebench-timed-cells.lock"


def _open(path: Path) -> int:
    """The lock file, opened without following a link planted at its name."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o666)
    try:
        os.fchmod(fd, 0o666)  # other users' runs on this host take it too
    except OSError:
        pass
    return fd


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info.get('pid')} (cell {info.get('cell')}, since {info.get('since')})"
    except (OSError, ValueError):
        return "another process"


@contextmanager
def timed_slot(cell: str, say=print) -> Iterator[dict[str, Any]]:
    """Hold the host's timed-cell lock for the block; waits (saying whom for) while another
    timed cell holds it. Yields what the record keeps: the lock file and the seconds waited."""
    path = lock_path()
    if path is None:
        yield {"path": None, "waited_s": 0.0, "note": f"{ENV}=off"}
        return
    fd = _open(path)
    asked = time.monotonic()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"[devicebench] waiting for {path}: a timed cell runs, {_holder(fd)}", flush=True)
            while True:
                time.sleep(POLL_S)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    continue
        waited = time.monotonic() - asked
        since = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "cell": cell, "since": since}).encode(), 0)
        yield {"path": str(path), "waited_s": round(waited, 3)}
    finally:
        os.close(fd)  # releases the lock
