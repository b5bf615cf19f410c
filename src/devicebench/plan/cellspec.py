"""CellSpec: the one description of a cell after the schema, built once by the grid.

A spec holds the cell's axes (in the order of its id), its typed run settings, and the options
of its engine (the engine's own frozen dataclass, ``engines.base.EngineOptions``). The runner
and the worker receive it as JSON (``to_json``/``from_json``); ``run_settings()`` is the
mapping the scenarios read, the engine's options under one key that the engine reads back as its
dataclass (``EngineOptions.of``), by the names the config gives them. A spec holds exactly the
settings it was given: an optional one left out stays out of its run settings and of its hash,
so configs keep their cell hashes.

Bad input (a key no spec has, a value of the wrong type, an option the engine does not own) is
a ``SpecError`` naming the key, raised before any work.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devicebench.engines import IN_PROCESS, axis_values, cell_engine, options_class
from devicebench.engines.base import OPTIONS_KEY

AXES: tuple[str, ...] = (
    "task",
    "model",
    "framework",
    "device",
    "threads",
    "precision",
    "batch_size",
    "mode",
)
PATH_KEYS = {"batch_size": "batch"}
_TEXT, _WHOLE, _NUMBER = (str,), (int,), (int, float)
# The typed axes every cell has (extra axes: a task's own, engine, gpus ... are typed by the
# config schema, and are whole numbers, numbers or text).
AXIS_TYPES: dict[str, tuple[type, ...]] = {
    "task": _TEXT,
    "model": _TEXT,
    "framework": _TEXT,
    "device": _TEXT,
    "threads": (int, str),
    "precision": _TEXT,
    "batch_size": _WHOLE,
    "mode": _TEXT,
}
# The run settings a spec may hold: key -> (types, smallest value or None). None is a value too
# (steps_per_epoch: None means "the whole split").
RUN_TYPES: dict[str, tuple[tuple[type, ...], float | None]] = {
    "dataset": (_TEXT, None),
    "epochs": (_WHOLE, 1),
    "steps_per_epoch": (_WHOLE, 1),
    "learning_rate": (_NUMBER, None),
    "repetitions": (_WHOLE, 1),
    "warmup_steps": (_WHOLE, 0),
    "seed": (_WHOLE, None),
    "timeout_s": (_NUMBER, 0),
    "noise_cov": (_NUMBER, 0),
    "min_repetition_s": (_NUMBER, 0),
    "memory_limit_mb": (_WHOLE, 1),
    "test_samples": (_WHOLE, 1),
    "profile": (_WHOLE, 0),
    "serve": (_TEXT, None),  # serve cells: the task's serve settings, JSON
    "converge": (_TEXT, None),  # converge cells: the target, JSON
    "generate": (_TEXT, None),  # generate cells: bandwidth buffer, quality tokens, corpus, JSON
    "pretrained": (_TEXT, None),  # weights: pretrained: a folder or a hub id in the cache
    "train_samples": (_WHOLE, 1),  # train on the first N training samples only
    "sample_utilization": ((bool,), None),  # false: no utilization sampler (benchmarks)
    "measure_energy": ((bool,), None),  # false: no energy counters read
}


class SpecError(ValueError):
    """A cell spec that cannot run; the message names the key."""


def _check(key: str, value: Any, types: tuple[type, ...], least: float | None) -> None:
    if value is None:
        return
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        wanted = " or ".join(t.__name__ for t in types)
        raise SpecError(f"cell spec key {key}: {value!r} is not {wanted}")
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"cell spec key {key}: must be a finite number (got {value})")
    if least is not None and isinstance(value, int | float) and value < least:
        raise SpecError(f"cell spec key {key}: must be at least {least:g} (got {value})")


@dataclass(frozen=True)
class CellSpec:
    """One point of the grid: its axes, typed run settings and its engine's options."""

    axes: tuple[tuple[str, Any], ...]
    run: tuple[tuple[str, Any], ...] = ()
    engine_options: Any = None  # the engine's EngineOptions, or None

    def __post_init__(self) -> None:
        object.__setattr__(self, "run", tuple(sorted(self.run)))  # one spec, one form
        values = dict(self.axes)
        missing = [key for key in AXES if key not in values]
        if missing:
            raise SpecError(f"cell spec key axes: missing {', '.join(missing)}")
        for key, value in self.axes:
            types = AXIS_TYPES.get(key, (int, float, str))
            _check(f"axes.{key}", value, types, None)
        if values["threads"] != "all" and not isinstance(values["threads"], int):
            threads = values["threads"]
            raise SpecError(f"cell spec key axes.threads: a number or 'all', not {threads!r}")
        engine = values.get("engine")
        if engine is not None and engine not in axis_values():
            raise SpecError(
                f"cell spec key axes.engine: unknown engine {engine!r}; known: "
                f"{', '.join(axis_values())}"
            )
        from devicebench import scenarios  # the modes of the scenarios found on disk

        found = [scenarios.get(name) for name in scenarios.names()]
        modes = sorted({scenario.MODE for scenario in found})
        run_types = RUN_TYPES | scenarios.settings_of(values["mode"])  # the scenario's own too
        if values["mode"] not in modes:
            raise SpecError(
                f"cell spec key axes.mode: no scenario measures {values['mode']!r}; "
                f"modes: {', '.join(modes)}"
            )
        for key, value in self.run:
            if key not in run_types:
                known = ", ".join(run_types)
                raise SpecError(f"cell spec key run.{key}: no such run setting; known: {known}")
            _check(f"run.{key}", value, *run_types[key])
        owned = options_class(values.get("engine"))
        if self.engine_options is not None and not isinstance(self.engine_options, owned or ()):
            raise SpecError(
                f"cell spec key engine_options: engine {cell_engine(values)} "
                f"owns no {type(self.engine_options).__name__}"
            )

    @property
    def values(self) -> dict[str, Any]:
        """The axes by name."""
        return dict(self.axes)

    @property
    def settings(self) -> dict[str, Any]:
        """The run settings the spec was given, by name."""
        return dict(self.run)

    @property
    def cell_id(self) -> str:
        """Path of the record under results/cells, without the .json suffix."""
        return "/".join(f"{PATH_KEYS.get(k, k)}~{v}" for k, v in self.axes)

    def run_settings(self) -> dict[str, Any]:
        """Axes, run settings and the engine's options: everything the cell's run is told."""
        engine = {OPTIONS_KEY: self.engine_options.to_dict()} if self.engine_options else {}
        return {**dict(self.axes), **dict(self.run), **engine}

    def config_hash(self) -> str:
        """Hash of everything that defines this cell's run (recorded as provenance)."""
        blob = json.dumps(self.run_settings(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def with_run(self, **more: Any) -> CellSpec:
        """The same cell with more run settings (e.g. the profiler)."""
        return CellSpec(self.axes, (*self.run, *more.items()), self.engine_options)

    def to_dict(self) -> dict[str, Any]:
        data = {"axes": [list(pair) for pair in self.axes], "run": dict(self.run)}
        if self.engine_options is not None:  # keyed by the engine that owns them
            data["engine_options"] = {self.engine_options.ENGINE: self.engine_options.to_dict()}
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CellSpec:
        """A spec from its JSON; SpecError naming what does not fit."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise SpecError(f"cell spec: not JSON ({error})") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> CellSpec:
        if not isinstance(data, Mapping):
            raise SpecError("cell spec: a mapping of axes, run and engine_options")
        unknown = sorted(set(data) - {"axes", "run", "engine_options"})
        if unknown:
            raise SpecError(f"cell spec key {unknown[0]}: no such key (axes, run, engine_options)")
        axes = data.get("axes")
        if not isinstance(axes, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in axes
        ):
            raise SpecError("cell spec key axes: a list of [name, value] pairs")
        run = data.get("run", {})
        if not isinstance(run, Mapping):
            raise SpecError("cell spec key run: a mapping of run settings")
        engine = dict(axes).get("engine")
        where = "cell spec key engine_options"
        options = _options(engine, data.get("engine_options"), where, keyed=True)
        return cls(tuple(map(tuple, axes)), tuple(run.items()), options)

    def cli_args(self) -> str:
        """The spec as scripts/run_cell.py's argument (a shell-quoted string)."""
        return shlex.join(["--spec-json", self.to_json()])


def _options(engine: str | None, given: Any, where: str, *, keyed: bool = False) -> Any:
    """The options `engine` owns from `given` (a mapping or None); SpecError naming the key."""
    if given is None:
        return None
    owner = options_class(engine)
    if owner is None:
        raise SpecError(f"{where}: engine {engine or IN_PROCESS} owns no options")
    if keyed:  # {engine: {option: value}}, as to_dict writes them
        if not isinstance(given, Mapping) or set(given) != {owner.ENGINE}:
            raise SpecError(f"{where}: {{{owner.ENGINE}: {{option: value}}}} for this engine")
        given = given[owner.ENGINE]
    if not isinstance(given, Mapping):
        raise SpecError(f"{where}: a mapping of {owner.ENGINE} options")
    try:
        return owner.from_mapping(dict(given))
    except (TypeError, ValueError) as error:
        raise SpecError(f"{where}: {error}") from None


def make_spec(
    values: dict[str, Any],
    extra: dict[str, Any],
    settings: dict[str, Any],
    options: Mapping[str, Any] | None = None,
) -> CellSpec:
    """A spec from its core axes, any extra axes (placed before mode), its run settings and its
    engine's options as the config names them (``{hint: THROUGHPUT}`` of ``openvino:``)."""
    ordered = [(key, values[key]) for key in AXES if key != "mode"]
    ordered += sorted(extra.items()) + [("mode", values["mode"])]
    engine = dict(ordered).get("engine")
    owner = options_class(engine)
    where = f"config key {owner.CONFIG_KEY}" if owner else "engine_options"
    engine_options = _options(engine, options or None, where)
    return CellSpec(tuple(ordered), tuple(settings.items()), engine_options)
