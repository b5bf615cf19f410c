"""Serve cells: a scoring server in its own process, driven by clients or LoadGen
(devicebench.serving). This process only sends requests, so it imports no framework (torch and
Dynamo's import took it 8-10 s on the H100 host, benchmarks/RESULTS.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devicebench.run.launchers.base import ScoringServerLauncher
from devicebench.scenarios.base import Scenario


class Serve(Scenario):
    NAME = "serve"
    MODE = "serve"
    scores = True
    serves = True
    needs = None  # the model lives in the server (workloads' make_scorer)
    uses_framework = False
    launches = (ScoringServerLauncher,)  # uvicorn or Ray Serve, as the `server` axis says

    def skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        from devicebench.serving.scoring import skip_reason

        return super().skip_reason(settings) or skip_reason(dict(settings))

    def run(self, settings: Mapping[str, Any], workload: Any, dataset: Any) -> dict[str, Any]:
        from devicebench.measure import environment
        from devicebench.measure.precision import precision_math
        from devicebench.run import limits
        from devicebench.serving.cell import run_serve

        settings = dict(settings)
        result = run_serve(settings, dataset, self.launcher(settings, ScoringServerLauncher))
        limits.lift_memory_limit()
        if settings["framework"] != "keras-tensorflow":  # the server set it (serving.scoring)
            result["model"]["precision_math"] = precision_math(settings["precision"])
        # the server's CUDA facts over this process's (it has no torch to ask)
        threads = int(settings["threads_resolved"])
        result["environment"] = environment.capture(threads) | result["environment"]
        return result


SCENARIO = Serve()
