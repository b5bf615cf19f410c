"""OpenVINO GenAI on GGUF files (engines/generative/openvino_genai.py): it runs the files
llama.cpp runs, generates torch fp32's greedy tokens on SmolLM2's real weights, decodes a batch
in lockstep one scheduler step at a time, and leaves no request behind."""

from __future__ import annotations

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


def _load(engine, model, precision, context=64, batch=1):
    options = engine.Options(
        precision=precision, threads=2, max_cache_len=context, model=model, max_batch=batch
    )
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


def test_a_batch_decodes_in_lockstep_as_each_prompt_alone(engine) -> None:
    generator, options = _load(engine, "llama-tiny", "int4", context=40, batch=3)
    prompts = [[3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8], [1, 4, 1, 4, 2, 1, 3, 5]]
    together = time_generation(generator, prompts, 12)
    assert [len(row) for row in together.tokens] == [12, 12, 12] and len(together.token_s) == 11
    assert together.first_token_s < together.token_s[0] < together.token_s[-1]
    alone = [time_generation(generator, [p], 12).tokens[0] for p in prompts]
    assert together.tokens == alone
    assert "no prefix caching" in engine.describe(options)["hint"]


def test_a_generation_stopped_or_cut_short_leaves_no_request_behind(engine) -> None:
    """The generate server stops a batch whose streams all ended (an exception from on_token);
    a prefill alone (2048/1 cells) asks for one token. Neither leaves a request running, and the
    next generation is whole."""
    generator, _ = _load(engine, "llama-tiny", "int8", context=40)
    prompt = [[3, 1, 4, 1, 5, 9, 2, 6]]
    full = time_generation(generator, prompt, 12)
    assert time_generation(generator, prompt, 1).tokens == [full.tokens[0][:1]]
    assert not generator.pipe.has_non_finished_requests()

    class Stopped(Exception):
        pass

    def stop_at_third(tokens) -> None:
        seen.append(tokens)
        if len(seen) == 3:
            raise Stopped

    seen: list = []
    with pytest.raises(Stopped):
        generator.decode(generator.prefill(prompt, 12), 12, stop_at_third)
    assert not generator.pipe.has_non_finished_requests()
    assert time_generation(generator, prompt, 12).tokens == full.tokens


def test_prefix_caching_is_off() -> None:
    """LLMPipeline's default keeps the KV cache of prompts it has seen, and every repetition of
    a cell repeats its prompts: prefill would be skipped (benchmarks/openvino_prefix_cache.py)."""
    from devicebench.engines.generative.openvino_genai import scheduler

    config = scheduler(context=160, batch=4, kv_bytes=3 * 10**9)
    assert config.enable_prefix_caching is False and config.dynamic_split_fuse is False
    assert config.max_num_seqs == 4 and config.max_num_batched_tokens == 640  # one prefill step
    assert config.cache_size == 4  # GB: the KV cache's 3 GB and one more


def test_it_says_what_it_cannot_run(engine, monkeypatch) -> None:
    cell = dict(device="cpu", precision="int4", model="llama-1b", batch_size=16)
    assert engine.cell_skip_reason(cell) is None
    assert "has no fp32 path" in engine.cell_skip_reason(cell | {"precision": "fp32"})
    assert "not cuda" in engine.cell_skip_reason(cell | {"device": "cuda"})
    import importlib.util

    real = importlib.util.find_spec
    absent = {"llama_cpp": None}
    monkeypatch.setattr(importlib.util, "find_spec", lambda n: absent.get(n, real(n)))
    assert "llama-cpp-python is not installed" in engine.cell_skip_reason(cell)
    assert engine.cell_skip_reason(cell | {"model": "smollm2-135m"}) is None  # Q4_1 as shipped


def test_tokens_a_request_made_ahead_wait_their_turn() -> None:
    """Where the scheduler splits a batch's prefill over steps, a request that started first
    makes its second token while another waits for its first: each still comes in order, one
    per request per call (a stand-in scheduler: the real one prefills a cell's batch at once)."""
    from devicebench.engines.generative.openvino_genai import OpenvinoGreedy, _Requests

    class Output:
        def __init__(self, ids):
            self.generated_ids = ids

    class Handle:
        def __init__(self, plan):
            self.plan = plan  # step number -> tokens made in that step

        def can_read(self):
            return bool(self.plan.get(pipe.steps))

        def read(self):
            return {0: Output(self.plan.pop(pipe.steps))}

    class Pipe:
        steps = 0

        def step(self):
            self.steps += 1

    pipe = Pipe()
    generator = OpenvinoGreedy.__new__(OpenvinoGreedy)
    generator.pipe = pipe
    requests = _Requests([Handle({1: [10], 2: [11]}), Handle({2: [20], 3: [21]})], [[], []])
    assert generator._step(requests) == [10, 20] and pipe.steps == 2
    assert generator._step(requests) == [11, 21] and pipe.steps == 3
