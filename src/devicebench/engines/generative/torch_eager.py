"""torch eager generation, the baseline: greedy decoding with transformers' dynamic KV cache.

The model is the workload's (`textgen_llm.build_model`: random weights drawn on the device, or
SmolLM2's real ones), in fp32, bf16 or fp16, on the CPU (bf16 on AMX where the CPU has it) or a
GPU. EOS is ignored: a generation runs to the tokens asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devicebench.engines.generative import _weight_only
from devicebench.engines.generative._torch_loop import TorchGreedy
from devicebench.engines.generative.base import GenerativeEngine, GenerativeOptions


@dataclass(frozen=True)
class TorchOptions(GenerativeOptions):
    seed: int = 0
    max_cache_len: int = 0  # the static cache's positions (prompt + output)
    max_batch: int = 1  # sequences at once (torch_rows: its cache rows)


class TorchEager(GenerativeEngine):
    name = "torch_eager"
    package = "torch"
    devices = ("cpu", "cuda")
    formats = ("fp32", "bf16", "fp16", "int8", "int4")
    Options = TorchOptions
    static = False
    steps_in_turn = True
    description = "torch eager (dynamic KV cache, greedy loop)"

    def skip_reason(self, device: str, precision: str) -> str | None:
        reason = super().skip_reason(device, precision)
        return reason or _weight_only.skip_reason(precision, device)

    def load(self, model: str | Path, options: GenerativeOptions) -> TorchGreedy:
        from devicebench.workloads import textgen_llm

        assert isinstance(options, TorchOptions)
        weight_only = options.precision in _weight_only.WEIGHT_ONLY
        dtype = "bf16" if weight_only else options.precision
        built = textgen_llm.build_model(str(model), options.device, dtype, options.seed)
        if weight_only:
            built = _weight_only.quantize(built, options.precision)
        return TorchGreedy(
            built, options.device, static=self.static, compile=self.static,
            max_cache_len=options.max_cache_len,
        )  # fmt: skip

    def describe(self, options: Any) -> dict[str, Any]:
        form = _weight_only.WEIGHT_ONLY.get(options.precision, options.precision)
        return {"engine": self.description, "format": form, "hint": None}


ENGINE = TorchEager()
