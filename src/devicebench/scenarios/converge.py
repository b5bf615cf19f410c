"""Converge cells: train until the held-out metric reaches the target or a limit runs out.

The clock runs over training and scoring alike (as MLPerf's does: evaluation is part of the time
to train); warm-up happens first, on a throwaway model, and is not counted. The energy meter and
the utilization sampler cover the same window (run.window), so energy to target is the window's
energy. The target and limits come from `converge` settings (devicebench.plan.converge).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

from devicebench.frameworks.protocols import Trainable
from devicebench.plan.converge import converge_settings
from devicebench.run import window as w
from devicebench.run.inprocess import InProcessScenario


def _one_run(
    backend: Any, goal: Mapping[str, Any], steps: int, dataset: Any, quality: Callable[..., dict]
) -> dict[str, Any]:
    """Train one fresh model until the target or a limit: its time to target, history, scores."""
    metric, target = str(goal["metric"]), float(goal["target"])
    start = time.perf_counter()
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
        w.log(f"epoch {len(history)}: {metric} {value:.4f} at {ended - start:.2f} s")
        if value >= target:
            reached = ended - start
            break
        if ended - start >= float(goal["max_time_s"]) or len(history) >= int(goal["max_epochs"]):
            break
    epochs, elapsed = len(history), time.perf_counter() - start
    return {
        "converged": reached is not None,
        "time_to_target_s": reached,
        "epochs": epochs,
        "train_s": train_s,
        "eval_s": eval_s,
        "history": history,
        "scores": scores,
        "not_reached": None
        if reached is not None
        else f"stopped after {epochs} epoch(s), {elapsed:.1f} s",
    }


def _per_run(total_j: Any, runs: int) -> float | None:
    """A run's share of the window's energy (None where no counter could be read)."""
    return None if total_j is None else float(total_j) / runs


def run_seeds(seed: int, runs: int) -> list[int]:
    """Each run's model seed: the cell's seed first; seed + 1 is the warm-up model's."""
    return [seed] + [seed + 1 + i for i in range(1, runs)]


def run_converge(
    backend: Any, settings: Mapping[str, Any], dataset: Any, *, quality: Callable[..., dict]
) -> dict[str, Any]:
    """Train `converge.runs` fresh models, each until the held-out `metric` reaches `target` or
    a limit; the record keeps every run's time to target and states the median of them. A cell
    converges only where every run reached the target."""
    goal = converge_settings(settings)
    metric, target = str(goal["metric"]), float(goal["target"])
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    steps = w.train_steps(backend, settings)
    backend.new_model(seed + 1)
    timings = w.warmup(int(settings["warmup_steps"]), lambda: backend.train_steps(1))
    window = w.Window(settings).start()
    start = time.perf_counter()
    runs = []
    for number, run_seed in enumerate(run_seeds(seed, int(goal["runs"])), start=1):
        if int(goal["runs"]) > 1:
            w.log(f"converge run {number} of {goal['runs']} (seed {run_seed})")
        backend.new_model(run_seed)
        runs.append(_one_run(backend, goal, steps, dataset, quality) | {"seed": run_seed})
    epochs = sum(r["epochs"] for r in runs)
    samples = epochs * steps * batch
    window.stop(samples)
    energy, utilization = window.energy, window.utilization
    elapsed = time.perf_counter() - start
    train_s, eval_s = sum(r["train_s"] for r in runs), sum(r["eval_s"] for r in runs)
    times = [r["time_to_target_s"] for r in runs]
    reached = all(t is not None for t in times)
    missed = [f"run {i} {r['not_reached']}" for i, r in enumerate(runs, 1) if r["not_reached"]]
    timings |= {
        "timed_start": window.timed_start,
        "timed_end": window.timed_end,
        "median_s": train_s / epochs,  # one epoch's training time, as train cells report it
        "repetitions_s": [r["train_s"] / r["epochs"] for r in runs],
        "window_s": [elapsed],
        "passes": [1],
        "steps_per_epoch": steps,
    }
    first = runs[0]
    return {
        "converge": {
            "metric": metric,
            "target": target,
            "converged": reached,
            "runs": len(runs),
            "runs_reached": sum(t is not None for t in times),
            "times_to_target_s": times,  # every run's, None where it missed the target
            "time_to_target_s": statistics.median(times) if reached else None,
            "epochs": int(statistics.median(r["epochs"] for r in runs)),
            "samples_to_target": samples // len(runs) if reached else None,
            "train_s": train_s,
            "eval_s": eval_s,
            "energy_to_target_j": _per_run(energy.get("total_j"), len(runs)) if reached else None,
            "max_time_s": float(goal["max_time_s"]),
            "max_epochs": int(goal["max_epochs"]),
            "history": first["history"],
            "run_histories": [r["history"] for r in runs],
            "not_reached": "; ".join(missed) or None,
        },
        "timings": timings,
        "throughput": {"samples_per_s": samples / train_s, "samples_per_pass": steps * batch},
        "quality": runs[-1]["scores"],
        "energy": energy,
        "utilization": utilization,
        **w.footprint(backend),
    }


class Converge(InProcessScenario):
    NAME = "converge"
    MODE = "converge"
    trains = True
    to_target = True
    needs = Trainable

    def measure(self, backend, settings, dataset, quality):
        return run_converge(backend, settings, dataset, quality=quality)


SCENARIO = Converge()
