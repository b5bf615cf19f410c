"""The GGUF written from the workload's own Llama weights (engines/generative/_gguf_export.py):
llama.cpp reads it and computes what torch computes, in every format it quantizes it to, and a
cache of them that never holds a half-written file."""

from __future__ import annotations

import numpy as np
import pytest

from devicebench.engines.generative import _gguf_export, llama_cpp
from devicebench.workloads import textgen_llm

pytest.importorskip("llama_cpp", reason="the tests' extra installs llama-cpp-python")

# A tiny Llama with the 8B's traits the tiny one lacks: Llama-3 RoPE scaling (rope_freqs; its
# original context cut to 64 positions so that the prompt's positions feel the scaling) and an
# output matrix of its own (not tied to the embedding)
LLAMA3_SHORT = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0}
LLAMA3_SHORT |= {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
TINY_LLAMA3 = textgen_llm.CONFIGS["llama-tiny"] | dict(
    rope_parameters=LLAMA3_SHORT | {"original_max_position_embeddings": 64},
    tie_word_embeddings=False,
)
PROMPT = [int(i) for i in np.random.default_rng(0).integers(0, 512, 48)]


@pytest.fixture
def gguf_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICEBENCH_GGUF_DIR", str(tmp_path / "gguf"))
    monkeypatch.setitem(textgen_llm.CONFIGS, "llama-tiny-l3", TINY_LLAMA3)
    return tmp_path / "gguf"


def _llama_cpp_logits(path, ids):
    from llama_cpp import Llama

    llm = Llama(model_path=str(path), n_ctx=64, logits_all=True, n_threads=2, verbose=False)
    llm.eval(ids)
    return np.asarray(llm.scores[: len(ids)], dtype=np.float64)


def _torch_logits(model, ids):
    import torch

    built = textgen_llm.build_model(model, "cpu", "fp32", seed=7)
    with torch.no_grad():
        return built(torch.tensor([ids])).logits[0].double().numpy()


def test_llama3_rope_factors_divide_the_frequencies_as_transformers_scales_them() -> None:
    import torch
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = textgen_llm.model_config("llama-8b")
    factors = _gguf_export.llama3_rope_factors(config)
    scaled, _ = ROPE_INIT_FUNCTIONS["llama3"](config, "cpu")
    dim, theta = config.head_dim, config.rope_parameters["rope_theta"]
    plain = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    assert factors.shape == (dim // 2,) and factors.min() == 1.0 and factors.max() == 8.0
    np.testing.assert_allclose(plain.numpy() / factors, scaled.double().numpy(), rtol=1e-5)
    assert _gguf_export.llama3_rope_factors(textgen_llm.model_config("llama-tiny")) is None


def test_permute_interleaves_the_rotate_half_pairs_of_each_head() -> None:
    # one head of 4 rows: transformers pairs row i with row i + 2, GGUF pairs neighbours
    rows = np.arange(8).reshape(8, 1)  # two heads
    assert _gguf_export.permute(rows, heads=2).ravel().tolist() == [0, 2, 1, 3, 4, 6, 5, 7]


@pytest.mark.parametrize("model", ["llama-tiny", "llama-tiny-l3"])
def test_llama_cpp_computes_torchs_logits_from_the_written_file(gguf_dir, model) -> None:
    """fp32: the same logits to float error; bf16, Q8_0 and Q4_0 close, in that order."""
    reference = _torch_logits(model, PROMPT)
    spread = reference.std()
    errors = {}
    for precision in ("fp32", "bf16", "int8", "int4"):
        path = llama_cpp.gguf_for(model, precision, 7, threads=2)
        logits = _llama_cpp_logits(path, PROMPT)
        errors[precision] = np.abs(logits - reference).max() / spread
        assert np.corrcoef(logits.ravel(), reference.ravel())[0, 1] > 0.99, precision
    assert errors["fp32"] < 0.005, errors
    assert errors["fp32"] < errors["bf16"] < errors["int4"] and errors["int8"] < errors["int4"]


def test_formats_shrink_are_cached_and_never_half_written(gguf_dir, monkeypatch) -> None:
    said: list[str] = []
    sizes = {
        t: _gguf_export.gguf_file("llama-tiny", 3, t, 2, said.append).stat().st_size
        for t in ("F32", "BF16", "F16", "Q8_0", "Q4_0")
    }
    assert sizes["F32"] > sizes["BF16"] > sizes["Q8_0"] > sizes["Q4_0"]
    assert abs(sizes["F16"] / sizes["BF16"] - 1) < 0.01  # two bytes a weight either way
    assert any("quantizing" in line and "Q4_0" in line for line in said)
    cached = _gguf_export.gguf_file("llama-tiny", 3, "Q4_0", 2, said.append)
    assert said[-1].endswith("(cached)") and cached.stat().st_size == sizes["Q4_0"]

    def broken(model, path):
        path.write_bytes(b"GGUF half")
        raise OSError("disk full")

    monkeypatch.setattr(_gguf_export, "write_llama", broken)
    with pytest.raises(OSError, match="disk full"):
        _gguf_export.gguf_file("llama-tiny", 4, "BF16", 2, said.append)
    assert sorted(p.name for p in gguf_dir.iterdir() if "seed4" in p.name) == []
    with pytest.raises(ValueError, match="no GGUF file type Q5_K"):
        _gguf_export.gguf_file("llama-tiny", 3, "Q5_K", 2, said.append)


def test_a_generate_cell_on_llama_cpp_records_the_written_format(gguf_dir) -> None:
    from devicebench.engines.generative import get
    from devicebench.frameworks.generator import time_generation

    llama = get("llama_cpp")
    options = llama.Options(precision="int4", threads=2, max_cache_len=40, model="llama-tiny")
    generator = llama.load("llama-tiny", options)
    timing = time_generation(generator, [PROMPT], 8)
    assert len(timing.tokens[0]) == 8
    assert llama.describe(options)["format"] == "GGUF Q4_0 (llama.cpp quantize)"
    assert llama.describe(options)["hint"].startswith("ggml CPU: ")  # the build's features
    assert "AVX2" in llama.describe(options)["hint"]
    assert (
        generator.weight_bytes == _gguf_export.gguf_file("llama-tiny", 0, "Q4_0", 2).stat().st_size
    )


def test_a_model_the_host_cannot_hold_or_the_disk_cannot_take_is_refused_before_drawing(
    gguf_dir, monkeypatch
) -> None:
    import shutil

    from devicebench.generation import run

    monkeypatch.setattr(_gguf_export, "write_llama", lambda *a: pytest.fail("drew the weights"))
    monkeypatch.setattr(run, "free_bytes", lambda device: 10 * 10**9)
    with pytest.raises(run.ModelTooLarge, match=r"llama-8b.*16\.06 GB; the host has 10\.00 GB"):
        _gguf_export.gguf_file("llama-8b", 0, "Q4_0", 2)
    monkeypatch.setattr(run, "free_bytes", lambda device: 10**12)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(1, 1, 10**9))
    with pytest.raises(OSError, match="DEVICEBENCH_GGUF_DIR"):
        _gguf_export.gguf_file("llama-1b", 0, "BF16", 2)
    assert not list(gguf_dir.glob("*.gguf"))
