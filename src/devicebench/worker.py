"""The process that runs one cell's measurement: `python -m devicebench.worker SETTINGS RESULT`.

It starts fresh, with thread variables already in its environment (set by the cell runner), so
native libraries size their pools before this module imports any framework. It writes a result
document whatever happens: ok, oom or error, with the traceback.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

from devicebench import environment, limits, scenarios
from devicebench.marks import mark, marks
from devicebench.processes import exit_without_teardown
from devicebench.record import write_atomic
from devicebench.workloads import get


def set_determinism(settings: dict[str, Any]) -> bool:
    """Deterministic kernels for CPU cells, so a rerun with the same seed scores the same.

    GPU cells keep the fast (possibly nondeterministic) kernels they are timed with; the record
    says which applied.
    """
    if settings["framework"] != "torch":
        return False
    import torch

    mark("torch_imported")  # the rest is torch.use_deterministic_algorithms: Dynamo's import
    deterministic = settings["device"] == "cpu"
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    return deterministic


def measure(settings: dict[str, Any]) -> dict[str, Any]:
    """Run the cell's scenario and return the record sections it fills."""
    scenario = scenarios.for_cell(settings)
    if scenario.uses_framework:
        deterministic = set_determinism(settings)  # first: it imports more of the framework
        mark("determinism_set")
    cap = limits.apply_memory_limit(settings)
    workload = get(settings["task"])
    dataset = workload.load_data(settings)
    mark("data_loaded")
    result = scenario.run(settings, workload, dataset)
    limits.lift_memory_limit()
    result["memory"]["limit"] = cap
    if scenario.uses_framework:
        result["deterministic"] = deterministic
    result["status"], result["message"] = "ok", ""
    return result


def main(argv: list[str]) -> int:
    mark("worker_imported")
    settings_path, result_path = argv
    settings = json.loads(Path(settings_path).read_text())
    try:
        result = measure(settings)
    except Exception as error:  # noqa: BLE001 - every failure becomes a record, the grid goes on
        limits.lift_memory_limit()
        # The traceback belongs in the log (a job's stderr); a person at a terminal gets the
        # message from the runner, and the record keeps the traceback either way.
        if not sys.stderr.isatty():
            traceback.print_exc()
        oom = limits.is_oom(error)
        cap = settings.get("memory_limit_mb")
        why = f" (memory_limit_mb={cap})" if oom and cap else ""
        result = {
            "status": "oom" if oom else "error",
            "message": f"{type(error).__name__}: {error}{why}",
            "environment": environment.capture(int(settings["threads_resolved"])),
            "traceback": traceback.format_exc(),
        }
    if isinstance(result.get("timings"), dict):  # where the fixed cost went (devicebench.marks)
        result["timings"]["marks"] = marks()
    write_atomic(result_path, result)
    return 0


if __name__ == "__main__":
    exit_without_teardown(main(sys.argv[1:]))
