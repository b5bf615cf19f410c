"""The cloud study's closed-loop client pool: N async HTTP clients score R samples between them.

The clients are aiohttp's: on this 2-core machine one httpx AsyncClient process issued about 120
requests/s against a trivial FastAPI route, aiohttp's about 1,400, so an httpx pool measured
itself rather than the server (on the H100 a ResNet-50 server seemed to top out at 150 req/s).

Each client sends its next sample (JPEG bytes, or a review's UTF-8 text) as soon as its previous
answer arrives; latency is taken from issue to answer, as the client sees it. Errors (non-200
answers, transport failures, timeouts) are counted, never retried, so a failing server shows as
errors rather than a hang.

One client process issues at most about 1,000-1,500 requests/s (on the H100's host 384 clients in
one process drove 8 server replicas to 840 requests/s, 6 processes drove them to 4,579), so the
pool can split its clients and requests over `processes` processes; their timings are merged
(the monotonic clock is the host's, shared by all processes).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from typing import Any

import numpy as np

from devicebench.measure.timing import latency_percentiles

JPEG = "image/jpeg"


async def _pool(
    url: str, payloads, clients: int, requests, timeout_s: float, content_type: str
) -> list:
    """`requests`: a count, or an iterable of request indices that ends when the pool should
    stop issuing (serving.steady's duration-bound plan)."""
    import aiohttp

    results: list[tuple[float, float, bool, str]] = []
    issued = iter(range(requests)) if isinstance(requests, int) else iter(requests)
    headers = {"content-type": content_type}
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one_client() -> None:
            for index in issued:
                start = time.monotonic()
                try:
                    payload = payloads[index % len(payloads)]
                    async with session.post(url, data=payload, headers=headers) as answer:
                        await answer.read()
                        ok, why = answer.status == 200, str(answer.status)
                except (aiohttp.ClientError, TimeoutError) as error:
                    ok, why = False, type(error).__name__
                results.append((start, time.monotonic(), ok, why))

        await asyncio.gather(*(one_client() for _ in range(clients)))
    return results


def _latency(seconds: np.ndarray) -> dict[str, float]:
    if not seconds.size:
        return {}
    return latency_percentiles(list(seconds)) | {"max": float(seconds.max() * 1000)}


def stability_cov(ends: np.ndarray, start: float, window_s: float) -> tuple[float | None, int]:
    """CoV of completed requests per fixed window over the whole full windows; None if < 2."""
    windows = int((ends.max() - start) // window_s) if len(ends) else 0
    if windows < 2:
        return None, windows
    counts = np.histogram(ends, bins=windows, range=(start, start + windows * window_s))[0]
    mean = counts.mean()
    return (float(counts.std(ddof=1) / mean) if mean else None), windows


def _pool_process(job: tuple) -> list:
    return asyncio.run(_pool(*job))


def client_processes(given: int | str, clients: int) -> int:
    """Client processes: as given, or `auto`: one per 64 clients, at most a quarter of the
    host's cores (the server needs the rest), at least 1."""
    if given != "auto":
        return max(1, int(given))
    return max(1, min(math.ceil(clients / 64), (os.cpu_count() or 1) // 4))


def _run(url, payloads, clients, requests, timeout_s, content_type, processes) -> list:
    """Every request's (start, end, ok, why), from one process or `processes` of them."""
    processes = min(processes, clients, requests)
    if processes <= 1:
        return asyncio.run(_pool(url, payloads, clients, requests, timeout_s, content_type))
    import multiprocessing

    jobs = [
        (url, payloads, len(range(p, clients, processes)), len(range(p, requests, processes)),
         timeout_s, content_type)
        for p in range(processes)
    ]  # fmt: skip
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return [row for rows in pool.map(_pool_process, jobs) for row in rows]


def run_pool(
    url: str,
    payloads,
    *,
    clients: int,
    requests: int,
    timeout_s: float = 60.0,
    window_s: float = 1.0,
    content_type: str = JPEG,
    processes: int = 1,
) -> dict[str, Any]:
    """Drive `url` with the closed-loop pool; throughput, latency percentiles, errors, stability.
    `payloads` are request bodies (bytes), sent as `content_type`; the clients and requests are
    split over `processes` client processes."""
    results = _run(url, payloads, clients, requests, timeout_s, content_type, processes)
    return pool_stats(results, clients, min(processes, clients, requests), window_s)


def pool_stats(results: list, clients: int, processes: int, window_s: float) -> dict[str, Any]:
    """Throughput, latency percentiles, errors and stability of (start, end, ok, why) rows."""
    starts = np.array([r[0] for r in results])
    ends = np.array([r[1] for r in results])
    ok = np.array([r[2] for r in results], dtype=bool)
    first = float(starts.min())
    duration = float(ends.max() - first)
    cov, windows = stability_cov(ends[ok], first, window_s)
    errors = int((~ok).sum())
    reasons: dict[str, int] = {}
    for _, _, good, why in results:
        if not good:
            reasons[why] = reasons.get(why, 0) + 1
    return {
        "clients": clients,
        "processes": processes,
        "requests": len(results),
        "ok": int(ok.sum()),
        "errors": errors,
        "error_rate": errors / len(results),
        "error_reasons": reasons,
        "duration_s": duration,
        "requests_per_s": float(ok.sum()) / duration,
        "samples_per_s": float(ok.sum()) / duration,  # one sample per request
        "images_per_s": float(ok.sum()) / duration,  # the same; the name serve_image had first
        "latency_ms": _latency(ends[ok] - starts[ok]),
        "stability_cov": cov,
        "stability_window_s": window_s,
        "stability_windows": windows,
    }
