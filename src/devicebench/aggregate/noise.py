"""Noise in every ratio: its range over the repetitions, and whether it is too close to call.

A cell's throughput is a median over repetitions; its fastest and slowest repetition bound it.
A ratio of two cells then spans from (slowest numerator / fastest denominator) to the reverse.
Lent machines differ by 13-34 % lease to lease on the same CPU cell (DESIGN "One machine, one code
version"), so a ratio within LEASE_VARIANCE of even, or whose range crosses even, says "too
close to call" rather than naming a winner.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

LEASE_VARIANCE = 1.35
TOO_CLOSE = "too close to call"
CLEAR = "clear"
UNSTEADY = 2.0  # slowest repetition over median: warm-up was not done
NOISY_COV = 0.10
LOW_UTILISATION = 50.0  # per cent: a GPU pick below this is not at its best


def throughput_range(cell: pd.Series) -> tuple[float, float]:
    """(lowest, highest) throughput over the cell's repetitions: its median throughput scaled by
    median / slowest and median / fastest repetition time (each repetition holds equal work)."""
    rate, median = _float(cell.get("samples_per_s")), _float(cell.get("median_s"))
    slow, fast = _float(cell.get("max_s")), _float(cell.get("min_s"))
    if any(math.isnan(v) or v <= 0 for v in (rate, median, slow, fast)):
        return math.nan, math.nan  # no repetitions recorded (a serve cell): no range
    return rate * median / slow, rate * median / fast


def cost_ratio_range(cpu: pd.Series, gpu: pd.Series, ratio: float) -> tuple[float, float]:
    """The CPU/GPU cost-per-sample ratio's (low, high) over both cells' repetitions."""
    cpu_low, cpu_high = throughput_range(cpu)
    gpu_low, gpu_high = throughput_range(gpu)
    cpu_rate, gpu_rate = _float(cpu.get("samples_per_s")), _float(gpu.get("samples_per_s"))
    return ratio_range(ratio, (cpu_low, cpu_rate, cpu_high), (gpu_low, gpu_rate, gpu_high))


def ratio_range(
    ratio: float, cpu: tuple[float, float, float], gpu: tuple[float, float, float]
) -> tuple[float, float]:
    """The CPU/GPU cost ratio's (low, high) from each side's (lowest, chosen, highest)
    throughput: cost is price over throughput, so the ratio is lowest where the GPU's slowest
    meets the CPU's fastest."""
    (cpu_low, cpu_rate, cpu_high), (gpu_low, gpu_rate, gpu_high) = cpu, gpu
    low = ratio * (gpu_low / gpu_rate) * (cpu_rate / cpu_high)
    high = ratio * (gpu_high / gpu_rate) * (cpu_rate / cpu_low)
    return low, high


def to_target_range(cpu: pd.Series, gpu: pd.Series, ratio: float) -> tuple[float, float]:
    """The CPU/GPU cost-to-target ratio's (low, high) over both cells' converge runs (cost to
    target is price x time, so the ratio moves with each side's fastest and slowest run); NaN
    where a side made one run: one run has no range."""
    spans = []
    for cell in (cpu, gpu):
        runs = _float(cell.get("converge_runs"))
        median = _float(cell.get("time_to_target_s"))
        fast, slow = (
            _float(cell.get("time_to_target_min_s")),
            _float(cell.get("time_to_target_max_s")),
        )
        if math.isnan(runs) or runs < 2 or not median > 0 or math.isnan(fast + slow):
            return math.nan, math.nan
        spans.append((fast / median, slow / median))
    (cpu_fast, cpu_slow), (gpu_fast, gpu_slow) = spans
    return ratio * cpu_fast / gpu_slow, ratio * cpu_slow / gpu_fast


def confidence(ratio: Any, low: Any, high: Any) -> str:
    """'too close to call' where the range crosses even or the ratio lies within the lease-to-
    lease variance; 'clear' otherwise; '' without a ratio."""
    ratio, low, high = _float(ratio), _float(low), _float(high)
    if math.isnan(ratio) or ratio <= 0:
        return ""
    crosses = not math.isnan(low) and not math.isnan(high) and low <= 1.0 <= high
    within = abs(math.log(ratio)) <= math.log(LEASE_VARIANCE)
    return TOO_CLOSE if crosses or within else CLEAR


def utilisation_note(gpu_util_mean: Any) -> str:
    """The verdict row's words on a GPU pick that ran under LOW_UTILISATION per cent busy."""
    util = _float(gpu_util_mean)
    if math.isnan(util) or util >= LOW_UTILISATION:
        return ""
    return f"the GPU pick ran at {util:.0f} % utilisation: not at its best"


def steadiness_note(cell: pd.Series, side: str) -> str:
    """Words on a pick whose repetitions were not steady: a slowest repetition over UNSTEADY x
    the median (warm-up not done), else a CoV above the noise threshold the cell recorded."""
    median, slow, cov = (_float(cell.get(k)) for k in ("median_s", "max_s", "cov"))
    if median > 0 and slow / median > UNSTEADY:
        return f"{side} pick's slowest repetition is {slow / median:.1f}x its median: not steady"
    if cell.get("noisy") is True or (not math.isnan(cov) and cov > NOISY_COV):
        return f"{side} pick noisy (CoV {cov:.2f})"
    return ""


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
