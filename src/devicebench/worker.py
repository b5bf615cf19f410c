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

from devicebench import driver, environment, limits
from devicebench.engines import cell as cell_engines
from devicebench.marks import mark, marks
from devicebench.precision_math import precision_math
from devicebench.processes import exit_without_teardown
from devicebench.record import write_atomic
from devicebench.workloads import get
from devicebench.workloads.base import Workload


def make_backend(workload: Workload, settings: dict[str, Any], dataset: Any):
    """The cell's backend, with its framework's thread settings applied before it runs any op."""
    from devicebench.threads import apply_framework_threads

    threads = apply_framework_threads(settings["framework"], int(settings["threads_resolved"]))
    backend = workload.make_backend(settings, dataset)
    if int(settings.get("gpus", 1) or 1) > 1 and not getattr(backend, "distributed", False):
        from devicebench.distributed.transformer import distribute

        backend = distribute(backend)  # its data-parallel twin, or an error: never one per GPU
    return backend, threads


def torch_precision_math(settings: dict[str, Any]) -> dict[str, Any]:
    """The cell's precision as torch math (TF32 switches), for every framework on torch."""
    if settings["framework"] == "keras-tensorflow":
        return {}
    from devicebench.precision_math import apply_precision_math

    return apply_precision_math(settings["precision"])


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
    """Run the cell's mode and return the record sections it fills."""
    serve = settings["mode"] == "serve"
    # A serve cell's model, framework and kernels live in the server process it starts; this
    # process only sends requests, so it imports no framework (torch and Dynamo's import took
    # it 8-10 s on the H100 host, benchmarks/RESULTS.md).
    if not serve:
        deterministic = set_determinism(settings)  # first: it imports more of the framework
        mark("determinism_set")
    cap = limits.apply_memory_limit(settings)
    workload = get(settings["task"])
    dataset = workload.load_data(settings)
    mark("data_loaded")
    if serve:
        from devicebench.serving.cell import run_serve

        result = run_serve(settings, dataset)
        limits.lift_memory_limit()
        result["memory"]["limit"] = cap
        if settings["framework"] != "keras-tensorflow":  # the server set it (serving.scoring)
            result["model"]["precision_math"] = precision_math(settings["precision"])
        # the server's CUDA facts over this process's (it has no torch to ask)
        threads = int(settings["threads_resolved"])
        result["environment"] = environment.capture(threads) | result["environment"]
        result["status"], result["message"] = "ok", ""
        return result
    torch_settings = cell_engines.torch_settings(settings)  # int8: torch trains in fp32
    math = torch_precision_math(torch_settings)  # before any model is built
    backend, threads_reported = make_backend(workload, torch_settings, dataset)
    if settings["framework"] == "keras-tensorflow":  # its threads are set now
        from devicebench.precision_math import apply_tensorflow_precision_math

        math = apply_tensorflow_precision_math(torch_settings["precision"])
    backend = cell_engines.wrap_backend(backend, settings)  # onnxruntime, openvino
    mark("backend_built")
    run = driver.run_train if settings["mode"] == "train" else driver.run_infer
    if settings["mode"] == "converge":  # train to a target quality (devicebench.converge)
        from devicebench.converge import run_converge as run
    if str(settings.get("engine", "inprocess")).startswith("spark"):  # scored on Spark
        from devicebench.spark.cell import run_spark_infer as run
    result = run(backend, settings, dataset, quality=workload.quality)
    mark("run_done")
    if cell_engines.needs_reference(settings):  # bf16, int8, engines: agreement with fp32
        cell_engines.finish(
            result, backend, settings, lambda p, loss: workload.quality(dataset, p, loss)
        )
        mark("reference_done")
    limits.lift_memory_limit()
    result["memory"]["limit"] = cap
    result["deterministic"] = deterministic
    result["model"].update(math)
    # Outside the timed section: FLOPs of the torch twin where torch is loaded anyway (importing it
    # into a TensorFlow cell would cost seconds; the aggregate counts those), and the profiler.
    if "torch" in sys.modules:
        from devicebench.flop_formulas import VERSION
        from devicebench.workloads import model_flops

        result["model"].update(model_flops(settings["task"], settings["model"], settings))
        result["model"]["flop_formulas"] = VERSION
        mark("flops_counted")
    if settings.get("profile") and settings["framework"] == "torch":
        from devicebench.profiling import profile_backend

        result["profile"] = profile_backend(backend, settings)
        mark("profiled")
    result["environment"] = environment.capture(int(settings["threads_resolved"]))
    result["environment"]["threads_reported"] = threads_reported
    mark("environment_captured")
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
