"""torch with a static KV cache and one compiled decode step (CUDA graphs), gpt-fast style.

Prefill runs eagerly into a transformers StaticCache sized prompt + output; each decode step is
one call of `torch.compile(mode="reduce-overhead", fullgraph=True)` over the same model, whose
fixed shapes let Inductor capture it in a CUDA graph. The cache tensors are marked static
addresses, so CUDA graphs are not skipped for "mutated inputs" (the failure of compiling the
whole `generate`). GPU only: CUDA graphs have no CPU counterpart, and on the CPU the cell would
time Inductor's C++ kernels, which the torch bf16 cell already bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from devicebench.workloads import textgen_llm


class StaticCacheGenerator:
    """Greedy decoding over a StaticCache; `compile=False` runs the same loop eagerly (tests)."""

    def __init__(self, model: Any, device: str, compile: bool = True):
        self.model, self.device, self.compile = model, device, compile
        self.weight_bytes = textgen_llm.weight_bytes(model)
        self._step = None

    def _decode_step(self) -> Callable[..., Any]:
        if self._step is None:
            import torch

            def step(token, position, cache):
                out = self.model(
                    input_ids=token, cache_position=position, past_key_values=cache, use_cache=True
                )
                return out.logits[:, -1].argmax(-1)

            if self.compile:
                step = torch.compile(step, mode="reduce-overhead", fullgraph=True)
            self._step = step
        return self._step

    def generate(
        self, prompts: np.ndarray, max_new_tokens: int, on_token: Callable[[list[int]], None]
    ) -> np.ndarray:
        import torch
        from transformers import StaticCache

        ids = torch.as_tensor(prompts, device=self.device)
        batch, length = ids.shape
        cache = StaticCache(config=self.model.config, max_cache_len=length + max_new_tokens)
        step = self._decode_step()
        tokens = []
        with torch.inference_mode():
            positions = torch.arange(length, device=self.device)
            out = self.model(
                input_ids=ids, cache_position=positions, past_key_values=cache, use_cache=True
            )
            token = out.logits[:, -1].argmax(-1)
            for layer in getattr(cache, "layers", []):  # allocated by the prefill
                for tensor in (getattr(layer, "keys", None), getattr(layer, "values", None)):
                    if tensor is not None:
                        torch._dynamo.mark_static_address(tensor)
            for index in range(max_new_tokens):
                host = token.tolist()  # the step's tokens are out once they reach the host
                on_token(host)
                tokens.append(host)
                if index + 1 == max_new_tokens:
                    break
                position = torch.tensor([length + index], device=self.device)
                token = step(token[:, None].clone(), position, cache).clone()
        return np.array(tokens, dtype=np.int64).T.reshape(batch, -1)


class TorchStatic:
    name = "torch-static"

    def skip_reason(self, settings: dict[str, Any]) -> str | None:
        if settings["device"] != "cuda":
            return (
                "generator torch-static (static KV cache + CUDA graphs) runs on CUDA devices only; "
                "the CPU's torch cell is the torch generator"
            )
        precision = settings["precision"]
        if precision not in textgen_llm.DTYPES:
            return f"generator torch-static runs {', '.join(textgen_llm.DTYPES)}; not {precision}"
        return None

    def describe(self, settings: dict[str, Any]) -> dict[str, Any]:
        return {"engine": "torch static cache + torch.compile reduce-overhead (CUDA graphs)",
                "format": settings["precision"], "hint": "reduce-overhead"}  # fmt: skip

    def load(self, settings: dict[str, Any]) -> StaticCacheGenerator:
        model = textgen_llm.build_model(
            settings["model"], settings["device"], settings["precision"], int(settings["seed"])
        )
        return StaticCacheGenerator(model, settings["device"], compile=True)


ENGINE = TorchStatic()
