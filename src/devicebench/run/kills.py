"""How a worker that died by a signal is recorded: oom only on the kernel's own evidence.

The kernel's out-of-memory killer sends SIGKILL, but so does `kill -9`, a batch system's
preemption or a person. Calling every SIGKILL `oom` wrote a permanent record for a cell that
was never measured, and the next run did not measure it. The kernel counts its OOM kills: in the
worker's memory cgroup (cgroup v2 `memory.events`, v1 `memory.oom_control`, key `oom_kill`) and
host-wide (`/proc/vmstat`, `oom_kill`). A count that rose while the worker ran is the evidence.

- oom: killed while the OOM-kill count rose: a result, kept as a record.
- killed: SIGKILL without that evidence, SIGTERM, SIGINT, SIGHUP: stopped from outside, not a
  result; the runner writes no record (it keeps the note in the cell's log folder), so the next
  run measures the cell.
- error: any other signal (SIGSEGV, SIGABRT, ...): the worker crashed; a result.
"""

from __future__ import annotations

import signal
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
OUTSIDE = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _counter(path: Path, key: str = "oom_kill") -> int | None:
    """The value of `key` in a 'key value' per line file, None when unreadable or absent."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        return None
    return None


def oom_kill_files(proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT):
    """The files that count OOM kills of this process's memory cgroup, then the host's."""
    files = []
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, where = line.split(":", 2)
        where = where.lstrip("/")
        if controllers == "":  # cgroup v2
            files.append(root / where / "memory.events")
        elif "memory" in controllers.split(","):  # cgroup v1
            files.append(root / "memory" / where / "memory.oom_control")
    return [*files, Path("/proc/vmstat")]


def oom_kills(files: list[Path] | None = None) -> dict[str, int]:
    """The OOM-kill counters readable now, by file."""
    counts = {}
    for path in oom_kill_files() if files is None else files:
        value = _counter(path)
        if value is not None:
            counts[str(path)] = value
    return counts


def signal_result(signum: int, before: dict[str, int], after: dict[str, int]) -> dict[str, str]:
    """The status and message of a worker that died by signal `signum`, given the OOM-kill
    counters read before it started and after it died."""
    name = signal.Signals(signum).name
    rose = [path for path, count in after.items() if count > before.get(path, count)]
    if signum == signal.SIGKILL and rose:
        return {
            "status": "oom",
            "message": f"worker killed by {name}: the kernel's out-of-memory killer "
            f"(oom_kill rose in {rose[0]})",
        }
    if signum in OUTSIDE:
        checked = ", ".join(before) or "none readable"
        why = f"; no OOM kill counted ({checked})" if signum == signal.SIGKILL else ""
        return {"status": "killed", "message": f"worker killed by {name} from outside{why}"}
    return {"status": "error", "message": f"worker died by {name}"}
