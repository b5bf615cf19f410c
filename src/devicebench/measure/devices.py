"""What compute devices this host has, found without importing a deep-learning framework.

The workflow asks this while it builds the grid, so it must be cheap: NVML for CUDA GPUs,
the platform for Apple's MPS.
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache

ACCELERATORS: tuple[str, ...] = ("cuda", "mps")


@lru_cache(maxsize=1)
def cuda_device_count() -> int:
    """Number of CUDA GPUs NVML sees (0 where there is no driver)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return 0
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no library, no driver, no device: all mean none
        return 0


def has_device(name: str) -> bool:
    """Whether this host can run cells on device `name`."""
    if name == "cpu":
        return True
    if name == "cuda":
        return cuda_device_count() > 0
    if name == "mps":
        return platform.system() == "Darwin" and platform.machine() == "arm64"
    return False


def host_cores() -> int:
    """CPU cores this process may use (the SLURM or cgroup allocation, not the whole machine)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_threads(value: int | str) -> int:
    """A thread-count axis value as a number: 'all' means every core this process may use."""
    return host_cores() if value == "all" else int(value)
