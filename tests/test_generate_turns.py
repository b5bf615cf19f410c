"""Batches stepped in turn (`max_batches` above 1): the generate server's model thread steps each
running batch a token at a time and starts waiting streams as a new batch between two steps, so
a stream that arrives while a long batch runs waits for a step, not for that batch's end. Each
batch holds its own generator slot: the torch loop's static cache and host buffers."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from devicebench.frameworks.generator import Prefilled, time_generation
from devicebench.generation.serving import GoodputSettings, server_arguments
from devicebench.serving.generate_app import Limits
from devicebench.serving.generate_streams import Streams
from devicebench.workloads import textgen_llm

pytestmark = pytest.mark.fast


def test_two_generations_stepped_in_turn_each_get_their_own_greedy_tokens() -> None:
    from devicebench.engines.generative._torch_loop import TorchGreedy

    model = textgen_llm.build_model("llama-tiny", "cpu", "fp32", seed=1)
    first, second = np.random.default_rng(0).integers(0, 512, (2, 2, 12)).tolist()
    eager = TorchGreedy(model, "cpu", static=False, compile=False)
    alone = [time_generation(eager, prompts, 9).tokens for prompts in (first, second)]
    static = TorchGreedy(model, "cpu", static=True, compile=False, max_cache_len=21)
    runs = []
    for slot, prompts in enumerate((first, second)):
        static.slot = slot
        prefilled = static.prefill(prompts, 9)
        runs.append(([[t] for t in prefilled.first_tokens], static.steps(prefilled, 9)))
    for _ in range(8):  # a step of one, then of the other: each writes its own cache
        for rows, steps in runs:
            for row, token in zip(rows, next(steps), strict=True):
                row.append(token)
    assert all(next(steps, None) is None for _, steps in runs)  # 8 steps after the first token
    assert [rows for rows, _ in runs] == alone
    assert len(static._caches) == 2  # one per slot, at this batch size


def test_the_late_reader_hands_each_steps_tokens_on_one_step_late() -> None:
    """Its order, with CPU stand-ins for the pinned buffers and CUDA events (no GPU here): each
    push returns the step before's tokens, and finish the last step's."""
    import torch

    from devicebench.engines.generative._torch_loop import _LateReader

    class Event:
        def record(self) -> None: ...
        def synchronize(self) -> None: ...

    reader = _LateReader.__new__(_LateReader)
    reader._buffers, reader._events = torch.zeros((2, 2), dtype=torch.long), (Event(), Event())
    reader._count = 0
    for _ in range(2):  # a second generation starts with nothing pending
        reader.start()
        got = [reader.push(torch.tensor([step, step + 10])) for step in range(3)]
        assert [*got, reader.finish(), reader.finish()] == [None, [0, 10], [1, 11], [2, 12], None]


class SteppingGenerator:
    """Tokens of a batch's prompt length, a step every 2 ms; records the slots it was given."""

    name = "stepping"

    def __init__(self) -> None:
        self.slot = 0
        self.slots: list[int] = []

    def prefill(self, prompts, max_new_tokens):
        self.slots.append(self.slot)
        return Prefilled(first_tokens=[len(prompts[0])] * len(prompts))

    def steps(self, prefilled, max_new_tokens):
        for _ in range(max_new_tokens - 1):
            time.sleep(0.002)
            yield list(prefilled.first_tokens)

    def decode(self, prefilled, max_new_tokens, on_token):
        for tokens in self.steps(prefilled, max_new_tokens):
            on_token(tokens)


async def _long_then_short(max_batches: int) -> tuple[list[str], dict, list[int], list[list]]:
    """A 400-token stream, then, once it streams, a 3-token stream of another prompt length:
    which ended first, the counts, the slots and each stream's lines."""
    counts = {"ok": 0, "cut": 0, "failed": 0, "batches": 0, "largest_batch": 0, "rows_run": 0}
    counts["batches_at_once"] = 0
    generator = SteppingGenerator()
    limits = Limits(max_batch=4, max_batches=max_batches, max_new_tokens=400)
    streams = Streams(generator, limits, counts)
    ended: list[str] = []

    async def lines(name: str, stream) -> list[str]:
        got = [line async for line in stream.lines()]
        ended.append(name)
        return got

    long = asyncio.create_task(lines("long", streams.open([1, 2, 3, 4, 5], 400)))
    while counts["batches"] == 0:
        await asyncio.sleep(0.005)
    short = await lines("short", streams.open([1, 2], 3))
    said = [await long, short]
    streams.model_thread.shutdown(wait=True)
    return ended, counts, generator.slots, said


def test_a_stream_arriving_during_a_long_batch_starts_between_two_steps() -> None:
    ended, counts, slots, (long, short) = asyncio.run(_long_then_short(max_batches=2))
    assert ended == ["short", "long"]  # it did not wait for the 400-token batch to end
    assert counts["batches_at_once"] == 2 and counts["ok"] == 2 and slots == [0, 1]
    assert short == ['{"token": 2}\n'] * 3 + ['{"done": true, "tokens": 3}\n']
    assert long[:-1] == ['{"token": 5}\n'] * 400 and long[-1] == '{"done": true, "tokens": 400}\n'


def test_with_one_batch_at_a_time_the_stream_waits_for_the_batch_to_end() -> None:
    ended, counts, slots, _ = asyncio.run(_long_then_short(max_batches=1))
    assert ended == ["long", "short"]
    assert counts["batches_at_once"] == 0 and counts["ok"] == 2 and slots == [0, 0]


def test_a_slot_is_free_again_once_its_batch_ends() -> None:
    async def three_in_a_row() -> list[int]:
        counts = dict.fromkeys(("ok", "cut", "failed", "batches", "largest_batch"), 0)
        counts |= {"rows_run": 0, "batches_at_once": 0}
        generator = SteppingGenerator()
        streams = Streams(generator, Limits(max_batches=2, max_new_tokens=4), counts)
        for prompt in ([1], [1, 2], [1, 2, 3]):
            [line async for line in streams.open(prompt, 4).lines()]
        streams.model_thread.shutdown(wait=True)
        return generator.slots

    assert asyncio.run(three_in_a_row()) == [0, 0, 0]


class WholeBatchGenerator:
    name = "whole"

    def prefill(self, prompts, max_new_tokens):
        return Prefilled(first_tokens=[0] * len(prompts))

    def decode(self, prefilled, max_new_tokens, on_token):
        return [[0] for _ in prefilled.first_tokens]


def test_a_generator_without_steps_cannot_be_stepped_in_turn() -> None:
    with pytest.raises(ValueError, match="max_batches 2: generator whole decodes a batch whole"):
        Streams(WholeBatchGenerator(), Limits(max_batches=2), {})


def test_the_config_sets_the_servers_batches_in_turn() -> None:
    goodput = GoodputSettings.from_config({"max_batch": 8, "max_batches": 2})
    settings = dict(model="llama-tiny", generator="torch_eager", device="cpu", precision="fp32")
    arguments = server_arguments(settings | dict(seed=0, prompt_len=8, output_len=4), goodput)
    assert arguments[arguments.index("--max-batches") + 1] == "2"
    with pytest.raises(ValueError, match="max_batches must be a whole number above 0"):
        GoodputSettings.from_config({"max_batches": 0})


def test_an_engine_that_decodes_a_batch_whole_is_refused_before_its_server_starts(
    tmp_path,
) -> None:
    from devicebench.generation.serving import run_serving

    settings = dict(model="llama-tiny", generator="openvino_genai", device="cpu", seed=0)
    settings |= dict(precision="int8", prompt_len=8, output_len=4, log_dir=str(tmp_path))
    section = run_serving(settings, [[1] * 8], {"max_batches": 2}, time.perf_counter(), None)
    assert section["status"] == "server_failed" and section["goodput_qps"] is None
    assert "max_batches 2: engine openvino_genai decodes a batch whole" in section["message"]
    assert not (tmp_path / "serving").exists()  # no server, no logs
