"""Goodput: the highest Poisson rate at which the generate server meets MLPerf's token bounds.

A generate cell whose config has `generate.serving` (config/h100.yaml) starts the cell's model
behind the generate server (serving.generate_app, its own process) and searches, with LoadGen's
Server scenario and token latencies (serving.token_loadgen), the highest rate whose p99 time to
first token <= `ttft_p99_ms` and p99 time per output token <= `tpot_p99_ms` (MLPerf Inference's
Llama-3.1-8B Server bounds, 2 s and 100 ms, unless set). The search is serving.slo's (bracket,
bisect, confirm; a VALID run also has no failed stream); the start rate is one stream's (times
`max_batch`, the streams the server generates together); when one stream alone misses a bound:
no_rate without a LoadGen run. `min_queries` may go under the 459 queries of LoadGen's
early-stopping estimate, which take minutes at a few requests/s: such a run is judged on the
p99 of its own queries (serving.slo). `cells` selectors (axis -> value), when given, pick the cells
that serve; a selector's `settings` (e.g. `max_batch`) override the task's for the cells it picks.

The record's `generation.serving`: `goodput_qps` (the median scheduled rate of the confirming
runs), their p99 TTFT and TPOT and output tokens/s, every run, and `status`: ok, or what
happened instead (no_rate, not_confirmed, over_budget, loadgen_failed, server_failed), never a
made-up rate. Cost per million tokens at that rate is the aggregate's (it knows the prices).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devicebench.serving.slo import SCHEDULE_SEED, Search, SloSettings

if TYPE_CHECKING:
    from devicebench.run.launchers.base import GenerateServerLauncher

DEFAULT_TTFT_MS = 2000.0  # MLPerf Inference, Llama-3.1-8B, Server scenario: p99 TTFT
DEFAULT_TPOT_MS = 100.0  # and p99 TPOT
START_REQUESTS = 3  # one-stream requests that set the search's start rate
ONE_STREAM_S = 10.0  # no further one-stream request after this long
# after the search: the last run's queue drains, the server stops (10 s, then killed) and the
# record is written; machine 12's 8B cell took 1.7 s from its last LoadGen run's end (its
# mlperf_log_detail) to its worker's exit (the record's marks)
STOP_RESERVE_S = 30.0


@dataclass(frozen=True)
class GoodputSettings:
    """The config's `generate.serving`: the bounds, the server's stream limits, the search's."""

    ttft_p99_ms: float = DEFAULT_TTFT_MS
    tpot_p99_ms: float = DEFAULT_TPOT_MS
    max_streams: int = 1024  # the server's open streams (503 beyond); above any rate searched
    max_stream_s: float = 600.0
    max_batch: int = 1  # the server's streams generated together (static batching)
    max_batches: int = 1  # the server's batches stepped in turn (1: each batch to its end)
    slo: SloSettings = field(default_factory=lambda: SloSettings(p99_bound_ms=DEFAULT_TTFT_MS))

    @classmethod
    def from_config(cls, given: Mapping[str, Any] | None) -> GoodputSettings:
        """From `generate.serving`; ValueError naming an unknown key or a bound not above 0."""
        given = _shared(given or {})  # the `cells` selectors are for_cell()'s
        own = {f.name for f in fields(cls)} - {"slo"}
        searched = {f.name for f in fields(SloSettings)} - {"p99_bound_ms"}
        unknown = sorted(set(given) - own - searched)
        if unknown:
            known = sorted(own | searched)
            raise ValueError(f"unknown generate.serving setting(s) {unknown}; known: {known}")
        mine = {key: given.pop(key) for key in own & set(given)}
        counts = {"max_streams", "max_batch", "max_batches"}  # whole numbers: the server's flags
        for key, value in mine.items():
            kind = int if key in counts else int | float
            if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
                what = "a whole number" if key in counts else "a number"
                raise ValueError(f"generate.serving.{key} must be {what} above 0, not {value!r}")
        ttft = float(mine.get("ttft_p99_ms", DEFAULT_TTFT_MS))
        try:
            searched = SloSettings(p99_bound_ms=ttft, **given)
        except ValueError as error:  # the search's own checks: name the config's key
            raise ValueError(f"generate.serving.{error}") from error
        return cls(**mine, slo=searched)


class TokenSearch(Search):
    """serving.slo's search, a run VALID when its p99 TTFT and TPOT meet their bounds."""

    def __init__(self, settings: GoodputSettings, runner, clock=time.monotonic) -> None:
        super().__init__(settings.slo, runner, clock)
        self.goodput = settings

    def bound_text(self) -> str:
        g = self.goodput
        return f"p99 TTFT <= {g.ttft_p99_ms:g} ms and p99 TPOT <= {g.tpot_p99_ms:g} ms"

    def latency_text(self, run: dict[str, Any]) -> str:
        ttft, tpot = _p99(run, "ttft_ms"), _p99(run, "tpot_ms")
        return f"p99 TTFT {_round(ttft)} ms, p99 TPOT {_round(tpot)} ms"

    def brief(self, run: dict[str, Any]) -> dict[str, Any]:
        return super().brief(run) | {
            "ttft_p99_ms": _p99(run, "ttft_ms"),
            "tpot_p99_ms": _p99(run, "tpot_ms"),
            "ttft_p50_ms": (run.get("ttft_ms") or {}).get("p50"),
            "tpot_p50_ms": (run.get("tpot_ms") or {}).get("p50"),
            "output_tokens_per_s": run.get("output_tokens_per_s"),
            "errors_by_kind": run.get("errors_by_kind"),
        }


def _p99(run: dict[str, Any], key: str) -> float | None:
    return (run.get(key) or {}).get("p99")


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def goodput_section(found: dict[str, Any], settings: GoodputSettings) -> dict[str, Any]:
    """The record's `generation.serving` from the search's section: at the goodput rate, the
    confirming runs' medians (p99 TTFT and TPOT, output tokens/s); none without a rate."""
    ok = found["status"] == "ok"
    confirming = found["confirms"][-found["runs"] :] if ok and found["runs"] else []

    def median(key: str, scale: float = 1.0) -> float | None:
        values = [run[key] for run in confirming if run.get(key) is not None]
        return statistics.median(values) * scale if values else None

    own = {f.name: getattr(settings, f.name) for f in fields(settings) if f.name != "slo"}
    return (
        {
            "status": found["status"],
            "message": found["message"],
            "goodput_qps": found["max_valid_qps"] if ok else None,
            "ttft_bound_s": settings.ttft_p99_ms / 1e3,
            "tpot_bound_s": settings.tpot_p99_ms / 1e3,
            "ttft_p99_s": median("ttft_p99_ms", 1e-3),
            "tpot_p99_s": median("tpot_p99_ms", 1e-3),
            "output_tokens_per_s": median("output_tokens_per_s"),
        }
        | {key: found[key] for key in _KEPT}
        | {"settings": found["settings"] | own}
    )


_KEPT = ("runs", "run_qps", "confirmed_at_qps", "probe_qps", "queries", "early_stopping_met")
_KEPT += ("probes", "confirms", "search_s")


def failed_section(status: str, message: str, settings: GoodputSettings) -> dict[str, Any]:
    """A section without a search (the server did not start): no rate, the reason."""
    found = {"status": status, "message": message, "max_valid_qps": None, "confirms": []}
    found |= {key: None for key in _KEPT} | {"runs": 0, "probes": [], "confirms": []}
    found["settings"] = {f.name: getattr(settings.slo, f.name) for f in fields(settings.slo)}
    return goodput_section(found, settings)


def token_runner(url: str, payloads: list[bytes], tokens: int, log_dir: Path, s: GoodputSettings):
    """serving.slo's Runner: LoadGen Server runs with token latencies against `url`."""
    from devicebench.serving import token_loadgen

    def run(qps: float, seconds: float, queries: int, number: int) -> dict[str, Any]:
        return token_loadgen.run_server(
            url, payloads, log_dir / f"run-{number}", tokens=tokens, target_qps=qps,
            min_duration_s=seconds, min_queries=queries, ttft_ms=s.ttft_p99_ms,
            tpot_ms=s.tpot_p99_ms, max_connections=s.slo.connections,
            schedule_seed=SCHEDULE_SEED + number,
        )  # fmt: skip

    return run


def one_stream(url: str, payload: bytes, requests: int = START_REQUESTS) -> dict[str, float]:
    """One stream at a time, `requests` in turn (fewer past ONE_STREAM_S): the medians of its
    requests/s, TTFT and TPOT."""
    import httpx

    whole, first, per_token = [], [], []
    headers = {"content-type": "application/json"}
    began = time.perf_counter()
    for _ in range(requests):
        if whole and time.perf_counter() - began > ONE_STREAM_S:
            break  # a slow model: its first requests say enough
        started = time.perf_counter()
        marks = []
        with httpx.stream("POST", url, content=payload, headers=headers, timeout=600.0) as answer:
            answer.raise_for_status()
            for line in answer.iter_lines():
                if '"token"' in line:
                    marks.append(time.perf_counter() - started)
        whole.append(time.perf_counter() - started)
        first.append(marks[0])
        if len(marks) > 1:
            per_token.append((marks[-1] - marks[0]) / (len(marks) - 1))
    return {
        "qps": 1.0 / statistics.median(whole),
        "ttft_s": statistics.median(first),
        "tpot_s": statistics.median(per_token) if per_token else 0.0,
    }


def over_alone(alone: dict[str, float], s: GoodputSettings) -> str | None:
    """Why no rate can meet the bounds when one stream alone misses one (medians of a few
    requests; under load a stream waits its turn, so its latencies only grow), or None."""
    for key, bound in (("ttft_s", s.ttft_p99_ms), ("tpot_s", s.tpot_p99_ms)):
        if alone[key] * 1e3 > bound:
            name = key.removesuffix("_s").upper()
            return (
                f"one stream alone: median {name} {alone[key] * 1e3:.4g} ms over the "
                f"{bound:g} ms bound (one stream at a time): no rate can meet it"
            )
    return None


def for_cell(settings: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any] | None:
    """`generate.serving` for this cell, or None when it does not serve: the first of its
    `cells` selectors (axis -> value, matched as `exclude` is) that picks it, its `settings`
    laid over the task's; with no selectors every cell serves."""
    from devicebench.plan.grid import matches

    shared = _shared(given)
    rules = given.get("cells")
    if not rules:
        return shared
    for rule in rules:
        if matches({k: v for k, v in rule.items() if k != "settings"}, settings):
            return shared | dict(rule.get("settings") or {})
    return None


def check_serving(given: Mapping[str, Any]) -> None:
    """A config error before any cell: a setting the search does not know, or a `cells`
    selector that is not axis -> value or whose `settings` (laid over the task's) are wrong."""
    shared = _shared(given)
    GoodputSettings.from_config(shared)
    for rule in given.get("cells") or []:
        own = (rule.get("settings") or {}) if isinstance(rule, Mapping) else None
        if not isinstance(own, Mapping):
            raise ValueError(
                f"generate.serving.cells: {rule!r} is not axis -> value with optional "
                "settings (a mapping)"
            )
        GoodputSettings.from_config(shared | dict(own))


def _shared(given: Mapping[str, Any]) -> dict[str, Any]:
    """`generate.serving`'s settings for every cell it serves: all but its `cells` selectors."""
    return {k: v for k, v in given.items() if k != "cells"}


def server_arguments(settings: Mapping[str, Any], goodput: GoodputSettings) -> list[str]:
    """The generate server's options for this cell: its model, engine and bounds."""
    prompt, output = int(settings["prompt_len"]), int(settings["output_len"])
    return [
        *("--model", str(settings["model"]), "--generator", str(settings["generator"])),
        *("--device", str(settings["device"]), "--precision", str(settings["precision"])),
        *("--seed", str(settings["seed"]), "--threads", str(settings.get("threads_resolved", 0))),
        *("--max-prompt-tokens", str(prompt), "--max-new-tokens", str(output)),
        *("--max-streams", str(goodput.max_streams), "--max-stream-s", str(goodput.max_stream_s)),
        *("--max-batch", str(goodput.max_batch), "--max-batches", str(goodput.max_batches)),
    ]


def within_time_limit(
    goodput: GoodputSettings, settings: Mapping[str, Any], started: float
) -> GoodputSettings:
    """The search's budget cut to what is left now of the cell's `timeout_s` (counted from
    `started`), STOP_RESERVE_S kept for the last run's queue, the server's stop and the
    record."""
    if not (timeout := settings.get("timeout_s")):
        return goodput
    left = max(float(timeout) - (time.perf_counter() - started) - STOP_RESERVE_S, 0.0)
    return replace(goodput, slo=replace(goodput.slo, budget_s=min(goodput.slo.budget_s, left)))


def run_serving(
    settings: Mapping[str, Any],
    prompts,
    given: Mapping[str, Any],
    started: float,
    launcher: GenerateServerLauncher,
) -> dict[str, Any]:
    """The `generation.serving` section of one generate cell: the server started (by
    `launcher`, the cell's from run.launchers), the search run within what is left of the cell's
    time limit, the server stopped."""
    from devicebench.engines import generative
    from devicebench.serving.process import ServerFailed
    from devicebench.serving.token_loadgen import prompt_payloads

    goodput = GoodputSettings.from_config(given)
    engine = generative.get(str(settings["generator"]))
    if why := engine.step_in_turn_reason(goodput.max_batches):  # before loading anything
        return failed_section("server_failed", f"generate.serving.{why}", goodput)
    _free_device(str(settings["device"]))  # the server loads its own copy of the model
    log_dir = Path(settings.get("log_dir") or "generate-logs") / "serving"
    tokens = int(settings["output_len"])
    payloads = prompt_payloads(prompts, tokens)
    server = launcher.server(settings, server_arguments(settings, goodput), log_dir)
    try:
        server.start()
    except ServerFailed as failed:
        return failed_section("server_failed", str(failed), goodput)
    try:
        url = f"{server.url}/generate"
        import httpx

        try:
            alone = one_stream(url, payloads[0])
        except (OSError, httpx.HTTPError, IndexError) as error:  # no stream came back whole
            return failed_section("server_failed", f"one stream failed: {error!r}", goodput)
        # the search gets what the server's load and warm-up (a CUDA-graph server compiles
        # each batch bucket) and the one-stream requests left of the cell's time limit
        goodput = within_time_limit(goodput, settings, started)
        print(f"[generate] serving: one stream {alone}; {goodput.slo}", flush=True)
        if why := over_alone(alone, goodput):
            section = failed_section("no_rate", why, goodput)
        else:
            runner = token_runner(url, payloads, tokens, log_dir / "loadgen", goodput)
            # a batch of max_batch at one stream's pace; batches stepped in turn share the
            # device, so max_batches does not multiply it (x 8 the 8B's first probe ran 18x
            # over its capacity, and its queue took 183 s to drain: machine 14, 2026-11-30)
            start = alone["qps"] * goodput.max_batch
            section = goodput_section(TokenSearch(goodput, runner).run(start), goodput)
        section["one_stream"] = alone
        section["server"] = server.health | {"counts": server.stats(), "log": str(server.log_path)}
    finally:
        server.stop()
    print(f"[generate] serving: {section['status']}, goodput {section['goodput_qps']} QPS; "
          f"{section['message']}", flush=True)  # fmt: skip
    return section


def _free_device(device: str) -> None:
    """The cell's own model is gone (run_generate returned): its cached GPU memory too."""
    if device == "cuda":
        import gc

        import torch

        gc.collect()
        torch.cuda.empty_cache()
