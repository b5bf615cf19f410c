#!/usr/bin/env python3
"""Benchmark: what stepping batches in turn (the generate server's `max_batches`) does to time to
first token and time per token under Poisson load, against one batch at a time.

    python benchmarks/generate_turns.py [--model llama-tiny] [--rates 4 8] [--turns 1 2]

One real generate server per `max_batches` value (FastAPI under uvicorn, the model on this CPU,
torch eager), driven by MLPerf LoadGen's Server scenario with token latencies at each rate for
--seconds; the servers take turns at each rate, --rounds times, so that they see the same
machine. Prints p50 and p99 TTFT, p99 TPOT and tokens/s per server and rate (the median over
rounds) and the ratio of each to the first server's.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

MODULE = "devicebench.serving.generate_app"


def _server(args: argparse.Namespace, turns: int, logs: Path):
    from devicebench.serving.process import ServerProcess

    arguments = ["--model", args.model, "--generator", "torch_eager", "--threads", "1"]
    arguments += ["--max-prompt-tokens", str(args.prompt), "--max-new-tokens", str(args.output)]
    arguments += ["--max-batch", str(args.max_batch), "--max-batches", str(turns)]
    return ServerProcess(
        framework="torch", model=args.model, module=MODULE, arguments=arguments,
        log_path=logs / f"server-{turns}.log",
    )  # fmt: skip


def main() -> int:
    from devicebench.serving import token_loadgen

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-tiny")
    parser.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    parser.add_argument("--output", type=int, default=64, help="tokens asked per request")
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--rates", type=float, nargs="+", default=[4.0, 8.0])
    parser.add_argument("--turns", type=int, nargs="+", default=[1, 2], help="max_batches")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    prompts = np.random.default_rng(0).integers(1, 500, (64, args.prompt))
    payloads = token_loadgen.prompt_payloads(prompts, args.output)
    logs = Path(tempfile.mkdtemp(prefix="generate-turns-"))
    servers = {turns: _server(args, turns, logs) for turns in args.turns}
    rows = []
    try:
        for turns, server in servers.items():
            server.start()
            print(f"[generate_turns] server up: {server.url}, max_batches {turns}", flush=True)
        for rate in args.rates:
            for round_ in range(args.rounds):
                for turns, server in servers.items():
                    run = token_loadgen.run_server(
                        server.url + "/generate", payloads, logs / f"t{turns}-q{rate:g}-r{round_}",
                        tokens=args.output, target_qps=rate, min_duration_s=args.seconds,
                        min_queries=1, ttft_ms=2000.0, tpot_ms=100.0, schedule_seed=round_ + 1,
                    )  # fmt: skip
                    ttft, tpot = run.get("ttft_ms") or {}, run.get("tpot_ms") or {}
                    row = {"rate_qps": rate, "max_batches": turns, "round": round_}
                    row |= {"ttft_p50_ms": ttft.get("p50"), "ttft_p99_ms": ttft.get("p99")}
                    row |= {"tpot_p99_ms": tpot.get("p99"), "queries": run.get("queries")}
                    row |= {"tokens_per_s": run.get("output_tokens_per_s")}
                    rows.append(row)
                    print(f"[generate_turns] {rate:g} QPS, max_batches {turns}, round {round_}: "
                          f"TTFT p99 {row['ttft_p99_ms']} ms, TPOT p99 {row['tpot_p99_ms']} ms",
                          flush=True)  # fmt: skip
    finally:
        for server in servers.values():
            server.stop()
    columns = ["ttft_p50_ms", "ttft_p99_ms", "tpot_p99_ms", "tokens_per_s"]
    frame = pd.DataFrame(rows)
    frame[columns] = frame[columns].astype(float)
    table = frame.groupby(["rate_qps", "max_batches"], sort=False)[columns].median().reset_index()
    first = table.groupby("rate_qps")[columns].transform("first")
    for column in ("ttft_p99_ms", "tpot_p99_ms"):
        table[column.replace("_ms", "_vs_first")] = table[column] / first[column]
    print(f"\n{args.model} torch eager, 1 thread, prompt {args.prompt} / output {args.output}, "
          f"batches up to {args.max_batch}; median of {args.rounds} LoadGen Server runs of "
          f"{args.seconds:g} s (token latencies) per server and rate\n")  # fmt: skip
    print(table.to_markdown(index=False, floatfmt=".4g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
