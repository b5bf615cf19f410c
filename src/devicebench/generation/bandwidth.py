"""Memory bandwidth measured in the cell, and the decode bound it sets.

Decoding one token reads every weight and the request's KV cache once, so a device that reads
B bytes/s cannot decode faster than B / (weight bytes + KV bytes read per step) steps per second.
The bandwidth is measured in the same process as the cell, on the same threads: on the CPU a
STREAM-like read (a sum over a buffer far larger than the caches), on a GPU a device-to-device
copy (read plus write, as STREAM's Copy counts it). The best of several passes is kept, as
STREAM does.
"""

from __future__ import annotations

import time
from typing import Any

# A measured rate above the bound by more than this is an error of the cell (a wrong byte count
# or a clock that missed work), not a result.
BOUND_TOLERANCE = 1.05


def _best_pass(device: str, numel: int, passes: int) -> tuple[str, int, float]:
    """(method, bytes moved per pass, best seconds); the buffers die with this call."""
    import torch

    src = torch.ones(numel, dtype=torch.float32, device=device)
    if device == "cpu":
        method, moved = "cpu read (torch.sum over a float32 buffer)", src.numel() * 4
        run = lambda: float(src.sum())  # noqa: E731 - one pass, forced to finish
        sync = lambda: None  # noqa: E731
    else:
        dst = torch.empty_like(src)
        method, moved = "device copy (read + write, as STREAM Copy)", 2 * src.numel() * 4
        run = lambda: dst.copy_(src)  # noqa: E731
        sync = torch.cuda.synchronize
    run()  # first touch: pages and clocks
    sync()
    best = float("inf")
    for _ in range(passes):
        t0 = time.perf_counter()
        run()
        sync()
        best = min(best, time.perf_counter() - t0)
    return method, moved, best


def measure_bandwidth(device: str, buffer_mb: int = 1024, passes: int = 5) -> dict[str, Any]:
    """Bytes per second the device reads (CPU) or copies (GPU); the method says which."""
    if buffer_mb <= 0 or passes <= 0:
        raise ValueError(f"bandwidth buffer_mb and passes must be positive: {buffer_mb}, {passes}")
    method, moved, best = _best_pass(device, buffer_mb * 2**20 // 4, passes)
    if device != "cpu":  # the buffers are not the cell's: its peak memory starts after them
        import torch

        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return {
        "memory_bandwidth_gbs": moved / best / 1e9,
        "bandwidth_method": method,
        "bandwidth_buffer_mb": buffer_mb,
    }


def kv_cache_bytes(
    *, layers: int, kv_heads: int, head_dim: int, tokens: int, batch: int, bytes_per_value: float
) -> int:
    """Keys and values of every layer for `tokens` positions of `batch` requests."""
    return int(2 * layers * kv_heads * head_dim * tokens * batch * bytes_per_value)


def decode_bound(
    bandwidth_gbs: float, weight_bytes: float, kv_bytes_per_step: float, batch: int
) -> float:
    """Output tokens/s the bandwidth allows: each step reads the weights and the KV cache once
    and yields one token per request of the batch."""
    if bandwidth_gbs <= 0 or weight_bytes <= 0:
        raise ValueError(f"bandwidth {bandwidth_gbs} GB/s and weights {weight_bytes} B must be > 0")
    return batch * bandwidth_gbs * 1e9 / (weight_bytes + kv_bytes_per_step)


def bound_section(
    bandwidth_gbs: float,
    *,
    weight_bytes: float,
    kv_bytes_mean: float,
    batch: int,
    decode_tokens_per_s: float | None,
) -> dict[str, float | None]:
    """The record's bound and share; raises when the measured rate exceeds the bound."""
    bound = decode_bound(bandwidth_gbs, weight_bytes, kv_bytes_mean, batch)
    fraction = None if decode_tokens_per_s is None else decode_tokens_per_s / bound
    if fraction is not None and fraction > BOUND_TOLERANCE:
        raise BoundExceeded(
            f"decode {decode_tokens_per_s:.1f} tokens/s is {fraction:.2f}x the memory-bandwidth "
            f"bound {bound:.1f} tokens/s ({bandwidth_gbs:.1f} GB/s over {weight_bytes:.3g} B of "
            f"weights + {kv_bytes_mean:.3g} B of KV cache): a byte count or the clock is wrong"
        )
    return {"bandwidth_bound_tokens_per_s": bound, "bandwidth_fraction": fraction}


class BoundExceeded(ValueError):
    """A decode rate above what the memory could deliver."""
