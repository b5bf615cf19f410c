"""The measurement procedure every framework shares: warm-up apart, repetitions, epochs, quality.

A backend supplies device-resident steps that end in a device synchronize; the driver owns the
clock, so each framework is timed the same way.
"""

from __future__ import annotations

import math
import resource
import sys
import time
from typing import Any, Protocol

import numpy as np

from devicebench.metrics import classification_scores
from devicebench.sampler import Sampler
from devicebench.tasks import get_task
from devicebench.timing import latency_percentiles, summarize


class Backend(Protocol):
    """What a framework must offer the driver."""

    name: str
    fit_loop: str
    train_samples: int
    test_samples: int

    def new_model(self, seed: int) -> None: ...
    def parameter_count(self) -> int: ...
    def train_steps(self, steps: int) -> None: ...
    def infer_batches(self, steps: int) -> list[float]: ...
    def evaluate(self) -> tuple[np.ndarray, float]: ...
    def peak_device_memory_mb(self) -> float | None: ...


def log(message: str) -> None:
    """A progress line in the cell's log."""
    print(f"[devicebench] {message}", flush=True)


def _steps(samples: int, batch_size: int, cap: int | None, what: str) -> int:
    steps = samples // batch_size
    if steps == 0:
        raise ValueError(
            f"batch_size {batch_size} is larger than the {samples} {what} samples; "
            "use a smaller batch size or more samples"
        )
    return min(steps, cap) if cap else steps


def _progress(total: int, desc: str):
    """A progress bar when a person watches a terminal; nothing extra in a job's log."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit="rep", leave=False)
    return None


def _warmup(backend: Backend, steps: int, run) -> dict[str, Any]:
    """Untimed warm-up steps; the first call is timed on its own (lazy init, kernel choice)."""
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return {"first_call_s": times[0], "warmup_s": times}


def run_train(backend: Backend, settings: dict[str, Any], dataset: Any) -> dict[str, Any]:
    """Train from the same initial weights `repetitions` times; time every epoch."""
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    steps = _steps(backend.train_samples, batch, settings.get("steps_per_epoch"), "training")
    epochs, reps = int(settings["epochs"]), int(settings["repetitions"])
    backend.new_model(seed + 1)
    timings = _warmup(backend, int(settings["warmup_steps"]), lambda: backend.train_steps(1))
    log(f"warm-up done: first call {timings['first_call_s']:.3f} s")
    rep_times, epoch_times = [], []
    bar = _progress(reps, "train")
    sampler = _sampler(settings)
    timed_start = time.time()
    for rep in range(reps):
        backend.new_model(seed)
        epochs_s = []
        for epoch in range(epochs):
            start = time.perf_counter()
            backend.train_steps(steps)
            elapsed = time.perf_counter() - start
            epochs_s.append(elapsed)
            log(
                f"rep {rep + 1}/{reps} epoch {epoch + 1}/{epochs}: {elapsed:.3f} s, "
                f"{steps * batch / elapsed:,.0f} samples/s"
            )
        rep_times.append(sum(epochs_s))
        epoch_times.append(epochs_s)
        if bar:
            bar.update()
    timed_end = time.time()
    utilization = sampler.stop()
    if bar:
        bar.close()
    samples = steps * batch * epochs
    predicted, loss = backend.evaluate()
    result = _result(
        backend,
        settings,
        timings,
        rep_times,
        samples,
        timed_start,
        timed_end,
        dataset,
        predicted,
        loss,
        epoch_s=epoch_times,
        steps_per_epoch=steps,
    )
    return result | {"utilization": utilization}


def run_infer(backend: Backend, settings: dict[str, Any], dataset: Any) -> dict[str, Any]:
    """Train once (untimed) so predictions mean something, then time batched inference passes."""
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    train_steps = _steps(backend.train_samples, batch, settings.get("steps_per_epoch"), "training")
    steps = _steps(backend.test_samples, batch, None, "test")
    reps = int(settings["repetitions"])
    backend.new_model(seed)
    start = time.perf_counter()
    for _ in range(int(settings["epochs"])):
        backend.train_steps(train_steps)
    log(f"trained untimed for {settings['epochs']} epoch(s) in {time.perf_counter() - start:.2f} s")
    timings = _warmup(backend, int(settings["warmup_steps"]), lambda: backend.infer_batches(1))
    rep_times, latencies = [], []
    bar = _progress(reps, "infer")
    sampler = _sampler(settings)
    timed_start = time.time()
    for rep in range(reps):
        start = time.perf_counter()
        latencies += backend.infer_batches(steps)
        elapsed = time.perf_counter() - start
        rep_times.append(elapsed)
        log(f"rep {rep + 1}/{reps}: {elapsed:.3f} s, {steps * batch / elapsed:,.0f} samples/s")
        if bar:
            bar.update()
    timed_end = time.time()
    utilization = sampler.stop()
    if bar:
        bar.close()
    predicted, loss = backend.evaluate()
    timings["latency_ms"] = latency_percentiles(latencies)
    result = _result(
        backend,
        settings,
        timings,
        rep_times,
        steps * batch,
        timed_start,
        timed_end,
        dataset,
        predicted,
        loss,
    )
    return result | {"utilization": utilization}


def _sampler(settings: dict[str, Any]) -> Sampler:
    """The utilization sampler (a separate process) around the timed section only."""
    enabled = bool(settings.get("sample_utilization", True))
    return Sampler(str(settings["device"]), enabled=enabled).start()


def _result(
    backend: Backend,
    settings: dict[str, Any],
    timings: dict[str, Any],
    rep_times: list[float],
    samples: int,
    timed_start: float,
    timed_end: float,
    dataset: Any,
    predicted: np.ndarray,
    loss: float,
    **extra: Any,
) -> dict[str, Any]:
    summary = summarize(rep_times, noise_cov=float(settings["noise_cov"]))
    timings.update(summary, repetitions_s=rep_times, timed_start=timed_start, timed_end=timed_end)
    timings.update(extra)
    quality = classification_scores(dataset.y_test, predicted, dataset.num_classes)
    quality["loss"] = loss
    if get_task(settings["task"]).kind == "next_char":
        quality["perplexity"] = math.exp(min(loss, 700.0))  # next-char accuracy is `accuracy`
    return {
        "timings": timings,
        "throughput": {
            "samples_per_s": samples / summary["median_s"],
            "samples_per_repetition": samples,
        },
        "quality": quality,
        "memory": {
            "peak_host_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_device_mb": backend.peak_device_memory_mb(),
        },
        "model": {
            "parameters": backend.parameter_count(),
            "fit_loop": backend.fit_loop,
            **getattr(backend, "model_info", {}),
        },
    }
