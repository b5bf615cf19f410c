"""OpenVINO on the CPU: the torch model converted (openvino.convert_model, or from its ONNX
file when that fails), compiled with the cell's threads, precision hint and performance hint.

bf16 is the inference precision hint (AMX or AVX-512 BF16 where the CPU has them; OpenVINO runs
f32 where it has neither, and the record says what ran); int8 is NNCF post-training
quantization calibrated on training inputs (the transformer preset for non-convolutional
models). The THROUGHPUT hint needs several requests in flight: batches are then scored through
an AsyncInferQueue of the compiled model's optimal number of requests (or the cell's).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from devicebench.engines.base import Batch, Engine, EngineOptions, Loaded, LoadOptions

HINTS = ("LATENCY", "THROUGHPUT")


@dataclass(frozen=True)
class OpenVINOOptions(EngineOptions):
    """OpenVINO's own options (config key `openvino`)."""

    CONFIG_KEY: ClassVar[str] = "openvino"
    ENGINE: ClassVar[str] = "openvino"

    hint: str | None = None  # performance hint: LATENCY or THROUGHPUT (None: LATENCY)
    requests: int | None = None  # THROUGHPUT: inference requests in flight (None: OpenVINO's)

    def __post_init__(self) -> None:
        if self.hint not in (None, *HINTS):
            raise ValueError(f"hint: LATENCY or THROUGHPUT, not {self.hint!r}")
        if self.requests is not None and (not isinstance(self.requests, int) or self.requests < 1):
            raise ValueError(f"requests: a whole number of at least 1, not {self.requests!r}")


OPTIONS = OpenVINOOptions
PRECISION_HINTS = {"fp32": "f32", "bf16": "bf16", "int8": "f32"}


# Models converted or quantized in this process, by weights, inputs (and calibration): a second
# load of the same model (another format, or benchmarks/cell_vs_bare.py's bare run) reuses them.
_MEMO: dict[str, Any] = {}


def convert(model: Any, example: Batch) -> tuple[Any, dict[str, Any]]:
    """The OpenVINO model of a torch model (converted now, or earlier in this process)."""
    from devicebench.engines.export import model_key

    key = model_key(model, example)
    if key in _MEMO:
        return _MEMO[key], {"export": "cached (this process)", "export_s": 0.0}
    converted, info = _convert(model, example)
    _MEMO[key] = converted
    return converted, info


def _convert(model: Any, example: Batch) -> tuple[Any, dict[str, Any]]:
    import openvino as ov
    import torch

    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in example.values())
    start = time.perf_counter()
    try:
        converted = ov.convert_model(model, example_input=args)
        method = "openvino.convert_model (torch)"
    except Exception as first:  # noqa: BLE001 - the ONNX route is the documented fallback
        from devicebench.engines.export import export_onnx

        try:
            path, _ = export_onnx(model, example)
            converted = ov.convert_model(str(path))
        except Exception as second:
            raise RuntimeError(
                f"the model does not convert to OpenVINO: from torch: {first}; from ONNX: {second}"
            ) from second
        method = "openvino.convert_model (ONNX)"
    return converted, {"export": method, "export_s": time.perf_counter() - start}


def quantize(converted: Any, options: LoadOptions) -> tuple[Any, dict[str, Any]]:
    """NNCF post-training int8 of `converted`, calibrated on the cell's training batches."""
    import nncf

    from devicebench.engines.export import batches_key

    if not options.calibration:
        raise ValueError("int8 (NNCF) quantization needs calibration data; none was given")
    preset = {} if options.convolutional else {"model_type": nncf.ModelType.TRANSFORMER}
    info = {
        "quantization": "nncf " + ("transformer" if preset else "default") + " preset",
        "calibration_batches": len(options.calibration),
    }
    key = f"{id(converted)}-{batches_key(options.calibration)}-{bool(preset)}"
    if key in _MEMO:
        return _MEMO[key], info | {"quantize_s": 0.0, "quantized": "cached (this process)"}
    start = time.perf_counter()
    dataset = nncf.Dataset(options.calibration, lambda batch: list(batch.values()))
    quantized = nncf.quantize(converted, dataset, subset_size=len(options.calibration), **preset)
    _MEMO[key] = quantized
    return quantized, info | {"quantize_s": time.perf_counter() - start}


class OpenVinoEngine(Engine):
    name = "openvino"
    package = "openvino"
    devices = ("cpu",)

    def load(self, model: Any, example: Batch, options: LoadOptions) -> Loaded:
        import openvino as ov

        own = options.engine or OpenVINOOptions()
        if not isinstance(own, OpenVINOOptions):
            raise ValueError(f"engine openvino owns no {type(own).__name__}")
        hint = own.hint or "LATENCY"
        converted, info = convert(model, example)
        if options.precision == "int8":
            converted, more = quantize(converted, options)
            info |= more
        core = ov.Core()
        config = {
            "INFERENCE_PRECISION_HINT": PRECISION_HINTS[options.precision],
            "PERFORMANCE_HINT": hint,
            "INFERENCE_NUM_THREADS": options.threads,
        }
        start = time.perf_counter()
        compiled = core.compile_model(converted, "CPU", config)
        request = compiled.create_infer_request()
        requests = own.requests or int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        if hint == "LATENCY":
            requests = 1

        def run(batch: Batch) -> np.ndarray:
            request.infer(list(batch.values()), share_inputs=True)
            return request.get_output_tensor(0).data.copy()

        queue = ov.AsyncInferQueue(compiled, requests) if requests > 1 else None

        def run_many(batches: list[Batch]) -> tuple[list[np.ndarray], list[float]]:
            outputs: list[Any] = [None] * len(batches)
            starts = [0.0] * len(batches)
            latencies = [0.0] * len(batches)

            def done(finished: Any, index: int) -> None:
                latencies[index] = time.perf_counter() - starts[index]
                outputs[index] = finished.get_output_tensor(0).data.copy()

            queue.set_callback(done)
            for index, batch in enumerate(batches):
                starts[index] = time.perf_counter()
                queue.start_async(list(batch.values()), userdata=index)
            queue.wait_all()
            return outputs, latencies

        capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        hint = compiled.get_property("INFERENCE_PRECISION_HINT")
        ran = hint.to_string() if hasattr(hint, "to_string") else str(hint)  # "f32", "bf16"
        info |= {
            "compile_model_s": time.perf_counter() - start,
            "performance_hint": str(compiled.get_property("PERFORMANCE_HINT")),
            "requests_in_flight": requests,
            "inference_precision": ran,
            "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
            "cpu_capabilities": list(capabilities),
            "openvino": ov.get_version(),
            "format_ran": "int8" if options.precision == "int8" else ran.replace("f32", "fp32"),
        }
        return Loaded(run=run, info=info, run_many=run_many if queue else None)


ENGINE = OpenVinoEngine()
