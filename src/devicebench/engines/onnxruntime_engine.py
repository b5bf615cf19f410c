"""ONNX Runtime: the model exported to ONNX, scored by the CPU (or CUDA) execution provider.

int8 is post-training quantization of the exported file, cached beside it: static (QDQ, per
channel, calibrated on batches of training inputs) for convolutional models, dynamic (weights
int8, activations quantized per batch) for transformers and recurrent models. ONNX Runtime's CPU
provider has no bf16 kernels for these models, so bf16 is not offered.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from devicebench.engines.base import Batch, Engine, Loaded, LoadOptions

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


class _Calibration:
    """ONNX Runtime's CalibrationDataReader over a list of batches."""

    def __init__(self, names: list[str], batches: list[Batch]) -> None:
        self.items = iter([dict(zip(names, b.values(), strict=True)) for b in batches])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.items, None)

    def rewind(self) -> None:  # pragma: no cover - called by some calibrators only
        pass


def quantize(fp32: Path, options: LoadOptions) -> tuple[Path, dict[str, Any]]:
    """The int8 file of `fp32` (made now, or found in the cache) and how it was made."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    from devicebench.engines.export import batches_key  # torch: here, not in the runner

    kind = "static" if options.convolutional else "dynamic"
    static = kind == "static" and options.calibration
    data = f"-{batches_key(options.calibration)}" if static else ""
    path = fp32.with_name(f"{fp32.stem}.int8-{kind}{data}.onnx")
    info: dict[str, Any] = {"quantization": kind}
    if kind == "static":
        if not options.calibration:
            raise ValueError("int8 static quantization needs calibration data; none was given")
        info |= {"calibration_batches": len(options.calibration), "quant_format": "QDQ"}
        info |= {"activations": "uint8", "weights": "int8 per channel"}
    else:
        info |= {"weights": "int8", "activations": "uint8 per batch"}
    if path.exists():
        return path, info | {"quantize_s": 0.0, "quantized": "cached"}
    start = time.perf_counter()
    if kind == "static":
        import onnx

        names = [i.name for i in onnx.load(str(fp32), load_external_data=False).graph.input]
        quantize_static(
            str(fp32),
            str(path),
            _Calibration(names, options.calibration),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
    else:
        quantize_dynamic(str(fp32), str(path), weight_type=QuantType.QInt8)
    return path, info | {"quantize_s": time.perf_counter() - start}


class OnnxRuntimeEngine(Engine):
    name = "onnxruntime"
    package = "onnxruntime"
    devices = ("cpu", "cuda")
    formats = ("fp32", "int8")

    def skip_reason(self, device: str, precision: str) -> str | None:
        if precision == "bf16":
            return (
                "engine onnxruntime: its CPU execution provider has no bf16 kernels for these "
                "models (bf16 runs on torch or openvino)"
            )
        reason = super().skip_reason(device, precision)
        if reason or device == "cpu":
            return reason
        import onnxruntime

        if PROVIDERS[device] not in onnxruntime.get_available_providers():
            return (
                f"engine onnxruntime: no {PROVIDERS[device]} in this onnxruntime "
                f"{onnxruntime.__version__} (providers: "
                f"{', '.join(onnxruntime.get_available_providers())})"
            )
        return None

    def load(self, model: Any, example: Batch, options: LoadOptions) -> Loaded:
        import onnxruntime

        from devicebench.engines.export import export_onnx  # torch: here, not in the runner

        path, info = export_onnx(model, example)
        if options.precision == "int8":
            path, more = quantize(path, options)
            info |= more
        session_options = onnxruntime.SessionOptions()
        session_options.intra_op_num_threads = options.threads
        session_options.inter_op_num_threads = 1
        level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session_options.graph_optimization_level = level
        start = time.perf_counter()
        session = onnxruntime.InferenceSession(
            str(path), session_options, providers=[PROVIDERS[options.device]]
        )
        names = [i.name for i in session.get_inputs()]

        def run(batch: Batch) -> np.ndarray:
            return session.run(None, dict(zip(names, batch.values(), strict=True)))[0]

        info |= {
            "session_s": time.perf_counter() - start,
            "providers": session.get_providers(),
            "intra_op_threads": options.threads,
            "onnxruntime": onnxruntime.__version__,
            "format_ran": options.precision,
        }
        return Loaded(run=run, info=info)


ENGINE = OnnxRuntimeEngine()
