"""Weight-only integer formats of the torch generators, through torchao's `quantize_`.

int8: every Linear's weight stored as int8 with a per-channel scale (Int8WeightOnlyConfig),
activations and the KV cache in bf16; the model is built in bf16 first. int4 is not offered:
torchao 0.18's Int4WeightOnlyConfig needs the separate `mslk` kernel package, which has no
release here for torch 2.13.
"""

from __future__ import annotations

import importlib.util
from typing import Any

WEIGHT_ONLY = {"int8": "int8 weight-only (torchao Int8WeightOnlyConfig), bf16 activations"}
INT4_REASON = (
    "int4 weight-only: torchao 0.18's Int4WeightOnlyConfig requires the mslk kernel package, "
    "not installable beside torch 2.13 here"
)


def skip_reason(precision: str) -> str | None:
    """Why a weight-only format cannot run here, or None (for the formats it has)."""
    if precision == "int4":
        return INT4_REASON
    if precision in WEIGHT_ONLY and importlib.util.find_spec("torchao") is None:
        return f"{precision} weight-only needs torchao (pip install torchao==0.18.0)"
    return None


def quantize(model: Any, precision: str) -> Any:
    """`model` (built in bf16) with its Linear weights in `precision`."""
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    if precision != "int8":
        raise ValueError(f"no weight-only path for {precision}")
    quantize_(model, Int8WeightOnlyConfig())
    return model
