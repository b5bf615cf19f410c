"""What every starter of a child process shares: the repository, dying with the parent.

A leaf (standard library only), so the cell runner, the serving processes and the distributed
ranks use one copy without importing each other.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def die_with_parent() -> None:
    """In a child (before exec, or first thing): SIGKILL me when my parent dies, even by SIGKILL.

    A cell's worker has its own session (so a timeout can kill its whole group); without this, a
    killed runner would leave it measuring on, disturbing the next cell's timings. Linux only.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def exit_without_teardown(code: int) -> None:
    """Leave once the result is written, skipping the interpreter's teardown of the frameworks.

    For a cell's worker and ranks: freeing torch's (or Keras's) modules and native state at exit
    took 0.9-3.5 s per cell on a 2-core VM (benchmarks/cell_overhead.py, RESULTS.md), and nothing
    in it reaches the result. The atexit handlers (child processes, temporary files, finalizers)
    still run and the output is flushed. Under a profiler or tracer (cProfile, coverage), which
    writes its data at the very end, it exits as usual.
    """
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
