"""The serve cell: start the scoring server, drive it with the client pool and LoadGen, record.

The same for every serve task: serve_image sends the dataset's JPEG bytes, serve_text its review
texts (the dataset's `x_test` are the request bodies); the server knows the rest (scoring.py).

Everything is measured from outside, as a client sees it. The server is stopped when the cell
ends, fails or is interrupted; a kill of the worker takes it along (see serving.process).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devicebench.engines import IN_PROCESS
from devicebench.measure.energy import EnergyMeter
from devicebench.measure.marks import mark
from devicebench.measure.sampler import Sampler
from devicebench.serving import inprocess, loadgen, slo, steady
from devicebench.serving.clients import client_processes, run_pool
from devicebench.serving.decode import DEFAULT_MAX_PIXELS
from devicebench.workloads import get
from devicebench.workloads.base import BATCH_WAIT_MS

if TYPE_CHECKING:
    from devicebench.run.launchers.base import ScoringServerLauncher

# What a serve cell does unless the config's `tasks.<serve task>.serve` says otherwise.
DEFAULTS: dict[str, Any] = {
    "image_size": 224,
    "requests": 1000,  # a fixed count, where min_duration_s and min_requests are both 0
    "min_duration_s": 0.0,  # the steady window (serving.steady); the study: 30 s
    "min_requests": 0,  # and at least this many requests in it; the study: 2,000
    "ramp_s": 1.0,
    "capacity_s": 5.0,
    "warmup_requests": 20,
    "batch_wait_ms": BATCH_WAIT_MS,
    "batch_buckets": "auto",
    "max_body_bytes": 1 << 20,
    "max_pixels": DEFAULT_MAX_PIXELS,
    "decode_workers": "auto",
    "host": "127.0.0.1",
    "request_timeout_s": 60.0,
    "client_processes": "auto",
    "stability_window_s": 1.0,
    "loadgen_scenarios": ["Offline", "SingleStream", "Server"],
    "loadgen_min_duration_s": 10.0,
    "loadgen_min_queries": 256,
    "server_latency_ms": 100.0,
    "server_search_steps": 4,
    "loadgen_server_max_run_s": None,
    "ray_address": "",
    # the serving verdict: the latency-bound search (serving.slo); None: not run
    "slo": None,
    # seconds of the in-process yardstick (serving.inprocess) after the server stops; 0: none
    "inprocess_s": 0.0,
}


def log(message: str) -> None:
    print(f"[devicebench] {message}", flush=True)


def serve_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The defaults, overridden by the cell's `serve` settings (a JSON string on the CLI)."""
    given = settings.get("serve") or {}
    if isinstance(given, str):
        given = json.loads(given)
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown serve setting(s) {unknown}; known: {', '.join(DEFAULTS)}")
    if settings.get("batch_wait") is not None:  # the cell's own window (plan.batch_wait)
        given = given | {"batch_wait_ms": float(settings["batch_wait"])}
    return DEFAULTS | given


def run_serve(
    settings: dict[str, Any], dataset: Any, launcher: ScoringServerLauncher
) -> dict[str, Any]:
    """Measure one serve cell, its server started and stopped by `launcher` (the cell's, from
    run.launchers); the record sections it fills."""
    serve = serve_settings(settings)
    payloads = list(dataset.x_test)
    log_dir = Path(settings.get("log_dir") or "serve-logs")
    clients = int(settings.get("clients", 20))
    server = launcher.server(settings, serve, log_dir, getattr(dataset, "tokenizer", None))
    kind = get(settings["task"]).client_content_type
    started = time.perf_counter()
    with server:
        startup_s = time.perf_counter() - started
        url = f"{server.url}/predict"
        log(f"server {server.pid} up at {server.url} in {startup_s:.1f} s")
        mark("server_up")
        warmup = int(serve["warmup_requests"])
        processes = client_processes(serve["client_processes"], clients)
        warm = run_pool(
            url, payloads, clients=clients, requests=warmup, content_type=kind, processes=processes
        )
        mark("warmup_done")
        sampler = Sampler(str(settings["device"]), enabled=True).start()
        meter = EnergyMeter(str(settings["device"])).start()
        timed_start = time.time()
        pool = steady.measure(url, payloads, serve, clients, processes, kind)
        timed_end = time.time()
        energy = meter.stop(pool["ok"])
        utilization = sampler.stop()
        log(
            f"pool: {clients} clients in {pool['processes']} process(es), {pool['requests']} "
            f"requests, {pool['requests_per_s']:.1f} req/s, "
            f"p99 {pool['latency_ms'].get('p99', float('nan')):.1f} ms, {pool['errors']} errors"
        )
        scenarios = _loadgen(url, payloads, serve, pool, clients, log_dir, kind)
        mark("loadgen_done")
        bounded = _slo(url, payloads, serve, settings, pool, log_dir, kind, started)
        stats = server.stats()
    mark("server_stopped")
    steady.add_capacity(pool, payloads, serve, clients, processes, kind)
    mark("capacity_measured")
    yardstick = _inprocess(server, serve, settings)
    return {
        "serving": {
            "server": settings.get("server", "uvicorn"),
            "replicas": int(settings.get("replicas", 1)),
            "replica_peaks_mb": _replica_peaks(stats),
            "url_host": serve["host"],
            "port_note": server.health.get("port_note", ""),
            "startup_s": startup_s,
            "model_load_s": server.health.get("load_s"),
            **_inputs(settings, serve, server.health),
            "max_batch": int(settings["batch_size"]),
            # the window the server says it batches in (the cell's, where it does not say)
            "batch_wait_ms": float(server.health.get("batch_wait_ms", serve["batch_wait_ms"])),
            "batch_buckets": server.health.get("batch_buckets"),
            "decode_workers": server.health.get("decode_workers"),
            "gc_frozen_objects": server.health.get("gc_frozen_objects"),  # gc_pause.py
            "batch_sizes": stats["batch_sizes"],
            "server_counts": stats["counts"],
            "warmup_errors": warm["errors"],
            "pool": pool,
            "steady_window": pool.get("steady"),  # None: a fixed request count
            "client_bound": pool.get("client_bound"),
            "loadgen": scenarios,
            "slo": bounded,
            IN_PROCESS: yardstick,
            **inprocess.ratio_section(
                yardstick,
                pool.get("requests_per_s"),
                {
                    "batch_sizes": stats["batch_sizes"],
                    "max_batch": int(settings["batch_size"]),
                    "client_bound": pool.get("client_bound"),
                },
            ),  # fmt: skip
            "log_dir": str(log_dir),
        },
        "timings": {
            "timed_start": timed_start,
            "timed_end": timed_end,
            "latency_ms": pool["latency_ms"],
        },
        "throughput": {
            "samples_per_s": pool["samples_per_s"],
            "requests_per_s": pool["requests_per_s"],
        },
        "memory": {"peak_host_mb": stats["peak_rss_mb"], "peak_device_mb": None},
        "model": {"parameters": server.health.get("parameters")},
        "utilization": utilization,
        "energy": energy,
        # CUDA and cuDNN as the server's torch has them (this process loads no framework)
        "environment": {
            key: server.health[key] for key in ("cuda", "cudnn") if server.health.get(key)
        },
    }


def _inputs(settings, serve, health) -> dict[str, Any]:
    """What one request holds: the image size, or the text's token limit and the padding."""
    engine = {key: health[key] for key in ("engine", "engine_ran") if key in health}
    return get(settings["task"]).request_fields(serve, health) | engine


def _replica_peaks(stats: dict[str, Any]) -> list[float] | None:
    """Ray Serve: each replica's peak resident memory (MB), dead and restarted ones included."""
    replicas = stats.get("replicas")
    return [r["peak_rss_mb"] for r in replicas.values()] if replicas else None


def _loadgen(url, payloads, serve, pool, clients, log_dir: Path, kind: str) -> dict[str, Any]:
    """Each configured LoadGen scenario; Server with the short search for the highest valid QPS."""
    options = {
        "min_duration_s": float(serve["loadgen_min_duration_s"]),
        "min_queries": int(serve["loadgen_min_queries"]),
        "target_latency_ms": float(serve["server_latency_ms"]),
        "max_connections": clients,
        "content_type": kind,
    }
    expected = max(pool["requests_per_s"], 1.0)
    out: dict[str, Any] = {}
    for scenario in serve["loadgen_scenarios"]:
        where = log_dir / "loadgen" / scenario
        if scenario == "Server" and int(serve["server_search_steps"]) > 1:
            steps = int(serve["server_search_steps"])
            cap = serve["loadgen_server_max_run_s"]
            out[scenario] = loadgen.search_server_qps(
                url, payloads, where, start_qps=expected / 2, steps=steps,
                max_run_s=None if cap is None else float(cap), **options,
            )  # fmt: skip
        else:
            out[scenario] = loadgen.run_scenario(
                url, payloads, scenario, where, target_qps=expected, **options
            )
        log(f"loadgen {scenario}: {_brief(out[scenario])}")
    return out


def _slo(url, payloads, serve, settings, pool, log_dir: Path, kind: str, started: float):
    """The latency-bound search, within what is left of the cell's time limit; None when the
    config asks for none."""
    if not serve["slo"]:
        return None
    options = dict(serve["slo"])
    timeout = settings.get("timeout_s")
    if timeout:  # keep a minute for the pool's capacity run, the yardstick and the record
        left = float(timeout) - (time.perf_counter() - started) - 60.0
        options["budget_s"] = min(float(options.get("budget_s", left)), max(left, 0.0))
    wanted = slo.SloSettings.from_config(settings["task"], settings["model"], options)
    log(f"latency-bound search: p99 <= {wanted.p99_bound_ms:g} ms, budget {wanted.budget_s:.0f} s")
    found = slo.search(
        url, payloads, log_dir / "slo", wanted, float(pool.get("requests_per_s") or 0.0), kind
    )
    log(f"latency-bound search: {found['status']}, max_valid_qps {found['max_valid_qps']}; "
        f"{found['message']}")  # fmt: skip
    mark("slo_done")
    return found


def _inprocess(server, serve, settings) -> dict[str, Any]:
    """The in-process yardstick with the server's own options, the server stopped."""
    seconds = float(serve["inprocess_s"])
    if seconds <= 0:
        return {"samples_per_s": None, "error": "not measured (serve.inprocess_s is 0)"}
    measured = inprocess.measure(server.command, seconds, timeout_s=600.0)
    mark("inprocess_measured")
    log(f"in-process yardstick: {measured.get('samples_per_s')} samples/s")
    return measured


def _brief(result: dict[str, Any]) -> str:
    if "runs" in result:
        said = f"highest valid QPS {result['highest_valid_qps']} in {len(result['runs'])} runs"
        return f"{said}; {result['stopped']}" if result.get("stopped") else said
    return f"{result['result_metric']} {result['result']} {result['validity']}"
