"""The latencies vLLM reports, from the seam's one clock (frameworks.generator.time_generation).

Each timed batch is a ``GenerationTiming``: seconds from the start of prefill to the first token
(prefill's output) and to every later token, stamped when the tokens reached the host. Every
request of a batch starts with it and receives its tokens at the batch's steps. Definitions follow
vLLM's ``benchmark_serving``: TTFT = first token - request start; TPOT per request = (last token -
first token) / (tokens - 1); ITL = the gaps between a request's consecutive tokens. Percentiles
are numpy's (linear), as vLLM's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def check_counts(timing: Any, *, batch: int, prompt_len: int, output_len: int) -> None:
    """The batch had the prompts and produced the tokens asked for (EOS ignored); ValueError
    naming what differs."""
    if timing.batch != batch or len(timing.tokens) != batch:
        raise ValueError(f"{len(timing.tokens)} requests answered, {batch} asked")
    if timing.prompt_tokens != prompt_len:
        raise ValueError(f"{timing.prompt_tokens} prompt tokens, {prompt_len} asked")
    counts = sorted({len(row) for row in timing.tokens})
    if counts != [output_len] or timing.new_tokens != output_len:
        raise ValueError(
            f"output tokens per request {counts} (the clock saw {timing.new_tokens}); "
            f"{output_len} asked"
        )


def summarize(timings: Sequence[Any]) -> dict[str, float | int | None]:
    """Latency and throughput of several timed batches (GenerationTiming each).

    prefill tokens/s: prompt tokens over the batches' times to first token; decode tokens/s:
    tokens after the first over the time from the first token to the last; output tokens/s:
    every output token over the batches' whole times.
    """
    if not timings:
        raise ValueError("no timed generation")
    ttfts, tpots, itls = [], [], []
    prefill_s = decode_s = total_s = 0.0
    prompt = output = decoded = requests = 0
    for t in timings:
        ttfts += [t.first_token_s] * t.batch
        if (tpot := t.time_per_output_token_s) is not None:
            tpots += [tpot] * t.batch
        itls += list(t.inter_token_s) * t.batch
        prefill_s += t.first_token_s
        decode_s += t.total_s - t.first_token_s
        total_s += t.total_s
        requests += t.batch
        prompt += t.prompt_tokens * t.batch
        output += t.new_tokens * t.batch
        decoded += (t.new_tokens - 1) * t.batch
    return {
        "requests": requests,
        "ttft_p50_s": percentile(ttfts, 50),
        "ttft_p99_s": percentile(ttfts, 99),
        "tpot_p50_s": percentile(tpots, 50),
        "tpot_p99_s": percentile(tpots, 99),
        "itl_p50_s": percentile(itls, 50),
        "itl_p99_s": percentile(itls, 99),
        "prefill_tokens_per_s": prompt / prefill_s if prefill_s > 0 else None,
        "decode_tokens_per_s": decoded / decode_s if decoded and decode_s > 0 else None,
        "output_tokens_per_s": output / total_s if total_s > 0 else None,
        "prompt_tokens": prompt,
        "output_tokens": output,
        "timed_s": total_s,
    }
