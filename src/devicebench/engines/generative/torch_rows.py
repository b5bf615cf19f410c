"""torch with row-level continuous batching: a static KV cache of a row per request, each at its
own position (see _row_batch), so a served request joins the running batch between two steps.

The static loop's server batches streams of one shape and runs each batch to its end: a request
that arrives meanwhile waits for all of its tokens, which kept the 8B model at MLPerf's
time-to-first-token bound near 4 requests/s. transformers' own continuous batching
(transformers_cb) is the field's answer, but without flash attention its paged sdpa path decoded
353 tokens/s at most on the H200 (benchmarks/continuous_batching.py). Same model as torch_eager;
on a GPU the step is a CUDA graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devicebench.engines.generative._row_batch import RowBatch
from devicebench.engines.generative.base import GenerativeOptions
from devicebench.engines.generative.torch_eager import TorchEager, TorchOptions


class TorchRows(TorchEager):
    name = "torch_rows"
    formats = ("fp32", "bf16", "fp16")
    steps_in_turn = False
    description = "torch static KV cache, a row per request (continuous batching; CUDA graphs)"

    def load(self, model: str | Path, options: GenerativeOptions) -> RowBatch:
        from devicebench.workloads import textgen_llm

        assert isinstance(options, TorchOptions)
        built = textgen_llm.build_model(str(model), options.device, options.precision, options.seed)
        return RowBatch(
            built, options.device, rows=options.max_batch, max_cache_len=options.max_cache_len
        )

    def describe(self, options: Any) -> dict[str, Any]:
        graphs = "reduce-overhead" if options.device == "cuda" else None
        return {"engine": self.description, "format": options.precision, "hint": graphs}


ENGINE = TorchRows()
