"""Model FLOPs per sample, counted by torch.utils.flop_counter on a torch model: one counter.

Every framework's model of a workload has the same architecture, so the torch twin's count serves
records from any framework. Training counts one forward and one backward pass directly (not the
3x-forward rule of thumb); inference counts one forward pass. Optimizer updates are not counted.
The counter has no formula for the fused ``aten::lstm`` kernel, so its gate products are added
analytically (`lstm_flops`), with the backward at twice the forward as for any matrix product.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

_LAST_NET: tuple[Hashable, Any] | None = None  # (key, network) of the last count


def with_backward(mode: str) -> bool:
    """Whether a pass of `mode` ("train" or "infer", a record's two counts) is counted forward
    and backward: a mode whose scenario trains its model (scenarios' `trains`)."""
    from devicebench.scenarios import modes

    return mode in modes(trains=True)


def net_for_counting(key: Hashable, build: Callable[[], Any]) -> Any:
    """The network to count on: built once for a record's two counts (train, then infer).

    Counting builds the model on the CPU with its random initialisation: a bert-base took about
    4 s on a 2-core VM, twice per record before. Only the last network is kept.
    """
    global _LAST_NET
    if _LAST_NET is None or _LAST_NET[0] != key:
        _LAST_NET = None  # the previous network goes before the next one is built
        _LAST_NET = (key, build())
    return _LAST_NET[1]


def lstm_flops(input_size: int, hidden: int, steps: int, layers: int = 1, directions: int = 1):
    """Forward FLOPs of one sequence through an LSTM: per step, layer and direction the four
    gates' products with the input and the previous hidden state (multiply-add = 2 FLOPs)."""
    total = 0
    for layer in range(layers):
        inputs = input_size if layer == 0 else hidden * directions
        total += directions * steps * 2 * 4 * hidden * (inputs + hidden)
    return total


def count_flops(net: Any, inputs: Any, mode: str) -> float:
    """FLOPs per sample of `net` over one batch: forward + backward (`train`) or forward.

    `inputs` is a tensor (positional) or a dict of tensors (keywords); the output is summed (as a
    float) for the backward pass. torch.nn.LSTM modules are counted by formula.
    """
    import torch

    from devicebench.measure.flop_formulas import flop_counter

    args, kwargs = ((), inputs) if isinstance(inputs, dict) else ((inputs,), {})
    samples = len(next(iter(inputs.values())) if kwargs else inputs)
    lstm_forward: list[float] = []

    def count_lstm(module: torch.nn.LSTM, module_args: tuple, _output) -> None:
        steps = module_args[0].shape[1 if module.batch_first else 0]
        directions = 2 if module.bidirectional else 1
        size = (module.input_size, module.hidden_size, steps, module.num_layers, directions)
        lstm_forward.append(lstm_flops(*size))

    hooks = [
        module.register_forward_hook(count_lstm)
        for module in net.modules()
        if isinstance(module, torch.nn.LSTM)
    ]
    backward = with_backward(mode)
    counter = flop_counter()  # convolution backward counted per group
    try:
        if backward:
            net.train()
            with counter:
                net(*args, **kwargs).float().sum().backward()
            net.zero_grad(set_to_none=True)  # a network counted again starts as it was built
        else:
            net.eval()
            with torch.no_grad(), counter:
                net(*args, **kwargs)
    finally:
        for hook in hooks:
            hook.remove()
    lstm = sum(lstm_forward) * (3 if backward else 1)  # per sequence already
    return counter.get_total_flops() / samples + lstm
