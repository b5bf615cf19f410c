"""Wall-clock marks of a cell's stages (process start, imports done, data loaded, model built ...).

A cell's fixed cost (everything before `timed_start` and after `timed_end`) decides how many cells
a lease holds; the record keeps where it went as `timings.marks` (name -> epoch seconds, in the
order they happened), and benchmarks/cell_overhead.py tabulates them. Standard library only, so
that marking costs nothing a cell would not import anyway.
"""

from __future__ import annotations

import os
import time

_MARKS: dict[str, float] = {}


def process_start() -> float | None:
    """When this process was created, on the wall clock (Linux: /proc, 10 ms ticks).

    From the kernel's start time in ticks since boot against CLOCK_BOOTTIME, not psutil's
    create_time, whose boot time is whole seconds (up to a second early).
    """
    try:
        with open("/proc/self/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, since boot
        return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def mark(name: str, when: float | None = None) -> None:
    """Note that stage `name` is done now (or at `when`); a later mark of a name replaces it."""
    _MARKS.pop(name, None)
    _MARKS[name] = time.time() if when is None else when


def marks() -> dict[str, float]:
    """This process's marks so far, oldest first."""
    return dict(_MARKS)


def merged(*parts: dict[str, float]) -> dict[str, float]:
    """Marks of several processes as one mapping, in time order (the runner's and its worker's)."""
    combined: dict[str, float] = {}
    for part in parts:
        combined.update(part)
    return dict(sorted(combined.items(), key=lambda item: item[1]))
