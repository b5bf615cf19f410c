"""Prices as a buyer rents: the price file, the instance shapes it names, and a cell's hourly price.

A CPU cell on fewer threads than the smallest rentable CPU instance is priced as that instance:
nobody rents one vCPU of an idle 16-core host. A cell measured as N packed copies (the `copies`
axis: N concurrent copies filling the host, their throughputs summed) occupies N x threads vCPUs
and is priced so, which is how a small model's CPU cost can honestly go below one instance's
worth of threads per stream. A GPU is priced per GPU (its share of the host VM), the first
`cuda` entry whose `match` occurs in the GPU's name. Declared machines (see machines.py) are
priced as themselves, the whole instance per hour.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from devicebench.aggregate.machines import check_machines
from devicebench.aggregate.values import number_or_none

CPU_SHAPE = ("instance", "min_vcpus", "per_vcpu_hour")
GPU_SHAPE = ("match", "per_hour", "instance")


class PriceFileError(ValueError):
    """A price file that cannot price cells as rented (no instance shapes, bad values)."""


def load_prices(path: str | Path) -> dict[str, Any]:
    """The price file as a mapping, checked: the CPU and GPU instance shapes must be named."""
    with open(path) as handle:
        prices = yaml.safe_load(handle) or {}
    if not isinstance(prices, dict):
        raise PriceFileError(f"price file {path}: expected a mapping at the top level")
    check_prices(prices, str(path))
    return prices


def check_prices(prices: dict[str, Any], where: str = "prices") -> None:
    """Raise PriceFileError naming what is missing: the smallest rentable CPU instance (name,
    vCPUs, price per vCPU-hour) and, per GPU entry, its instance and hourly price."""
    cpu = prices.get("cpu")
    if not isinstance(cpu, dict) or any(key not in cpu for key in CPU_SHAPE):
        raise PriceFileError(
            f"price file {where}: `cpu` must name the smallest rentable CPU instance with "
            f"{', '.join(CPU_SHAPE)} (e.g. instance: c7i.large, min_vcpus: 2, "
            "per_vcpu_hour: 0.0425): a cell on fewer threads is priced as that instance"
        )
    if not isinstance(cpu["min_vcpus"], int) or cpu["min_vcpus"] < 1:
        raise PriceFileError(f"price file {where}: cpu.min_vcpus must be a positive integer")
    _positive(cpu["per_vcpu_hour"], f"price file {where}: cpu.per_vcpu_hour")
    gpus = prices.get("cuda") or []
    if not isinstance(gpus, list):
        raise PriceFileError(f"price file {where}: `cuda` must be a list of GPU entries")
    for index, entry in enumerate(gpus):
        missing = [k for k in GPU_SHAPE if not isinstance(entry, dict) or k not in entry]
        if missing:
            raise PriceFileError(
                f"price file {where}: cuda entry {index} lacks {', '.join(missing)} "
                "(each GPU entry names the instance it is rented as and its price per GPU-hour)"
            )
        _positive(entry["per_hour"], f"price file {where}: cuda entry {index} per_hour")
    try:
        check_machines(prices, where)
    except ValueError as error:
        raise PriceFileError(str(error)) from None


def _positive(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise PriceFileError(f"{what} must be a number >= 0, not {value!r}")


def min_vcpus(prices: dict[str, Any]) -> int:
    """vCPUs of the smallest rentable CPU instance (1 where a hand-made price mapping lacks it)."""
    return int((prices.get("cpu") or {}).get("min_vcpus", 1))


def rented_vcpus(threads: Any, copies: Any, prices: dict[str, Any]) -> float:
    """The vCPUs a CPU cell is priced for: threads x copies, at least the smallest instance."""
    count = number_or_none(threads)
    if count is None:  # none, or unresolved ("all"): no count to price
        return math.nan
    used = int(count) * (1 if _missing(copies) else int(copies))
    return float(max(used, min_vcpus(prices)))


def price_per_hour(
    device: Any, threads: Any, gpu_name: Any, prices: dict[str, Any], copies: Any = 1
) -> float:
    """The hourly price of one cell as rented; NaN where the file prices no such device."""
    device = str(device)
    if device == "cpu":
        per_vcpu = (prices.get("cpu") or {}).get("per_vcpu_hour")
        if per_vcpu is None:
            return math.nan
        return float(per_vcpu) * rented_vcpus(threads, copies, prices)
    if device == "cuda":
        entry = gpu_entry(gpu_name, prices)
        return float(entry["per_hour"]) if entry else math.nan
    entry = prices.get(device) or {}
    return float(entry["per_hour"]) if "per_hour" in entry else math.nan


def gpu_entry(gpu_name: Any, prices: dict[str, Any]) -> dict[str, Any] | None:
    """The first `cuda` entry whose `match` occurs in the GPU's name, or None."""
    name = gpu_name if isinstance(gpu_name, str) else ""
    for entry in prices.get("cuda") or []:
        if name and str(entry.get("match", "")).lower() in name.lower():
            return entry
    return None


def shape_priced(
    device: Any, threads: Any, gpu_name: Any, prices: dict[str, Any], copies: Any = 1
) -> str:
    """The instance shape a cell was priced as, in words, for the verdict row."""
    if str(device) == "cpu":
        cpu = prices.get("cpu") or {}
        vcpus = rented_vcpus(threads, copies, prices)
        if _missing(vcpus):
            return ""
        used = int(threads) * (1 if _missing(copies) else int(copies))
        packed = "" if _missing(copies) or int(copies) == 1 else f", {int(copies)} packed copies"
        if used < min_vcpus(prices):
            return (
                f"{int(vcpus)} vCPUs ({cpu.get('instance', 'smallest instance')}: "
                f"{used} used{packed})"
            )
        return f"{int(vcpus)} vCPUs{packed}"
    if str(device) == "cuda":
        entry = gpu_entry(gpu_name, prices)
        if not entry:
            return ""  # a GPU shared by several jobs (MPS, processes) is not measured yet
        return f"{entry.get('instance', entry.get('match'))}, whole (no shared-GPU measurement)"
    return str(device)


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
