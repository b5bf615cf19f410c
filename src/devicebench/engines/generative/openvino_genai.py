"""OpenVINO GenAI (`openvino-genai`'s LLMPipeline): Intel's LLM runtime on the CPU, on GGUF files.

LLMPipeline reads a local GGUF directly (its GGUF reader, no optimum-intel export: optimum-intel
2.2.0 requires transformers<5.6, pinned here 5.23.0). It runs the files llama.cpp runs, written
from the workload's own weights (`_gguf_export`, the torch cells' draw): int8 is Q8_0, int4 Q4_0,
and bf16 is F16 (the reader takes F16, Q8_0, Q4_0/Q4_1 and not BF16; 2 bytes a weight all the
same, and OpenVINO computes in bf16 where the CPU has it). SmolLM2's int4 runs its shipped Q4_1.
Its reader builds Llama's RoPE without Llama-3's scaling (`rope_freqs`): the same work, other
numbers, so the Llama shapes' tokens differ from torch's (random weights: no quality either way).
One sequence at a time (its streamer takes batch 1): batch 1 only. LLMPipeline exposes no
per-position logits, so its quality on SmolLM2 is the free-running generation's agreement only.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


class OpenvinoGenai(GenerativeEngine):
    name = "openvino_genai"
    package = "openvino_genai"
    devices = ("cpu",)
    formats = tuple(FILE_TYPES)
    Options = OpenvinoGenaiOptions
    max_batch = 1
    description = "OpenVINO GenAI LLMPipeline (2026.4.1, GGUF reader), greedy"

    def skip_reason(self, device: str, precision: str) -> str | None:
        import importlib.util

        reason = super().skip_reason(device, precision)
        if reason is None and importlib.util.find_spec(self.package) is None:
            reason = f"engine {self.name}: openvino-genai is not installed; {INSTALL}"
        return reason

    def cell_skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        """Beside the device, format and batch: a written file needs llama.cpp's quantize."""
        import importlib.util

        reason = super().cell_skip_reason(settings)
        model, precision = str(settings["model"]), str(settings["precision"])
        written = not _gguf_export.shipped(model, precision)
        if reason is None and written and importlib.util.find_spec("llama_cpp") is None:
            reason = (
                f"engine {self.name}: its {FILE_TYPES[precision]} file of {model} is made by "
                f"llama.cpp's quantize, and llama-cpp-python is not installed; {llama_cpp.INSTALL}"
            )
        return reason

    def load(self, model: str | Path, options: GenerativeOptions) -> OpenvinoGreedy:
        assert isinstance(options, OpenvinoGenaiOptions)
        path = _gguf_export.gguf_for(
            str(model), options.precision, FILE_TYPES, options.seed, options.threads
        )
        return OpenvinoGreedy(path, options.threads, max(options.max_cache_len, 64))

    def describe(self, options: Any) -> dict[str, Any]:
        form = _gguf_export.format_name(options.model, options.precision, FILE_TYPES)
        hint = f"PERFORMANCE_HINT=LATENCY, INFERENCE_NUM_THREADS={options.threads}"
        return {"engine": self.description, "format": form, "hint": hint}


class OpenvinoGreedy:
    """A GGUF model in LLMPipeline behind the Generator protocol: greedy, EOS ignored.

    LLMPipeline.generate runs a whole generation and streams its tokens to a callback; here it
    runs on a thread of its own, its streamer handing each token to the scenario's clock through
    a queue (generate releases the interpreter lock, so the clock reads each token as it comes:
    TPOT as LLMPipeline's own metrics give it, 12.4 against 12.6 ms for SmolLM2's Q8_0 here). The
    streamer holds after the first token until decode says how many more to make (or the next
    prefill says none), so prefill returns at the first token without knowing the count.
    """

    def __init__(self, path: Path, threads: int, context: int) -> None:
        import openvino_genai

        self.path, self.context = path, context
        self.pipe = openvino_genai.LLMPipeline(
            str(path), "CPU", PERFORMANCE_HINT="LATENCY", INFERENCE_NUM_THREADS=int(threads)
        )
        self.weight_bytes = path.stat().st_size  # the quantized weights read per token
        self.name = "openvino-genai"
        self._running: _Generation | None = None

    def prefill(self, prompts: Sequence[Sequence[int]]) -> Prefilled:
        if len(prompts) != 1:
            raise ValueError(f"openvino_genai generates one sequence at a time, not {len(prompts)}")
        self.finish()
        generation = _Generation(self.pipe, list(prompts[0]), self.context - len(prompts[0]))
        self._running = generation
        return Prefilled(first_tokens=[generation.next_token()], state=generation)

    def decode(self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken):
        generation: _Generation = prefilled.state
        generation.allow(max_new_tokens)
        out = list(prefilled.first_tokens)
        for _ in range(max_new_tokens - 1):
            token = generation.next_token()
            on_token([token])
            out.append(token)
        self.finish()
        return [out]

    def finish(self) -> None:
        """End the generation under way (if any) and wait for its thread."""
        if self._running is not None:
            self._running.stop()
            self._running = None

    def parameter_count(self) -> int:
        import gguf

        reader = gguf.GGUFReader(str(self.path))
        return int(sum(int(t.n_elements) for t in reader.tensors if t.name != "rope_freqs.weight"))

    def peak_device_memory_mb(self) -> float | None:
        return None


class _Generation:
    """One LLMPipeline.generate on its own thread, its tokens arriving through a queue."""

    def __init__(self, pipe: Any, prompt: list[int], most: int) -> None:
        import numpy as np
        import openvino as ov
        import openvino_genai

        self.tokens: queue.Queue[int | BaseException] = queue.Queue()
        self.limit: int | None = None  # tokens to make in all, once decode says
        self.go = threading.Event()
        self.made = 0
        config = openvino_genai.GenerationConfig(
            max_new_tokens=max(most, 1), ignore_eos=True, do_sample=False
        )
        ids = ov.Tensor(np.array([prompt], dtype=np.int64))
        streamer = _streamer(self)
        self.thread = threading.Thread(
            target=self._run, args=(pipe, ids, config, streamer), daemon=True
        )
        self.thread.start()

    def _run(self, pipe: Any, ids: Any, config: Any, streamer: Any) -> None:
        try:
            pipe.generate(ids, config, streamer)
        except BaseException as error:  # handed to the waiting scenario, not lost on a thread
            self.tokens.put(error)

    def on_tokens(self, tokens: Sequence[int]) -> bool:
        """The streamer's callback: queue the tokens; whether to go on."""
        for token in tokens:
            self.made += 1
            self.tokens.put(int(token))
        if self.made == 1:
            self.go.wait()  # hold at the first token until decode (or stop) decides
        return self.limit is None or self.made < self.limit

    def next_token(self) -> int:
        got = self.tokens.get(timeout=600)
        if isinstance(got, BaseException):
            raise RuntimeError(f"openvino-genai generate failed: {got}") from got
        return got

    def allow(self, total: int) -> None:
        self.limit = total
        self.go.set()

    def stop(self) -> None:
        if self.limit is None:
            self.limit = self.made
        self.go.set()
        self.thread.join(timeout=600)


def _streamer(generation: _Generation) -> Any:
    import openvino_genai

    class Streamer(openvino_genai.StreamerBase):
        def write(self, token: Any) -> Any:
            tokens = token if isinstance(token, list) else [token]
            going = generation.on_tokens(tokens)
            status = openvino_genai.StreamingStatus
            return status.RUNNING if going else status.STOP

        def end(self) -> None:
            pass

    return Streamer()


ENGINE = OpenvinoGenai()
