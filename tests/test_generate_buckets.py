"""A fixed-shape generator (CUDA graphs) behind the generate server runs each batch padded to the
smallest of its compiled batch sizes (powers of two up to max_batch), not to max_batch: one 8B
stream padded to 16 rows waited 0.50 s for its first token where the in-process cell took 0.05 s
(H200, 2026-11-29). A fake generator stands in for the CUDA-graph loop, which needs a GPU; the
server's real Streams drive it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from devicebench.frameworks.generator import Prefilled
from devicebench.serving.generate_app import Limits
from devicebench.serving.generate_streams import Streams, batch_buckets, padded_rows

pytestmark = pytest.mark.fast


def test_buckets_are_the_powers_of_two_under_max_batch_and_max_batch():
    assert batch_buckets(1) == (1,)
    assert batch_buckets(16) == (1, 2, 4, 8, 16)
    assert batch_buckets(12) == (1, 2, 4, 8, 12)
    assert [padded_rows(n, 16) for n in (1, 2, 3, 5, 9, 16)] == [1, 2, 4, 8, 16, 16]
    assert padded_rows(9, 12) == 12
    with pytest.raises(ValueError, match="max_batch must be positive"):
        batch_buckets(0)


class RecordingGenerator:
    """Records the rows of each prefill; the first prefill waits until released, so that the
    streams opened meanwhile wait and start as one batch."""

    def __init__(self, static: bool) -> None:
        self.static = static
        self.rows: list[int] = []
        self.release = threading.Event()

    def prefill(self, prompts, max_new_tokens):
        if not self.rows:
            assert self.release.wait(30)
        self.rows.append(len(prompts))
        return Prefilled(first_tokens=[7] * len(prompts))

    def decode(self, prefilled, max_new_tokens, on_token):
        for _ in range(max_new_tokens - 1):
            on_token([8] * len(prefilled.first_tokens))


async def _serve(generator: RecordingGenerator, waiting: int) -> tuple[list[list[str]], dict]:
    counts = {"ok": 0, "cut": 0, "failed": 0, "batches": 0, "largest_batch": 0, "rows_run": 0}
    streams = Streams(generator, Limits(max_batch=16, max_new_tokens=3), counts)
    first = streams.open([1, 2, 3], 3)  # alone: the model thread takes it at once
    while streams.waiting:
        await asyncio.sleep(0.01)  # until the model thread took it (it waits in its prefill)
    others = [streams.open([4, 5, 6], 3) for _ in range(waiting)]
    generator.release.set()
    said = [[line async for line in stream.lines()] for stream in (first, *others)]
    streams.model_thread.shutdown(wait=True)
    return said, counts


@pytest.mark.parametrize(("static", "rows"), [(True, [1, 8]), (False, [1, 5])])
def test_a_fixed_shape_generator_pads_a_batch_to_its_bucket_and_streams_get_only_their_rows(
    static, rows
):
    generator = RecordingGenerator(static)
    said, counts = asyncio.run(_serve(generator, waiting=5))
    assert generator.rows == rows  # five waiting streams: one batch, 8 rows where padded
    assert counts["batches"] == 2 and counts["largest_batch"] == 5 and counts["ok"] == 6
    assert counts["rows_run"] == sum(rows)
    for lines in said:  # each stream its own 3 tokens, none of the padding rows'
        assert lines == ['{"token": 7}\n', '{"token": 8}\n', '{"token": 8}\n',
                         '{"done": true, "tokens": 3}\n']  # fmt: skip
