"""Continuous batching: transformers_cb (transformers' manager behind the Generator protocol and
the request API, `submit`, the generate server's streams use) and torch_rows (a static cache of
a row per request, `fill_row` and `step`). A request joins the running batch between two steps,
whatever its prompt length, and gets its own greedy tokens (a tiny Llama of random weights on
this CPU)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from devicebench.engines import generative
from devicebench.engines.generative._continuous import PAGE, manager_config
from devicebench.engines.generative._torch_loop import TorchGreedy
from devicebench.frameworks.generator import time_generation
from devicebench.workloads import textgen_llm

pytestmark = pytest.mark.fast


def load(max_batch: int = 4, max_cache_len: int = 64, **given):
    engine = generative.get("transformers_cb")
    given = {"seed": 1, "max_cache_len": max_cache_len, "max_batch": max_batch} | given
    options = engine.options_from(given, precision="fp32", threads=1, device="cpu")
    return engine, options, engine.load("llama-tiny", options)


def greedy_alone(prompts: list[list[int]], tokens: int) -> list[list[int]]:
    """torch eager's greedy tokens for each prompt on its own (the reference)."""
    eager = TorchGreedy(textgen_llm.build_model("llama-tiny", "cpu", "fp32", seed=1), "cpu",
                        static=False, compile=False)  # fmt: skip
    return [time_generation(eager, [p], tokens).tokens[0] for p in prompts]


class Collected:
    """One request's tokens as the dispatcher hands them over, and its end."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.tokens: list[int] = []
        self.ended = threading.Event()
        self.error: str | None = None
        self.ended_at: float | None = None
        self.stop_after = stop_after

    def __call__(self, tokens: list[int], finished: bool, error: str | None) -> bool:
        self.tokens += tokens
        if finished:
            self.error, self.ended_at = error, time.monotonic()
            self.ended.set()
        return self.stop_after is None or len(self.tokens) < self.stop_after


def test_a_batch_timed_on_the_one_clock_has_each_prompts_greedy_tokens() -> None:
    prompts = np.random.default_rng(0).integers(0, 512, (3, 20)).tolist()
    engine, options, generator = load()
    try:
        timing = time_generation(generator, prompts, 9)
    finally:
        generator.stop()
    assert timing.tokens == greedy_alone(prompts, 9)
    assert timing.new_tokens == 9 and len(timing.token_s) == 8
    assert timing.first_token_s < timing.token_s[0] <= timing.token_s[-1]
    assert not generator._manager.is_running()  # stop ended its thread
    assert (
        engine.describe(options)["hint"]
        == "max_batch_tokens 2048, CUDA graphs transformers' choice"
    )


def test_a_request_joins_a_running_one_and_ends_first_each_with_its_own_tokens() -> None:
    """A 5-token prompt asking 6 tokens, sent while a 2-token prompt's 300 tokens decode, ends
    before it: it did not wait for the running request (a static batch would have, or been
    refused its other prompt length)."""
    short, long = [3, 1, 4, 1, 5], [1, 2]
    _, _, generator = load(max_cache_len=310)
    try:
        running, joining = Collected(), Collected()
        generator.submit(long, 300, running)
        while len(running.tokens) < 5:  # the long request is decoding
            time.sleep(0.01)
        generator.submit(short, 6, joining)
        assert joining.ended.wait(60) and running.ended.wait(120)
    finally:
        generator.stop()
    assert joining.ended_at < running.ended_at
    assert joining.tokens == greedy_alone([short], 6)[0]
    assert running.tokens == greedy_alone([long], 300)[0]
    assert joining.error is None and running.error is None


def test_a_request_that_wants_no_more_tokens_is_cancelled_and_others_go_on() -> None:
    _, _, generator = load(max_cache_len=310)
    try:
        cut, other = Collected(stop_after=3), Collected()
        generator.submit([7, 7, 7], 300, cut)
        generator.submit([5, 4, 3], 20, other)
        assert other.ended.wait(60)
        time.sleep(0.3)  # steps after the cut one asked to stop
    finally:
        generator.stop()
    assert not cut.ended.is_set() and 3 <= len(cut.tokens) < 300  # no token after the cancel
    assert len(other.tokens) == 20 and other.error is None
    assert generator._handlers == {}


def test_the_manager_holds_room_for_its_requests_not_the_devices_free_memory() -> None:
    config = manager_config(
        max_batch=16, max_cache_len=1152, max_batch_tokens=2048, cuda_graphs=None
    )
    assert config.num_blocks == 16 * -(-1153 // PAGE) + 1
    assert config.max_requests_per_batch == 16 and config.max_batch_tokens == 2048
    assert config.allow_block_sharing is False  # no prefix cache: every prompt is computed
    assert manager_config(64, 256, 16, True).max_batch_tokens == 64  # a step fits every row
    with pytest.raises(ValueError, match="max_batch 0"):
        manager_config(0, 256, 2048, None)


def test_a_failed_manager_ends_every_open_request_with_the_reason() -> None:
    _, _, generator = load()
    waiting = Collected()
    try:
        generator.start()
        with generator._lock:  # a request the manager never answers
            generator._handlers["lost"], generator._seen["lost"] = waiting, 0
        generator._manager.stop(block=True, timeout=30)  # its thread ends
        assert waiting.ended.wait(10)
    finally:
        generator.stop()
    assert "the manager's thread stopped" in waiting.error


def test_rows_joining_a_running_batch_each_get_their_own_greedy_tokens() -> None:
    """torch_rows: a 5-token prompt joins a row while a 2-token prompt's row decodes (each row
    writes and attends at its own position); a third prompt then reuses the first's row."""
    from devicebench.engines.generative._row_batch import RowBatch

    model = textgen_llm.build_model("llama-tiny", "cpu", "fp32", seed=1)
    rows = RowBatch(model, "cpu", rows=2, max_cache_len=40)
    first = [rows.fill_row(0, [1, 2])]
    first += [rows.step()[0] for _ in range(10)]
    second = [rows.fill_row(1, [3, 1, 4, 1, 5])]
    for _ in range(5):
        tokens = rows.step()
        first.append(tokens[0])
        second.append(tokens[1])
    third = [rows.fill_row(0, [9] * 7)]  # whatever row 0 held is masked out
    third += [rows.step()[0] for _ in range(4)]
    assert first == greedy_alone([[1, 2]], 16)[0]
    assert second == greedy_alone([[3, 1, 4, 1, 5]], 6)[0]
    assert third == greedy_alone([[9] * 7], 5)[0]
    assert rows.cache.positions.tolist() == [7 + 4, 5 + 5 + 4]


def test_a_torch_rows_cell_times_a_batch_on_the_one_clock() -> None:
    engine = generative.get("torch_rows")
    options = engine.options_from(
        {"seed": 1, "max_cache_len": 30, "max_batch": 3}, precision="fp32", threads=1, device="cpu"
    )
    generator = engine.load("llama-tiny", options)
    prompts = np.random.default_rng(0).integers(0, 512, (3, 20)).tolist()
    timing = time_generation(generator, prompts, 9)
    assert timing.tokens == greedy_alone(prompts, 9)
    assert generator.rows == 3 and len(timing.token_s) == 8
    with pytest.raises(ValueError, match="4 prompts for 3 rows"):
        generator.prefill(prompts + prompts[:1], 9)
    with pytest.raises(ValueError, match="a 30-token prompt in rows of 30"):
        generator.fill_row(0, [1] * 30)
    assert engine.cell_skip_reason({"device": "cpu", "precision": "int4", "batch_size": 1,
                                    "model": "llama-tiny"}) == (
        "engine torch_rows has no int4 path (it runs fp32, bf16, fp16)"
    )  # fmt: skip


def test_row_attention_equals_transformers_sdpa_with_each_rows_mask() -> None:
    """The decode step's grouped-head attention gives sdpa's output (repeated key/value heads,
    the math kernel) for rows masked at different positions."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from devicebench.engines.generative._row_batch import row_attention

    generator = torch.Generator().manual_seed(0)
    query = torch.randn(3, 8, 1, 16, generator=generator)
    key, value = (torch.randn(3, 2, 10, 16, generator=generator) for _ in range(2))
    seen = torch.arange(10)[None, :] <= torch.tensor([2, 9, 5])[:, None]
    mask = torch.where(seen, 0.0, torch.finfo(torch.float32).min)[:, None, None, :]

    class Module:  # what sdpa reads of an attention module
        num_key_value_groups, is_causal, training = 4, False, False

    ours, _ = row_attention(Module(), query, key, value, mask, scaling=0.25)
    theirs, _ = sdpa_attention_forward(Module(), query, key, value, mask, scaling=0.25)
    assert ours.shape == theirs.shape == (3, 1, 8, 16)
    assert torch.allclose(ours, theirs, atol=1e-5)
    assert not torch.allclose(ours[0], ours[1])  # the masks differ, and so do the rows
