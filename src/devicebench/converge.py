"""Converge cells: time to a target quality on held-out data (MLPerf Training's metric,
DAWNBench's time and cost to accuracy).

A converge cell trains one model from its seed epoch by epoch and scores the held-out split
after each epoch, until the target is reached or a time or epoch limit runs out. The clock runs
over training and scoring alike (as MLPerf's does: evaluation is part of the time to train);
warm-up happens first, on a throwaway model, and is not counted. The energy meter and the
utilization sampler cover the same window, so energy to target is the window's energy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

# What `tasks.<task>.converge` may say; `target` is required.
DEFAULTS: dict[str, Any] = {
    "metric": "accuracy",
    "target": None,
    "max_time_s": 600.0,
    "max_epochs": 100,
    "dataset": None,  # another dataset of the same format (mnist tasks: fashion_mnist)
    "frameworks": None,  # converge cells in these of the task's frameworks only (default: all)
}
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


def task_modes(study_modes: list[str], spec_modes: tuple[str, ...], settings: dict) -> list[str]:
    """A task's modes in the grid: its own, and converge where it trains and has a target."""
    able = "train" in spec_modes and "converge" in settings
    return [mode for mode in study_modes if mode in spec_modes or (mode == "converge" and able)]


def wanted(mode: str, framework: str, settings: dict[str, Any]) -> bool:
    """False for a converge cell in a framework its `converge.frameworks` leaves out."""
    frameworks = (settings.get("converge") or {}).get("frameworks")
    return mode != "converge" or not frameworks or framework in frameworks


def converge_run(task_dataset: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The run settings converge cells add (only they: other cells keep their hashes)."""
    given = settings["converge"]
    return {
        "dataset": cell_dataset(task_dataset, settings),
        "converge": json.dumps(given, sort_keys=True),
        "steps_per_epoch": None,  # an epoch is the whole training split, whatever train cells do
    }


def run_converge(
    backend: Any, settings: dict[str, Any], dataset: Any, *, quality: Callable[..., dict]
) -> dict[str, Any]:
    """Train until the held-out `metric` reaches `target` or a limit; the record's sections."""
    from devicebench import driver  # the shared procedure: steps, warm-up, sampler, scores

    goal = converge_settings(settings)
    metric, target = str(goal["metric"]), float(goal["target"])
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    steps = driver._steps(backend.train_samples, batch, settings.get("steps_per_epoch"), "training")
    backend.new_model(seed + 1)
    timings = driver._warmup(backend, int(settings["warmup_steps"]), lambda: backend.train_steps(1))
    backend.new_model(seed)
    sampler = driver._sampler(settings)
    meter = driver._energy_meter(settings).start()
    timed_start, start = time.time(), time.perf_counter()
    history: list[dict[str, Any]] = []
    train_s = eval_s = 0.0
    reached = None
    scores: dict[str, Any] = {}
    while True:
        began = time.perf_counter()
        backend.train_steps(steps)
        scored = time.perf_counter()
        predicted, loss = backend.evaluate()
        scores = dict(quality(dataset, predicted, loss))
        ended = time.perf_counter()
        train_s, eval_s = train_s + scored - began, eval_s + ended - scored
        value = scores.get(metric)
        if value is None:
            raise ValueError(
                f"converge.metric: {metric!r} is not a quality of this task; it has "
                f"{', '.join(sorted(scores))}"
            )
        history.append({"epoch": len(history) + 1, "elapsed_s": ended - start, metric: value})
        driver.log(f"epoch {len(history)}: {metric} {value:.4f} at {ended - start:.2f} s")
        if value >= target:
            reached = ended - start
            break
        if ended - start >= float(goal["max_time_s"]) or len(history) >= int(goal["max_epochs"]):
            break
    epochs = len(history)
    samples = epochs * steps * batch
    energy = meter.stop(samples)
    timed_end = time.time()
    utilization = sampler.stop()
    window = time.perf_counter() - start
    why = "" if reached is not None else f"stopped after {epochs} epoch(s), {window:.1f} s"
    timings |= {
        "timed_start": timed_start,
        "timed_end": timed_end,
        "median_s": train_s / epochs,  # one epoch's training time, as train cells report it
        "repetitions_s": [train_s / epochs],
        "window_s": [window],
        "passes": [1],
        "steps_per_epoch": steps,
    }
    return {
        "converge": {
            "metric": metric,
            "target": target,
            "converged": reached is not None,
            "time_to_target_s": reached,
            "epochs": epochs,
            "samples_to_target": samples if reached is not None else None,
            "train_s": train_s,
            "eval_s": eval_s,
            "energy_to_target_j": energy["total_j"] if reached is not None else None,
            "max_time_s": float(goal["max_time_s"]),
            "max_epochs": int(goal["max_epochs"]),
            "history": history,
            "not_reached": why or None,
        },
        "timings": timings,
        "throughput": {"samples_per_s": samples / train_s, "samples_per_pass": steps * batch},
        "quality": scores,
        "energy": energy,
        "utilization": utilization,
        **driver.footprint(backend),
    }
