"""Kills what the Ray Serve server started once that server is gone, however it went.

Ray's workers run in process groups of their own, and when the server process is SIGKILLed
(its cell worker died, or the cell timed out) Ray's dashboard and runtime-env agents live on as
orphans. ``python -m devicebench.serving.ray_guard PID`` runs in a session of its own (so the
cell's group kill does not take it first), notes every descendant of PID twice a second, and
when PID has exited SIGKILLs every noted process still running, then exits itself.
"""

from __future__ import annotations

import os
import sys
import time

import psutil


def guard(pid: int, every_s: float = 0.5) -> int:
    """Watch `pid`'s process tree until `pid` ends; then kill what is left; how many were."""
    me = os.getpid()
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return 0
    seen: dict[int, psutil.Process] = {}
    while True:
        try:
            if root.status() == psutil.STATUS_ZOMBIE:
                break
            seen |= {p.pid: p for p in root.children(recursive=True) if p.pid != me}
        except psutil.NoSuchProcess:
            break
        time.sleep(every_s)
    left = [p for p in seen.values() if p.is_running()]
    for process in left:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(left, timeout=10)
    return len(left)


def main() -> int:
    os.setsid()
    killed = guard(int(sys.argv[1]))
    if killed:
        print(f"[ray-guard] killed {killed} process(es) left by server {sys.argv[1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
