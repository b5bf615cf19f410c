"""How the cell runner starts a data-parallel cell: world size, skips, torchrun and environment.

The `gpus` axis counts devices on CUDA cells and ranks (processes, gloo) on CPU cells; each rank
holds the per-device batch, so the global batch is batch x gpus.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from devicebench.measure.devices import cuda_device_count
from devicebench.scenarios import modes


def world_size(settings: dict[str, Any]) -> int:
    """Ranks the cell runs on: its `gpus` axis value, 1 where the config sets none."""
    return int(settings.get("gpus", 1) or 1)


def visible_gpus() -> int:
    """GPUs this process may use: the CUDA_VISIBLE_DEVICES list where set (SLURM sets it)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() not in ("", "-1"):
        return min(len([v for v in visible.split(",") if v.strip()]), cuda_device_count())
    return cuda_device_count()


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Why a multi-rank cell cannot run here, or None when it can."""
    world = world_size(settings)
    if world == 1:
        return None
    if settings["framework"] != "torch":
        return (
            f"framework {settings['framework']} with gpus={world}: data-parallel cells run on "
            "torch DDP only (Keras' distribution API is not wired into this study)"
        )
    if settings["mode"] not in modes(trains=True, to_target=False):  # a fixed run, not converge
        return f"gpus={world} applies to train cells only"
    if settings["device"] == "cuda":
        have = visible_gpus()
        if world > have:
            return f"cell asks for {world} GPUs but host {os.uname().nodename} has {have}"
    elif settings["device"] != "cpu":
        return f"data-parallel cells run on cuda or cpu, not {settings['device']}"
    return None


def threads_per_rank(threads: int, world: int) -> int:
    """CPU threads of each rank: the cell's threads shared among its ranks (at least one)."""
    return max(1, threads // world)


def torchrun_command(settings_path: Path, result_path: Path, world: int) -> list[str]:
    """torchrun on one node, `world` ranks, each running devicebench.distributed.rank."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={world}",
        "--module",
        "devicebench.distributed.rank",
        str(settings_path),
        str(result_path),
    ]


def distributed_env(env: dict[str, str], settings: dict[str, Any]) -> dict[str, str]:
    """The launcher's environment: NVLink multicast off, the cell's GPUs visible."""
    env = dict(env)
    env["NCCL_NVLS_ENABLE"] = "0"
    world = world_size(settings)
    if settings["device"] == "cuda" and "CUDA_VISIBLE_DEVICES" not in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(world))
    return env


def rank_failure_path(result_path: Path, rank: int) -> Path:
    """Where a rank other than 0 leaves its failure, for the runner to report."""
    return result_path.with_name(f"{result_path.name}.rank{rank}")


def first_rank_failure(result_path: Path) -> Path | None:
    """A failure document some rank > 0 left, if any."""
    found = sorted(result_path.parent.glob(f"{result_path.name}.rank*"))
    return found[0] if found else None
