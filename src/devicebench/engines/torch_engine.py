"""torch in the cell's process: the model called eagerly (or torch.compile'd), bf16 by autocast.

What the grid's `inprocess` cells time through their own backends; here as an engine so the
server and benchmarks/cpu_engines.py call every engine alike. No int8 path: the study's int8 is
post-training quantization in ONNX Runtime and OpenVINO.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np

from devicebench.engines.base import Batch, Engine, Loaded, LoadOptions


class TorchEngine(Engine):
    name = "torch"
    package = "torch"
    devices = ("cpu", "cuda", "mps")
    formats = ("fp32", "bf16")

    def load(self, model: Any, example: Batch, options: LoadOptions) -> Loaded:
        import torch

        device = torch.device(options.device)
        model = model.to(device).eval()
        bf16 = options.precision == "bf16"
        call = torch.compile(model) if options.compile else model
        info: dict[str, Any] = {"format_ran": options.precision, "compile": options.compile}

        def run(batch: Batch) -> np.ndarray:
            args = [torch.from_numpy(a).to(device) for a in batch.values()]
            autocast = (
                torch.autocast(device.type, dtype=torch.bfloat16)
                if bf16
                else contextlib.nullcontext()
            )
            with torch.inference_mode(), autocast:
                return call(*args).float().cpu().numpy()

        if options.compile:  # the first call compiles: outside any timed window
            start = time.perf_counter()
            run(example)
            info["compile_s"] = time.perf_counter() - start
        return Loaded(run=run, info=info)


ENGINE = TorchEngine()
