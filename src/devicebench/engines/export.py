"""A torch model exported to ONNX once per model and weights, cached on disk.

The TorchScript exporter first (fast, and it handles the LSTMs), torch.export's (dynamo) when
that fails. The batch dimension stays dynamic. Files live under DEVICEBENCH_ENGINE_CACHE, else a
folder of this process, removed when it exits (exported models are large); the key is a digest
of the weights and the inputs' shapes, so a second cell (or benchmark row) with the same model
reuses the file.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from devicebench.engines.base import Batch
from devicebench.engines.onnx_constants import unshare_initializers

_PROCESS_CACHE: Path | None = None


def cache_dir() -> Path:
    """Where exported and quantized models are kept."""
    global _PROCESS_CACHE
    if os.environ.get("DEVICEBENCH_ENGINE_CACHE"):
        path = Path(os.environ["DEVICEBENCH_ENGINE_CACHE"])
        path.mkdir(parents=True, exist_ok=True)
        return path
    if _PROCESS_CACHE is None:
        _PROCESS_CACHE = Path(tempfile.mkdtemp(prefix="devicebench-engines-"))
        atexit.register(_remove_process_cache, _PROCESS_CACHE, os.getpid())
    return _PROCESS_CACHE


def _remove_process_cache(path: Path, owner: int) -> None:
    """Remove this process's folder at exit (not from a forked child that inherited the hook)."""
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def model_key(model: torch.nn.Module, example: Batch) -> str:
    """A digest of the weights and of the inputs' names, trailing shapes and types."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
    for name, array in example.items():
        digest.update(f"{name}:{array.shape[1:]}:{array.dtype}".encode())
    return f"{type(model).__name__}-{digest.hexdigest()[:16]}"


def batches_key(batches: list[Batch]) -> str:
    """A digest of a list of input batches (calibration data: what an int8 model depends on)."""
    digest = hashlib.sha256()
    for batch in batches:
        for name, array in batch.items():
            digest.update(f"{name}:{array.shape}:{array.dtype}".encode())
            digest.update(np.ascontiguousarray(array).view(np.uint8).ravel())
    return digest.hexdigest()[:16]


def export_onnx(model: torch.nn.Module, example: Batch) -> tuple[Path, dict[str, Any]]:
    """The model's ONNX file (exported now, or found in the cache) and how it was made."""
    path = cache_dir() / f"{model_key(model, example)}.onnx"
    if path.exists():
        return path, {"export": "cached", "export_s": 0.0, "onnx": path.name}
    args = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in example.values())
    names = list(example)
    start = time.perf_counter()
    tmp = path.with_suffix(f".{os.getpid()}.tmp.onnx")
    try:
        torch.onnx.export(
            model,
            args,
            str(tmp),
            dynamo=False,
            input_names=names,
            output_names=["logits"],
            dynamic_axes={name: {0: "batch"} for name in [*names, "logits"]},
            opset_version=17,
        )
        method = "torch.onnx (TorchScript)"
    except Exception as first:  # noqa: BLE001 - try the other exporter, then say both failed
        batch = torch.export.Dim("batch")
        try:
            program = torch.onnx.export(
                model, args, dynamo=True, dynamic_shapes=tuple({0: batch} for _ in args)
            )
            program.save(str(tmp))
        except Exception as second:
            raise RuntimeError(
                f"the model does not export to ONNX: TorchScript exporter: {first}; "
                f"dynamo exporter: {second}"
            ) from second
        method = "torch.onnx (dynamo)"
    unshared = unshare_initializers(tmp)
    os.replace(tmp, path)
    return path, {
        "export": method,
        "export_s": time.perf_counter() - start,
        "onnx": path.name,
        "shared_constants_unshared": unshared,
    }


class Logits(torch.nn.Module):
    """A transformers classifier called with pixel_values positionally, returning logits."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values).logits
