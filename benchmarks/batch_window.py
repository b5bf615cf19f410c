#!/usr/bin/env python3
"""Benchmark: what the scoring server's batch window costs in latency at a rate below its
capacity, the regime a latency-bound verdict is decided in (the `batch_wait` axis).

    python benchmarks/batch_window.py [--model mobilenetv2] [--rates 20 60] [--windows 5 0]

One real server per window (FastAPI under uvicorn, the model on this CPU), driven by MLPerf
LoadGen's Server scenario (Poisson arrivals) at each rate for --seconds; the windows take turns
at each rate, --rounds times, so that they see the same machine. Prints p50 and p99 per window
and rate (the median over rounds) and the ratio of each to the first window's.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import pandas as pd


def main() -> int:
    from devicebench.data.jpeg_images import make_synthetic
    from devicebench.serving.loadgen import run_scenario
    from devicebench.serving.process import ServerProcess

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenetv2")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--rates", type=float, nargs="+", default=[20.0, 60.0])
    parser.add_argument("--windows", type=float, nargs="+", default=[5.0, 0.0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    payloads, _ = make_synthetic(0, 64, "test", size=args.image_size)
    logs = Path(tempfile.mkdtemp(prefix="batch-window-"))
    servers = {
        window: ServerProcess(
            framework="torch", model=args.model, task="serve_image", device="cpu",
            precision=args.precision, threads=args.threads, image_size=args.image_size,
            max_batch=args.max_batch, batch_wait_ms=window,
            log_path=logs / f"server-{window:g}.log",
        )
        for window in args.windows
    }  # fmt: skip
    rows = []
    try:
        for server in servers.values():
            server.start()
            said = server.health.get("batch_wait_ms")
            print(f"[batch_window] server up: {server.url}, batch window {said} ms")
        for rate in args.rates:
            for round_ in range(args.rounds):
                for window, server in servers.items():
                    run = run_scenario(
                        server.url + "/predict", payloads, "Server",
                        logs / f"w{window:g}-q{rate:g}-r{round_}",
                        min_duration_s=args.seconds, min_queries=1, target_qps=rate,
                        target_latency_ms=1000.0, schedule_seed=round_ + 1,
                    )  # fmt: skip
                    latency = run.get("latency_ms") or {}
                    rows.append({"rate_qps": rate, "window_ms": window, "round": round_,
                                 "p50_ms": latency.get("p50"), "p99_ms": latency.get("p99"),
                                 "queries": run.get("queries")})  # fmt: skip
                    print(f"[batch_window] {rate:g} QPS, window {window:g} ms, round {round_}: "
                          f"p50 {latency.get('p50')} ms, p99 {latency.get('p99')} ms")  # fmt: skip
    finally:
        for server in servers.values():
            server.stop()
    df = pd.DataFrame(rows).groupby(["rate_qps", "window_ms"], sort=False)
    table = df[["p50_ms", "p99_ms"]].median().reset_index()
    first = table.groupby("rate_qps")[["p50_ms", "p99_ms"]].transform("first")
    table["p50_vs_first"] = table["p50_ms"] / first["p50_ms"]
    table["p99_vs_first"] = table["p99_ms"] / first["p99_ms"]
    print(f"\n{args.model} {args.precision} at {args.image_size} px, {args.threads} thread(s), "
          f"batches up to {args.max_batch}; median of {args.rounds} LoadGen Server runs of "
          f"{args.seconds:g} s each\n")  # fmt: skip
    print(table.to_markdown(index=False, floatfmt=".3g"))
    print(f"\nserver logs and LoadGen logs: {logs}; medians of: "
          f"{statistics.median(r['queries'] or 0 for r in rows):.0f} queries a run")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
