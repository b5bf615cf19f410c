"""A scenario kept outside the package: text generation by a tiny GRU over a cell's prompts.

It is one module and nothing else: found through DEVICEBENCH_SCENARIO_PATH, chosen by its mode,
run by the real runner and worker. Prompts are the cell's held-out sequences (textgen_lstm's
characters); each repetition generates `new_tokens` (its own setting) per prompt, timed by
frameworks.generator's one clock inside run.window's timed window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devicebench.frameworks.generator import Generator, time_generation
from devicebench.measure.timing import latency_percentiles
from devicebench.run import window as w
from devicebench.scenarios.base import Scenario


class TinyGen(Scenario):
    NAME = "tinygen"
    MODE = "tinygen"
    needs = Generator
    SETTINGS = {"new_tokens": ((int,), 1)}  # its own run setting (plan.cellspec checks it)

    def run(self, settings: Mapping[str, Any], workload: Any, dataset: Any) -> dict[str, Any]:
        from tiny_generator import TinyGenerator  # the tests' folder is on PYTHONPATH

        batch = int(settings["batch_size"])
        prompts = [list(map(int, row)) for row in dataset.x_test[:batch]]
        generator = TinyGenerator(vocab=int(dataset.x_test.max()) + 1, seed=int(settings["seed"]))
        warmup = w.warmup(int(settings["warmup_steps"]), lambda: generator.prefill(prompts, 1))
        window = w.Window(settings).start()
        repetitions = range(int(settings["repetitions"]))
        new_tokens = int(settings["new_tokens"])
        runs = [time_generation(generator, prompts, new_tokens) for _ in repetitions]
        window.stop(sum(run.batch * run.new_tokens for run in runs))
        gaps = [gap for run in runs for gap in run.inter_token_s]
        return {
            "timings": warmup
            | {
                "time_to_first_token_ms": latency_percentiles([r.first_token_s for r in runs]),
                "inter_token_ms": latency_percentiles(gaps),
                "timed_start": window.timed_start,
                "timed_end": window.timed_end,
            },
            "throughput": {"tokens_per_s": max(run.tokens_per_s for run in runs)},
            "generation": {"new_tokens": runs[0].new_tokens, "tokens": runs[0].tokens},
            "quality": {},
            "memory": {"peak_device_mb": generator.peak_device_memory_mb()},
            "model": {"parameters": generator.parameter_count(), "fit_loop": generator.name},
            "energy": window.energy,
            "utilization": window.utilization,
        }


SCENARIO = TinyGen()
