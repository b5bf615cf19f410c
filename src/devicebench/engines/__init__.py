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
import pkgutil
from typing import Any

# The engines found on disk: each module `<name>_engine.py` here (its ENGINE's name is <name>).
MODULES: dict[str, str] = {
    info.name.removesuffix("_engine"): f"{__name__}.{info.name}"
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if info.name.endswith("_engine")
}
# The `engine` axis value of a cell that names none: the framework's own loop (torch's, for the
# export engines); the one place this name is defined.
IN_PROCESS = "inprocess"
# The grid's name of an engine where it differs from the engine's own.
AXIS_VALUES: dict[str, str] = {IN_PROCESS: "torch"}
# Axis values of engines that score a torch model in the cell's process.
MODEL_ENGINES = ("onnxruntime", "openvino")
# Axis values of the engines that score a torch model on Spark (devicebench.spark).
SPARK_ENGINES = ("spark", "spark-streaming")
# The Spark engines that score as a Structured Streaming query (the others run a batch job): their
# latency is per micro-batch, end to end.
STREAMING_ENGINES = ("spark-streaming",)
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


def is_in_process(axis_value: Any) -> bool:
    """Whether an `engine` axis value names no engine: the framework's own loop scores."""
    return axis_value == IN_PROCESS


def streams(axis_value: Any) -> bool:
    """Whether the engine behind an `engine` axis value scores as a stream (Spark streaming)."""
    return axis_value in STREAMING_ENGINES


def cell_engine(settings: Any) -> str:
    """A cell's `engine` axis value (the in-process default where it names none)."""
    return str(settings.get("engine", IN_PROCESS))


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


def package(name: str) -> str:
    """What the engine's library is imported as (its module, light, says so; the library is not
    imported)."""
    return get(name).package


def installed(name: str) -> bool:
    """Whether the engine's library can be imported here (without importing it)."""
    return importlib.util.find_spec(package(name)) is not None


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Why an engine cell cannot run (before any work), or None; light: imports no engine."""
    engine = cell_engine(settings)
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
        return f"engine {engine}: the {package(engine)} package is not installed"
    return get(engine).skip_reason(str(settings["device"]), precision)
