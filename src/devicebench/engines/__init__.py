"""Inference engines: one module each behind one small interface, found by name.

As optimum-benchmark's backends: ``get(name)`` imports the engine's module only when asked, so
the grid and the config check need none of the engines' libraries. The grid's `engine` axis
calls the torch engine ``inprocess`` (today's cells keep their ids); every other value is an
engine's own name. An engine takes any torch model whose forward takes its inputs positionally
and returns logits, plus example inputs: it knows no task names.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

MODULES: dict[str, str] = {
    "torch": "devicebench.engines.torch_engine",
    "onnxruntime": "devicebench.engines.onnxruntime_engine",
    "openvino": "devicebench.engines.openvino_engine",
}
# The grid's name of an engine where it differs from the engine's own.
AXIS_VALUES: dict[str, str] = {"inprocess": "torch"}
# Axis values of engines that score a torch model in the cell's process.
MODEL_ENGINES = ("onnxruntime", "openvino")
# Axis values of the engines that score a torch model on Spark (devicebench.spark).
SPARK_ENGINES = ("spark", "spark-streaming")
# What each engine's library is imported as (to say "not installed" before any work).
PACKAGES: dict[str, str] = {"torch": "torch", "onnxruntime": "onnxruntime", "openvino": "openvino"}
# Number formats an engine may be asked for; int8 is post-training quantization (infer only).
FORMATS = ("fp32", "bf16", "int8")
# The formats each model engine has a path for (ONNX Runtime's CPU provider has no bf16 kernels
# for these models): the grid makes no cell of another.
ENGINE_FORMATS = {"onnxruntime": ("fp32", "int8"), "openvino": FORMATS}
REDUCED_FORMATS = ("bf16", "int8")
# Where the options dataclass (module's OPTIONS, an engines.base.EngineOptions) of each engine
# axis value that owns options lives; the other engines take none.
OPTIONS: dict[str, str] = {
    "openvino": "devicebench.engines.openvino_engine",
    "spark": "devicebench.spark",
    "spark-streaming": "devicebench.spark",
}


def axis_values() -> tuple[str, ...]:
    """Every value the grid's `engine` axis may take."""
    return (*AXIS_VALUES, *MODEL_ENGINES, *SPARK_ENGINES)


def engine_name(axis_value: str) -> str:
    """The engine behind a value of the grid's `engine` axis."""
    return AXIS_VALUES.get(axis_value, axis_value)


def get(name: str) -> Any:
    """The engine named `name` (an engine name or an axis value), its module imported now."""
    name = engine_name(name)
    if name not in MODULES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(MODULES)}")
    return importlib.import_module(MODULES[name]).ENGINE


def options_class(axis_value: str | None) -> Any:
    """The options dataclass the engine behind an `engine` axis value owns, or None."""
    where = OPTIONS.get(str(axis_value))
    return importlib.import_module(where).OPTIONS if where else None


def installed(name: str) -> bool:
    """Whether the engine's library can be imported here (without importing it)."""
    return importlib.util.find_spec(PACKAGES[engine_name(name)]) is not None


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Why an engine cell cannot run (before any work), or None; light: imports no engine."""
    engine = settings.get("engine", "inprocess")
    precision = str(settings["precision"])
    if engine not in MODEL_ENGINES:
        if precision == "int8":
            return (
                f"int8 is a post-training format of the onnxruntime and openvino engines; "
                f"engine {engine} has no int8 path here"
            )
        return None
    if settings["mode"] not in ("infer", "serve"):
        return f"engine {engine} applies to infer and serve cells only"
    if settings["framework"] != "torch":
        framework = settings["framework"]
        return f"engine {engine} runs torch models exported from the cell; this cell is {framework}"
    if precision not in FORMATS:
        return f"engine {engine} runs {', '.join(FORMATS)}; not {precision}"
    if settings["mode"] == "serve" and precision == "int8":
        return (
            f"engine {engine} int8 serve cell: the scoring server has no training data to "
            "calibrate the post-training quantization with; int8 is measured by infer cells"
        )
    if not installed(engine):
        return f"engine {engine}: the {PACKAGES[engine]} package is not installed"
    return get(engine).skip_reason(str(settings["device"]), precision)
