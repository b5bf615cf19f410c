"""The Generator seam: one clock gives TTFT, TPOT and ITL over a real tiny model."""

from __future__ import annotations

import pytest
from tiny_generator import TinyGenerator

from devicebench.frameworks.generator import Generator, time_generation


def test_a_tiny_model_is_a_generator() -> None:
    assert isinstance(TinyGenerator(), Generator)


def test_one_clock_gives_first_token_and_every_later_token() -> None:
    generator = TinyGenerator()
    timing = time_generation(generator, [[1, 2, 3], [4, 5, 6]], max_new_tokens=6)
    assert timing.batch == 2 and timing.prompt_tokens == 3
    assert timing.new_tokens == 6
    assert [len(row) for row in timing.tokens] == [6, 6]
    assert len(timing.inter_token_s) == 5
    assert timing.token_s == sorted(timing.token_s)  # one clock: readings only grow
    assert timing.first_token_s <= timing.token_s[0]
    decoded = timing.token_s[-1] - timing.first_token_s
    assert timing.time_per_output_token_s == pytest.approx(decoded / 5)
    # greedy decoding is deterministic: the same prompt gives the same tokens
    again = time_generation(generator, [[1, 2, 3], [4, 5, 6]], max_new_tokens=6)
    assert again.tokens == timing.tokens


def test_a_single_token_needs_no_decode() -> None:
    timing = time_generation(TinyGenerator(), [[7, 8]], max_new_tokens=1)
    assert timing.new_tokens == 1 and timing.time_per_output_token_s is None
    assert len(timing.tokens[0]) == 1


def test_no_tokens_asked_is_an_error() -> None:
    with pytest.raises(ValueError, match="max_new_tokens"):
        time_generation(TinyGenerator(), [[1]], max_new_tokens=0)
