"""Expand a checked study config into its cells: the cross product of every axis, less exclusions.

Each cell's id is the path of its record under results/cells and encodes every axis, so that
Snakemake keys one job per cell and reruns exactly the cells whose values changed.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, NamedTuple

from devicebench import scenarios
from devicebench.engines import ENGINE_FORMATS, IN_PROCESS, MODEL_ENGINES, options_class
from devicebench.frameworks.pretrained import cell_weights
from devicebench.measure.devices import has_device
from devicebench.plan.batch_wait import batch_wait_axes, plain_window
from devicebench.plan.cellspec import AXES, CellSpec, make_spec
from devicebench.plan.config import ConfigError
from devicebench.plan.confirm import sweep_serve
from devicebench.plan.converge import converge_run, reference_run, task_modes
from devicebench.plan.converge import wanted as converge_wanted
from devicebench.plan.gpu_compile import compiled_axes
from devicebench.plan.packing import copies_axes
from devicebench.workloads import specs
from devicebench.workloads.base import axis_key

# Axes a cell id leaves out at their default: a task's in-process cells keep their ids when it
# adds engines (_scale_axes); block selectors and exclusions read the default back
# (blocks.matches, _apply_exclusions).
HIDDEN_DEFAULTS = {"engine": IN_PROCESS}
# The grid's function that builds a cell (a CellSpec) from its axes, run settings and engine
# options.
make_cell = make_spec


def device_entries(devices: dict[str, Any]) -> list[tuple[str, Any]]:
    """(device, threads) pairs of the grid: one per CPU thread count, one per accelerator."""
    entries: list[tuple[str, Any]] = [
        ("cpu", threads) for threads in devices.get("cpu", {}).get("threads", [])
    ]
    for name in ("cuda", "mps"):
        wanted = devices.get(name, False)
        if wanted is False:
            continue
        if devices.get("auto") and name == "mps" and not has_device("mps"):
            continue
        entries.append((name, devices.get("accelerator_threads", "all")))
    return entries


def expand_grid(study: dict[str, Any]) -> list[CellSpec]:
    """All cells of a checked study, exclusions removed; raise if an exclusion matches nothing."""
    cells = []
    devices = device_entries(study["devices"])
    kinds = ModeKinds.ask()
    for task, settings in study["tasks"].items():
        spec = specs()[task]
        models = settings.get("models", list(spec.models))
        batch_sizes = settings.get("batch_sizes", study["batch_sizes"])
        run = {
            "dataset": spec.dataset,
            "epochs": settings.get("epochs", spec.epochs),
            "steps_per_epoch": settings.get("steps_per_epoch"),
            "learning_rate": settings.get("learning_rate", spec.learning_rate),
            "repetitions": study["repetitions"],
            "warmup_steps": study["warmup_steps"],
            "seed": study["seed"],
            "timeout_s": settings.get("timeout_s", study["timeout_s"]),
            "noise_cov": study["noise_cov"],
            "min_repetition_s": study["min_repetition_s"],
        }
        if "serve" in settings:  # serve cells only: other cells keep their hashes
            run["serve"] = json.dumps(sweep_serve(settings["serve"]), sort_keys=True)
        if "generate" in settings:  # generate cells only, as serve
            run["generate"] = json.dumps(settings["generate"], sort_keys=True)
        memory_limit_mb = settings.get("memory_limit_mb", study.get("memory_limit_mb"))
        if memory_limit_mb:  # only when set, so other configs keep their hashes
            run["memory_limit_mb"] = memory_limit_mb
        # A task's own extra axes (e.g. lstm_kernel), from `tasks.<task>.<axis>s` or the default.
        extra_axes = [
            [(axis, value) for value in settings.get(axis_key(axis), values[:1])]
            for axis, values in spec.axes.items()
        ]
        for model, framework, (device, threads), precision, batch, mode, extra in itertools.product(
            models,
            settings.get("frameworks", study["frameworks"]),
            _task_devices(devices, settings),
            settings.get("precisions", study["precisions"]),
            batch_sizes,
            task_modes(study["modes"], spec.modes, settings),
            itertools.product(*extra_axes),
        ):
            if not converge_wanted(mode, framework, settings):
                continue
            values = dict(
                zip(
                    AXES,
                    (task, model, framework, device, threads, precision, batch, mode),
                    strict=True,
                )
            )
            weights, source = cell_weights(settings, model)  # none for random weights
            mode_run = _mode_run(run, mode, kinds, settings, spec.dataset, device)
            packed = copies_axes(study, task, settings, device, threads, mode)
            compiled = compiled_axes(task, settings, spec.axes, values)
            waits = batch_wait_axes(task, settings, mode)
            for (scale, more), copies, compile_, wait in itertools.product(
                _scale_axes(study, mode, kinds, settings), packed, compiled, waits
            ):
                if not runnable(values, scale | compile_, generator="generator" in dict(extra)):
                    continue
                axes = dict(extra) | weights | scale | copies | compile_ | wait
                cells.append(make_cell(values, axes, mode_run | source, more))
    if not cells:
        raise ConfigError(_empty_grid_reason(study))
    cells = _apply_exclusions(cells, study.get("exclude", []))
    return _apply_profiles(cells, study.get("profile_cells", []))


class ModeKinds(NamedTuple):
    """The modes the grid plans alike, as their scenarios' traits say (scenarios.modes), asked
    once per grid: the grid never names a mode."""

    fixed: tuple[str, ...]  # a pass of fixed samples (train, infer)
    to_target: tuple[str, ...]  # training to a target (converge)
    fixed_training: tuple[str, ...]  # training a fixed run (train): the `gpus` axis
    scoring: tuple[str, ...]  # scoring a given classifier (infer, serve): task `engines`
    batch_scoring: tuple[str, ...]  # in the cell's process (infer): `infer_engines`

    @classmethod
    def ask(cls) -> ModeKinds:
        """The kinds, from the scenario registry now."""
        return cls(
            fixed=scenarios.modes(fixed_passes=True),
            to_target=scenarios.modes(to_target=True),
            fixed_training=scenarios.modes(trains=True, to_target=False),
            scoring=scenarios.modes(scores=True),
            batch_scoring=scenarios.modes(scores=True, serves=False),
        )


def _mode_run(
    run: dict[str, Any],
    mode: str,
    kinds: ModeKinds,
    task: dict[str, Any],
    dataset: str,
    device: str,
) -> dict[str, Any]:
    """The run settings of a mode's cells, from what its scenarios say they measure, not from
    its name: a mode that trains to a target reads its converge section; one that repeats a
    pass of fixed samples has it shortened on the CPU (`cpu_steps_per_epoch`) and its held-out
    set cut (`test_samples`); batch scoring judges a reduced format against a trained reference
    where the task asks (`trained_reference`)."""
    fixed = mode in kinds.fixed
    if mode in kinds.to_target:
        run = run | converge_run(dataset, task)
    if device == "cpu" and fixed and "cpu_steps_per_epoch" in task:
        run = run | {"steps_per_epoch": task["cpu_steps_per_epoch"]}
    if mode in kinds.batch_scoring:  # a trained reference on real data, where the task asks
        run = run | reference_run(task)
    if fixed and "test_samples" in task:
        run = run | {"test_samples": task["test_samples"]}
    if task.get("quality") is False and "quality" in scenarios.settings_of(mode):
        run = run | {"quality": False}
    return run


def _task_devices(devices: list[tuple[str, Any]], task: dict[str, Any]) -> list[tuple[str, Any]]:
    """The study's (device, threads) pairs, with a task's own CPU thread counts (task key
    `cpu_threads`, a thread sweep for a few tasks) in place of the study's."""
    if "cpu_threads" not in task:
        return devices
    others = [entry for entry in devices if entry[0] != "cpu"]
    if len(others) == len(devices):
        return devices  # the study has no CPU
    return [("cpu", threads) for threads in task["cpu_threads"]] + others


def _scale_axes(
    study: dict[str, Any], mode: str, kinds: ModeKinds, task: dict[str, Any]
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """(extra axes, engine options) of a cell's scale-out variants, only where the config asks,
    so that other configs keep their cell paths and hashes: the `gpus` axis of cells that train
    a fixed run (train: devices on CUDA, ranks on the CPU) and the `engine` axis of batch
    scoring cells (infer; study key `infer_engines`: Spark, ONNX Runtime, OpenVINO) and of a
    task's scoring cells (infer and serve; task key `engines`), as their scenarios' traits say.
    From a task's `engines` alone, `inprocess` (torch, the default) adds no axis, so a config
    that adds engines keeps its in-process cells' ids."""
    if mode in kinds.fixed_training and "gpus" in study:
        return [({"gpus": count}, None) for count in study["gpus"]]
    study_engines = study.get("infer_engines") if mode in kinds.batch_scoring else None
    task_engines = task.get("engines") if mode in kinds.scoring else None
    if study_engines is None and task_engines is None:
        return [({}, None)]
    variants = []
    for engine in task_engines or study_engines:
        hidden = engine == HIDDEN_DEFAULTS["engine"] and study_engines is None
        owner = options_class(engine)  # the options it owns, from their config key
        given = dict(study.get(owner.CONFIG_KEY, {})) if owner else {}
        variants.append(({} if hidden else {"engine": engine}, given or None))
    return variants


def runnable(values: dict[str, Any], extra: dict[str, Any], *, generator: bool = False) -> bool:
    """Whether a combination of axes can exist at all: the onnxruntime and openvino engines
    score torch models, and int8 is their post-training format (no train cells, no int8 in
    torch or Keras); a generate cell's generator has its own weight-only formats. Combinations
    that exist but cannot run here are skipped, not dropped."""
    model_engine = extra.get("engine") in MODEL_ENGINES
    if model_engine and values["framework"] != "torch":
        return False
    if model_engine and values["precision"] not in ENGINE_FORMATS[extra["engine"]]:
        return False  # tf32/fp16 are torch's; ONNX Runtime has no bf16
    if model_engine and extra.get("compile") == "compiled":
        return False  # torch.compile is torch's, not an exported model's
    if generator:  # a generate cell's generator says which formats it has (skip reasons)
        return True
    return values["precision"] not in ("int8", "int4") or model_engine


def _apply_profiles(cells: list[CellSpec], wanted: list[dict[str, Any]]) -> list[CellSpec]:
    """Mark the cells `profile_cells` selects (partial cells) to run the profiler after timing.

    Only marked cells gain the `profile` setting, so other cells' hashes and jobs are unchanged.
    """
    out = []
    for cell in cells:
        values = cell.values
        if any(all(values.get(k) == v for k, v in rule.items()) for rule in wanted):
            cell = cell.with_run(profile=1)
        out.append(cell)
    return out


def _empty_grid_reason(study: dict[str, Any]) -> str:
    """Why a grid has no cell before any exclusion: the modes asked for are none of the tasks'
    modes (or a task lists no model, batch size, ...)."""
    modes = list(study["modes"])
    offered = {task: specs()[task].modes for task in study["tasks"]}
    if not any(set(modes) & set(task_modes) for task_modes in offered.values()):
        has = "; ".join(f"{task}: {', '.join(m)}" for task, m in offered.items())
        return f"config key modes: {modes} is no mode of the tasks asked for ({has})"
    return "the grid has no cells: a task's models, frameworks, devices or batch sizes are empty"


def selector_values(cell: CellSpec) -> dict[str, Any]:
    """A cell's axes as selectors (exclude, blocks) read them, with what its id leaves out:
    no engine is in-process; a serve cell without `batch_wait` has its task's plain window."""
    values = HIDDEN_DEFAULTS | cell.values
    if "batch_wait" not in values and cell.values["mode"] in scenarios.modes(serves=True):
        values["batch_wait"] = plain_window(cell.settings.get("serve"))
    return values


def matches(rule: dict[str, Any], values: dict[str, Any]) -> bool:
    """Whether a selector (axis -> value: `exclude`, blocks) picks a cell whose
    `selector_values` are `values`."""
    return all(values.get(key) == value for key, value in rule.items())


def _apply_exclusions(cells: list[CellSpec], exclude: list[dict[str, Any]]) -> list[CellSpec]:
    matched = [0] * len(exclude)
    kept = []
    for cell in cells:
        values = selector_values(cell)  # an axis its id leaves out is named by its default
        hit = False
        for index, rule in enumerate(exclude):
            if matches(rule, values):
                matched[index] += 1
                hit = True
        if not hit:
            kept.append(cell)
    for index, count in enumerate(matched):
        if count == 0:
            raise ConfigError(
                f"config key exclude[{index}]: {exclude[index]} matches no cell of the grid"
            )
    if not kept:
        raise ConfigError("config key exclude: the exclusions remove every cell of the grid")
    return kept
