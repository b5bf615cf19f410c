"""Model FLOPs per sample, counted by torch.utils.flop_counter on the torch twin of a task's model.

Every framework's model of a task has the same architecture, so the torch twin's count serves
records from any framework. Training counts one forward and one backward pass directly (not the
3x-forward rule of thumb); inference counts one forward pass. Optimizer updates are not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from devicebench.workloads import hook

COUNT_BATCH = 2


@cache
def flops_per_sample(task: str, model: str, mode: str) -> float:
    """FLOPs one sample costs: forward + backward for `train`, forward for `infer` (or serve)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from devicebench.frameworks.torch_models import INPUT_SHAPES, build_model

    net = build_model(task, model, seed=0)
    x = torch.randn(COUNT_BATCH, *INPUT_SHAPES[task])
    counter = FlopCounterMode(display=False)
    if mode == "train":
        net.train()
        with counter:
            net(x).sum().backward()
    else:
        net.eval()
        with torch.no_grad(), counter:
            net(x)
    return counter.get_total_flops() / COUNT_BATCH


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)  # NaN in a table row


def model_flops(
    task: str, model: str, settings: Mapping[str, Any] | None = None
) -> dict[str, float | None]:
    """Both counts for a record's model section; None where the count fails (no torch twin).

    A workload module counts its own (its FLOPs depend on the cell's axes: seq_len, image size),
    from `settings`: the cell's run settings or a table row holding its axes.
    """
    counter = hook(task, "flops_per_sample")
    if counter is not None:
        cell = {k: v for k, v in (settings or {}).items() if not _missing(v)}
        cell |= {"task": task, "model": model}
        try:
            return {
                f"flops_per_sample_{mode}": float(counter(cell, mode))
                for mode in ("train", "infer")
            }
        except (ImportError, KeyError, ValueError):
            return {"flops_per_sample_train": None, "flops_per_sample_infer": None}
    try:
        return {
            "flops_per_sample_train": flops_per_sample(task, model, "train"),
            "flops_per_sample_infer": flops_per_sample(task, model, "infer"),
        }
    except (ImportError, KeyError):
        return {"flops_per_sample_train": None, "flops_per_sample_infer": None}
