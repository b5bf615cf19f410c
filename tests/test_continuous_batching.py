"""Continuous batching: transformers_cb (transformers' manager behind the Generator protocol and
the request API, `submit`, the generate server's streams use) and torch_rows (a static cache of
a row per request, `fill_row` and `step`). A request joins the running batch between two steps,
whatever its prompt length, and gets the greedy tokens torch eager gives it alone, on
SmolLM2-135M's real weights and Austen's first lines (a tiny Llama of random weights repeats its
last token, which a broken cache would repeat too)."""

from __future__ import annotations

import threading
import time

import pytest

from devicebench.engines import generative
from devicebench.engines.generative._continuous import PAGE, manager_config
from devicebench.engines.generative._torch_loop import TorchGreedy
from devicebench.frameworks.generator import time_generation
from devicebench.workloads import textgen_llm

MODEL = "smollm2-135m"
LINES = (
    "It is a truth universally acknowledged, that a single man",
    "Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who",
    "Emma Woodhouse, handsome, clever, and rich",
)


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    """Austen's first lines as SmolLM2's token ids (11, 20 and 11 tokens)."""
    try:
        textgen_llm.gguf_path(MODEL)
    except FileNotFoundError as why:
        pytest.fail(f"{why} (the README's install line installs it)")
    tokenizer = textgen_llm.tokenizer(MODEL)
    return [tokenizer.encode(line) for line in LINES]


@pytest.fixture(scope="module")
def alone(prompts) -> list[list[int]]:
    """torch eager's 40 greedy tokens for each prompt on its own (the reference)."""
    eager = TorchGreedy(textgen_llm.build_model(MODEL, "cpu", "fp32", seed=0), "cpu",
                        static=False, compile=False)  # fmt: skip
    found = [time_generation(eager, [p], 40).tokens[0] for p in prompts]
    assert all(len(set(tokens)) > 10 for tokens in found)  # real text, not a repeated token
    return found


def load(name: str, max_batch: int = 3, max_cache_len: int = 64):
    engine = generative.get(name)
    given = {"seed": 0, "max_cache_len": max_cache_len, "max_batch": max_batch}
    options = engine.options_from(given, precision="fp32", threads=1, device="cpu")
    return engine, options, engine.load(MODEL, options)


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


def test_a_batch_timed_on_the_one_clock_has_each_prompts_greedy_tokens(prompts, alone) -> None:
    """transformers_cb: prompts of 11 and 20 tokens submitted together."""
    engine, options, generator = load("transformers_cb")
    try:
        timing = time_generation(generator, prompts, 9)
    finally:
        generator.stop()
    assert timing.tokens == [tokens[:9] for tokens in alone]
    assert timing.new_tokens == 9 and len(timing.token_s) == 8
    assert timing.first_token_s < timing.token_s[0] <= timing.token_s[-1]
    assert not generator._manager.is_running()  # stop ended its thread
    assert (
        engine.describe(options)["hint"]
        == "max_batch_tokens 2048, CUDA graphs transformers' choice"
    )


def test_a_request_joins_a_running_one_and_ends_first_each_with_its_own_tokens(
    prompts, alone
) -> None:
    """transformers_cb: a 20-token prompt asking 6 tokens, sent while an 11-token prompt's 40
    tokens decode, ends before it: it did not wait for the running request."""
    _, _, generator = load("transformers_cb")
    try:
        running, joining = Collected(), Collected()
        generator.submit(prompts[0], 40, running)
        while len(running.tokens) < 5:  # the first request is decoding
            time.sleep(0.01)
        generator.submit(prompts[1], 6, joining)
        assert joining.ended.wait(60) and running.ended.wait(120)
    finally:
        generator.stop()
    assert joining.ended_at < running.ended_at
    assert joining.tokens == alone[1][:6] and running.tokens == alone[0]
    assert joining.error is None and running.error is None


def test_a_request_that_wants_no_more_tokens_is_cancelled_and_others_go_on(prompts) -> None:
    _, _, generator = load("transformers_cb", max_cache_len=330)
    try:
        cut, other = Collected(stop_after=3), Collected()
        generator.submit(prompts[0], 300, cut)
        generator.submit(prompts[2], 20, other)
        assert other.ended.wait(60)
        time.sleep(0.3)  # steps after the cut one asked to stop
    finally:
        generator.stop()
    assert not cut.ended.is_set() and 3 <= len(cut.tokens) < 300  # no token after the cancel
    assert len(other.tokens) == 20 and other.error is None
    assert generator._handlers == {}


@pytest.mark.fast
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
    _, _, generator = load("transformers_cb")
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


def test_rows_joining_a_running_batch_each_get_their_own_greedy_tokens(prompts, alone) -> None:
    """torch_rows: a 20-token prompt joins a row while an 11-token prompt's row decodes (each
    row writes and attends at its own position); a third prompt then reuses the first's row,
    whatever it held."""
    _, _, rows = load("torch_rows", max_batch=2)
    first = [rows.fill_row(0, prompts[0])]
    first += [rows.step()[0] for _ in range(10)]
    second = [rows.fill_row(1, prompts[1])]
    for _ in range(29):
        tokens = rows.step()
        first.append(tokens[0])
        second.append(tokens[1])
    third = [rows.fill_row(0, prompts[2])]
    third += [rows.step()[0] for _ in range(14)]
    assert first == alone[0] and second == alone[1][:30] and third == alone[2][:15]
    assert rows.cache.positions.tolist() == [11 + 14, 20 + 29 + 14]


def test_a_torch_rows_cell_times_a_batch_on_the_one_clock(prompts, alone) -> None:
    engine, _, generator = load("torch_rows")
    batch = [prompts[0], prompts[2], prompts[0]]  # a cell's prompts have one length (11)
    timing = time_generation(generator, batch, 9)
    assert timing.tokens == [alone[0][:9], alone[2][:9], alone[0][:9]]
    assert generator.rows == 3 and len(timing.token_s) == 8
    with pytest.raises(ValueError, match="4 prompts for 3 rows"):
        generator.prefill(prompts + prompts[:1], 9)
    with pytest.raises(ValueError, match="a 64-token prompt in rows of 64"):
        generator.fill_row(0, [1] * 64)
    reason = engine.cell_skip_reason(
        {"device": "cpu", "precision": "int4", "batch_size": 1, "model": MODEL}
    )
    assert reason == "engine torch_rows has no int4 path (it runs fp32, bf16, fp16)"


@pytest.mark.fast
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
