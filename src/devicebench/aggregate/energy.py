"""The energy and time-to-target columns of cells.csv, from a record's `energy` and `converge`.

`joules_per_sample` and `samples_per_kwh` are the measured sources (GPU by NVML, CPU package and
DRAM by RAPL) over the timed window; empty, with `energy_reason`, where no counter could be read.
A converge cell adds whether it reached its target, the time, epochs and energy it took.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

ENERGY_COLUMNS = """
    joules_per_sample samples_per_kwh energy_j energy_covers energy_reason converged
    time_to_target_s epochs_to_target energy_to_target_j target_metric target_value
    converge_runs converge_runs_reached time_to_target_min_s time_to_target_max_s
""".split()
FLOATS = (
    *"joules_per_sample samples_per_kwh energy_j time_to_target_s".split(),
    *"time_to_target_min_s time_to_target_max_s converge_runs converge_runs_reached".split(),
    *"energy_to_target_j target_value".split(),
)
INTS = ("epochs_to_target",)
STRINGS = ("energy_covers", "energy_reason", "target_metric")


def _value(mapping: Any, key: str) -> Any:
    value = mapping.get(key) if isinstance(mapping, Mapping) else None
    return np.nan if value is None else value


def energy_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """The row's energy and time-to-target values; NaN where the record has none."""
    energy, converge = record.get("energy") or {}, record.get("converge") or {}
    covers = energy.get("covers") if isinstance(energy, Mapping) else None
    return {
        "joules_per_sample": _value(energy, "joules_per_sample"),
        "samples_per_kwh": _value(energy, "samples_per_kwh"),
        "energy_j": _value(energy, "total_j"),
        "energy_covers": "+".join(covers) if covers else np.nan,
        "energy_reason": _value(energy, "reason"),
        "converged": _value(converge, "converged"),
        "time_to_target_s": _value(converge, "time_to_target_s"),
        "epochs_to_target": _value(converge, "epochs") if converge.get("converged") else np.nan,
        "energy_to_target_j": _value(converge, "energy_to_target_j"),
        "target_metric": _value(converge, "metric"),
        "target_value": _value(converge, "target"),
        **_runs(converge),
    }


def _runs(converge: Mapping[str, Any]) -> dict[str, Any]:
    """How many converge runs the cell made and reached the target, and the fastest and slowest
    run's time to target (over every run, only where all reached it). A record from before
    converge runs made one."""
    if not isinstance(converge, Mapping) or not converge:
        return dict.fromkeys(ENERGY_COLUMNS[-4:], np.nan)
    times = converge.get("times_to_target_s")
    if times is None:
        one = converge.get("time_to_target_s")
        times = [one]
    reached = [float(t) for t in times if t is not None]
    every = len(reached) == len(times) and reached
    return {
        "converge_runs": float(len(times)),
        "converge_runs_reached": float(len(reached)),
        "time_to_target_min_s": min(reached) if every else np.nan,
        "time_to_target_max_s": max(reached) if every else np.nan,
    }
