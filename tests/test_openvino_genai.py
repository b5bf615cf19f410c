"""OpenVINO GenAI's LLMPipeline on GGUF files (engines/generative/openvino_genai.py): it runs the
files llama.cpp runs, generates torch fp32's greedy tokens on SmolLM2's real weights, and hands
the scenario's clock one token at a time through its streamer thread."""

from __future__ import annotations

import threading

import pytest

from devicebench.engines import generative
from devicebench.frameworks.generator import time_generation
from devicebench.workloads import textgen_llm

pytest.importorskip("openvino_genai", reason="the package's dependencies install openvino-genai")
pytest.importorskip("llama_cpp", reason="its files are quantized by llama.cpp (the tests' extra)")

PROMPT = "It is a truth universally acknowledged, that a single man"


@pytest.fixture
def engine(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICEBENCH_GGUF_DIR", str(tmp_path / "gguf"))
    return generative.get("openvino_genai")


def _load(engine, model, precision, context=64):
    options = engine.Options(precision=precision, threads=2, max_cache_len=context, model=model)
    return engine.load(model, options), options


def test_it_generates_torch_fp32s_greedy_tokens_on_smollm2(engine) -> None:
    """F16 (the bf16 cell's file) gives torch fp32's greedy continuation of a short Austen
    prompt; SmolLM2's shipped Q4_1 and the written Q8_0 run and say which file they are."""
    from devicebench.engines.generative._torch_loop import TorchGreedy

    ids = [textgen_llm.tokenizer("smollm2-135m")(PROMPT)["input_ids"]]
    reference = textgen_llm.build_model("smollm2-135m", "cpu", "fp32", seed=0)
    want = time_generation(TorchGreedy(reference, "cpu", static=False, compile=False), ids, 8)
    generator, options = _load(engine, "smollm2-135m", "bf16")
    timing = time_generation(generator, ids, 8)
    assert timing.tokens == want.tokens
    assert engine.describe(options)["format"] == "GGUF F16"
    assert generator.parameter_count() == sum(p.numel() for p in reference.parameters())
    for precision, form in (("int4", "GGUF Q4_1 (as shipped)"), ("int8", "GGUF Q8_0")):
        generator, options = _load(engine, "smollm2-135m", precision)
        assert engine.describe(options)["format"].startswith(form)
        assert len(time_generation(generator, ids, 4).tokens[0]) == 4


def test_the_clock_reads_every_token_and_a_generation_left_at_its_first_ends(engine) -> None:
    generator, _ = _load(engine, "llama-tiny", "int4", context=40)
    prompt = [[3, 1, 4, 1, 5, 9, 2, 6]]
    full = time_generation(generator, prompt, 12)
    assert len(full.tokens[0]) == 12 and len(full.token_s) == 11
    assert full.first_token_s < full.token_s[0] < full.token_s[-1]
    threads = threading.active_count()
    first = time_generation(generator, prompt, 1)  # prefill alone: decode never asked
    assert first.tokens == [full.tokens[0][:1]]
    again = time_generation(generator, prompt, 12)  # the next prefill ends the one left
    assert again.tokens == full.tokens
    assert threading.active_count() <= threads


def test_it_says_what_it_cannot_run(engine, monkeypatch) -> None:
    cell = dict(device="cpu", precision="int4", model="llama-1b", batch_size=1)
    assert engine.cell_skip_reason(cell) is None
    assert "at most 1 at once, not 2" in engine.cell_skip_reason(cell | {"batch_size": 2})
    assert "has no fp32 path" in engine.cell_skip_reason(cell | {"precision": "fp32"})
    assert "not cuda" in engine.cell_skip_reason(cell | {"device": "cuda"})
    import importlib.util

    real = importlib.util.find_spec
    absent = {"llama_cpp": None}
    monkeypatch.setattr(importlib.util, "find_spec", lambda n: absent.get(n, real(n)))
    assert "llama-cpp-python is not installed" in engine.cell_skip_reason(cell)
    assert engine.cell_skip_reason(cell | {"model": "smollm2-135m"}) is None  # Q4_1 as shipped
    monkeypatch.undo()
    generator, _ = _load(engine, "llama-tiny", "int8", context=40)
    with pytest.raises(ValueError, match="one sequence at a time, not 2"):
        generator.prefill([[1, 2], [3, 4]])
