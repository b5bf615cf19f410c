"""What every scenario that measures a backend in the cell's own process shares.

Before the timed window: the framework's precision math (TF32 switches) and thread settings, the
workload's backend, an export engine's wrapper. After it: the agreement with fp32 of a reduced
precision or engine cell, the FLOP count, the profiler and the environment. A subclass says only
what it times (``measure``). Heavy imports happen inside methods: the runner imports scenario
modules to ask their skip reasons.
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from devicebench.measure.marks import mark
from devicebench.scenarios.base import Scenario


def make_backend(workload: Any, settings: Mapping[str, Any], dataset: Any) -> tuple[Any, Any]:
    """The cell's backend, with its framework's thread settings applied before it runs any op."""
    from devicebench.run.threads import apply_framework_threads

    threads = apply_framework_threads(settings["framework"], int(settings["threads_resolved"]))
    backend = workload.make_backend(dict(settings), dataset)
    if int(settings.get("gpus", 1) or 1) > 1 and not getattr(backend, "distributed", False):
        from devicebench.distributed.transformer import distribute

        backend = distribute(backend)  # its data-parallel twin, or an error: never one per GPU
    return backend, threads


class InProcessScenario(Scenario):
    """A scenario that builds the workload's backend here and times it (train, infer, ...)."""

    @abstractmethod
    def measure(
        self, backend: Any, settings: Mapping[str, Any], dataset: Any, quality: Any
    ) -> dict[str, Any]:
        """Time `backend` and return the record sections (timings, throughput, quality, ...)."""

    def run(self, settings: Mapping[str, Any], workload: Any, dataset: Any) -> dict[str, Any]:
        from devicebench.engines import cell as cell_engines
        from devicebench.measure import environment
        from devicebench.measure.precision import apply_precision
        from devicebench.run import limits
        from devicebench.run.window import speed_only

        settings = dict(settings)
        torch_settings = cell_engines.torch_settings(settings)  # int8: torch trains in fp32
        math = apply_precision(torch_settings, before_backend=True)  # before any model is built
        backend, threads_reported = make_backend(workload, torch_settings, dataset)
        math |= apply_precision(torch_settings, before_backend=False)  # Keras: threads set now
        backend = cell_engines.wrap_backend(backend, settings)  # onnxruntime, openvino
        mark("backend_built")
        result = self.measure(backend, settings, dataset, workload.quality)
        mark("run_done")
        if cell_engines.needs_reference(settings):  # bf16, int8, engines: agreement with fp32
            cell_engines.finish(
                result, backend, settings, lambda p, loss: workload.quality(dataset, p, loss)
            )
            if not speed_only(settings):  # a speed-only cell ran no reference pass
                mark("reference_done")
        limits.lift_memory_limit()
        result["model"].update(math)
        # Outside the timed section: FLOPs of the torch twin where torch is loaded anyway
        # (importing it into a TensorFlow cell would cost seconds; the aggregate counts those).
        if "torch" in sys.modules:
            from devicebench.measure.flop_formulas import VERSION
            from devicebench.workloads import model_flops

            result["model"].update(model_flops(settings["task"], settings["model"], settings))
            result["model"]["flop_formulas"] = VERSION
            mark("flops_counted")
        if settings.get("profile") and settings["framework"] == "torch":
            from devicebench.measure.profiling import profile_backend

            result["profile"] = profile_backend(backend, settings)
            mark("profiled")
        result["environment"] = environment.capture(int(settings["threads_resolved"]))
        result["environment"]["threads_reported"] = threads_reported
        mark("environment_captured")
        return result
