"""Host utilization sampler: `python -m devicebench.measure.sampler INTERVAL_S [GPU_INDEX]`.

It runs as its own small process, not as a thread of the worker, so its Python work never
competes with the measured loop for the worker's GIL. It samples CPU utilization per core
(psutil) and, given a GPU, its SM utilization, memory used and power (NVML) every INTERVAL_S
seconds, prints ``ready`` once its first sample is primed, and, when its standard input closes,
prints the timeline as one JSON line and exits. `Sampler` is the worker's side of that protocol.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from typing import Any

import psutil

DEFAULT_INTERVAL_S = 0.1


class _Gpu:
    """One NVML device; None values where NVML cannot answer."""

    def __init__(self, index: str) -> None:
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        if index.isdigit():
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(int(index))
        else:  # CUDA_VISIBLE_DEVICES may name a GPU by its UUID
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(index)

    def sample(self) -> tuple[float, float, float]:
        nvml, handle = self.nvml, self.handle
        util = nvml.nvmlDeviceGetUtilizationRates(handle).gpu
        mem = nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20
        power = nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
        return float(util), round(mem, 1), round(power, 1)


def sample_until_stdin_closes(interval_s: float, gpu_index: str | None) -> dict[str, Any]:
    """The sampling loop; returns the timeline once stdin reaches end of file."""
    gpu = _Gpu(gpu_index) if gpu_index else None
    psutil.cpu_percent(percpu=True)  # primes the counters: the first reading covers nothing
    timeline: dict[str, Any] = {
        "interval_s": interval_s,
        "t": [],
        "cpu_percent_mean": [],
        "cpu_percent_per_core": [],
        "gpu_util": [],
        "gpu_mem_mb": [],
        "gpu_power_w": [],
        "gpu_index": gpu_index,
    }
    print("ready", flush=True)
    start = next_tick = last = time.monotonic()
    while True:
        next_tick += interval_s
        ready, _, _ = select.select([sys.stdin], [], [], max(0.0, next_tick - time.monotonic()))
        if ready and not sys.stdin.readline():
            # a last, partial interval: a section shorter than one interval still gets a sample
            if time.monotonic() - last < 0.01 and timeline["t"]:
                break
            ready = "last"
        last = time.monotonic()
        cores = psutil.cpu_percent(percpu=True)
        timeline["t"].append(round(time.monotonic() - start, 3))
        timeline["cpu_percent_per_core"].append([round(c, 1) for c in cores])
        timeline["cpu_percent_mean"].append(round(sum(cores) / max(len(cores), 1), 1))
        if gpu is not None:
            util, mem, power = gpu.sample()
            timeline["gpu_util"].append(util)
            timeline["gpu_mem_mb"].append(mem)
            timeline["gpu_power_w"].append(power)
        if ready == "last":
            break
    return timeline


def summarize(timeline: dict[str, Any]) -> dict[str, Any]:
    """Mean and peak CPU (mean over cores) and GPU utilization, in percent; None if unsampled."""

    def stats(values: list[float]) -> tuple[float | None, float | None]:
        return (sum(values) / len(values), max(values)) if values else (None, None)

    cpu_mean, cpu_peak = stats(timeline.get("cpu_percent_mean", []))
    gpu_mean, gpu_peak = stats(timeline.get("gpu_util", []))
    mem = timeline.get("gpu_mem_mb", [])
    power_mean, _ = stats(timeline.get("gpu_power_w", []))
    return {
        "cpu_util_mean": cpu_mean,
        "cpu_util_peak": cpu_peak,
        "gpu_util_mean": gpu_mean,
        "gpu_util_peak": gpu_peak,
        "gpu_mem_peak_mb": max(mem) if mem else None,
        "gpu_power_mean_w": power_mean,
        "samples": len(timeline.get("t", [])),
    }


class Sampler:
    """Start the sampler process around the timed section; `stop()` returns its timeline.

    Disabled (no process, an empty result) when `enabled` is false, so a benchmark can compare
    the same cell with and without it.
    """

    def __init__(self, device: str, interval_s: float = DEFAULT_INTERVAL_S, enabled: bool = True):
        self.device, self.interval_s, self.enabled = device, interval_s, enabled
        self.process: subprocess.Popen[str] | None = None

    def gpu_index(self) -> str | None:
        if self.device != "cuda":
            return None
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
        return visible or "0"

    def start(self) -> Sampler:
        if not self.enabled:
            return self
        command = [sys.executable, "-m", "devicebench.measure.sampler", str(self.interval_s)]
        if (index := self.gpu_index()) is not None:
            command.append(index)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        line = self.process.stdout.readline().strip()
        if line != "ready":
            self.process.kill()
            self.process.wait()
            self.process = None
            raise RuntimeError(f"utilization sampler failed to start (said {line!r})")
        return self

    def stop(self) -> dict[str, Any] | None:
        """The timeline and its summary, or None when sampling was off."""
        if self.process is None:
            return None
        output, _ = self.process.communicate(timeout=30)
        self.process = None
        timeline = json.loads(output.strip().splitlines()[-1])
        return {"summary": summarize(timeline), **timeline}


def main(argv: list[str]) -> int:
    interval = float(argv[0]) if argv else DEFAULT_INTERVAL_S
    timeline = sample_until_stdin_closes(interval, argv[1] if len(argv) > 1 else None)
    print(json.dumps(timeline, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
