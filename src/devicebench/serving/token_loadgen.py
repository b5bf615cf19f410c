"""MLPerf LoadGen's Server scenario with token latencies, against the generate server.

LoadGen issues each query at its Poisson time; the SUT here POSTs the query's prompt to
/generate and reads the streamed tokens: at the first it calls ``lg.FirstTokenComplete`` (LoadGen
times TTFT), at the end ``lg.QuerySamplesComplete`` with the token count (LoadGen's TPOT is
(latency - TTFT) / (tokens - 1), vLLM's definition). With ``use_token_latencies`` LoadGen's
verdict is VALID only when the p99 TTFT and p99 TPOT meet their bounds and its early-stopping
estimates hold (459 queries when every one meets them, as for the p99 of serving.loadgen).
A stream that fails, is cut, or has other than the tokens asked counts as an HTTP error.
"""

from __future__ import annotations

import array
import json
from pathlib import Path
from typing import Any

from devicebench.serving.loadgen import AsyncSut, read_detail

JSON_HEADERS = {"content-type": "application/json"}


def prompt_payloads(prompts, max_tokens: int) -> list[bytes]:
    """One /generate body per prompt (token ids), each asking `max_tokens` tokens."""
    rows = [[int(t) for t in row] for row in prompts]
    return [json.dumps({"prompt": row, "max_tokens": int(max_tokens)}).encode() for row in rows]


class TokenSut(AsyncSut):
    """Sends each LoadGen query as one streamed /generate request; reports first token and end."""

    def __init__(self, url: str, payloads: list[bytes], tokens: int, max_connections: int):
        super().__init__(max_connections, timeout_s=600.0)
        self.url, self.payloads, self.tokens = url, payloads, tokens
        self.why: dict[str, int] = {}  # each failure's kind, counted

    async def _stream(self, sample) -> tuple[list[int], str | None]:
        """The tokens streamed for one query, and what went wrong (None: nothing)."""
        import aiohttp
        import mlperf_loadgen as lg

        tokens: list[int] = []
        payload = self.payloads[sample.index % len(self.payloads)]
        try:
            async with self.client.post(self.url, data=payload, headers=JSON_HEADERS) as answer:
                if answer.status != 200:
                    await answer.read()
                    return tokens, f"http {answer.status}"
                async for line in answer.content:
                    item = json.loads(line)
                    if "token" in item:
                        tokens.append(int(item["token"]))
                        if len(tokens) == 1:
                            _report(lg.FirstTokenComplete, sample.id, tokens)
                    elif item.get("done"):
                        return tokens, None if len(tokens) == self.tokens else "token count"
                    else:
                        return tokens, "cut"
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            return tokens, type(error).__name__
        return tokens, "no end line"

    async def _send(self, sample) -> None:
        import mlperf_loadgen as lg

        tokens, wrong = await self._stream(sample)
        if wrong:
            self.errors += 1
            self.why[wrong] = self.why.get(wrong, 0) + 1
            if not tokens:  # LoadGen waits for a first token: the run is counted failed anyway
                _report(lg.FirstTokenComplete, sample.id, [0])
        _report(lg.QuerySamplesComplete, sample.id, tokens or [0], count=max(len(tokens), 1))


def _report(call, sample_id: int, tokens: list[int], count: int | None = None) -> None:
    """LoadGen's completion call with the tokens as its response data (int32)."""
    import mlperf_loadgen as lg

    data = array.array("i", tokens)
    pointer, length = data.buffer_info()
    size = length * data.itemsize
    extra = () if count is None else (count,)  # the token count, at the end
    call([lg.QuerySampleResponse(sample_id, pointer, size, *extra)])


def run_server(
    url: str,
    payloads: list[bytes],
    log_dir: Path,
    *,
    tokens: int,
    target_qps: float,
    min_duration_s: float,
    min_queries: int,
    ttft_ms: float,
    tpot_ms: float,
    max_connections: int = 256,
    schedule_seed: int | None = None,
) -> dict[str, Any]:
    """One LoadGen Server run with token latencies; its verdict, TTFT and TPOT, tokens/s."""
    import mlperf_loadgen as lg

    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.Server
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = int(min_duration_s * 1000)
    settings.min_query_count = int(min_queries)
    settings.server_target_qps = target_qps
    settings.use_token_latencies = True
    settings.ttft_latency = int(ttft_ms * 1e6)
    settings.tpot_latency = int(tpot_ms * 1e6)
    settings.server_target_latency_ns = int(ttft_ms * 1e6)
    if schedule_seed is not None:
        settings.schedule_rng_seed = int(schedule_seed)
    log_dir.mkdir(parents=True, exist_ok=True)
    logging = lg.LogSettings()
    logging.log_output.outdir = str(log_dir)
    logging.log_output.copy_summary_to_stdout = False
    logging.enable_trace = False
    sut = TokenSut(url, payloads, tokens, max_connections)
    sut_handle = lg.ConstructSUT(sut.issue, sut.flush)
    qsl = lg.ConstructQSL(len(payloads), len(payloads), lambda _: None, lambda _: None)
    try:
        lg.StartTestWithLogSettings(sut_handle, qsl, settings, logging)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut_handle)
        sut.close()
    detail = read_detail(log_dir / "mlperf_log_detail.txt")
    return summary(detail, sut.errors, sut.why, target_qps, log_dir)


def summary(detail: dict[str, Any], errors: int, why: dict[str, int], target_qps, log_dir):
    """A run as serving.slo's search reads it, with the token latencies beside."""

    def ms(key: str) -> float | None:
        value = detail.get(key)
        return None if value in (None, "") else float(value) / 1e6

    def percentiles(prefix: str, suffix: str) -> dict[str, float | None]:
        return {f"p{q}": ms(f"{prefix}{q}.00_percentile{suffix}") for q in (50, 90, 99)}

    rate = detail.get("result_completed_tokens_per_second")
    return {
        "scenario": "Server",
        "valid": detail.get("result_validity") == "VALID",
        "validity": detail.get("result_validity"),
        "latency_met": detail.get("result_perf_constraints_met"),
        "early_stopping_met": detail.get("early_stopping_met"),
        "early_stopping_ttft": detail.get("early_stopping_ttft_result") or None,
        "early_stopping_tpot": detail.get("early_stopping_tpot_result") or None,
        "scheduled_qps": _number(detail.get("result_scheduled_samples_per_sec")),
        "completed_qps": _number(detail.get("result_completed_samples_per_sec")),
        "target_qps": target_qps,
        "queries": detail.get("result_query_count"),
        "latency_ms": percentiles("result_", "_latency_ns"),  # each request to its last token
        "ttft_ms": percentiles("result_first_token_", "_latency_ns"),
        "tpot_ms": percentiles("result_time_per_output_token_", "_ns"),
        "output_tokens_per_s": _number(rate),
        "http_errors": errors,
        "errors_by_kind": why,
        "log_dir": str(log_dir),
    }


def _number(value: Any) -> float | None:
    return None if value in (None, "") else float(value)
