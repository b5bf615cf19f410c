"""What a cell ran on: library versions, CPU, GPU, driver, CUDA, host and scheduler job.

Captured inside the cell's own process, so that the record describes the stack that produced
its numbers rather than the one that launched the workflow.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from importlib import metadata
from typing import Any

from devicebench.measure.machine import machine_identity

LIBRARIES = ("torch", "numpy", "keras", "tensorflow", "tensorflow-cpu", "devicebench")
# Instruction-set features that change deep-learning speed on a CPU (x86 and Arm names).
CPU_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
)


def cpu_model() -> str:
    """The CPU's marketing name (from /proc/cpuinfo on Linux)."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """The CPU_FLAGS this CPU has (from /proc/cpuinfo), in CPU_FLAGS' order."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    present = set(line.split(":", 1)[1].split())
                    return [flag for flag in CPU_FLAGS if flag in present]
    except OSError:
        pass
    return []


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries a cell may use."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def torch_cuda_build() -> dict[str, Any]:
    """The CUDA and cuDNN versions the loaded torch carries (None without torch or CUDA), read
    without initialising a device: a CPU server on a GPU host pays nothing for them."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.version.cuda:
        return {"cuda": None, "cudnn": None}
    return {"cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}


def gpu_facts() -> dict[str, Any]:
    """GPU name and driver from NVML, CUDA and cuDNN versions from torch, where present."""
    facts: dict[str, Any] = {"gpu_name": None, "gpu_driver": None, "cuda": None, "cudnn": None}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        facts["gpu_name"] = torch.cuda.get_device_name(0)
        facts |= torch_cuda_build()
    try:
        import pynvml

        pynvml.nvmlInit()
        facts["gpu_driver"] = pynvml.nvmlSystemGetDriverVersion()
        if facts["gpu_name"] is None and pynvml.nvmlDeviceGetCount() > 0:
            facts["gpu_name"] = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML means no NVIDIA GPU to describe
        pass
    return facts


def capture(threads: int | None = None) -> dict[str, Any]:
    """The environment section of a cell record."""
    try:
        import psutil

        cores, physical = psutil.cpu_count(logical=True), psutil.cpu_count(logical=False)
        memory = psutil.virtual_memory().total
    except ImportError:  # a bare host without psutil: the standard library
        cores, physical = os.cpu_count(), None
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": library_versions(),
        "cpu_model": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cpu_cores": cores,
        "cpu_physical_cores": physical,
        "threads": threads,
        "memory_gb": round(memory / 2**30, 1),
        "hostname": socket.gethostname(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_partition": os.environ.get("SLURM_JOB_PARTITION"),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    env.update(gpu_facts())
    env.update(machine_identity())
    return env
