"""A Llama built by the workload, written as a GGUF file that llama.cpp runs, then quantized by
llama.cpp's own `llama_model_quantize` (what `llama-quantize` does).

The random-weight Llama shapes ship no GGUF, so llama.cpp could not run them; written here they
carry the very weights the torch cells draw (`textgen_llm.build_model`, same seed), converted as
llama.cpp's `convert_hf_to_gguf.py` converts a Llama: its tensor names, q/k rows permuted from
transformers' rotate-half order to GGUF's interleaved one, Llama-3 RoPE scaling as a
`rope_freqs` tensor. The vocabulary is a placeholder of the model's size in Llama-3's own kind, a
byte-level BPE (cells pass token ids, never text; OpenVINO GenAI's GGUF reader builds tokenizers
of that kind only). Files are cached by model, seed and GGUF type (`DEVICEBENCH_GGUF_DIR`, default
~/.cache/devicebench/gguf), each written under a temporary name and renamed when whole.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.cache_dirs import cache_folder, user_cache

WRITER_VERSION = 3  # bump when the written file changes: cached files of older versions are stale
# GGUF file types by name -> llama.cpp's llama_ftype (what `llama_model_quantize` is asked for)
FILE_TYPES = {"F32": 0, "F16": 1, "BF16": 32, "Q8_0": 7, "Q4_0": 2}
LAYER_TENSORS = {
    "input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}  # fmt: skip
Progress = Callable[[str], None]


def cache_dir() -> Path:
    return cache_folder("DEVICEBENCH_GGUF_DIR", user_cache("gguf"))


def describe(file_type: str) -> str:
    """What a record calls a written file of `file_type`."""
    made = " (llama.cpp quantize)" if file_type.startswith("Q") else ""
    return f"GGUF {file_type}{made}"


def shipped(model: str, precision: str) -> bool:
    """Whether an int4 cell runs a real model's GGUF as its package ships it (SmolLM2's Q4_1)."""
    from devicebench.workloads import textgen_llm

    return model in textgen_llm.REAL_MODELS and precision == "int4"


def format_name(model: str, precision: str, file_types: dict[str, str]) -> str:
    """What a record calls the file an engine that maps precisions to `file_types` runs."""
    if shipped(model, precision):
        return "GGUF Q4_1 (as shipped)"
    return describe(file_types[precision])


def gguf_for(
    model: str, precision: str, file_types: dict[str, str], seed: int, threads: int
) -> Path:
    """The GGUF a cell runs: the shipped file, or one written from the workload's weights in the
    engine's file type for `precision`."""
    from devicebench.workloads import textgen_llm

    if shipped(model, precision):
        return textgen_llm.gguf_path(model)
    return gguf_file(model, seed, file_types[precision], threads)


def gguf_file(
    model: str, seed: int, file_type: str, threads: int, progress: Progress = print
) -> Path:
    """The GGUF of `model`'s seeded weights as `file_type` (a FILE_TYPES name), written from
    fp32 or bf16 and converted by llama.cpp if missing."""
    if file_type not in FILE_TYPES:
        raise ValueError(f"no GGUF file type {file_type}; types: {', '.join(FILE_TYPES)}")
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{model}-seed{seed}-v{WRITER_VERSION}"
    target = folder / f"{stem}-{file_type}.gguf"
    if target.exists():
        progress(f"[gguf] {target} (cached)")
        return target
    plain, written = ("fp32", "F32") if file_type == "F32" else ("bf16", "BF16")
    source = folder / f"{stem}-{written}.gguf"
    if not source.exists():
        from devicebench.workloads import textgen_llm

        check_room(model, plain, folder)
        progress(f"[gguf] drawing {model} (seed {seed}) and writing {source.name}")
        built = textgen_llm.build_model(model, "cpu", plain, seed)
        _atomic(source, lambda path: write_llama(built, path))
        del built
    if file_type != written:
        progress(f"[gguf] quantizing {source.name} to {file_type} ({threads} threads)")
        _atomic(target, lambda path: quantize(source, path, FILE_TYPES[file_type], threads))
    return target


def check_room(model: str, plain: str, folder: Path) -> None:
    """Refuse before drawing: the weights are drawn on the host in `plain` and written whole, so
    host memory and the folder's disk must each hold them (ModelTooLarge, an OOM record, or
    OSError naming the folder)."""
    import shutil

    from devicebench.generation.run import ModelTooLarge, free_bytes
    from devicebench.workloads import textgen_llm

    need = textgen_llm.shape(model).parameters * (4 if plain == "fp32" else 2)
    free = free_bytes("cpu")
    if need > 0.9 * free:
        raise ModelTooLarge(
            f"writing {model}'s GGUF draws its {plain} weights on the host: {need / 1e9:.2f} GB; "
            f"the host has {free / 1e9:.2f} GB free (90 % usable)"
        )
    disk = shutil.disk_usage(folder).free
    if need > disk:
        raise OSError(
            f"{model}'s {plain} GGUF needs {need / 1e9:.2f} GB; {folder} has {disk / 1e9:.2f} GB "
            "free (set DEVICEBENCH_GGUF_DIR to a larger disk)"
        )


def _atomic(target: Path, write: Callable[[Path], None]) -> None:
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        write(partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """q/k rows from transformers' rotate-half order to GGUF's interleaved pairs (as
    convert_hf_to_gguf's LlamaModel.permute)."""
    rows = weights.shape[0]
    return (
        weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def llama3_rope_factors(config: Any) -> np.ndarray | None:
    """Llama-3's per-frequency RoPE divisors (convert_hf_to_gguf's `rope_freqs`), or None for
    plain RoPE."""
    rope = dict(getattr(config, "rope_parameters", None) or {})
    if rope.get("rope_type") != "llama3":
        return None
    dim = _head_dim(config)
    freqs = 1.0 / (rope["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            factors.append(1.0)
        elif wavelen > old / low:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def _head_dim(config: Any) -> int:
    given = getattr(config, "head_dim", None)
    return int(given or config.hidden_size // config.num_attention_heads)


def write_llama(model: Any, path: Path) -> None:
    """Write a transformers LlamaForCausalLM (fp32 or bf16) as a GGUF llama.cpp loads."""
    import gguf
    import torch

    config = model.config
    writer = gguf.GGUFWriter(str(path), "llama")
    _metadata(writer, config, model.dtype)
    state = model.state_dict()
    for name, tensor in state.items():
        gguf_name = _tensor_name(name, config)
        if gguf_name is None:
            continue
        data = tensor.detach().to("cpu")
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            heads = config.num_attention_heads
            heads = heads if "q_proj" in name else config.num_key_value_heads
            data = torch.from_numpy(permute(data.float().numpy(), heads)).to(data.dtype)
        if data.ndim == 1 or data.dtype == torch.float32:  # norms stay f32, as the converter
            writer.add_tensor(gguf_name, data.float().numpy())
        else:
            raw = data.contiguous().view(torch.int16).numpy()
            writer.add_tensor(gguf_name, raw, raw_dtype=gguf.GGMLQuantizationType.BF16)
    factors = llama3_rope_factors(config)
    if factors is not None:
        writer.add_tensor("rope_freqs.weight", factors)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _tensor_name(name: str, config: Any) -> str | None:
    if name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if name == "model.norm.weight":
        return "output_norm.weight"
    if name == "lm_head.weight":  # tied: llama.cpp reads token_embd for the output
        return None if config.tie_word_embeddings else "output.weight"
    parts = name.split(".")  # model.layers.N.<module>.weight
    if parts[:2] == ["model", "layers"] and parts[-1] == "weight":
        return f"blk.{parts[2]}.{LAYER_TENSORS['.'.join(parts[3:-1])]}.weight"
    raise ValueError(f"no GGUF name for tensor {name}")


def _metadata(writer: Any, config: Any, dtype: Any) -> None:
    import gguf
    import torch

    writer.add_context_length(int(config.max_position_embeddings))
    writer.add_embedding_length(int(config.hidden_size))
    writer.add_block_count(int(config.num_hidden_layers))
    writer.add_feed_forward_length(int(config.intermediate_size))
    writer.add_head_count(int(config.num_attention_heads))
    writer.add_head_count_kv(int(config.num_key_value_heads))
    writer.add_key_length(_head_dim(config))
    writer.add_value_length(_head_dim(config))
    writer.add_rope_dimension_count(_head_dim(config))
    rope = dict(getattr(config, "rope_parameters", None) or {})
    writer.add_rope_freq_base(float(rope.get("rope_theta", 10000.0)))
    writer.add_layer_norm_rms_eps(float(config.rms_norm_eps))
    writer.add_vocab_size(int(config.vocab_size))
    plain = dtype == torch.float32
    writer.add_file_type(gguf.LlamaFileType.ALL_F32 if plain else gguf.LlamaFileType.MOSTLY_BF16)
    _placeholder_vocabulary(writer, int(config.vocab_size))


def _placeholder_vocabulary(writer: Any, size: int) -> None:
    """A byte-level BPE vocabulary (GPT-2's kind, which Llama-3 uses) of `size` distinct pieces:
    the 256 byte pieces, placeholders, and Llama-3's begin/end-of-text control tokens last. One
    merge (of two byte pieces, into a placeholder) because readers require the list (cells hand
    engines token ids, never text)."""
    import gguf

    if size < 259:
        raise ValueError(f"a byte-level vocabulary needs at least 259 tokens, not {size}")
    byte_pieces = [_BYTE_PIECES[b] for b in range(256)]
    tokens = byte_pieces + [f"t{i}" for i in range(256, size - 2)]
    tokens += ["<|begin_of_text|>", "<|end_of_text|>"]
    tokens[256] = "ab"
    types = [gguf.TokenType.NORMAL] * (size - 2) + [gguf.TokenType.CONTROL] * 2
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(["a b"])
    writer.add_bos_token_id(size - 2)
    writer.add_eos_token_id(size - 1)
    writer.add_add_bos_token(False)


def _byte_pieces() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte (its `bytes_to_unicode`)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    pieces, extra = {}, 0
    for b in range(256):
        if b in printable:
            pieces[b] = chr(b)
        else:
            pieces[b], extra = chr(256 + extra), extra + 1
    return pieces


_BYTE_PIECES = _byte_pieces()


def quantize(source: Path, target: Path, file_type: int, threads: int) -> None:
    """llama.cpp's `llama_model_quantize` of `source` into `target` as `file_type`."""
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = int(threads)
    params.ftype = int(file_type)
    failed = llama_cpp.llama_model_quantize(
        str(source).encode(), str(target).encode(), ctypes.byref(params)
    )
    if failed:
        raise RuntimeError(f"llama_model_quantize {source.name} to type {file_type}: {failed}")
