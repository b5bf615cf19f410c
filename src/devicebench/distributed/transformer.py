"""The transformer loop (text_classify, cifar10_finetune on torch) under DistributedDataParallel.

As for the classic tasks (distributed/backend.py): every rank draws the same shuffled order
(same generator seed) and takes rows [rank x batch, (rank + 1) x batch) of each global batch of
batch x world rows, so the ranks together see the batches one process sees at the global batch;
DDP averages the gradients. The workload builds its TransformerBackend as usual; `distribute`
turns it into this twin before any model exists.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from devicebench.distributed.collective import RankGroup
from devicebench.frameworks.transformer_backend import TransformerBackend


class DDPTransformerBackend(RankGroup, TransformerBackend):
    """TransformerBackend over the process group that devicebench.distributed.rank set up."""

    def _join(self) -> None:
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.ddp: DistributedDataParallel | None = None
        self.fit_loop = (
            f"{self.fit_loop}; DistributedDataParallel over {self.world} ranks "
            f"({dist.get_backend()}): each rank takes its slice of every global batch, "
            "gradients all-reduced (mean), device sync + barrier before clock reads"
        )

    @property
    def train_samples(self) -> int:
        """This rank's share of an epoch: the driver divides it by the per-device batch."""
        return len(self.train["labels"]) // self.world

    def new_model(self, seed: int) -> None:
        """The same initial weights on every rank (DDP also broadcasts rank 0's), then wrapped."""
        super().new_model(seed)
        if self.ddp is None:
            ids = [torch.cuda.current_device()] if self.device.type == "cuda" else None
            self.ddp = DistributedDataParallel(self.module, device_ids=ids)
            self.model = torch.compile(self.ddp) if self.compiled else self.ddp
        if self.rank:  # own random streams (dropout) for ranks other than 0
            torch.manual_seed(seed + 7919 * self.rank)
        self._barrier()

    def train_steps(self, steps: int) -> None:
        """`steps` DDP steps over one shuffled pass of the whole set; sync + barrier at the end."""
        self.module.train()
        batch = self.batch_size
        span, offset = batch * self.world, batch * self.rank
        total = len(self.train["labels"])
        order = torch.randperm(total, device=self.device, generator=self.generator)
        first = 0
        if self.compiled and "train" not in self.compile_s and steps:
            self._first_compiled("train", lambda: self._train_step(order[offset : offset + batch]))
            first = 1
        for step in range(first, steps):
            start = step * span + offset
            self._train_step(order[start : start + batch])
        self._barrier()


TWINS: dict[type, type] = {TransformerBackend: DDPTransformerBackend}


def distribute(backend: Any) -> Any:
    """The data-parallel twin of a freshly built backend (same state), or a clear error."""
    twin_class = TWINS.get(type(backend))
    if twin_class is None:
        raise RuntimeError(
            f"gpus > 1 but the {type(backend).__name__} loop is not data-parallel: "
            "no number is recorded for a loop that would train one model per GPU"
        )
    twin = twin_class.__new__(twin_class)
    twin.__dict__.update(backend.__dict__)
    twin._join()
    return twin
