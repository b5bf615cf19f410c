"""What every torch generator reports of its model: parameters and the device's peak memory."""

from __future__ import annotations

from typing import Any


class TorchModelFacts:
    """A generator holding a torch model (`model`) on `device`."""

    model: Any
    device: str

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def peak_device_memory_mb(self) -> float | None:
        if self.device != "cuda":
            return None
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
