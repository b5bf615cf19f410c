"""One rank of a data-parallel cell: `torchrun ... --module devicebench.distributed.rank S R`.

Each rank joins the process group (NCCL on CUDA, gloo on the CPU), runs the same measurement as
a one-device worker with the DDP backend, and rank 0 writes the result with throughput counted
over all ranks (distributed/window.py). A failing rank exits non-zero so torchrun stops the
others instead of leaving them waiting in a collective.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from devicebench.distributed.launch import rank_failure_path
from devicebench.distributed.window import apply_world_throughput
from devicebench.measure import environment
from devicebench.measure.marks import marks
from devicebench.record import write_atomic
from devicebench.run import limits
from devicebench.run.processes import die_with_parent, exit_without_teardown


def join_group(settings: dict[str, Any]) -> tuple[int, int]:
    """Set this rank's device and join the process group; returns (rank, world size)."""
    import torch
    import torch.distributed as dist

    local = int(os.environ["LOCAL_RANK"])
    backend = "gloo"
    if settings["device"] == "cuda":
        torch.cuda.set_device(local)
        backend = "nccl"
    timeout = datetime.timedelta(seconds=float(settings["timeout_s"]))
    dist.init_process_group(backend=backend, timeout=timeout)
    return dist.get_rank(), dist.get_world_size()


def main(argv: list[str]) -> int:
    import torch.distributed as dist

    from devicebench.run.worker import measure

    die_with_parent()  # torchrun killed by the runner's timeout: no rank measures on
    settings_path, result_path = Path(argv[0]), Path(argv[1])
    settings = json.loads(settings_path.read_text())
    rank = int(os.environ["RANK"])
    if rank:  # one progress log per cell (rank 0's); every rank's errors still reach stderr
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    settings["sample_utilization"] = rank == 0 and settings.get("sample_utilization", True)
    try:
        rank, world = join_group(settings)
        result = measure(settings)
        apply_world_throughput(result, settings, world)  # a collective: every rank
    except Exception as error:  # noqa: BLE001 - the failure becomes the cell's record
        limits.lift_memory_limit()
        traceback.print_exc()
        oom = limits.is_oom(error)
        result = {
            "status": "oom" if oom else "error",
            "message": f"rank {rank}: {type(error).__name__}: {error}",
            "environment": environment.capture(int(settings["threads_resolved"])),
        }
        write_atomic(rank_failure_path(result_path, rank) if rank else result_path, result)
        return 1  # torchrun then stops the other ranks
    if rank == 0:
        if isinstance(result.get("timings"), dict):  # rank 0's stages (devicebench.measure.marks)
            result["timings"]["marks"] = marks()
        write_atomic(result_path, result)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    exit_without_teardown(main(sys.argv[1:]))
