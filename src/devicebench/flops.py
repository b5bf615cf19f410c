"""Model FLOPs per sample, counted by torch.utils.flop_counter on the torch twin of a task's model.

Every framework's model of a task has the same architecture, so the torch twin's count serves
records from any framework. Training counts one forward and one backward pass directly (not the
3x-forward rule of thumb); inference counts one forward pass. Optimizer updates are not counted.
The counter has no formula for the fused ``aten::lstm`` kernel, so its gate products are added
analytically (`lstm_flops`), with the backward at twice the forward as for any matrix product.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from devicebench.workloads import hook

COUNT_BATCH = 2
NIETZSCHE_CHARS = 57  # textgen_lstm's output layer: the character set of the original text


def lstm_flops(input_size: int, hidden: int, steps: int, layers: int = 1, directions: int = 1):
    """Forward FLOPs of one sequence through an LSTM: per step, layer and direction the four
    gates' products with the input and the previous hidden state (multiply-add = 2 FLOPs)."""
    total = 0
    for layer in range(layers):
        inputs = input_size if layer == 0 else hidden * directions
        total += directions * steps * 2 * 4 * hidden * (inputs + hidden)
    return total


@cache
def flops_per_sample(task: str, model: str, mode: str) -> float:
    """FLOPs one sample costs: forward + backward for `train`, forward for `infer` (or serve)."""
    import torch

    from devicebench.flop_formulas import flop_counter
    from devicebench.frameworks.torch_models import INPUT_SHAPES, build_model
    from devicebench.tasks import get_task
    from devicebench.tasks.inputs import vocabulary

    kind = get_task(task).kind
    if kind in ("binary_text", "next_char"):  # token ids: word (or word and bigram) or char
        spec = get_task(task)
        rows = NIETZSCHE_CHARS if kind == "next_char" else vocabulary(spec)
        net = build_model(task, model, seed=0, outputs=NIETZSCHE_CHARS)
        x = torch.randint(0, rows, (COUNT_BATCH, int(spec.option("maxlen"))))
    else:
        net = build_model(task, model, seed=0)
        x = torch.randn(COUNT_BATCH, *INPUT_SHAPES[task])
    lstm_forward: list[float] = []

    def count_lstm(module: torch.nn.LSTM, args: tuple, _output) -> None:
        steps = args[0].shape[1 if module.batch_first else 0]
        directions = 2 if module.bidirectional else 1
        size = (module.input_size, module.hidden_size, steps, module.num_layers, directions)
        lstm_forward.append(lstm_flops(*size))

    for module in net.modules():
        if isinstance(module, torch.nn.LSTM):
            module.register_forward_hook(count_lstm)
    counter = flop_counter()
    if mode == "train":
        net.train()
        with counter:
            net(x).sum().backward()
    else:
        net.eval()
        with torch.no_grad(), counter:
            net(x)
    lstm = sum(lstm_forward) * (3 if mode == "train" else 1)  # per sequence already
    return counter.get_total_flops() / COUNT_BATCH + lstm


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
