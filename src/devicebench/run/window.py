"""The timed window every scenario shares: warm-up apart, minimum-duration repetitions, the
utilization sampler and the energy meter around the timed section, and the record's summary.

The one copy: train, infer, converge and Spark scenarios call these instead of assembling the
window by hand, so each is timed, sampled and metered the same way.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from devicebench.measure.energy import EnergyMeter
from devicebench.measure.sampler import Sampler
from devicebench.measure.timing import summarize
from devicebench.run.copies_runner import wait_at_barrier

# Why a speed-only cell's record has no quality figures (run setting `quality: false`).
SPEED_ONLY = (
    "speed-only cell (task key quality: false): the model was not trained, its predictions "
    "were not scored and no fp32 reference was run"
)


def speed_only(settings: Mapping[str, Any]) -> bool:
    """Whether the cell asks for speed only: no untimed training, scoring or fp32 reference."""
    return settings.get("quality") is False


def not_measured() -> dict[str, str]:
    """A speed-only cell's quality section: n/a, and why."""
    return {"not_measured": SPEED_ONLY}


# The workload's scorer: (dataset, predicted, mean loss) -> the record's quality section.
Quality = Callable[[Any, Any, float], dict[str, float]]


def log(message: str) -> None:
    """A progress line in the cell's log."""
    print(f"[devicebench] {message}", flush=True)


def steps_for(samples: int, batch_size: int, cap: int | None, what: str) -> int:
    """Steps of `batch_size` in `samples` (capped); ValueError where not one batch fits."""
    steps = samples // batch_size
    if steps == 0:
        raise ValueError(
            f"batch_size {batch_size} is larger than the {samples} {what} samples; "
            "use a smaller batch size or more samples"
        )
    return min(steps, cap) if cap else steps


def train_steps(backend: Any, settings: Mapping[str, Any]) -> int:
    """Optimizer steps per epoch of a cell's training."""
    cap = settings.get("steps_per_epoch")
    return steps_for(backend.train_samples, int(settings["batch_size"]), cap, "training")


def progress(total: int, desc: str):
    """A progress bar when a person watches a terminal; nothing extra in a job's log."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit="rep", leave=False)
    return None


def warmup(steps: int, run: Callable[[], Any]) -> dict[str, Any]:
    """Untimed warm-up steps; the first call is timed on its own (lazy init, kernel choice)."""
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return {"first_call_s": times[0], "warmup_s": times}


def min_window(settings: Mapping[str, Any]) -> float:
    """Seconds a timed repetition must last at least (the MLPerf minimum-duration rule)."""
    return float(settings.get("min_repetition_s", 0.0))


class Window:
    """The sampler and the energy meter around a timed section, with its wall-clock ends.

    ``start()`` before the first timed step, ``stop(samples)`` after the last; then
    ``timed_start``, ``timed_end``, ``energy`` and ``utilization`` hold the readings."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        device = str(settings["device"])
        self._sampler = Sampler(device, enabled=bool(settings.get("sample_utilization", True)))
        self._meter = EnergyMeter(device, enabled=bool(settings.get("measure_energy", True)))
        self.timed_start = self.timed_end = 0.0
        self.energy: dict[str, Any] = {}
        self.utilization: dict[str, Any] = {}
        self._settings = settings
        self.barrier: dict[str, Any] | None = None

    def start(self) -> Window:
        # a packed cell's copies start their windows together (run.copies_runner)
        self.barrier = wait_at_barrier(self._settings)
        self._sampler.start()
        self._meter.start()
        self.timed_start = time.time()
        return self

    def stop(self, samples: int) -> Window:
        self.timed_end = time.time()
        self.energy = self._meter.stop(samples)
        self.utilization = self._sampler.stop()
        return self


def more(backend: Any, wanted: bool) -> bool:
    """Another pass? The ranks of a data-parallel backend decide it together (all_agree)."""
    agree = getattr(backend, "all_agree", None)
    return agree(wanted) if agree is not None else wanted


def evaluate(backend: Any) -> tuple[Any, float]:
    """The held-out predictions, kept on the backend as `last`: a bf16, int8 or engine cell's
    agreement with fp32 (engines.cell.finish) reads them instead of scoring the test set again."""
    predicted, loss = backend.evaluate()
    try:
        backend.last = (predicted, loss)
    except AttributeError:  # a backend that takes no new attribute: finish evaluates again
        pass
    return predicted, loss


def result(
    backend: Any,
    settings: Mapping[str, Any],
    timings: dict[str, Any],
    windows: list[float],
    passes: list[int],
    samples: int,
    window: Window,
    quality: Mapping[str, float],
    **extra: Any,
) -> dict[str, Any]:
    """The record's timings, throughput, quality, memory and model sections of a timed window;
    the summary is per pass (window / passes)."""
    per_pass = [seconds / count for seconds, count in zip(windows, passes, strict=True)]
    summary = summarize(per_pass, noise_cov=float(settings["noise_cov"]))
    timings.update(
        summary,
        repetitions_s=per_pass,
        window_s=windows,
        passes=passes,
        min_repetition_s=min_window(settings),
        timed_start=window.timed_start,
        timed_end=window.timed_end,
    )
    timings.update(extra)
    if window.barrier:
        timings["barrier"] = window.barrier
    return {
        "timings": timings,
        "throughput": {
            "samples_per_s": samples / summary["median_s"],
            "samples_per_pass": samples,
        },
        "quality": dict(quality),
        **footprint(backend),
    }


def footprint(backend: Any) -> dict[str, Any]:
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
