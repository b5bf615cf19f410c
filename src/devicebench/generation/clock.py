"""The token clock: when each request's tokens appeared, and the latencies vLLM reports.

A generator calls ``on_token`` once per decode step with the tokens it just produced for every
request of its batch; the clock stamps them with one monotonic clock, so TTFT, TPOT and ITL come
from the same timestamps. Definitions follow vLLM's ``benchmark_serving``:
TTFT = first token - request start; TPOT per request = (last token - first token) / (tokens - 1);
ITL = the gaps between a request's consecutive tokens. Percentiles are numpy's linear ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class RequestTimes:
    """One request's start and the time of each of its output tokens."""

    start: float
    prompt_tokens: int
    token_times: list[float] = field(default_factory=list)

    @property
    def ttft(self) -> float:
        return self.token_times[0] - self.start

    @property
    def tpot(self) -> float | None:
        """(last - first) / (tokens - 1); None for a request of one output token."""
        if len(self.token_times) < 2:
            return None
        return (self.token_times[-1] - self.token_times[0]) / (len(self.token_times) - 1)

    @property
    def itls(self) -> list[float]:
        return list(np.diff(self.token_times))


class TokenClock:
    """Stamps the tokens of one batch of requests as the generator hands them out."""

    def __init__(self, prompt_tokens: Sequence[int], now: Callable[[], float] = time.perf_counter):
        self._now = now
        self.prompt_tokens = list(prompt_tokens)
        self.requests: list[RequestTimes] = []

    def start(self) -> None:
        """The batch's requests start now (before prefill)."""
        t = self._now()
        self.requests = [RequestTimes(t, n) for n in self.prompt_tokens]

    def on_token(self, tokens: Sequence[Any]) -> None:
        """One decode step's tokens, one per request still generating (in request order);
        ``None`` for a request that has finished."""
        if not self.requests:
            raise RuntimeError("TokenClock.on_token before start()")
        if len(tokens) != len(self.requests):
            raise ValueError(f"{len(tokens)} tokens for a batch of {len(self.requests)} requests")
        t = self._now()
        for request, token in zip(self.requests, tokens, strict=True):
            if token is not None:
                request.token_times.append(t)


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def check_counts(requests: Sequence[RequestTimes], prompt_len: int, output_len: int) -> None:
    """Every request had the prompt and produced the tokens asked for (EOS is ignored)."""
    for index, request in enumerate(requests):
        if request.prompt_tokens != prompt_len:
            raise ValueError(
                f"request {index}: {request.prompt_tokens} prompt tokens, {prompt_len} asked"
            )
        if len(request.token_times) != output_len:
            raise ValueError(
                f"request {index}: {len(request.token_times)} output tokens, {output_len} asked"
            )


def summarize(batches: Sequence[Sequence[RequestTimes]]) -> dict[str, float | int | None]:
    """The latency and throughput figures of several timed batches of requests.

    prefill tokens/s: prompt tokens over the batches' times to first token; decode tokens/s:
    tokens after the first over the time from the first token to the last; output tokens/s:
    every output token over the batches' whole times.
    """
    requests = [r for batch in batches for r in batch]
    if not requests or any(not r.token_times for r in requests):
        raise ValueError("a request produced no token")
    ttfts = [r.ttft for r in requests]
    tpots = [t for r in requests if (t := r.tpot) is not None]
    itls = [gap for r in requests for gap in r.itls]
    prefill_s = decode_s = total_s = 0.0
    prompt = output = decode_tokens = 0
    for batch in batches:
        start = min(r.start for r in batch)
        first = max(r.token_times[0] for r in batch)
        last = max(r.token_times[-1] for r in batch)
        prefill_s += first - start
        decode_s += last - first
        total_s += last - start
        prompt += sum(r.prompt_tokens for r in batch)
        output += sum(len(r.token_times) for r in batch)
        decode_tokens += sum(len(r.token_times) - 1 for r in batch)
    return {
        "requests": len(requests),
        "ttft_p50_s": percentile(ttfts, 50),
        "ttft_p99_s": percentile(ttfts, 99),
        "tpot_p50_s": percentile(tpots, 50),
        "tpot_p99_s": percentile(tpots, 99),
        "itl_p50_s": percentile(itls, 50),
        "itl_p99_s": percentile(itls, 99),
        "prefill_tokens_per_s": prompt / prefill_s if prefill_s > 0 else None,
        "decode_tokens_per_s": decode_tokens / decode_s if decode_s > 0 and decode_tokens else None,
        "output_tokens_per_s": output / total_s if total_s > 0 else None,
        "prompt_tokens": prompt,
        "output_tokens": output,
        "timed_s": total_s,
    }
