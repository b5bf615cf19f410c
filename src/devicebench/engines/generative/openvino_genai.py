"""OpenVINO GenAI (`openvino-genai`, LLMPipeline with int8/int4 weight compression): skipped.

openvino-genai 2026.4.1.0 itself installs beside the pinned OpenVINO 2026.4.1 (8.5 MB with
openvino-tokenizers), but its LLMPipeline reads a stateful OpenVINO IR of the model (inputs
input_ids, attention_mask, position_ids, beam_idx, the KV cache as state) and a converted
tokenizer, which optimum-intel's exporter writes; optimum-intel 2.2.0 requires transformers<5.6
(pinned here: 5.23.0) and torchvision (no build for torch 2.13 here). Until either moves, every
openvino-genai cell is recorded skipped with this reason rather than timed through a hand-made
export that no user would run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devicebench.engines.generative.base import GenerativeEngine, GenerativeOptions

REASON = (
    "generator openvino-genai: LLMPipeline needs a stateful OpenVINO IR that optimum-intel "
    "exports, and optimum-intel 2.2.0 requires transformers<5.6 (pinned 5.23.0) and torchvision "
    "(none for torch 2.13 here)"
)


class OpenvinoGenai(GenerativeEngine):
    name = "openvino_genai"
    package = "openvino_genai"
    devices = ("cpu",)
    formats = ("fp32", "bf16", "int8", "int4")

    def skip_reason(self, device: str, precision: str) -> str | None:
        return REASON

    def load(self, model: str | Path, options: GenerativeOptions) -> Any:
        raise RuntimeError(REASON)

    def describe(self, options: Any) -> dict[str, Any]:
        return {"engine": "openvino-genai LLMPipeline", "format": options.precision, "hint": None}


ENGINE = OpenvinoGenai()
