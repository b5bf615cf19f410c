"""Converge cells: train until the held-out metric reaches the target or a limit runs out.

The clock runs over training and scoring alike (as MLPerf's does: evaluation is part of the time
to train); warm-up happens first, on a throwaway model, and is not counted. The energy meter and
the utilization sampler cover the same window (run.window), so energy to target is the window's
energy. The target and limits come from `converge` settings (devicebench.converge).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from devicebench.converge import converge_settings
from devicebench.frameworks.protocols import Trainable
from devicebench.run import window as w
from devicebench.run.inprocess import InProcessScenario


def run_converge(
    backend: Any, settings: Mapping[str, Any], dataset: Any, *, quality: Callable[..., dict]
) -> dict[str, Any]:
    """Train until the held-out `metric` reaches `target` or a limit; the record's sections."""
    goal = converge_settings(settings)
    metric, target = str(goal["metric"]), float(goal["target"])
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    steps = w.train_steps(backend, settings)
    backend.new_model(seed + 1)
    timings = w.warmup(int(settings["warmup_steps"]), lambda: backend.train_steps(1))
    backend.new_model(seed)
    window = w.Window(settings).start()
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
    epochs = len(history)
    samples = epochs * steps * batch
    window.stop(samples)
    energy, utilization = window.energy, window.utilization
    elapsed = time.perf_counter() - start
    why = "" if reached is not None else f"stopped after {epochs} epoch(s), {elapsed:.1f} s"
    timings |= {
        "timed_start": window.timed_start,
        "timed_end": window.timed_end,
        "median_s": train_s / epochs,  # one epoch's training time, as train cells report it
        "repetitions_s": [train_s / epochs],
        "window_s": [elapsed],
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
        **w.footprint(backend),
    }


class Converge(InProcessScenario):
    NAME = "converge"
    MODE = "converge"
    needs = Trainable

    def measure(self, backend, settings, dataset, quality):
        return run_converge(backend, settings, dataset, quality=quality)


SCENARIO = Converge()
