"""Generate cells: a language model generating for a batch of prompts, timed token by token.

The workload (textgen_llm) gives the prompts; the cell's generator (engines.generative, axis
`generator`) loads the model; devicebench.generation measures the memory bandwidth, times the
batches on the seam's one clock and fills the record's `generation` section (TTFT, TPOT, ITL,
tokens/s, the bandwidth bound and share), quality (real weights only) and energy. A cell whose
`generate` settings have `serving` then serves the model and finds its goodput
(generation.serving: `generation.serving`); without it nothing more runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devicebench.frameworks.generator import Generator
from devicebench.run.launchers.base import GenerateServerLauncher
from devicebench.scenarios.base import Scenario


class Generate(Scenario):
    NAME = "generate"
    MODE = "generate"
    generates = True

    needs = Generator  # stdlib only: the runner's skip check stays framework-free
    launches = (GenerateServerLauncher,)  # only where `generate.serving` selects the cell

    def skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        """The generator's reasons (device, format, not installed, model, batch); the workload
        adds its own (positions, a missing GGUF) and the memory check runs in the worker, before
        loading."""
        from devicebench.engines import generative

        name = settings.get("generator")
        if name is None:
            return "generate cell without a `generator` axis"
        try:
            engine = generative.get(str(name))
        except ValueError as unknown:
            return str(unknown)
        return engine.cell_skip_reason(settings)

    def run(self, settings: Mapping[str, Any], workload: Any, dataset: Any) -> dict[str, Any]:
        import time

        from devicebench.generation.run import run_generate
        from devicebench.generation.settings import generate_settings
        from devicebench.measure import environment

        started = time.perf_counter()
        result = run_generate(dict(settings), dataset)
        serving = generate_settings(settings).get("serving")
        if serving is not None:  # the config asks for the model behind the server
            from devicebench.generation.serving import for_cell, run_serving

            if (own := for_cell(settings, serving)) is not None:
                launcher = self.launcher(settings, GenerateServerLauncher)
                given = (settings, dataset["prompts"], own, started, launcher)
                result["generation"]["serving"] = run_serving(*given)
        result["environment"] = environment.capture(int(settings["threads_resolved"]))
        return result


SCENARIO = Generate()
