"""The `batch_wait` axis: a serve task's dynamic-batching windows, swept beside each other.

A server's batch window trades latency for batch size: at a low rate each request waits it out
alone, at a high one a longer window fills bigger batches. `tasks.<serve task>.batch_waits` (ms)
lists the windows to sweep. The one equal to the task's `serve.batch_wait_ms` (default 5 ms) is
the plain cell, without the axis, so its records keep their paths; each other window is a cell
with `batch_wait~<ms>` in its id. Without `batch_waits` every serve cell is plain.
"""

from __future__ import annotations

import json
from typing import Any

from devicebench.plan.config import ConfigError
from devicebench.scenarios import modes
from devicebench.workloads import specs
from devicebench.workloads.base import BATCH_WAIT_MS


def batch_wait_axes(task: str, settings: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    """The `batch_wait` axis values of one cell: [{}] (the plain cell) and one per other window
    of the task's `batch_waits`; [{}] for a cell that serves no requests."""
    waits = settings.get("batch_waits")
    if not waits:
        return [{}]
    if not set(specs()[task].modes) & set(modes(serves=True)):
        raise ConfigError(f"tasks.{task}.batch_waits: {task} serves no requests (no batch window)")
    if len({float(w) for w in waits}) != len(waits):
        raise ConfigError(f"tasks.{task}.batch_waits: {waits} lists a window twice")
    if mode not in modes(serves=True):
        return [{}]
    plain = plain_window(settings.get("serve"))
    return [{} if float(w) == plain else {"batch_wait": _named(float(w))} for w in waits]


def _named(wait: float) -> int | float:
    return int(wait) if wait.is_integer() else wait


def plain_window(serve: str | dict[str, Any] | None) -> int | float:
    """The window of a serve task's plain cell (its `serve.batch_wait_ms`; a cell's run setting
    `serve` is JSON): what a selector's `batch_wait` matches on a cell whose id names none."""
    given = json.loads(serve) if isinstance(serve, str) else (serve or {})
    return _named(float(given.get("batch_wait_ms", BATCH_WAIT_MS)))
