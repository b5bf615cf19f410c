"""OpenVINO GenAI (`openvino-genai`'s LLMPipeline): Intel's LLM runtime on the CPU, on GGUF files.

LLMPipeline reads a local GGUF directly (its GGUF reader, no optimum-intel export: optimum-intel
2.2.0 requires transformers<5.6, pinned here 5.23.0). It runs the files llama.cpp runs, written
from the workload's own weights (`_gguf_export`, the torch cells' draw): int8 is Q8_0, int4 Q4_0,
and bf16 is F16 (the reader takes F16, Q8_0, Q4_0/Q4_1 and not BF16; 2 bytes a weight all the
same, and OpenVINO computes in bf16 where the CPU has it). SmolLM2's int4 runs its shipped Q4_1.
Its reader builds Llama's RoPE without Llama-3's scaling (`rope_freqs`): the same work, other
numbers, so the Llama shapes' tokens differ from torch's (random weights: no quality either way).
It runs LLMPipeline's own engine on the CPU, the continuous-batching pipeline, one scheduler step
at a time: batches of any size. It exposes no per-position logits; its quality on SmolLM2 is
scored from what it does expose (`score_windows`): a window's tokens' log probabilities, asked back
with `echo`, and each position's greedy token.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.engines.generative import _gguf_export, llama_cpp
from devicebench.engines.generative.base import GenerativeEngine, GenerativeOptions
from devicebench.frameworks.generator import OnToken, Prefilled

# The cell's precision -> the GGUF file type LLMPipeline runs it as
FILE_TYPES = {"bf16": "F16", "int8": "Q8_0", "int4": "Q4_0"}
INSTALL = "pip install openvino-genai==2026.4.1.0 openvino-tokenizers==2026.4.1.0"


@dataclass(frozen=True)
class OpenvinoGenaiOptions(GenerativeOptions):
    seed: int = 0
    max_cache_len: int = 0  # the context's positions (prompt + output)
    model: str = ""  # the workload's model name (what format_name reads)
    max_batch: int = 1  # the most sequences generated at once (sizes the scheduler and KV cache)


class OpenvinoGenai(GenerativeEngine):
    name = "openvino_genai"
    package, distribution, install = "openvino_genai", "openvino-genai", INSTALL
    devices = ("cpu",)
    formats = tuple(FILE_TYPES)
    Options = OpenvinoGenaiOptions
    description = "OpenVINO GenAI ContinuousBatchingPipeline (2026.4.1, GGUF reader), greedy"

    def cell_skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        """Beside the device, format and batch: a written file needs llama.cpp's quantize."""
        reason = super().cell_skip_reason(settings)
        model, precision = str(settings["model"]), str(settings["precision"])
        if reason is None and not _gguf_export.shipped(model, precision):
            if missing := llama_cpp.ENGINE.skip_reason("cpu", "bf16"):
                made = f"{FILE_TYPES[precision]} file of {model} is made by llama.cpp's quantize"
                reason = f"engine {self.name}: its {made}, and {missing}"
        return reason

    def load(self, model: str | Path, options: GenerativeOptions) -> OpenvinoGreedy:
        assert isinstance(options, OpenvinoGenaiOptions)
        from devicebench.generation import bandwidth
        from devicebench.workloads import textgen_llm

        path = _gguf_export.gguf_for(
            str(model), options.precision, FILE_TYPES, options.seed, options.threads
        )
        context, shape = max(options.max_cache_len, 64), textgen_llm.shape(str(model))
        kv = bandwidth.kv_cache_bytes(
            layers=shape.layers, kv_heads=shape.kv_heads, head_dim=shape.head_dim,
            tokens=context, batch=options.max_batch, bytes_per_value=2,
        )  # fmt: skip
        return OpenvinoGreedy(path, options.threads, context, options.max_batch, kv)

    def describe(self, options: Any) -> dict[str, Any]:
        form = _gguf_export.format_name(options.model, options.precision, FILE_TYPES)
        hint = f"PERFORMANCE_HINT=LATENCY, INFERENCE_NUM_THREADS={options.threads}, "
        hint += f"no prefix caching; the CPU plugin's defaults: {cpu_defaults()}"
        return {"engine": self.description, "format": form, "hint": hint}


def cpu_defaults() -> str:
    """What OpenVINO's CPU plugin computes in here, and how it stores the KV cache (u8 where it
    compresses it), as it reports them: the record says what ran."""
    import openvino

    core = openvino.Core()
    compute = core.get_property("CPU", "INFERENCE_PRECISION_HINT")
    key, value = (
        core.get_property("CPU", f"{k}_CACHE_PRECISION").get_type_name() for k in ("KEY", "VALUE")
    )
    return f"compute {compute.get_type_name()}, KV cache {key}/{value}"


class OpenvinoGreedy:
    """A GGUF model in OpenVINO GenAI's ContinuousBatchingPipeline (what LLMPipeline runs on the
    CPU), driven one scheduler step at a time, so the scenario's clock reads every step's tokens
    on its own thread. Every prompt of a batch prefills in the first step (the step's token budget
    holds them all) and the batch decodes in lockstep. Prefix caching is off: LLMPipeline's
    default keeps the KV cache of prompts it has seen, so a repeated prompt (each repetition's)
    would skip prefill (benchmarks/openvino_prefix_cache.py: SmolLM2's 500 tokens asked again
    took 0.02 s to a first token here, against 0.25 s with it off)."""

    def __init__(self, path: Path, threads: int, context: int, batch: int, kv_bytes: int) -> None:
        import openvino_genai

        self.path, self.context = path, context
        self.kv_per_position = kv_bytes / max(context * batch, 1)  # what quality scoring sizes by
        self.properties = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": int(threads)}
        self.pipe = openvino_genai.ContinuousBatchingPipeline(
            str(path), scheduler(context, batch, kv_bytes), "CPU", self.properties
        )
        self.weight_bytes = path.stat().st_size  # the quantized weights read per token
        self.name = "openvino-genai"
        self._ids = itertools.count()

    def prefill(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> Prefilled:
        """The requests added, each `max_new_tokens` long (fixed when a request is added), and
        stepped until each has its first token."""
        import openvino as ov
        import openvino_genai

        most = min(max_new_tokens, self.context - max(len(p) for p in prompts))
        config = openvino_genai.GenerationConfig(
            max_new_tokens=max(most, 1), ignore_eos=True, do_sample=False
        )
        handles = [
            self.pipe.add_request(next(self._ids), ov.Tensor(np.array([p], dtype=np.int64)), config)
            for p in prompts
        ]
        requests = _Requests(handles, [[] for _ in handles])
        return Prefilled(first_tokens=self._step(requests), state=requests)

    def decode(self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken):
        requests: _Requests = prefilled.state
        out = [[t] for t in prefilled.first_tokens]
        try:
            for _ in range(max_new_tokens - 1):
                tokens = self._step(requests)
                for row, token in zip(out, tokens, strict=True):
                    row.append(token)
                on_token(tokens)
        finally:
            self._drain(requests.handles)
        return out

    def _step(self, requests: _Requests) -> list[int]:
        """Each request's next token: scheduler steps run until every request has one (one step
        in lockstep; tokens a request made ahead wait in its own list)."""
        for _ in range(64):
            if all(requests.unread):
                return [unread.pop(0) for unread in requests.unread]
            self.pipe.step()
            for handle, unread in zip(requests.handles, requests.unread, strict=True):
                if handle.can_read():
                    unread += [int(t) for out in handle.read().values() for t in out.generated_ids]
        raise RuntimeError("openvino-genai: a request produced no token in 64 scheduler steps")

    def _drain(self, handles: list[Any]) -> None:
        """Drop requests left unfinished (a stream the server stopped) and let them end."""
        import openvino_genai

        for handle in handles:
            if handle.get_status() == openvino_genai.GenerationStatus.RUNNING:
                handle.cancel()
        for _ in range(64):
            if not self.pipe.has_non_finished_requests():
                return
            self.pipe.step()

    def score_windows(self, chunks: list[list[int]]) -> list[tuple[float, np.ndarray]]:
        """Each window's summed negative log-likelihood and greedy predictions (quality.score),
        from the engine's own numbers. LLMPipeline gives no logits: a window asked back with
        `echo` and `logprobs` returns each of its tokens' log probability, and each position's
        greedy token is a one-token request of the window up to it (teacher-forced, as fp32's
        argmax), in a second pipeline whose prefix cache keeps the window's KV, so each costs a
        decode step."""
        import openvino_genai

        context = max(len(chunk) for chunk in chunks) + 1
        pipe = openvino_genai.ContinuousBatchingPipeline(
            str(self.path), scheduler(context, 1, math.ceil(self.kv_per_position * context),
                                      prefix_caching=True), "CPU", self.properties,
        )  # fmt: skip
        scored = []
        for chunk in chunks:
            echoed, logprobs = _one_token(pipe, chunk, echo=True)
            if echoed[: len(chunk)] != chunk:
                raise RuntimeError("openvino-genai: the echoed window is not the window asked")
            nll = -float(sum(logprobs[1 : len(chunk)]))  # the first token has no context
            predicted = [_one_token(pipe, chunk[:end])[0][-1] for end in range(1, len(chunk))]
            scored.append((nll, np.array(predicted)))
        return scored

    def parameter_count(self) -> int:
        import gguf

        reader = gguf.GGUFReader(str(self.path))
        return int(sum(int(t.n_elements) for t in reader.tensors if t.name != "rope_freqs.weight"))

    def peak_device_memory_mb(self) -> float | None:
        return None


@dataclass
class _Requests:
    """One generation's requests: their handles, and the tokens each made but the clock has not
    read yet."""

    handles: list[Any]
    unread: list[list[int]]


_SCORED = itertools.count()  # the scoring pipeline's request ids


def _one_token(pipe: Any, prompt: list[int], echo: bool = False) -> tuple[list[int], list[float]]:
    """One greedy token after `prompt`: the ids and log probabilities a request returns (with
    `echo`, the prompt's own first, each with its log probability)."""
    import openvino as ov
    import openvino_genai

    config = openvino_genai.GenerationConfig(
        max_new_tokens=1, ignore_eos=True, do_sample=False, echo=echo, logprobs=1
    )
    handle = pipe.add_request(next(_SCORED), ov.Tensor(np.array([prompt], dtype=np.int64)), config)
    while pipe.has_non_finished_requests():
        pipe.step()
    (output,) = handle.read_all()
    return [int(t) for t in output.generated_ids], [float(p) for p in output.generated_log_probs]


def scheduler(context: int, batch: int, kv_bytes: int, prefix_caching: bool = False) -> Any:
    """The scheduler of one cell: room for `batch` sequences of `context` positions, every
    prompt of a batch in one step, no prefix caching (but for quality scoring)."""
    import openvino_genai

    config = openvino_genai.SchedulerConfig()
    config.max_num_seqs = max(batch, 1)
    config.max_num_batched_tokens = max(context * batch, 256)
    config.dynamic_split_fuse = False
    config.enable_prefix_caching = prefix_caching
    config.cache_size = max(1, math.ceil(kv_bytes / 1e9) + 1)  # GB of KV cache
    return config


ENGINE = OpenvinoGenai()
