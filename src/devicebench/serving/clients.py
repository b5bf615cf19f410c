"""The cloud study's closed-loop client pool: N async HTTP clients score R samples between them.

The clients are aiohttp's: on this 2-core machine one httpx AsyncClient process issued about 120
requests/s against a trivial FastAPI route, aiohttp's about 1,400, so an httpx pool measured
itself rather than the server (on the H100 a ResNet-50 server seemed to top out at 150 req/s).

Each client sends its next sample (JPEG bytes, or a review's UTF-8 text) as soon as its previous
answer arrives; latency is taken from issue to answer, as the client sees it. Errors (non-200
answers, transport failures, timeouts) are counted, never retried, so a failing server shows as
errors rather than a hang.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np

from devicebench.timing import latency_percentiles

JPEG = "image/jpeg"


async def _pool(
    url: str, payloads, clients: int, requests: int, timeout_s: float, content_type: str
) -> list:
    import aiohttp

    results: list[tuple[float, float, bool, str]] = []
    issued = iter(range(requests))
    headers = {"content-type": content_type}
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one_client() -> None:
            for index in issued:
                start = time.perf_counter()
                try:
                    payload = payloads[index % len(payloads)]
                    async with session.post(url, data=payload, headers=headers) as answer:
                        await answer.read()
                        ok, why = answer.status == 200, str(answer.status)
                except (aiohttp.ClientError, TimeoutError) as error:
                    ok, why = False, type(error).__name__
                results.append((start, time.perf_counter(), ok, why))

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


def run_pool(
    url: str,
    payloads,
    *,
    clients: int,
    requests: int,
    timeout_s: float = 60.0,
    window_s: float = 1.0,
    content_type: str = JPEG,
) -> dict[str, Any]:
    """Drive `url` with the closed-loop pool; throughput, latency percentiles, errors, stability.
    `payloads` are request bodies (bytes), sent as `content_type`."""
    results = asyncio.run(_pool(url, payloads, clients, requests, timeout_s, content_type))
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
