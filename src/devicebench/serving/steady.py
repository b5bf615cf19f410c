"""A serve cell's steady window, and what its client pool can drive at all.

The closed-loop pool runs until a window that opens `ramp_s` after its first request has lasted
at least `min_duration_s` and held at least `min_requests` requests (MLPerf's minimum duration
and query count; the study: 30 s and 2,000). Percentiles and throughput come from that window
only: the ramp (start-up queueing, batches not yet full) and the drain (clients stopping one by
one) are left out. The window closes when the first client process stops issuing, so every
request in it ran at full concurrency.

The pool's own capacity is measured the same way against a trivial route on the same host
(serving.trivial); `client_bound` is true when the server's rate was above half of it: then the
clients, not the server, may have set the pace.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from typing import Any

from devicebench.serving.clients import _pool, pool_stats, run_pool
from devicebench.serving.trivial import trivial_server


class _Plan:
    """Request indices until the window is long and full enough; notes when it stopped."""

    def __init__(self, ramp_s: float, min_duration_s: float, min_requests: int) -> None:
        self.ramp_s, self.min_duration_s, self.min_requests = ramp_s, min_duration_s, min_requests
        self.stopped_at = math.inf

    def __iter__(self) -> Iterator[int]:
        start = time.monotonic()
        opens, closes = start + self.ramp_s, start + self.ramp_s + self.min_duration_s
        index = in_window = 0
        while True:
            now = time.monotonic()
            if now >= closes and in_window >= self.min_requests:
                self.stopped_at = now
                return
            in_window += now >= opens
            yield index
            index += 1


def _steady_process(job: tuple) -> tuple[list, float]:
    url, payloads, clients, timeout_s, content_type, plan = job
    rows = asyncio.run(_pool(url, payloads, clients, plan, timeout_s, content_type))
    return rows, plan.stopped_at


def _run(url, payloads, clients, processes, timeout_s, content_type, ramp_s, duration_s, minimum):
    """Every request's row and the moment the first process stopped issuing."""
    processes = max(1, min(processes, clients))
    jobs = [
        (url, payloads, len(range(p, clients, processes)), timeout_s, content_type,
         _Plan(ramp_s, duration_s, math.ceil(minimum / processes)))
        for p in range(processes)
    ]  # fmt: skip
    if processes == 1:
        outs = [_steady_process(jobs[0])]
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(processes) as pool:
            outs = pool.map(_steady_process, jobs)
    return [row for rows, _ in outs for row in rows], min(stop for _, stop in outs), processes


def run_steady(
    url: str,
    payloads,
    *,
    clients: int,
    processes: int = 1,
    ramp_s: float = 1.0,
    min_duration_s: float = 30.0,
    min_requests: int = 2000,
    timeout_s: float = 60.0,
    window_s: float = 1.0,
    content_type: str = "application/octet-stream",
) -> dict[str, Any]:
    """Drive `url` until the steady window is complete; the pool's statistics over that window
    (the keys of clients.run_pool) and a `steady` section saying what the window was."""
    rows, stopped, processes = _run(
        url, payloads, clients, processes, timeout_s, content_type,
        ramp_s, min_duration_s, min_requests,
    )  # fmt: skip
    first = min(row[0] for row in rows)
    opens = first + ramp_s
    window = [row for row in rows if opens <= row[0] <= stopped]
    if not window:
        raise RuntimeError(f"no request started in the steady window ({len(rows)} in all)")
    stats = pool_stats(window, clients, processes, window_s)
    duration = stopped - opens
    answered = sum(1 for row in window if row[2])
    stats["requests_per_s"] = stats["samples_per_s"] = stats["images_per_s"] = answered / duration
    stats["steady"] = {
        "ramp_s": ramp_s,
        "window_s": duration,
        "window_requests": len(window),
        "min_duration_s": min_duration_s,
        "min_requests": min_requests,
        "meets_minimum": duration >= min_duration_s and len(window) >= min_requests,
        "total_requests": len(rows),
        "left_out": len(rows) - len(window),
    }
    return stats


def client_capacity(
    payloads, *, clients: int, processes: int, seconds: float, content_type: str, host: str
) -> dict[str, Any]:
    """What the same pool (clients, processes, bodies) drives against the trivial route."""
    with trivial_server(processes, host) as url:
        stats = run_steady(
            url, payloads, clients=clients, processes=processes, ramp_s=min(1.0, seconds / 4),
            min_duration_s=seconds, min_requests=10 * clients, content_type=content_type,
        )  # fmt: skip
    return {
        "requests_per_s": stats["requests_per_s"],
        "window_s": stats["steady"]["window_s"],
        "requests": stats["steady"]["window_requests"],
        "errors": stats["errors"],
        "server_processes": processes,
    }


def client_bound(server_rps: float, capacity_rps: float) -> bool:
    """True when the server answered at more than half the rate the pool can issue at all."""
    return server_rps > 0.5 * capacity_rps


def measure(url: str, payloads, serve: dict[str, Any], clients: int, processes: int, kind: str):
    """A serve cell's timed pool: the steady window where the cell sets one, else (both minimums
    0) the fixed `requests` count of earlier cells."""
    common = dict(clients=clients, processes=processes, content_type=kind,
                  timeout_s=float(serve["request_timeout_s"]),
                  window_s=float(serve["stability_window_s"]))  # fmt: skip
    if float(serve["min_duration_s"]) <= 0 and int(serve["min_requests"]) <= 0:
        return run_pool(url, payloads, requests=int(serve["requests"]), **common)
    return run_steady(
        url, payloads, ramp_s=float(serve["ramp_s"]),
        min_duration_s=float(serve["min_duration_s"]), min_requests=int(serve["min_requests"]),
        **common,
    )  # fmt: skip


def add_capacity(pool: dict, payloads, serve: dict, clients: int, processes: int, kind: str):
    """Measure the pool's own capacity (after the server is stopped: the host is the pool's)
    and flag the cell `client_bound`; only for steady cells."""
    if "steady" not in pool:
        return
    capacity = client_capacity(
        payloads, clients=clients, processes=processes, seconds=float(serve["capacity_s"]),
        content_type=kind, host=serve["host"],
    )  # fmt: skip
    pool["client_capacity"] = capacity
    pool["client_bound"] = client_bound(pool["requests_per_s"], capacity["requests_per_s"])
