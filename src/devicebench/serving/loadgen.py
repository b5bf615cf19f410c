"""MLPerf LoadGen against the scoring server: an HTTP system-under-test, scenarios, QPS search.

LoadGen decides when each query is issued (one at a time for SingleStream, Poisson arrivals at a
target QPS for Server, everything at once for Offline) and times it to its completion; the SUT
here only turns each query into an HTTP request on its own event loop thread and reports back.
Its summary and detail logs stay in the cell's log folder; the numbers are read from the detail
log's MLLOG lines, LoadGen's own verdict included.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from pathlib import Path
from typing import Any

from devicebench.serving.gc_pause import freeze_loaded_heap

SCENARIOS = ("SingleStream", "Server", "Offline")
JPEG = "image/jpeg"
# LoadGen's Server verdict needs its early-stopping estimate of the p99 to hold: with every query
# under the bound that takes n >= log(0.01) / log(0.99) = 459 queries. A run with fewer is INVALID
# however fast it answered (on the H100, p99 27 ms against a 100 ms bound), which would send the
# QPS search downwards for no reason; Server runs therefore ask for at least this many.
SERVER_EARLY_STOPPING_QUERIES = math.ceil(math.log(0.01) / math.log(0.99))


def server_queries(min_queries: int) -> int:
    """The queries a Server run issues: the asked-for count, at least the early-stopping need."""
    return max(int(min_queries), SERVER_EARLY_STOPPING_QUERIES)


class AsyncSut:
    """A LoadGen system under test that sends each query from an aiohttp session on its own event
    loop thread; a subclass's ``_send(sample)`` answers LoadGen for one query."""

    def __init__(self, max_connections: int, timeout_s: float) -> None:
        import aiohttp

        self.errors = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def make():  # aiohttp, not httpx: see clients.py
            return aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=max_connections),
                timeout=aiohttp.ClientTimeout(total=timeout_s),
            )

        self.client = asyncio.run_coroutine_threadsafe(make(), self.loop).result()

    async def _send(self, sample) -> None:
        raise NotImplementedError

    def issue(self, samples) -> None:
        for sample in samples:
            asyncio.run_coroutine_threadsafe(self._send(sample), self.loop)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.client.close(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


class HttpSut(AsyncSut):
    """Sends each LoadGen query sample (an index into the payloads) as one POST to the server."""

    def __init__(self, url: str, payloads, max_connections: int, content_type: str = JPEG):
        super().__init__(max_connections, timeout_s=120.0)
        self.url, self.payloads = url, payloads
        self.headers = {"content-type": content_type}

    async def _send(self, sample) -> None:
        import aiohttp
        import mlperf_loadgen as lg

        payload = self.payloads[sample.index % len(self.payloads)]
        try:
            async with self.client.post(self.url, data=payload, headers=self.headers) as answer:
                await answer.read()
                if answer.status != 200:
                    self.errors += 1
        except (aiohttp.ClientError, TimeoutError):
            self.errors += 1
        lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, 0, 0)])


def read_detail(path: Path) -> dict[str, Any]:
    """Every `:::MLLOG {...}` key and value of a LoadGen detail log."""
    values = {}
    for line in path.read_text().splitlines():
        if line.startswith(":::MLLOG"):
            entry = json.loads(line.removeprefix(":::MLLOG").strip())
            values[entry["key"]] = entry["value"]
    return values


def run_scenario(
    url: str,
    payloads,
    scenario: str,
    log_dir: Path,
    *,
    min_duration_s: float,
    min_queries: int,
    target_qps: float = 10.0,
    target_latency_ms: float = 100.0,
    max_connections: int = 64,
    content_type: str = JPEG,
    schedule_seed: int | None = None,
) -> dict[str, Any]:
    """One LoadGen performance run; LoadGen's result, validity and latencies, and HTTP errors.

    `schedule_seed` draws another Poisson arrival schedule (LoadGen's default seed gives every
    run the same one): repeated runs at one rate are then repetitions, not replays."""
    import mlperf_loadgen as lg

    if scenario not in SCENARIOS:
        raise ValueError(f"unknown LoadGen scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario)
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = int(min_duration_s * 1000)
    if scenario == "Server":
        min_queries = server_queries(min_queries)
    settings.min_query_count = min_queries
    settings.offline_expected_qps = target_qps
    settings.server_target_qps = target_qps
    settings.server_target_latency_ns = int(target_latency_ms * 1e6)
    settings.single_stream_expected_latency_ns = int(1e9 / max(target_qps, 1e-3))
    if schedule_seed is not None:
        settings.schedule_rng_seed = int(schedule_seed)
    log_dir.mkdir(parents=True, exist_ok=True)
    logging = lg.LogSettings()
    logging.log_output.outdir = str(log_dir)
    logging.log_output.copy_summary_to_stdout = False
    logging.enable_trace = False
    freeze_loaded_heap()  # the client's completions are timed too: no full-collection pauses
    sut = HttpSut(url, payloads, max_connections, content_type)
    sut_handle = lg.ConstructSUT(sut.issue, sut.flush)
    count = len(payloads)
    qsl = lg.ConstructQSL(count, count, lambda _: None, lambda _: None)
    try:
        lg.StartTestWithLogSettings(sut_handle, qsl, settings, logging)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut_handle)
        sut.close()
    detail = read_detail(log_dir / "mlperf_log_detail.txt")
    return _summary(scenario, detail, sut.errors, target_qps, target_latency_ms, log_dir)


def _summary(scenario, detail, errors, target_qps, target_latency_ms, log_dir) -> dict[str, Any]:
    def ms(key: str) -> float | None:
        value = detail.get(key)
        return None if value is None else float(value) / 1e6

    result_key = {
        "SingleStream": "result_90.00_percentile_latency_ns",  # recorded in ms
        "Server": "result_completed_samples_per_sec",
        "Offline": "result_samples_per_second",
    }[scenario]
    result = detail.get(result_key)
    if result is not None and scenario == "SingleStream":
        result = float(result) / 1e6  # the p90 latency, in ms like every latency here
    return {
        "scenario": scenario,
        "valid": detail.get("result_validity") == "VALID",
        "validity": detail.get("result_validity"),
        # why a run is INVALID: the latency bound, or too short a run to tell
        "latency_met": detail.get("result_perf_constraints_met"),
        "early_stopping_met": detail.get("early_stopping_met"),
        "result": None if result is None else float(result),
        # Server: the Poisson rate LoadGen actually scheduled (MLPerf's Server result when VALID)
        "scheduled_qps": _number(detail.get("result_scheduled_samples_per_sec")),
        "completed_qps": _number(detail.get("result_completed_samples_per_sec")),
        "result_metric": "p90_latency_ms" if scenario == "SingleStream" else result_key,
        "target_qps": target_qps if scenario != "SingleStream" else None,
        "target_latency_ms": target_latency_ms if scenario == "Server" else None,
        "queries": detail.get("result_query_count") or detail.get("generated_query_count"),
        "latency_ms": {
            "p50": ms("result_50.00_percentile_latency_ns"),
            "p90": ms("result_90.00_percentile_latency_ns"),
            "p99": ms("result_99.00_percentile_latency_ns"),
            "max": ms("result_max_latency_ns"),
        },
        "http_errors": errors,
        "log_dir": str(log_dir),
    }


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def search_server_qps(
    url: str,
    payloads,
    log_dir: Path,
    *,
    start_qps: float,
    steps: int,
    max_run_s: float | None = None,
    **options: Any,
) -> dict[str, Any]:
    """The highest QPS LoadGen's Server scenario calls VALID, by a short bisection from start.

    Starts at `start_qps` (e.g. the client pool's throughput); doubles while valid, halves while
    invalid until a bracket exists, then bisects; `steps` runs in all. Each run has at least
    SERVER_EARLY_STOPPING_QUERIES queries, so INVALID means the latency bound was missed. That
    fixed count makes a run at half the QPS last twice as long (459 queries at 3.3 QPS: 140 s, on
    a BERT-base CPU cell that no QPS made VALID); with `max_run_s`, a run that would last longer
    is not made, and `stopped` says so.
    """
    runs, low, high, qps = [], None, None, start_qps
    queries = server_queries(options.get("min_queries", 0))
    stopped = None
    for step in range(steps):
        lasts = max(float(options.get("min_duration_s", 0.0)), queries / qps)
        if runs and max_run_s is not None and lasts > max_run_s:
            stopped = (
                f"not tried at {qps:.4g} QPS: {queries} queries would take {lasts:.0f} s, "
                f"over loadgen_server_max_run_s {max_run_s:g}"
            )
            break
        run = run_scenario(
            url, payloads, "Server", log_dir / f"qps-{step}", target_qps=qps, **options
        )
        runs.append(run)
        if run["valid"]:
            low = qps
        else:
            high = qps
        if low is None:
            qps = qps / 2
        elif high is None:
            qps = qps * 2
        else:
            qps = (low + high) / 2
    return {"highest_valid_qps": low, "runs": runs, "stopped": stopped}
