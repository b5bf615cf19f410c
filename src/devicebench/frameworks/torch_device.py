"""What every torch backend does alike on its device: time inference batches, report peak memory.
One place, so the classic and transformer cells time alike."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable

import torch

from devicebench.frameworks import AUTOCAST


def autocast_dtype(precision: str) -> torch.dtype | None:
    """The autocast dtype of a precision (None: fp32 and tf32 run without autocast)."""
    name = AUTOCAST.get(precision)
    return None if name is None else getattr(torch, name)


def timed_batches(
    device: torch.device, batches: Iterable, forward: Callable, sync: Callable[[], None]
) -> list[float]:
    """Run `forward(batch)` for each batch; each one's latency in seconds.

    On a GPU, CUDA events between batches (no host sync inside the loop); on a CPU, the host
    clock around each batch, synchronised.
    """
    cuda = device.type == "cuda"
    marks = [torch.cuda.Event(enable_timing=True)] if cuda else []
    latencies = []
    if cuda:
        marks[0].record()
    for batch in batches:
        start = time.perf_counter()
        forward(batch)
        if cuda:
            marks.append(torch.cuda.Event(enable_timing=True))
            marks[-1].record()
        else:
            sync()
            latencies.append(time.perf_counter() - start)
    sync()
    if cuda:
        latencies = [a.elapsed_time(b) / 1000.0 for a, b in zip(marks, marks[1:], strict=False)]
    return latencies


class TorchDevice:
    """Mixin of a backend with a `device` and an `autocast_dtype`: device sync, autocast, peak
    device memory."""

    device: torch.device
    autocast_dtype: torch.dtype | None

    def sync(self) -> None:
        """Wait for queued device work, so a host clock read after it is honest."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        elif self.device.type == "mps":
            torch.mps.synchronize()

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def peak_device_memory_mb(self) -> float | None:
        if self.device.type == "cuda":
            return torch.cuda.max_memory_allocated(self.device) / 2**20
        return None
