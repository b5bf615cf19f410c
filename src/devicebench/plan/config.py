"""Load and check a study configuration before any job starts.

The JSON schema (config/schema.yaml) checks structure and ranges; this module adds what a schema
cannot say well: names that must exist in the registries, duplicates, devices this host lacks,
thread counts above its cores, and exclusions that match nothing. Every message names the key.
"""

from __future__ import annotations

import copy
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from devicebench.frameworks import FRAMEWORKS
from devicebench.measure.devices import has_device, host_cores
from devicebench.plan.config_bounds import (
    ConfigTooLarge,
    check_size,
    non_finite,
    short,
    strict_validator,
)
from devicebench.plan.converge import ALTERNATIVE_DATASETS, task_modes
from devicebench.workloads import get, specs
from devicebench.workloads.base import axis_key

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "config" / "schema.yaml"


class ConfigError(ValueError):
    """A configuration problem, with the key and value that cause it."""


def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """The study's JSON schema."""
    import yaml  # here, like jsonschema: a cell runner on a bare GPU host needs neither

    with open(path) as handle:
        return yaml.safe_load(handle)


def check_config(config: dict[str, Any], *, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate `config` and return a copy with defaults filled in; raise ConfigError otherwise."""
    schema = schema or load_schema()
    try:
        check_size(config, "config")  # before anything walks it (config_bounds)
    except ConfigTooLarge as error:
        raise ConfigError(str(error)) from None
    if key := non_finite(config):
        raise ConfigError(f"config key {key}: NaN or infinity is not a usable number")
    _check_schema(config, schema)
    study = copy.deepcopy(config)
    for key, spec in schema["properties"].items():
        if "default" in spec:
            study.setdefault(key, copy.deepcopy(spec["default"]))
    study["devices"] = _normalise_devices(study["devices"])
    _check_names(study)
    _check_duplicates(study)
    _check_devices(study)
    return study


def _key(path: Any) -> str:
    """A JSON path as the dotted key a user would look for in the YAML."""
    parts = []
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(("." if parts else "") + str(part))
    return "".join(parts) or "(top level)"


def _check_schema(config: dict[str, Any], schema: dict[str, Any]) -> None:
    import jsonschema  # here, so that cells run where only the runner's needs are installed

    validator = strict_validator(jsonschema.Draft202012Validator)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    # best_match stops at a oneOf whose branches fail differently: take the deepest branch error
    while error.context:
        error = max(error.context, key=lambda e: len(e.absolute_path))
    key = _key(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(map(str, set(error.instance) - set(allowed)))
        raise ConfigError(
            f"config key {key}: unknown key(s) {short(', '.join(map(repr, unknown)))}; "
            f"allowed: {', '.join(allowed)}"
        )
    what = error.message if len(error.message) <= 300 else f"fails {error.validator!r}"
    raise ConfigError(f"config key {key}: {short(error.instance)} is invalid: {what}")


def _normalise_devices(devices: Any) -> dict[str, Any]:
    """`devices: auto` means every core count 'all' on the CPU, and accelerators where present."""
    if devices == "auto":
        return {"cpu": {"threads": ["all"]}, "cuda": "auto", "mps": "auto", "auto": True}
    devices = dict(devices)
    devices.setdefault("accelerator_threads", "all")
    return devices


def _check_names(study: dict[str, Any]) -> None:
    TASKS = specs()  # noqa: N806 - the registry's specs by name
    for index, framework in enumerate(study["frameworks"]):
        if framework not in FRAMEWORKS:
            raise ConfigError(
                f"config key frameworks[{index}]: unknown framework {framework!r}; "
                f"known: {', '.join(FRAMEWORKS)}"
            )
    for task, settings in study["tasks"].items():
        if task not in TASKS:
            raise ConfigError(
                f"config key tasks.{task}: unknown task {task!r}; known: {', '.join(sorted(TASKS))}"
            )
        for axis in sorted({a for spec in TASKS.values() for a in spec.axes}):
            if axis_key(axis) in settings and axis not in TASKS[task].axes:
                raise ConfigError(
                    f"config key tasks.{task}.{axis_key(axis)}: task {task} has no {axis} axis; "
                    f"tasks with one: {', '.join(t for t, s in TASKS.items() if axis in s.axes)}"
                )
        if "serve" in settings and TASKS[task].kind != "serve":
            raise ConfigError(f"config key tasks.{task}.serve: task {task} is not a serve task")
        if "converge" in settings:
            _check_converge(task, settings["converge"])
            # only planned converge cells must fit: the modes the grid adds beyond the task's own
            planned = task_modes(study.get("modes", []), TASKS[task].modes, settings)
            if set(planned) - set(TASKS[task].modes):
                _check_converge_time(task, settings, study)
        _check_reference(task, settings)
        for index, framework in enumerate(settings.get("frameworks", [])):
            if framework not in FRAMEWORKS:
                raise ConfigError(
                    f"config key tasks.{task}.frameworks[{index}]: unknown framework "
                    f"{framework!r}; known: {', '.join(FRAMEWORKS)}"
                )
        for index, model in enumerate(settings.get("models", TASKS[task].models)):
            if model not in TASKS[task].models:
                raise ConfigError(
                    f"config key tasks.{task}.models[{index}]: unknown model {model!r} for task "
                    f"{task}; known: {', '.join(TASKS[task].models)}"
                )
        _check_weights(task, settings)
        _check_test_samples(task, settings, TASKS[task].dataset, study.get("datasets", {}))
        try:
            get(task).validate(settings)
        except ValueError as error:
            raise ConfigError(f"config key tasks.{task}.{error}") from None
        if TASKS[task].kind == "serve":
            _check_serve_bounds(task, settings)
    known = sorted({spec.dataset for spec in TASKS.values()} | set(ALTERNATIVES))
    for name, settings in study.get("datasets", {}).items():
        if name not in known:
            raise ConfigError(
                f"config key datasets.{name}: unknown dataset {name!r}; known: {', '.join(known)}"
            )
        if settings.get("source") == "path" and not settings.get("path"):
            raise ConfigError(f"config key datasets.{name}.path: required when source is 'path'")


def _check_serve_bounds(task: str, settings: dict[str, Any]) -> None:
    """A serve task with the latency-bound search: a p99 bound for each of its models."""
    from devicebench.serving.bounds import NoBound, check_bounds

    models = settings.get("models", specs()[task].models)
    slo = (settings.get("serve") or {}).get("slo")
    try:
        check_bounds(task, models, slo)
    except NoBound as error:
        raise ConfigError(f"config key tasks.{task}.{error}") from None
    if slo and slo.get("confirm") == "best" and slo.get("confirm_runs", 3) == 0:
        raise ConfigError(  # plan.confirm: the best sweep cell gets the confirming runs
            f"config key tasks.{task}.serve.slo.confirm: best confirms each device's best sweep "
            "cell with confirm_runs runs, but confirm_runs is 0"
        )


ALTERNATIVES = {name for names in ALTERNATIVE_DATASETS.values() for name in names}


def _check_test_samples(
    task: str, settings: dict[str, Any], dataset: str, datasets: dict[str, Any]
) -> None:
    """A task's cap on held-out samples must not ask for more than its data set has."""
    wanted, held = settings.get("test_samples"), datasets.get(dataset, {}).get("test_samples")
    if wanted is not None and held is not None and wanted > held:
        raise ConfigError(
            f"config key tasks.{task}.test_samples: {wanted} is more than the "
            f"{held} held-out samples of datasets.{dataset}"
        )


def _check_converge(task: str, given: dict[str, Any]) -> None:
    """A converge section needs a task that trains, and a dataset it can read."""
    from devicebench.plan.converge import check, trains

    TASKS = specs()  # noqa: N806 - the registry's specs by name
    if not trains(TASKS[task].modes):
        raise ConfigError(f"config key tasks.{task}.converge: task {task} does not train")
    try:
        check(given, TASKS[task].dataset)
    except ValueError as error:
        raise ConfigError(f"config key tasks.{task}.{error}") from None


def _check_converge_time(task: str, settings: dict[str, Any], study: dict[str, Any]) -> None:
    """A converge cell's runs must fit its timeout: runs x max_time_s within timeout_s, or the
    cell is killed before its last run could say whether it reached the target."""
    from devicebench.plan.converge import DEFAULTS

    given = settings["converge"]
    runs, limit = (
        given.get("runs", DEFAULTS["runs"]),
        given.get("max_time_s", DEFAULTS["max_time_s"]),
    )
    timeout = settings.get("timeout_s", study.get("timeout_s"))
    if timeout is not None and runs * float(limit) > float(timeout):
        raise ConfigError(
            f"config key tasks.{task}.converge.runs: {runs} runs of up to max_time_s {limit:g} s "
            f"need {runs * float(limit):g} s, more than the cell's timeout_s {timeout:g}; lower "
            "runs or max_time_s, or raise timeout_s"
        )


def _check_reference(task: str, settings: dict[str, Any]) -> None:
    from devicebench.plan.converge import check_reference

    try:
        check_reference(settings)
    except ValueError as error:
        raise ConfigError(f"config key tasks.{task}.{error}") from None


def _check_weights(task: str, settings: dict[str, Any]) -> None:
    """`weights: pretrained` needs a local copy of every model of the task, found now."""
    from devicebench.frameworks.pretrained import MissingWeights, locate

    TASKS = specs()  # noqa: N806 - the registry's specs by name
    sources = settings.get("pretrained", {})
    for model in sources:
        if model not in TASKS[task].models:
            raise ConfigError(
                f"config key tasks.{task}.pretrained.{model}: unknown model {model!r} for task "
                f"{task}; known: {', '.join(TASKS[task].models)}"
            )
    if settings.get("weights", "random") != "pretrained":
        return
    if get(task).pretrained_class is None:
        able = [t for t in TASKS if get(t).pretrained_class]
        raise ConfigError(
            f"config key tasks.{task}.weights: task {task} has no pretrained weights (its models "
            f"are built here with random weights); tasks with them: {', '.join(able)}"
        )
    for model in settings.get("models", TASKS[task].models):
        if model not in sources:
            raise ConfigError(
                f"config key tasks.{task}.pretrained: no entry for model {model} (weights: "
                f"pretrained); give pretrained: {{{model}: <save_pretrained folder or hub id>}}"
            )
        try:
            locate(model, sources[model], tokenizer=get(task).pretrained_tokenizer)
        except MissingWeights as error:
            raise ConfigError(f"config key tasks.{task}.pretrained.{model}: {error}") from None


def _check_duplicates(study: dict[str, Any]) -> None:
    lists = {key: study[key] for key in ("frameworks", "precisions", "modes", "batch_sizes")}
    lists["devices.cpu.threads"] = study["devices"].get("cpu", {}).get("threads", [])
    for task, settings in study["tasks"].items():
        keys = ["models", "frameworks", "batch_sizes", "precisions", "engines"]
        keys += [axis_key(a) for a in specs()[task].axes]
        for key in keys:
            lists[f"tasks.{task}.{key}"] = settings.get(key, [])
    for key, values in lists.items():
        repeated = [value for value, count in Counter(values).items() if count > 1]
        if repeated:
            raise ConfigError(f"config key {key}: duplicate value(s) {repeated}")


def _check_devices(study: dict[str, Any]) -> None:
    devices = study["devices"]
    cores = host_cores()
    for value in devices.get("cpu", {}).get("threads", []):
        if value != "all" and value > cores:
            warnings.warn(
                f"config key devices.cpu.threads: {value} threads is more than the {cores} cores "
                "of this host; that cell will oversubscribe its CPU",
                stacklevel=2,
            )
    if not study["check_devices"]:
        return
    for name in ("cuda", "mps"):
        if devices.get(name) is True and not has_device(name):
            raise ConfigError(
                f"config key devices.{name}: {name} is required (true) but this host has no "
                f"{name} device; use 'auto' to record its cells as skipped, or set "
                "check_devices: false when jobs run on other hosts (a cluster)"
            )


# Keys a user's config *selects* with: what it lists is all that runs. Each replaces the value
# below it whole (for `tasks`, the default's settings of a task the user names still fill in).
SELECTING_KEYS = ("tasks", "frameworks", "devices", "precisions", "modes", "batch_sizes")


# Mappings keyed by model that a user's file gives whole: the quick study's bound for its model
# must not leak into a study that serves other models (a bound for a model not served is an error).
WHOLE_MAPPINGS = ("p99_bounds_ms",)


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """`update` over `base`, mappings merged key by key, anything else replaced; an empty
    mapping in `update` clears (`target_accuracy: {}` means no targets, not the default's), and
    a WHOLE_MAPPINGS key replaces the default's whole."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        whole = key in WHOLE_MAPPINGS
        if isinstance(value, dict) and value and isinstance(out.get(key), dict) and not whole:
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def combine_configs(
    default: dict[str, Any], users: list[dict[str, Any]], overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The study a run means: the default config, each user config over it, then --config values.

    Settings merge key by key (the default fills what a user leaves out), but a user's selection
    replaces the default's: only the tasks, frameworks, devices, precisions, modes and batch
    sizes the user's file lists run (a task the user names keeps the default's settings for it
    that the user does not give).
    """
    study = copy.deepcopy(default)
    for user in users:
        if not isinstance(user, dict):
            raise ConfigError("config file: expected a mapping at the top level")
        tasks, before = user.get("tasks"), study
        study = _merge(study, {k: v for k, v in user.items() if k not in SELECTING_KEYS})
        for key in SELECTING_KEYS:
            if key in user:
                study[key] = copy.deepcopy(user[key])
        if isinstance(tasks, dict):
            previous = (default.get("tasks") or {}) | (before.get("tasks") or {})
            study["tasks"] = {
                name: _merge(previous.get(name) or {}, settings or {})
                for name, settings in tasks.items()
            }
    return _merge(study, overrides or {})


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML config file and check it."""
    import yaml

    with open(path) as handle:
        config = yaml.safe_load(handle)
    if not isinstance(config, dict):
        raise ConfigError(f"config file {path}: expected a mapping at the top level")
    return check_config(config)
