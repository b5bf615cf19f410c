"""The torch backend under DistributedDataParallel: each rank trains its slice of a global batch.

Every rank draws the same shuffled order (same generator seed) and takes rows
[rank x batch, (rank + 1) x batch) of each global batch of batch x world rows, so the ranks
together see exactly the batches one process sees at the global batch size; DDP averages the
gradients. Timed calls end with a device sync and a barrier, so the driver's clock reads see
every rank's work done.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from devicebench.frameworks.torch_backend import TorchBackend


class DDPTorchBackend(TorchBackend):
    """TorchBackend over the process group that devicebench.distributed.rank set up."""

    def __init__(self, workload: Any, settings: dict[str, Any], dataset: Any) -> None:
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        super().__init__(workload, settings, dataset)
        self.module: torch.nn.Module | None = None
        self.fit_loop = (
            f"{TorchBackend.fit_loop}; DistributedDataParallel over {self.world} ranks "
            f"({dist.get_backend()}): each rank takes its slice of every global batch, "
            "gradients all-reduced (mean), device sync + barrier before clock reads"
        )

    @property
    def train_samples(self) -> int:
        """This rank's share of an epoch: the driver divides it by the per-device batch."""
        return len(self.y_train) // self.world

    def _barrier(self) -> None:
        self.sync()
        if self.device.type == "cuda":
            dist.barrier(device_ids=[torch.cuda.current_device()])
        else:
            dist.barrier()

    def new_model(self, seed: int) -> None:
        """The same initial weights on every rank (DDP also broadcasts rank 0's), then wrapped."""
        super().new_model(seed)
        self.module = self.model
        if self.rank:  # own random streams (dropout, augmentation) for ranks other than 0
            torch.manual_seed(seed + 7919 * self.rank)
        device_ids = [torch.cuda.current_device()] if self.device.type == "cuda" else None
        self.model = DistributedDataParallel(self.module, device_ids=device_ids)
        self._barrier()

    def train_steps(self, steps: int) -> None:
        """`steps` DDP steps over one shuffled pass of the whole set; sync + barrier at the end."""
        model, optimizer, batch = self.model, self.optimizer, self.batch_size
        x, y, loss_fn = self.x_train, self.y_train, self.loss_fn
        augment = self._augmented if self.augment else None
        scaler, autocast = self.scaler, self.autocast_dtype is not None
        span, offset = batch * self.world, batch * self.rank
        model.train()
        order = torch.randperm(len(self.y_train), device=self.device, generator=self.generator)
        for step in range(steps):
            index = order[step * span + offset : step * span + offset + batch]
            xb = x[index] if augment is None else augment(x[index])
            with self._autocast():
                logits = model(xb)
            loss = loss_fn(logits.float() if autocast else logits, y[index])
            optimizer.zero_grad(set_to_none=True)
            if autocast:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss.backward()
                optimizer.step()
        self._barrier()

    def evaluate(self) -> tuple[np.ndarray, float]:
        """The full held-out set through the unwrapped model (rank 0's numbers are recorded)."""
        wrapped, self.model = self.model, self.module
        try:
            return super().evaluate()
        finally:
            self.model = wrapped
