"""The math a cell's precision means, set on torch before any model runs, and recorded.

torch's defaults do not match the axis' names: cuDNN convolutions and LSTMs run TF32 unless told
otherwise (`torch.backends.cudnn.allow_tf32` is True by default), so an "fp32" CNN was TF32 on an
Ampere or later GPU. Every torch path (classic, transformer, NER, Keras on torch, serving, Spark,
DDP ranks) calls `apply_precision_math` with the cell's precision:

- fp32: TF32 off for matrix products and cuDNN: plain FP32 on CUDA cores;
- tf32: TF32 on for both (FP32 storage, tensor-core products);
- bf16 / fp16: autocast to that type (the loops do it); the ops autocast leaves in FP32 stay
  plain FP32 (TF32 off), so the dominant math is the autocast type.

`model.precision_math` in the record is the math the peak for MFU is taken from.
"""

from __future__ import annotations

from typing import Any

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


def precision_math(precision: str) -> str:
    """The math the precision runs: a key of peaks.DATASHEET_PEAKS' figures."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    return precision


def apply_precision_math(precision: str) -> dict[str, Any]:
    """Set torch's TF32 switches from the cell's precision; returns what the record states."""
    import torch

    math = precision_math(precision)
    tf32 = math == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    return {"precision_math": math, "precision_flags": torch_math_flags()}


def apply_tensorflow_precision_math(precision: str) -> dict[str, Any]:
    """TensorFlow's own TF32 switch (on by default on Ampere and later GPUs), set the same way;
    called once the cell's threads are set (TensorFlow fixes them at its first op)."""
    import tensorflow as tf

    math = precision_math(precision)
    tf.config.experimental.enable_tensor_float_32_execution(math == "tf32")
    flags = {"tensorflow_tf32": bool(tf.config.experimental.tensor_float_32_execution_enabled())}
    return {"precision_math": math, "precision_flags": flags}


def torch_math_flags() -> dict[str, Any]:
    """The switches as torch reports them now (what actually applied, for the record)."""
    import torch

    return {
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def apply_precision(settings: dict[str, Any], *, before_backend: bool) -> dict[str, Any]:
    """The cell's precision math for its framework, applied at the moment that framework needs:
    torch's switches before any model is built (every framework on torch); TensorFlow's once the
    backend has set its threads (TensorFlow fixes them at its first op). Returns what applied."""
    tensorflow = settings["framework"] == "keras-tensorflow"
    if before_backend and not tensorflow:
        return apply_precision_math(settings["precision"])
    if not before_backend and tensorflow:
        return apply_tensorflow_precision_math(settings["precision"])
    return {}
