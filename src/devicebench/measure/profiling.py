"""torch.profiler on a few extra steps of a cell, outside its timed section.

The profiled steps run after the timed repetitions, so the profiler's own overhead never reaches
a reported time. The record keeps the top operators by self CPU time and by self device (CUDA)
time, which is what the study's CPU-vs-GPU operator tables compare.
"""

from __future__ import annotations

from typing import Any

TOP_N = 15
PROFILE_STEPS = 5


def profile_backend(backend: Any, settings: dict[str, Any], steps: int = PROFILE_STEPS) -> dict:
    """Profile `steps` train steps of a cell that trains a fixed run (train: scenarios' `trains`,
    not `to_target`), else `steps` inference batches, of a torch backend."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from devicebench.scenarios import modes

    activities = [ProfilerActivity.CPU]
    cuda = str(settings["device"]) == "cuda" and torch.cuda.is_available()
    if cuda:
        activities.append(ProfilerActivity.CUDA)
    train = settings["mode"] in modes(trains=True, to_target=False)
    run = backend.train_steps if train else backend.infer_batches
    run(1)  # settle after evaluation, outside the profile
    with profile(activities=activities) as prof:
        run(steps)
    events = prof.key_averages()
    rows = []
    for event in events:
        device_us = float(getattr(event, "self_device_time_total", 0.0) or 0.0)
        rows.append(
            {
                "op": event.key,
                "calls": int(event.count),
                "self_cpu_ms": float(event.self_cpu_time_total) / 1000.0,
                "self_device_ms": device_us / 1000.0,
            }
        )
    total_cpu = sum(r["self_cpu_ms"] for r in rows) or 1.0
    total_device = sum(r["self_device_ms"] for r in rows) or 1.0
    for r in rows:
        r["self_cpu_pct"] = 100.0 * r["self_cpu_ms"] / total_cpu
        r["self_device_pct"] = 100.0 * r["self_device_ms"] / total_device
    by_cpu = sorted(rows, key=lambda r: r["self_cpu_ms"], reverse=True)[:TOP_N]
    by_device = (
        sorted(rows, key=lambda r: r["self_device_ms"], reverse=True)[:TOP_N] if cuda else []
    )
    return {
        "steps": steps,
        "what": "train steps" if train else "inference batches",
        "activities": [a.name for a in activities],
        "top_self_cpu": by_cpu,
        "top_self_device": [r for r in by_device if r["self_device_ms"] > 0],
    }
