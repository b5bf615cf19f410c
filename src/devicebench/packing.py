"""The `copies` axis: a CPU cell run as N concurrent copies filling the host ("packed").

A one-thread cell measured alone on an idle 16-core host says what one stream gets, not what a
rented instance delivers; priced at 1/16 of the host it flatters the CPU. A packed cell runs N
copies of the same cell at once, each on its own threads, with a barrier before their timed
windows, and reports their summed throughput; it is priced for N x threads vCPUs
(aggregate/pricing.py). Only where the config asks (task key `cpu_copies`), so other configs keep
their cell ids; copies x threads above the host's cores is a config error, before any work.
"""

from __future__ import annotations

from typing import Any

from devicebench.config import ConfigError
from devicebench.devices import host_cores


def copies_axes(
    task: str, settings: dict[str, Any], device: str, threads: Any, mode: str
) -> list[dict[str, Any]]:
    """The `copies` axis values of one cell: [{}] (no axis) unless the task's `cpu_copies` asks
    and the cell is a CPU train or infer cell; copies 1 adds no axis (the plain cell's id)."""
    wanted = settings.get("cpu_copies")
    if not wanted or device != "cpu" or mode not in ("train", "infer"):
        return [{}]
    cores = host_cores()
    per_copy = cores if threads == "all" else int(threads)
    out = []
    for copies in wanted:
        if copies * per_copy > cores:
            raise ConfigError(
                f"tasks.{task}.cpu_copies: {copies} copies x {per_copy} thread(s) = "
                f"{copies * per_copy} exceeds this host's {cores} cores; a packed cell must fit "
                "the host (lower cpu_copies or the task's cpu_threads)"
            )
        out.append({} if copies == 1 else {"copies": int(copies)})
    return out
