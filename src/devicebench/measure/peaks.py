"""Device peak throughput, for model-FLOPs utilization (MFU = achieved / peak).

GPU figures are vendor datasheet dense peaks (no structured sparsity), in TFLOP/s per precision;
`fp32` means plain FP32 (CUDA cores), which is what torch runs by default for fp32 matmuls
(`torch.backends.cuda.matmul.allow_tf32` is False). CPUs have no datasheet FLOP/s figure, so
their MFU stays empty rather than resting on an estimate.
"""

from __future__ import annotations

import math
from typing import Any

# (substring of the device name, {precision: TFLOP/s}, source) — first match wins, so the more
# specific names come first.
DATASHEET_PEAKS: list[tuple[str, dict[str, float], str]] = [
    (
        "H200",
        {"fp32": 67.0, "tf32": 494.5, "bf16": 989.4, "fp16": 989.4},
        "NVIDIA H200 SXM datasheet (dense)",
    ),
    (
        "H100 PCIe",
        {"fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0},
        "NVIDIA H100 PCIe datasheet (dense)",
    ),
    (
        "H100",
        {"fp32": 67.0, "tf32": 494.5, "bf16": 989.4, "fp16": 989.4},
        "NVIDIA H100 SXM datasheet (dense)",
    ),
    (
        "A100",
        {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
        "NVIDIA A100 SXM datasheet (dense)",
    ),
    (
        "L40S",
        {"fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05},
        "NVIDIA L40S datasheet (dense)",
    ),
    (
        "L4",
        {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0},
        "NVIDIA L4 datasheet (dense)",
    ),
    (
        "A10",
        {"fp32": 31.2, "tf32": 62.5, "bf16": 125.0, "fp16": 125.0},
        "NVIDIA A10 datasheet (dense)",
    ),
    ("V100", {"fp32": 15.7, "fp16": 125.0}, "NVIDIA V100 SXM2 datasheet"),
    ("T4", {"fp32": 8.1, "fp16": 65.0}, "NVIDIA T4 datasheet"),
]


def device_peak(device: Any, gpu_name: Any, precision: Any) -> tuple[float | None, str]:
    """The datasheet peak TFLOP/s of the cell's device at its precision, and where it is from."""
    if str(device) != "cuda" or not isinstance(gpu_name, str) or not gpu_name:
        return None, ""
    for pattern, peaks, source in DATASHEET_PEAKS:
        if pattern.lower() in gpu_name.lower():
            peak = peaks.get(str(precision))
            return (peak, source) if peak else (None, "")
    return None, ""


def achieved_tflops(flops_per_sample: Any, samples_per_s: Any) -> float:
    """Model TFLOP/s the cell achieved: FLOPs per sample x samples per second."""
    try:
        value = float(flops_per_sample) * float(samples_per_s) / 1e12
    except (TypeError, ValueError):
        return math.nan
    return value
