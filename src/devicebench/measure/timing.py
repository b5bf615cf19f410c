"""Summaries of repeated timings: median, spread, and whether a cell is too noisy to trust."""

from __future__ import annotations

from typing import Any

import numpy as np


def summarize(samples: list[float], *, noise_cov: float = 0.1) -> dict[str, Any]:
    """Median, interquartile range and coefficient of variation of timed repetitions.

    A cell whose CoV exceeds `noise_cov` is flagged `noisy` rather than silently trusted.
    """
    values = np.asarray(samples, dtype=float)
    if values.size == 0:
        raise ValueError("no timed repetitions to summarize")
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    mean = float(values.mean())
    cov = float(values.std(ddof=1) / mean) if values.size > 1 and mean > 0 else 0.0
    return {
        "median_s": float(median),
        "iqr_s": float(q3 - q1),
        "min_s": float(values.min()),
        "max_s": float(values.max()),
        "cov": cov,
        "noisy": bool(cov > noise_cov),
    }


def latency_percentiles(latencies_s: list[float]) -> dict[str, float]:
    """p50/p90/p99 of per-batch latencies, in milliseconds."""
    values = np.asarray(latencies_s, dtype=float) * 1000.0
    if values.size == 0:
        raise ValueError("no latencies to summarize")
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99)}
