"""Infer cells: train once (untimed) so predictions mean something, then time batched inference
passes, in-process or through an export engine (onnxruntime, openvino). A speed-only cell (task
key `quality: false`) skips the training and the scoring: its record's quality says n/a, and why.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from devicebench.frameworks.protocols import Classifier
from devicebench.measure.marks import mark
from devicebench.measure.timing import latency_percentiles
from devicebench.run import window as w
from devicebench.run.inprocess import InProcessScenario
from devicebench.scenarios.base import QUALITY_SETTING


def train_untimed(backend: Any, settings: Mapping[str, Any]) -> None:
    """The cell's epochs of training, untimed: an inference cell scores a trained model."""
    steps = w.train_steps(backend, settings)
    backend.new_model(int(settings["seed"]))
    mark("model_built")
    start = time.perf_counter()
    for _ in range(int(settings["epochs"])):
        backend.train_steps(steps)
    mark("trained_untimed")
    w.log(
        f"trained untimed for {settings['epochs']} epoch(s) in {time.perf_counter() - start:.2f} s"
    )


def run_infer(
    backend: Any, settings: Mapping[str, Any], dataset: Any, *, quality: w.Quality
) -> dict[str, Any]:
    """Time `repetitions` windows of batched inference over the held-out split."""
    batch = int(settings["batch_size"])
    steps = w.steps_for(backend.test_samples, batch, None, "test")
    reps = int(settings["repetitions"])
    if w.speed_only(settings):  # the fixed cost cut: a fresh model, timed as a trained one
        backend.new_model(int(settings["seed"]))
        mark("model_built")
        w.log("speed only (quality: false): no untimed training, scoring or fp32 reference")
    else:
        train_untimed(backend, settings)
    if prepare := getattr(backend, "prepare_inference", None):  # an engine exports, untimed
        prepare()
        mark("inference_prepared")
    timings = w.warmup(int(settings["warmup_steps"]), lambda: backend.infer_batches(1))
    mark("warmup_done")
    minimum = w.min_window(settings)
    windows, passes, latencies = [], [], []
    bar = w.progress(reps, "infer")
    window = w.Window(settings).start()
    for rep in range(reps):
        count, seconds = 0, 0.0
        while count == 0 or seconds < minimum:
            start = time.perf_counter()
            latencies += backend.infer_batches(steps)
            seconds += time.perf_counter() - start
            count += 1
        windows.append(seconds)
        passes.append(count)
        w.log(
            f"rep {rep + 1}/{reps}: {count} pass(es) in {seconds:.3f} s, "
            f"{count * steps * batch / seconds:,.0f} samples/s"
        )
        if bar:
            bar.update()
    window.stop(sum(passes) * steps * batch)
    if bar:
        bar.close()
    if w.speed_only(settings):
        scored = w.not_measured()
    else:
        predicted, loss = w.evaluate(backend)
        mark("evaluated")
        scored = quality(dataset, predicted, loss)
    timings["latency_ms"] = latency_percentiles(latencies)
    result = w.result(
        backend,
        settings,
        timings,
        windows,
        passes,
        steps * batch,
        window,
        scored,
    )
    return result | {"utilization": window.utilization, "energy": window.energy}


class Infer(InProcessScenario):
    NAME = "infer"
    MODE = "infer"
    fixed_passes = True
    scores = True
    needs = Classifier
    SETTINGS = QUALITY_SETTING  # quality: false measures speed only

    def measure(self, backend, settings, dataset, quality):
        return run_infer(backend, settings, dataset, quality=quality)


SCENARIO = Infer()
