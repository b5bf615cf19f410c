"""Energy over a timed window, from the hardware's own cumulative counters.

GPU: NVML's total energy counter (nvmlDeviceGetTotalEnergyConsumption, millijoules since the
driver loaded; Volta and later). CPU package and DRAM: RAPL through Linux powercap
(/sys/class/powercap/intel-rapl:*/energy_uj, microjoules, wrapping at max_energy_range_uj).
Each counter is read once when the window opens and once when it closes: no sampling thread, no
process, nothing that runs during the window, so the reading costs the window nothing (about
two file reads and two NVML calls; benchmarks/sampler_overhead.py measures it). A counter that
cannot be read gives null joules and the reason, never an estimate.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

POWERCAP = Path("/sys/class/powercap")
JOULES_PER_KWH = 3.6e6


def gpu_index(device: str) -> str | None:
    """The NVML name of the cell's GPU: the first of CUDA_VISIBLE_DEVICES (index or UUID)."""
    if device != "cuda":
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return visible or "0"


class _NvmlCounter:
    """NVML's total energy counter of one GPU, in joules."""

    def __init__(self, index: str) -> None:
        import pynvml

        pynvml.nvmlInit()
        if index.isdigit():
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(int(index))
        else:
            self.handle = pynvml.nvmlDeviceGetHandleByUUID(index)
        self.nvml = pynvml
        self.read()  # raises here, not at the window's end, where the GPU cannot answer

    def read(self) -> float:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1000.0


def _gpu_counter(device: str) -> tuple[_NvmlCounter | None, str | None]:
    index = gpu_index(device)
    if index is None:
        return None, "not a GPU cell"
    try:
        return _NvmlCounter(index), None
    except Exception as error:  # noqa: BLE001 - any NVML failure is a reason, not a crash
        return None, f"NVML total energy counter unreadable: {type(error).__name__}: {error}"


def rapl_domains(root: Path = POWERCAP) -> tuple[dict[str, list[Path]], str | None]:
    """RAPL zones by kind (package, dram) with a readable energy_uj, or none and the reason."""
    if not root.exists():
        return {}, (
            f"no {root} on this host (the kernel exposes no RAPL powercap interface: a virtual "
            "machine, a non-Intel/AMD CPU, or intel_rapl not loaded)"
        )
    zones: dict[str, list[Path]] = {"package": [], "dram": []}
    unreadable = []
    for zone in sorted(root.glob("intel-rapl:*")):
        try:
            name = (zone / "name").read_text().strip()
        except OSError:
            continue
        kind = "package" if name.startswith("package") else name
        if kind not in zones:
            continue  # core, uncore, psys: parts of the package or the whole platform
        try:
            int((zone / "energy_uj").read_text())
        except OSError as error:
            unreadable.append(f"{zone / 'energy_uj'}: {error.strerror}")
            continue
        zones[kind].append(zone)
    if not zones["package"]:
        why = "; ".join(unreadable) or f"no intel-rapl package zone under {root}"
        return {}, f"RAPL unreadable: {why} (energy_uj is root-only on Linux >= 5.10)"
    return zones, None


def _read_uj(zone: Path) -> int:
    return int((zone / "energy_uj").read_text())


def _rapl_joules(zone: Path, start: int, end: int) -> float:
    """Joules between two readings of one zone, allowing one wrap of its counter."""
    if end < start:
        end += int((zone / "max_energy_range_uj").read_text())
    return (end - start) / 1e6


class EnergyMeter:
    """`start()` when the timed window opens, `stop(samples)` when it closes: the record's
    `energy` section (joules per source, per sample and samples per kWh, or null and why)."""

    def __init__(self, device: str, powercap: Path = POWERCAP, enabled: bool = True) -> None:
        self.begin: dict[str, Any] = {}
        self.gpu, self.gpu_reason = None, "energy measurement off"
        self.zones: dict[str, list[Path]] = {}
        self.cpu_reason: str | None = "energy measurement off"
        if enabled:  # off only for benchmarks/sampler_overhead.py's comparison
            self.gpu, self.gpu_reason = _gpu_counter(device)
            self.zones, self.cpu_reason = rapl_domains(powercap)

    def _read(self) -> dict[str, Any]:
        reading: dict[str, Any] = {"t": time.perf_counter()}
        if self.gpu is not None:
            reading["gpu"] = self.gpu.read()
        for kind, zones in self.zones.items():
            reading[kind] = [_read_uj(zone) for zone in zones]
        return reading

    def start(self) -> EnergyMeter:
        self.begin = self._read()
        return self

    def stop(self, samples: int | None) -> dict[str, Any]:
        end = self._read()
        if not self.begin:
            raise RuntimeError("EnergyMeter.stop() before start()")
        out: dict[str, Any] = {
            "window_s": end["t"] - self.begin["t"],
            "gpu_j": end["gpu"] - self.begin["gpu"] if self.gpu is not None else None,
            "gpu_reason": self.gpu_reason,
            "cpu_package_j": None,
            "dram_j": None,
            "cpu_reason": self.cpu_reason,
            "dram_reason": self.cpu_reason,
        }
        for kind, key in (("package", "cpu_package_j"), ("dram", "dram_j")):
            zones = self.zones.get(kind) or []
            if zones:
                pairs = zip(zones, self.begin[kind], end[kind], strict=True)
                out[key] = sum(_rapl_joules(zone, a, b) for zone, a, b in pairs)
            elif self.zones:
                out["dram_reason"] = "no RAPL dram zone on this CPU"
        if out["dram_j"] is not None:
            out["dram_reason"] = None
        return out | per_sample(out, samples)


def per_sample(energy: dict[str, Any], samples: int | None) -> dict[str, Any]:
    """Joules of the measured sources, per sample and samples per kWh; null with the reason
    when no source was measured."""
    parts = {"gpu": energy.get("gpu_j"), "cpu_package": energy.get("cpu_package_j")}
    parts["dram"] = energy.get("dram_j")
    measured = {name: joules for name, joules in parts.items() if joules is not None}
    if not measured:
        reason = "no energy counter readable: " + "; ".join(
            f"{name}: {energy.get(f'{name}_reason')}" for name in ("gpu", "cpu")
        )
        return {"total_j": None, "covers": [], "samples": samples, "joules_per_sample": None,
                "samples_per_kwh": None, "reason": reason}  # fmt: skip
    total = sum(measured.values())
    if not samples or total <= 0:
        reason = "no samples in the window" if not samples else "the counters did not advance"
        return {"total_j": total, "covers": sorted(measured), "samples": samples,
                "joules_per_sample": None, "samples_per_kwh": None, "reason": reason}  # fmt: skip
    return {
        "total_j": total,
        "covers": sorted(measured),
        "samples": samples,
        "joules_per_sample": total / samples,
        "samples_per_kwh": samples * JOULES_PER_KWH / total,
        "reason": None,
    }
