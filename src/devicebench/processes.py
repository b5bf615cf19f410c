"""What every starter of a child process shares: the repository, dying with the parent.

A leaf (standard library only), so the cell runner, the serving processes and the distributed
ranks use one copy without importing each other.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def die_with_parent() -> None:
    """In a child (before exec, or first thing): SIGKILL me when my parent dies, even by SIGKILL.

    A cell's worker has its own session (so a timeout can kill its whole group); without this, a
    killed runner would leave it measuring on, disturbing the next cell's timings. Linux only.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
