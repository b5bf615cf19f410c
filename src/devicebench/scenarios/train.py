"""Train cells: train from the same initial weights `repetitions` times and time every epoch."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from devicebench.frameworks.protocols import Trainable
from devicebench.measure.marks import mark
from devicebench.run import window as w
from devicebench.run.inprocess import InProcessScenario


def run_train(
    backend: Any, settings: Mapping[str, Any], dataset: Any, *, quality: w.Quality
) -> dict[str, Any]:
    """A pass is one training run of `epochs` epochs. Each repetition repeats its pass, training
    on, until it has lasted `min_repetition_s`, so that a millisecond pass is still timed over a
    window long enough to measure; the summary is per pass (window / passes)."""
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    steps = w.train_steps(backend, settings)
    epochs, reps = int(settings["epochs"]), int(settings["repetitions"])
    minimum = w.min_window(settings)
    backend.new_model(seed + 1)
    mark("model_built")
    timings = w.warmup(int(settings["warmup_steps"]), lambda: backend.train_steps(1))
    mark("warmup_done")
    w.log(f"warm-up done: first call {timings['first_call_s']:.3f} s")
    windows, passes, epoch_times = [], [], []
    bar = w.progress(reps, "train")
    window = w.Window(settings).start()
    for rep in range(reps):
        backend.new_model(seed)
        epochs_s: list[float] = []
        count = 0
        while count == 0 or w.more(backend, sum(epochs_s) < minimum):
            for _ in range(epochs):
                start = time.perf_counter()
                backend.train_steps(steps)
                epochs_s.append(time.perf_counter() - start)
            count += 1
        windows.append(sum(epochs_s))
        passes.append(count)
        epoch_times.append(epochs_s)
        w.log(
            f"rep {rep + 1}/{reps}: {count} pass(es) of {epochs} epoch(s) in {windows[-1]:.3f} s, "
            f"{count * steps * batch * epochs / windows[-1]:,.0f} samples/s"
        )
        if bar:
            bar.update()
    window.stop(sum(passes) * steps * batch * epochs)
    if bar:
        bar.close()
    if passes[-1] > 1:  # the model trained on: score one trained exactly `epochs` epochs
        backend.new_model(seed)
        for _ in range(epochs):
            backend.train_steps(steps)
    predicted, loss = w.evaluate(backend)
    mark("evaluated")
    result = w.result(
        backend,
        settings,
        timings,
        windows,
        passes,
        steps * batch * epochs,
        window,
        quality(dataset, predicted, loss),
        epoch_s=epoch_times,
        steps_per_epoch=steps,
    )
    return result | {"utilization": window.utilization, "energy": window.energy}


class Train(InProcessScenario):
    NAME = "train"
    MODE = "train"
    trains = True
    fixed_passes = True
    needs = Trainable

    def measure(self, backend, settings, dataset, quality):
        return run_train(backend, settings, dataset, quality=quality)


SCENARIO = Train()
