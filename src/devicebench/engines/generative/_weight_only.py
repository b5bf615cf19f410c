"""Weight-only integer formats of the torch generators, through torchao's `quantize_`.

int8: every Linear's weight stored as int8 with a per-channel scale (Int8WeightOnlyConfig),
activations and the KV cache in bf16; the model is built in bf16 first. int4, on the GPU only:
every Linear whose input width is a multiple of the group (128) stored as 4-bit groups with a
bf16 scale and zero point, packed for torch's own tinygemm kernel (`aten._weight_int4pack_mm`,
torchao's `tile_packed_to_4d` format: gpt-fast's int4). torchao 0.18 has no other int4 here: its
plain format needs the separate `mslk` kernel package, none for torch 2.13, and its CPU format
is gone; on the CPU, llama.cpp runs int4 (its Q4_0).
"""

from __future__ import annotations

import importlib.util
from typing import Any

WEIGHT_ONLY = {
    "int8": "int8 weight-only (torchao Int8WeightOnlyConfig), bf16 activations",
    "int4": "int4 weight-only, groups of 128 (torchao Int4WeightOnlyConfig tile_packed_to_4d: "
    "tinygemm), bf16 activations",
}
INT4_GROUP = 128
INT4_CPU_REASON = (
    "int4 weight-only on the CPU: torchao 0.18's CPU int4 format is gone and its plain format "
    "requires the mslk kernel package, not installable beside torch 2.13 here; generator "
    "llama_cpp runs int4 (Q4_0) on the CPU"
)


def skip_reason(precision: str, device: str = "cuda") -> str | None:
    """Why a weight-only format cannot run on `device` here, or None (for the formats it has)."""
    if precision == "int4" and device != "cuda":
        return INT4_CPU_REASON
    if precision in WEIGHT_ONLY and importlib.util.find_spec("torchao") is None:
        return f"{precision} weight-only needs torchao (pip install torchao==0.18.0)"
    return None


def quantize(model: Any, precision: str) -> Any:
    """`model` (built in bf16) with its Linear weights in `precision`; ValueError for a format
    it has no path for, or an int4 model with no Linear the groups fit."""
    from torchao.quantization import Int4WeightOnlyConfig, Int8WeightOnlyConfig, quantize_

    if precision == "int8":
        quantize_(model, Int8WeightOnlyConfig())
        return model
    if precision != "int4":
        raise ValueError(f"no weight-only path for {precision}")
    fits = [name for name, m in _linears(model) if m.in_features % INT4_GROUP == 0]
    if not fits:
        raise ValueError(f"int4: no Linear's input width is a multiple of {INT4_GROUP}")
    config = Int4WeightOnlyConfig(group_size=INT4_GROUP, int4_packing_format="tile_packed_to_4d")
    quantize_(model, config, filter_fn=lambda m, name: name in fits)
    return model


def _linears(model: Any) -> list[tuple[str, Any]]:
    import torch

    return [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
