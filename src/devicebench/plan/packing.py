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

from devicebench.measure.devices import host_cores
from devicebench.plan.config import ConfigError
from devicebench.scenarios import modes


def copies_axes(
    study: dict[str, Any], task: str, settings: dict[str, Any], device: str, threads: Any, mode: str
) -> list[dict[str, Any]]:
    """The `copies` axis values of one cell: [{}] (the plain cell, no axis) plus, where the
    task's `cpu_copies` maps this CPU cell's thread count to N, the packed cell: a cell that
    repeats a pass of fixed samples (train, infer: scenarios' `fixed_passes`), whose summed
    throughput means something."""
    wanted = settings.get("cpu_copies") or {}
    copies = wanted.get(str(threads))
    if not copies or copies == 1 or device != "cpu" or mode not in modes(fixed_passes=True):
        return [{}]
    cores = int(((study.get("devices") or {}).get("cpu") or {}).get("cores") or host_cores())
    if threads == "all" or int(copies) * int(threads) > cores:
        per_copy = cores if threads == "all" else int(threads)
        raise ConfigError(
            f"tasks.{task}.cpu_copies: {copies} copies x {per_copy} thread(s) = "
            f"{copies * per_copy} exceeds the host's {cores} cores; a packed cell must fit "
            "the host (lower the copies, or set devices.cpu.cores to the host the cells run on)"
        )
    return [{}, {"copies": int(copies)}]
