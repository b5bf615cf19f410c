"""GPU cells of the classic tasks compiled (task key `gpu_compiled`): the GPU side at its best.

Small models (the MLP, fastText, a BiLSTM) run eagerly are launch-bound on a GPU: bf16 is slower
than fp32 and the GPU idles. A compiled cell (torch.compile, CUDA graphs through mode
reduce-overhead; frameworks/torch_backend.py) is added beside each eager torch GPU train and
infer cell, as axis `compile~compiled`, so the eager cells keep their ids. Tasks with their own
`compile` axis (the transformer tasks) choose it with `compiles` instead.
"""

from __future__ import annotations

from typing import Any

from devicebench.plan.config import ConfigError
from devicebench.scenarios import modes


def compiled_axes(
    task: str, settings: dict[str, Any], spec_axes: dict[str, Any], values: dict[str, Any]
) -> list[dict[str, Any]]:
    """[{}] (the eager cell, no axis), plus {"compile": "compiled"} where the task asks and the
    cell is a torch GPU cell that repeats a pass of fixed samples (train, infer: scenarios'
    `fixed_passes`)."""
    if not settings.get("gpu_compiled"):
        return [{}]
    if "compile" in spec_axes:
        raise ConfigError(
            f"tasks.{task}.gpu_compiled: {task} has its own compile axis; use `compiles`"
        )
    torch_gpu = values["framework"] == "torch" and values["device"] == "cuda"
    if not torch_gpu or values["mode"] not in modes(fixed_passes=True):
        return [{}]
    return [{}, {"compile": "compiled"}]
