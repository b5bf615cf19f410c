"""Which machine, which boot and which GPUs a record comes from: what pairing checks.

Two records form a ratio (speedup, cost, scaling, rerun) only when they share the boot id: the
same machine, not rebooted, so not another lease of a look-alike host. The GPU UUIDs tell the
physical GPUs apart where names do not.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id(path: Path = BOOT_ID) -> str | None:
    """The kernel's random id of this boot (Linux); None where the system has none."""
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def gpu_uuids() -> list[str]:
    """UUIDs of the GPUs NVML sees (all of the host's, not only the visible ones); [] without."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
            return [
                str(pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i)))
                for i in range(count)
            ]
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML means no NVIDIA GPU to name
        return []


def machine_identity() -> dict[str, Any]:
    """The environment fields that say which machine and boot a record was measured on."""
    return {"hostname": socket.gethostname(), "boot_id": boot_id(), "gpu_uuids": gpu_uuids()}
