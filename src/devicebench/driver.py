"""The measurement procedure every framework shares: warm-up apart, repetitions, epochs, quality.

A backend supplies device-resident steps that end in a device synchronize; the driver owns the
clock, so each framework is timed the same way.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from devicebench.copies_runner import wait_at_barrier
from devicebench.energy import EnergyMeter
from devicebench.marks import mark
from devicebench.sampler import Sampler
from devicebench.timing import latency_percentiles, summarize

# The workload's scorer: (dataset, predicted, mean loss) -> the record's quality section.
Quality = Callable[[Any, np.ndarray, float], dict[str, float]]


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


def _min_window(settings: dict[str, Any]) -> float:
    """Seconds a timed repetition must last at least (the MLPerf minimum-duration rule)."""
    return float(settings.get("min_repetition_s", 0.0))


def run_train(
    backend: Backend, settings: dict[str, Any], dataset: Any, *, quality: Quality
) -> dict[str, Any]:
    """Train from the same initial weights `repetitions` times; time every epoch.

    A pass is one training run of `epochs` epochs. Each repetition repeats its pass, training on,
    until it has lasted `min_repetition_s`, so that a millisecond pass is still timed over a
    window long enough to measure; the summary is per pass (window / passes).
    """
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    steps = _steps(backend.train_samples, batch, settings.get("steps_per_epoch"), "training")
    epochs, reps = int(settings["epochs"]), int(settings["repetitions"])
    minimum = _min_window(settings)
    backend.new_model(seed + 1)
    mark("model_built")
    timings = _warmup(backend, int(settings["warmup_steps"]), lambda: backend.train_steps(1))
    mark("warmup_done")
    log(f"warm-up done: first call {timings['first_call_s']:.3f} s")
    windows, passes, epoch_times = [], [], []
    bar = _progress(reps, "train")
    if waited := wait_at_barrier(settings):  # a packed cell's copies start their windows together
        timings["barrier"] = waited
    sampler = _sampler(settings)
    meter = _energy_meter(settings).start()
    timed_start = time.time()
    for rep in range(reps):
        backend.new_model(seed)
        epochs_s: list[float] = []
        count = 0
        while count == 0 or _more(backend, sum(epochs_s) < minimum):
            for _ in range(epochs):
                start = time.perf_counter()
                backend.train_steps(steps)
                epochs_s.append(time.perf_counter() - start)
            count += 1
        window = sum(epochs_s)
        windows.append(window)
        passes.append(count)
        epoch_times.append(epochs_s)
        log(
            f"rep {rep + 1}/{reps}: {count} pass(es) of {epochs} epoch(s) in {window:.3f} s, "
            f"{count * steps * batch * epochs / window:,.0f} samples/s"
        )
        if bar:
            bar.update()
    timed_end = time.time()
    energy = meter.stop(sum(passes) * steps * batch * epochs)
    utilization = sampler.stop()
    if bar:
        bar.close()
    if passes[-1] > 1:  # the model trained on: score one trained exactly `epochs` epochs
        backend.new_model(seed)
        for _ in range(epochs):
            backend.train_steps(steps)
    samples = steps * batch * epochs
    predicted, loss = _evaluate(backend)
    mark("evaluated")
    result = _result(
        backend,
        settings,
        timings,
        windows,
        passes,
        samples,
        timed_start,
        timed_end,
        quality(dataset, predicted, loss),
        epoch_s=epoch_times,
        steps_per_epoch=steps,
    )
    return result | {"utilization": utilization, "energy": energy}


def run_infer(
    backend: Backend, settings: dict[str, Any], dataset: Any, *, quality: Quality
) -> dict[str, Any]:
    """Train once (untimed) so predictions mean something, then time batched inference passes."""
    batch, seed = int(settings["batch_size"]), int(settings["seed"])
    train_steps = _steps(backend.train_samples, batch, settings.get("steps_per_epoch"), "training")
    steps = _steps(backend.test_samples, batch, None, "test")
    reps = int(settings["repetitions"])
    backend.new_model(seed)
    mark("model_built")
    start = time.perf_counter()
    for _ in range(int(settings["epochs"])):
        backend.train_steps(train_steps)
    mark("trained_untimed")
    log(f"trained untimed for {settings['epochs']} epoch(s) in {time.perf_counter() - start:.2f} s")
    if prepare := getattr(backend, "prepare_inference", None):  # an engine exports, untimed
        prepare()
        mark("inference_prepared")
    timings = _warmup(backend, int(settings["warmup_steps"]), lambda: backend.infer_batches(1))
    mark("warmup_done")
    minimum = _min_window(settings)
    windows, passes, latencies = [], [], []
    bar = _progress(reps, "infer")
    if waited := wait_at_barrier(settings):
        timings["barrier"] = waited
    sampler = _sampler(settings)
    meter = _energy_meter(settings).start()
    timed_start = time.time()
    for rep in range(reps):
        count, window = 0, 0.0
        while count == 0 or window < minimum:
            start = time.perf_counter()
            latencies += backend.infer_batches(steps)
            window += time.perf_counter() - start
            count += 1
        windows.append(window)
        passes.append(count)
        log(
            f"rep {rep + 1}/{reps}: {count} pass(es) in {window:.3f} s, "
            f"{count * steps * batch / window:,.0f} samples/s"
        )
        if bar:
            bar.update()
    timed_end = time.time()
    energy = meter.stop(sum(passes) * steps * batch)
    utilization = sampler.stop()
    if bar:
        bar.close()
    predicted, loss = _evaluate(backend)
    mark("evaluated")
    timings["latency_ms"] = latency_percentiles(latencies)
    result = _result(
        backend,
        settings,
        timings,
        windows,
        passes,
        steps * batch,
        timed_start,
        timed_end,
        quality(dataset, predicted, loss),
    )
    return result | {"utilization": utilization, "energy": energy}


def _evaluate(backend: Backend) -> tuple[np.ndarray, float]:
    """The held-out predictions, kept on the backend as `last`: a bf16, int8 or engine cell's
    agreement with fp32 (engines.cell.finish) reads them instead of scoring the test set again."""
    predicted, loss = backend.evaluate()
    try:
        backend.last = (predicted, loss)  # type: ignore[attr-defined]
    except AttributeError:  # a backend that takes no new attribute: finish evaluates again
        pass
    return predicted, loss


def _energy_meter(settings: dict[str, Any]) -> EnergyMeter:
    """The energy counters around the timed section (`measure_energy: false`: none read)."""
    return EnergyMeter(str(settings["device"]), enabled=bool(settings.get("measure_energy", True)))


def _sampler(settings: dict[str, Any]) -> Sampler:
    """The utilization sampler (a separate process) around the timed section only."""
    enabled = bool(settings.get("sample_utilization", True))
    return Sampler(str(settings["device"]), enabled=enabled).start()


def _more(backend: Backend, more: bool) -> bool:
    """Another pass? The ranks of a data-parallel backend decide it together (all_agree)."""
    agree = getattr(backend, "all_agree", None)
    return agree(more) if agree is not None else more


def _result(
    backend: Backend,
    settings: dict[str, Any],
    timings: dict[str, Any],
    windows: list[float],
    passes: list[int],
    samples: int,
    timed_start: float,
    timed_end: float,
    quality: dict[str, float],
    **extra: Any,
) -> dict[str, Any]:
    per_pass = [window / count for window, count in zip(windows, passes, strict=True)]
    summary = summarize(per_pass, noise_cov=float(settings["noise_cov"]))
    timings.update(
        summary,
        repetitions_s=per_pass,
        window_s=windows,
        passes=passes,
        min_repetition_s=_min_window(settings),
        timed_start=timed_start,
        timed_end=timed_end,
    )
    timings.update(extra)
    return {
        "timings": timings,
        "throughput": {
            "samples_per_s": samples / summary["median_s"],
            "samples_per_pass": samples,
        },
        "quality": dict(quality),
        **footprint(backend),
    }


def footprint(backend: Backend) -> dict[str, Any]:
    """The record's memory and model sections: peak memory so far, the model's size and loop."""
    return {
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
