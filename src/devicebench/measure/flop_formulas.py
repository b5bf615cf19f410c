"""torch's FLOP counter with a correct formula for grouped and depthwise convolution backward.

torch.utils.flop_counter counts a convolution's weight gradient as a full (ungrouped) convolution
of the input with the output gradient, so a layer with `groups` groups is counted `groups` times
too high there: for ConvNeXt's 7x7 depthwise layers (groups = channels, 96 to 768) that made
training about 8.7x inference instead of about 3x. Forward and input-gradient counts already use
the grouped weight shape and are right; only the weight gradient is divided here.
"""

from __future__ import annotations

from typing import Any

# What a record's model.flop_formulas says: its counts already use the grouped formula.
VERSION = "convolution backward per group (issue 19)"
# The old counter erred only upward and only in training (grouped weight gradients): a record
# counted before VERSION whose train/infer ratio exceeds this is recounted by the aggregate.
SUSPECT_RATIO = 3.5


def needs_recount(model: dict[str, Any]) -> bool:
    """Whether a record's FLOP counts predate the grouped formula and show its error."""
    if model.get("flop_formulas") == VERSION:
        return False
    try:
        ratio = float(model["flops_per_sample_train"]) / float(model["flops_per_sample_infer"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return False
    return ratio > SUSPECT_RATIO


def conv_backward_flops(
    grad_out_shape: list[int],
    x_shape: list[int],
    w_shape: list[int],
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    groups: int,
    output_mask: list[bool],
    out_shape: Any,
    **_: Any,
) -> int:
    """FLOPs of aten.convolution_backward: input gradient + weight gradient (each grouped).

    Per weight element the weight gradient takes one multiply-add per output position and
    sample: 2 x N x prod(out spatial) x C_out x C_in/groups x prod(kernel), the forward's count.
    """
    from math import prod

    from torch.utils.flop_counter import conv_flop_count, get_shape

    total = 0
    if output_mask[0]:
        grad_input_shape = get_shape(out_shape[0])
        total += conv_flop_count(grad_out_shape, w_shape, grad_input_shape, not transposed)
    if output_mask[1]:
        spatial = (x_shape if transposed else grad_out_shape)[2:]
        total += 2 * grad_out_shape[0] * prod(spatial) * prod(w_shape)
    return total


def flop_counter() -> Any:
    """A FlopCounterMode (no display) whose convolution backward respects groups."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    mapping = {torch.ops.aten.convolution_backward: conv_backward_flops}
    return FlopCounterMode(display=False, custom_mapping=mapping)
