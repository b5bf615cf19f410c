"""Converge cells' settings: time to a target quality on held-out data (MLPerf Training's
metric, DAWNBench's time and cost to accuracy), as the config and the grid state it.

A converge cell trains one model from its seed epoch by epoch and scores the held-out split
after each epoch, until the target is reached or a time or epoch limit runs out; the
measurement itself is the converge scenario (devicebench.scenarios.converge).
"""

from __future__ import annotations

import json
from typing import Any

from devicebench.scenarios import modes

# What `tasks.<task>.converge` may say; `target` is required.
DEFAULTS: dict[str, Any] = {
    "metric": "accuracy",
    "target": None,
    "max_time_s": 600.0,
    "max_epochs": 100,
    "dataset": None,  # another dataset of the same format (mnist tasks: fashion_mnist)
    "frameworks": None,  # converge cells in these of the task's frameworks only (default: all)
    "runs": 1,  # independent runs from fresh seeds; the verdict uses their median and range
}
MAX_RUNS = 20  # runs a cell may make: each is a whole training to the target
# Metrics that are shares of held-out samples: a target of 1 or more is out of reach.
BOUNDED = ("accuracy", "f1_micro", "f1_macro")
# Datasets a task may train on in converge cells instead of its own (same shapes and classes).
ALTERNATIVE_DATASETS = {"mnist": ("fashion_mnist",)}


def converge_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The defaults, overridden by the cell's `converge` settings (a JSON string on the CLI)."""
    given = settings.get("converge") or {}
    if isinstance(given, str):
        given = json.loads(given)
    check(given)
    return DEFAULTS | given


def check(given: dict[str, Any], dataset: str | None = None) -> None:
    """ValueError('converge.<key>: <problem>') for a converge section that cannot run."""
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"converge: unknown key(s) {unknown}; known: {', '.join(DEFAULTS)}")
    if given.get("target") is None:
        raise ValueError("converge.target: required (the held-out quality to train to)")
    target, metric = given["target"], given.get("metric", DEFAULTS["metric"])
    if metric in BOUNDED and not 0 < float(target) < 1:  # a share: 1.0 is no model's target
        raise ValueError(
            f"converge.target: {target} for {metric}, a share of held-out samples: no model can "
            "reach it (give a value between 0 and 1, below 1)"
        )
    runs = given.get("runs", DEFAULTS["runs"])
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        raise ValueError(
            f"converge.runs: {runs!r}; give a whole number of runs from 1 to {MAX_RUNS} (each "
            "trains to the target from a fresh seed)"
        )
    if dataset is not None and given.get("dataset") not in (None, dataset):
        allowed = ALTERNATIVE_DATASETS.get(dataset, ())
        if given["dataset"] not in allowed:
            raise ValueError(
                f"converge.dataset: {given['dataset']!r} cannot replace {dataset}; "
                f"allowed: {', '.join((dataset, *allowed))}"
            )


def cell_dataset(task_dataset: str, settings: dict[str, Any]) -> str:
    """The dataset a converge cell reads: its `converge.dataset`, else the task's."""
    return (settings.get("converge") or {}).get("dataset") or task_dataset


def trains(spec_modes: tuple[str, ...]) -> bool:
    """Whether a task trains: one of its modes trains a fixed run (train; the scenarios'
    traits say which), so that a converge section can train it to a target."""
    return bool(set(spec_modes) & set(modes(trains=True, to_target=False)))


def task_modes(study_modes: list[str], spec_modes: tuple[str, ...], settings: dict) -> list[str]:
    """A task's modes in the grid: its own, and those that train to a target (converge) where
    it trains and has a target."""
    able = "converge" in settings and trains(spec_modes)
    to_target = modes(to_target=True) if able else ()
    return [mode for mode in study_modes if mode in spec_modes or mode in to_target]


def wanted(mode: str, framework: str, settings: dict[str, Any]) -> bool:
    """False for a converge cell in a framework its `converge.frameworks` leaves out."""
    frameworks = (settings.get("converge") or {}).get("frameworks")
    return not frameworks or framework in frameworks or mode not in modes(to_target=True)


def converge_run(task_dataset: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The run settings converge cells add (only they: other cells keep their hashes)."""
    given = settings["converge"]
    return {
        "dataset": cell_dataset(task_dataset, settings),
        "converge": json.dumps(given, sort_keys=True),
        "steps_per_epoch": None,  # an epoch is the whole training split, whatever train cells do
    }


def check_reference(settings: dict[str, Any]) -> None:
    """ValueError('trained_reference...') where a task's infer cells cannot train a reference:
    it reads the converge section's real dataset, so the task needs one."""
    given = settings.get("trained_reference")
    if given is None:
        return
    if not isinstance(given, dict) or set(given) - {"epochs"}:
        raise ValueError("trained_reference: give {epochs: N} (whole epochs, untimed)")
    epochs = given.get("epochs")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"trained_reference.epochs: {epochs!r}; give a whole number, at least 1")
    if not (settings.get("converge") or {}).get("dataset"):
        raise ValueError(
            "trained_reference: needs converge.dataset (the real data its converge models train "
            "on, e.g. fashion_mnist): the reduced-format gate is judged on a trained model there"
        )


def reference_run(settings: dict[str, Any]) -> dict[str, Any]:
    """The run settings infer cells add where the task asks for a trained reference: the
    converge section's real dataset and whole epochs of untimed training, so a reduced format's
    or engine's agreement is judged against a trained fp32 model of the same family on real
    data, not an untrained one on synthetic data. {} where the task does not ask."""
    given = settings.get("trained_reference")
    if not given:
        return {}
    return {
        "dataset": settings["converge"]["dataset"],
        "epochs": int(given["epochs"]),
        "steps_per_epoch": None,  # whole epochs of the real training split
    }
