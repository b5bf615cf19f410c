"""Each served model's p99 latency bound: the workload's default, or the config's override.

The serving verdict is the highest request rate whose p99 stays under the model's bound
(serving.slo). The defaults live beside the models (each serve workload's `p99_bounds_ms`: MLPerf
Inference's Server bounds where it has one, a documented choice elsewhere); the config's
`tasks.<serve task>.serve.slo.p99_bounds_ms` overrides them. A served model with neither is a
config error naming it, found before any cell runs: a made-up bound would make a made-up verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class NoBound(ValueError):
    """A served model has no p99 bound, or the config gives a wrong one."""


def bounds_of(task: str) -> dict[str, float]:
    """The serve workload's default bounds per model (ms)."""
    from devicebench.workloads import get

    return dict(getattr(get(task), "p99_bounds_ms", {}) or {})


def bound_ms(task: str, model: str, overrides: Mapping[str, Any] | None = None) -> float:
    """The p99 bound (ms) of `model` served by `task`: the config's, else the workload's."""
    given = dict(overrides or {})
    if model in given:
        return _positive(given[model], f"p99_bounds_ms.{model}")
    defaults = bounds_of(task)
    if model not in defaults:
        raise NoBound(
            f"p99_bounds_ms: no p99 latency bound for model {model!r} of task {task} (MLPerf "
            f"has none and the workload gives none); give one in tasks.{task}.serve.slo."
            f"p99_bounds_ms.{model} (defaults exist for {', '.join(sorted(defaults)) or 'none'})"
        )
    return float(defaults[model])


def check_bounds(task: str, models: Iterable[str], slo: Mapping[str, Any] | None) -> None:
    """Config check for a serve task with the latency-bound search on: every model bounded,
    every override a positive number for one of the task's models. Raises NoBound with the key."""
    if not slo:
        return
    overrides = slo.get("p99_bounds_ms") or {}
    models = list(models)
    for model in overrides:
        if model not in models:
            raise NoBound(
                f"serve.slo.p99_bounds_ms.{model}: {model!r} is not served by task {task} "
                f"here (its models: {', '.join(models)})"
            )
    for model in models:
        try:
            bound_ms(task, model, overrides)
        except NoBound as error:
            raise NoBound(f"serve.slo.{error}") from None


def _positive(value: Any, key: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise NoBound(f"{key}: {value!r} is not a number of milliseconds") from None
    if not number > 0:
        raise NoBound(f"{key}: {value!r} must be above 0 ms")
    return number
