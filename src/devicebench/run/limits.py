"""Per-cell host memory cap and the mapping of allocation failures to status `oom`.

A cell over its `memory_limit_mb` must fail like a GPU out of memory does: with a record that
says `oom`, while the grid goes on. The cap is an address-space limit (RLIMIT_AS) set in the
worker after its framework is imported, so it bounds what the cell itself allocates (data,
model, activations) rather than the fixed cost of the libraries.
"""

from __future__ import annotations

import importlib
import re
import resource
from typing import Any

# The module each framework's cells import first; its mappings are the baseline the cap adds to.
FRAMEWORK_MODULES = {"torch": "torch"}
OOM_PATTERNS = re.compile(
    r"out of memory|can't allocate memory|cannot allocate memory|failed to allocate|"
    r"std::bad_alloc|resource_exhausted|oom when allocating",
    re.IGNORECASE,
)


def address_space_mb() -> float:
    """This process's virtual memory size (VmSize) in MB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) / 1024
    raise OSError("no VmSize in /proc/self/status")


def apply_memory_limit(settings: dict[str, Any]) -> dict[str, Any] | None:
    """Cap this process's address space at (now + memory_limit_mb); None when no cap is set."""
    limit_mb = settings.get("memory_limit_mb")
    if not limit_mb:
        return None
    module = FRAMEWORK_MODULES.get(str(settings.get("framework")))
    if module:
        importlib.import_module(module)
    baseline = address_space_mb()
    cap = int((baseline + float(limit_mb)) * 2**20)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return {"limit_mb": float(limit_mb), "baseline_mb": round(baseline, 1), "rlimit_as": cap}


def lift_memory_limit() -> None:
    """Remove the cap again (the record still has to be written after a failure)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def is_oom(error: BaseException) -> bool:
    """Whether an exception means an allocation failed, on the host or on a device."""
    if isinstance(error, MemoryError):
        return True
    return any(
        OOM_PATTERNS.search(str(e)) or "OutOfMemory" in type(e).__name__
        for e in (error, error.__cause__, error.__context__)
        if e is not None
    )
