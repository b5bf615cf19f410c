"""torch eager generation: transformers' `generate` (greedy, dynamic KV cache), the baseline.

Tokens reach the clock through a streamer, which transformers calls once per step with the
step's tokens of the whole batch (after the prompt). EOS is ignored: min = max new tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from devicebench.workloads import textgen_llm


class _ClockStreamer:
    """transformers' streamer protocol: put(prompt), put(step tokens)..., end()."""

    def __init__(self, on_token: Callable[[list[int]], None]):
        self.on_token = on_token
        self.seen_prompt = False

    def put(self, value: Any) -> None:
        if not self.seen_prompt:  # the first call hands back the prompt
            self.seen_prompt = True
            return
        self.on_token(value.reshape(-1).tolist())

    def end(self) -> None:
        pass


class TorchGenerator:
    """A transformers model generating greedily with its default dynamic cache."""

    def __init__(self, model: Any, device: str):
        self.model, self.device = model, device
        self.weight_bytes = textgen_llm.weight_bytes(model)

    def generate(
        self, prompts: np.ndarray, max_new_tokens: int, on_token: Callable[[list[int]], None]
    ) -> np.ndarray:
        import torch

        ids = torch.as_tensor(prompts, device=self.device)
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new_tokens,
                min_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=0,
                streamer=_ClockStreamer(on_token),
            )
        return out[:, ids.shape[1] :].cpu().numpy()


class TorchEager:
    name = "torch"

    def skip_reason(self, settings: dict[str, Any]) -> str | None:
        precision = settings["precision"]
        if precision not in textgen_llm.DTYPES:
            return f"generator torch runs {', '.join(textgen_llm.DTYPES)}; not {precision}"
        return None

    def describe(self, settings: dict[str, Any]) -> dict[str, Any]:
        return {"engine": "torch eager (transformers generate, dynamic cache)",
                "format": settings["precision"], "hint": None}  # fmt: skip

    def load(self, settings: dict[str, Any]) -> TorchGenerator:
        model = textgen_llm.build_model(
            settings["model"], settings["device"], settings["precision"], int(settings["seed"])
        )
        return TorchGenerator(model, settings["device"])


ENGINE = TorchEager()
