"""transformers' own continuous batching: requests join and leave the running batch between steps.

`ContinuousBatchingManager` (transformers' `init_continuous_batching`) keeps a paged KV cache and
schedules, at every step, the decoding requests plus as many waiting prompt tokens as
`max_batch_tokens` allows (chunked prefill); on a GPU it replays CUDA graphs. So a request that
arrives while others decode waits for one step, not for a batch to end: what the static loop's
server (one batch at a time, or batches stepped in turn) cannot give an 8B model at MLPerf's
time-to-first-token bound. The model is the workload's, as torch_eager's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devicebench.engines.generative._continuous import ContinuousGreedy
from devicebench.engines.generative.base import GenerativeEngine, GenerativeOptions


@dataclass(frozen=True)
class ContinuousOptions(GenerativeOptions):
    seed: int = 0
    max_cache_len: int = 0  # a request's positions (prompt + output)
    max_batch: int = 1  # requests in the running batch at most
    max_batch_tokens: int = 2048  # tokens a step runs: the decoding requests' and prompt chunks
    cuda_graphs: bool | None = None  # None: transformers decides (_continuous.manager_config)


class TransformersContinuous(GenerativeEngine):
    name = "transformers_cb"
    package = "transformers"
    devices = ("cpu", "cuda")
    formats = ("fp32", "bf16", "fp16")
    Options = ContinuousOptions
    continuous = True
    description = "transformers continuous batching (paged KV cache)"  # the hint: CUDA graphs

    def load(self, model: str | Path, options: GenerativeOptions) -> ContinuousGreedy:
        from devicebench.workloads import textgen_llm

        assert isinstance(options, ContinuousOptions)
        built = textgen_llm.build_model(str(model), options.device, options.precision, options.seed)
        return ContinuousGreedy(
            built, options.device, max_batch=options.max_batch,
            max_cache_len=options.max_cache_len, max_batch_tokens=options.max_batch_tokens,
            cuda_graphs=options.cuda_graphs,
        )  # fmt: skip

    def describe(self, options: Any) -> dict[str, Any]:
        graphs = {None: "transformers' choice", True: "on", False: "off"}[options.cuda_graphs]
        hint = f"max_batch_tokens {options.max_batch_tokens}, CUDA graphs {graphs}"
        return {"engine": self.description, "format": options.precision, "hint": hint}


ENGINE = TransformersContinuous()
