"""Words a reader understands: configurations as a person writes them ("OpenVINO int8, 16
threads, batch 32"), human column names, integers as integers and money without exponents.

The tables keep their machine names (`device_label`, `samples_per_s`); only what a page or the
README shows goes through here, so a reader never meets a raw column name or "1 threads".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

ENGINES = {
    "openvino": "OpenVINO",
    "onnxruntime": "ONNX Runtime",
    "spark": "PyTorch on Spark (batch)",
    "spark-streaming": "PyTorch on Spark (streaming)",
}
FRAMEWORKS = {
    "torch": "PyTorch",
    "keras-torch": "Keras on PyTorch",
    "keras-tensorflow": "Keras on TensorFlow",
}
# Column names as a reader says them; any other column loses its underscores.
COLUMN_NAMES = {
    "task": "workload",
    "device_label": "device",
    "batch_size": "batch",
    "samples_per_s": "samples/s",
    "requests_per_s": "requests/s",
    "median_s": "median time (s)",
    "iqr_s": "IQR (s)",
    "cov": "CoV",
    "first_call_s": "first call (s)",
    "n_repetitions": "repetitions",
    "p50_ms": "p50 (ms)",
    "p90_ms": "p90 (ms)",
    "p99_ms": "p99 (ms)",
    "max_ms": "max (ms)",
    "peak_host_mb": "host memory (MB)",
    "peak_device_mb": "GPU memory (MB)",
    "cost_usd": "US$ per repetition",
    "samples_per_usd": "samples per US$",
    "price_per_hour": "US$ per hour",
    "relative_time": "time vs base",
    "relative_cost": "cost vs base",
    "cost_to_target_usd": "US$ to target",
    "time_to_target_s": "time to target (s)",
    "achieved_tflops": "achieved TFLOP/s",
    "mfu": "MFU",
    "cpu_util_mean": "CPU busy (%)",
    "gpu_util_mean": "GPU busy (%)",
    "joules_per_sample": "J per sample",
    "cost_per_1k_requests_usd": "US$ per 1,000 requests",
    "stability_cov": "stability (CoV)",
    "f1_macro": "F1 macro",
    "f1_micro": "F1 micro",
    "lstm_kernel": "LSTM kernel",
    "seq_len": "sequence length",
}


def missing(value: Any) -> bool:
    """None, NaN, pd.NA and empty text are all 'no value'."""
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value.strip().lower() in ("", "nan", "none", "<na>")


def integer(value: Any) -> int | None:
    """A count read back from a table (128.0, "128", 128) as an int; None if it is not one."""
    if missing(value):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def plural(count: int, word: str) -> str:
    """'1 thread', '16 threads'."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def column_name(column: str) -> str:
    """The name a reader sees for a table column."""
    return COLUMN_NAMES.get(column, column.replace("_", " "))


def _text(cell: Mapping[str, Any], key: str) -> str:
    value = cell.get(key)
    return "" if missing(value) else str(value)


def _threads(cell: Mapping[str, Any]) -> int | None:
    threads = integer(cell.get("threads"))
    if threads is None and _text(cell, "threads") == "all":
        threads = integer(cell.get("cpu_cores"))
    return threads


def configuration(cell: Mapping[str, Any]) -> str:
    """A cell's configuration in a person's words, naming only the axes that apply to it:
    no LSTM kernel on a CPU cell, no framework beside an engine that replaced it."""
    engine = ENGINES.get(_text(cell, "engine"))
    framework = _text(cell, "framework")
    head = engine or FRAMEWORKS.get(framework, framework or "?")
    if engine is None and _text(cell, "compile") == "compiled":
        head += " compiled"
    precision = _text(cell, "precision")
    parts = [f"{head} {precision}".strip()]
    device = _text(cell, "device")
    if device == "cpu" and _threads(cell) is not None:
        parts.append(plural(_threads(cell), "thread"))
    gpus = integer(cell.get("gpus"))
    if device != "cpu" and gpus and gpus > 1:
        parts.append(plural(gpus, "GPU"))
    if integer(cell.get("batch_size")) is not None:
        parts.append(f"batch {integer(cell.get('batch_size')):,}")
    if integer(cell.get("seq_len")):
        parts.append(f"{integer(cell.get('seq_len'))}-token inputs")
    if integer(cell.get("image_size")):
        parts.append(f"{integer(cell.get('image_size'))} px images")
    if _text(cell, "embedding") == "cached":
        parts.append("cached embeddings")
    if _text(cell, "lstm_kernel") == "generic":
        parts.append("generic LSTM")
    elif _text(cell, "lstm_kernel") == "cudnn" and device == "cuda":
        parts.append("cuDNN LSTM")
    fraction = cell.get("train_fraction")
    if not missing(fraction) and float(fraction) < 1:
        parts.append(f"{float(fraction):.0%} of the training set")
    if _text(cell, "weights") and _text(cell, "weights") != "random":
        parts.append("pretrained")
    if _text(cell, "server") == "ray-serve":
        parts.append("Ray Serve")
    if integer(cell.get("replicas")) and integer(cell.get("replicas")) > 1:
        parts.append(plural(integer(cell.get("replicas")), "replica"))
    if not missing(cell.get("batch_wait")):  # a window of the batch_wait sweep
        parts.append(f"{float(cell['batch_wait']):g} ms batch window")
    if integer(cell.get("clients")):
        parts.append(plural(integer(cell.get("clients")), "client"))
    return ", ".join(parts)


def configurations(cells: pd.DataFrame) -> dict[str, str]:
    """Each cell's configuration in words, by cell id."""
    if cells.empty or "cell_id" not in cells:
        return {}
    return {str(r["cell_id"]): configuration(r) for r in cells.to_dict("records")}


def money(value: Any) -> str:
    """US$ to three significant digits, never in exponent form: 'US$0.000152'."""
    if missing(value) or not math.isfinite(float(value)):
        return "—"
    value = float(value)
    if value == 0:
        return "US$0"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{digits}f}"
    if digits > 2:  # 0.680 -> 0.68, 0.000152 stays
        text = text.rstrip("0").ljust(text.index(".") + 3, "0")
    return f"US${text}"


def ratio(value: float) -> str:
    """A ratio as '87x', '2.5x', '1.04x' (two significant digits, three near one)."""
    if value >= 10:
        return f"{value:,.0f}x"
    return f"{value:.2f}x" if value < 1.1 else f"{value:.1f}x"


def lead(cost_ratio: float) -> str:
    """CPU cost over GPU cost as who is cheaper by how much: 'GPU 87x', 'CPU 1.7x'."""
    return f"GPU {ratio(cost_ratio)}" if cost_ratio >= 1 else f"CPU {ratio(1 / cost_ratio)}"


def span(low: float, high: float) -> str:
    """A range of CPU-over-GPU cost ratios in words: 'GPU 5.4x to 87x', 'CPU 1.7x to GPU 17x'."""
    if lead(low) == lead(high):
        return lead(low)
    if low >= 1:
        return f"GPU {ratio(low)} to {ratio(high)}"
    if high < 1:
        return f"CPU {ratio(1 / high)} to {ratio(1 / low)}"
    return f"{lead(low)} to {lead(high)}"


def applicable(df: pd.DataFrame) -> pd.DataFrame:
    """A table without axes that do not apply to a row: no LSTM kernel on a CPU row (cuDNN
    runs on GPUs only), and an engine that replaced the framework named in its place."""
    out = df.copy()
    device = out["device_label"] if "device_label" in out else out.get("device")
    if "lstm_kernel" in out and device is not None:
        on_cpu = device.astype(str).str.startswith("cpu")
        out["lstm_kernel"] = out["lstm_kernel"].astype("object").where(~on_cpu, None)
    if "engine" in out and "framework" in out:
        engine = out["engine"].astype("object").map(lambda e: ENGINES.get(str(e)))
        out["framework"] = engine.where(engine.notna(), out["framework"].astype("object"))
        out = out.drop(columns="engine")
    return out
