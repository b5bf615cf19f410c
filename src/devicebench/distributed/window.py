"""Throughput of a data-parallel cell: samples of all ranks over one synchronised window.

Every rank times the same repetitions, and every timed call ends in a device sync and a barrier,
so a repetition's window is the same span on all ranks up to clock reading: its length is the
longest rank's, and the samples in it are the sum of every rank's. Rank 0's rate times the world
size (the former rule) assumed the ranks equal; this counts them.
"""

from __future__ import annotations

import os
from typing import Any

from devicebench.measure.timing import summarize


def gather_ranks(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rank's windows, passes and samples per pass, in rank order (a collective)."""
    import torch.distributed as dist

    mine = {
        "window_s": list(result["timings"]["window_s"]),
        "passes": list(result["timings"]["passes"]),
        "samples_per_pass": int(result["throughput"]["samples_per_pass"]),
        "samples_per_s": float(result["throughput"]["samples_per_s"]),
    }
    ranks: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(ranks, mine)
    return ranks


def world_throughput(ranks: list[dict[str, Any]], noise_cov: float) -> dict[str, Any]:
    """Per repetition: all ranks' samples over the longest rank's window; then the median."""
    passes = ranks[0]["passes"]
    if any(r["passes"] != passes for r in ranks):
        raise RuntimeError(
            f"ranks ran different passes per repetition: {[r['passes'] for r in ranks]}"
        )
    windows = [max(values) for values in zip(*(r["window_s"] for r in ranks), strict=True)]
    samples = sum(r["samples_per_pass"] for r in ranks)
    per_pass = [w / n for w, n in zip(windows, passes, strict=True)]
    summary = summarize(per_pass, noise_cov=noise_cov)
    return {
        "timings": {**summary, "repetitions_s": per_pass, "window_s": windows, "passes": passes},
        "samples_per_s": samples / summary["median_s"],
        "samples_per_pass": samples,
        "samples_per_s_by_rank": [r["samples_per_s"] for r in ranks],
    }


def apply_world_throughput(result: dict[str, Any], settings: dict[str, Any], world: int) -> None:
    """Rank 0's record with the world's throughput, timings and the cell's layout."""
    import torch.distributed as dist

    counted = world_throughput(gather_ranks(result), float(settings["noise_cov"]))
    batch = int(settings["batch_size"])
    result["timings"].update(counted["timings"])
    result["throughput"] |= {
        "samples_per_s": counted["samples_per_s"],
        "samples_per_pass": counted["samples_per_pass"],
        "samples_per_s_by_rank": counted["samples_per_s_by_rank"],
        "counted_as": "all ranks' samples / the longest rank's window, per repetition",
        "per_device_batch_size": batch,
        "global_batch_size": batch * world,
    }
    result["distributed"] = {
        "world_size": world,
        "backend": dist.get_backend(),
        "launcher": "torchrun --standalone",
        "per_device_batch_size": batch,
        "global_batch_size": batch * world,
        "threads_per_rank": int(settings["threads_resolved"]),
        "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),
        "quality_from": "rank 0, full held-out set",
    }
