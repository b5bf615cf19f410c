"""The Generator protocol: text generation as prefill, then decode with a callback per token.

Time to first token (TTFT), time per output token (TPOT) and inter-token latency (ITL) must come
from one clock, the scenario's: a generator does not time itself. ``time_generation`` is that
clock: it reads ``time.perf_counter`` before prefill, when prefill returns (the first token is
prefill's output), and in the callback at every decoded token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

# Called once per decode step with that step's new token id for every prompt of the batch.
OnToken = Callable[[Sequence[int]], None]


@dataclass
class Prefilled:
    """What prefill hands decode: the first new token per prompt and the generator's own state
    (key/value cache, positions ...), opaque to the scenario."""

    first_tokens: list[int]
    state: Any = None


@runtime_checkable
class Generator(Protocol):
    """A model that generates tokens for a batch of prompts (token ids), device-synchronized.

    ``prefill`` runs the prompts and returns once the first new token of each is known (on the
    host); it is told the generation's length, which a request-based engine fixes when it takes
    the prompts (the others need not read it). ``decode`` produces up to ``max_new_tokens - 1``
    further tokens, calling ``on_token`` as soon as each step's tokens are known on the host,
    and returns every new token per prompt (the first included). Greedy decoding unless the
    generator's options say otherwise.
    """

    name: str

    def prefill(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> Prefilled: ...
    def decode(
        self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken
    ) -> list[list[int]]: ...
    def parameter_count(self) -> int: ...
    def peak_device_memory_mb(self) -> float | None: ...


@dataclass
class GenerationTiming:
    """One generation's clock readings, in seconds from the start of prefill."""

    prompt_tokens: int  # per prompt (the longest)
    batch: int
    first_token_s: float  # TTFT: prefill's end
    token_s: list[float] = field(default_factory=list)  # each later token's arrival
    tokens: list[list[int]] = field(default_factory=list)

    @property
    def new_tokens(self) -> int:
        """New tokens per prompt, the first included."""
        return 1 + len(self.token_s)

    @property
    def total_s(self) -> float:
        return self.token_s[-1] if self.token_s else self.first_token_s

    @property
    def inter_token_s(self) -> list[float]:
        """ITL: the gap before each decoded token (the first follows prefill)."""
        marks = [self.first_token_s, *self.token_s]
        return [b - a for a, b in zip(marks, marks[1:], strict=False)]

    @property
    def time_per_output_token_s(self) -> float | None:
        """TPOT: decode time over the tokens decode produced (None with no decoded token)."""
        if not self.token_s:
            return None
        return (self.token_s[-1] - self.first_token_s) / len(self.token_s)

    @property
    def tokens_per_s(self) -> float:
        """New tokens of the whole batch per second of the whole generation."""
        return self.batch * self.new_tokens / self.total_s


def time_generation(
    generator: Generator, prompts: Sequence[Sequence[int]], max_new_tokens: int
) -> GenerationTiming:
    """Generate up to `max_new_tokens` per prompt, reading one clock at every token."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1 (got {max_new_tokens})")
    token_s: list[float] = []
    start = time.perf_counter()
    prefilled = generator.prefill(prompts, max_new_tokens)
    first = time.perf_counter() - start

    def on_token(_tokens: Sequence[int]) -> None:
        token_s.append(time.perf_counter() - start)

    tokens = generator.decode(prefilled, max_new_tokens, on_token) if max_new_tokens > 1 else []
    return GenerationTiming(
        prompt_tokens=max(len(p) for p in prompts),
        batch=len(prompts),
        first_token_s=first,
        token_s=token_s,
        tokens=tokens or [[t] for t in prefilled.first_tokens],
    )
