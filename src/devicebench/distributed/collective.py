"""What every data-parallel backend shares: barriers and decisions all ranks take together.

The driver repeats a pass until the repetition has lasted long enough; each rank measures its own
clock, so at the margin one rank would go on and another stop, and the next all-reduce would wait
for ever. `all_agree` makes the decision one: any rank wanting another pass means all run it.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


class RankGroup:
    """Mixin for a backend whose ranks run in the default process group; needs `self.device`."""

    distributed = True  # run.inprocess.make_backend refuses a gpus > 1 cell whose backend is not

    def _barrier(self) -> None:
        self.sync()
        if self.device.type == "cuda":
            dist.barrier(device_ids=[torch.cuda.current_device()])
        else:
            dist.barrier()

    def all_agree(self, more: bool) -> bool:
        """True on every rank when any rank says True (another pass for all)."""
        flag = torch.tensor([1 if more else 0], device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())
