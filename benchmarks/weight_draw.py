#!/usr/bin/env python3
"""Benchmark: a random-weight Llama drawn on the CPU on one thread against all cores, and what
each model then decodes.

    python benchmarks/weight_draw.py [--model llama-1b] [--precision bf16] [--decode 32]

The workload's chunked draw (textgen_llm._fill_normal) gives the same weights at any thread
count, so the two models differ only in where their pages were first touched: by one thread (as
torch's one-thread `normal_` touched them before 2026-12-01) or by all. Each is drawn fresh, in
turn, `--runs` times; after each draw, one prompt of 128 tokens is decoded `--decode` tokens
greedily (torch eager, batch 1). Prints the draw's seconds and the decode's tokens/s per thread
count, and whether both decoded the same tokens.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.engines.generative._torch_loop import TorchGreedy  # noqa: E402
from devicebench.frameworks.generator import time_generation  # noqa: E402
from devicebench.workloads import textgen_llm  # noqa: E402


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-1b")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--decode", type=int, default=32, help="tokens decoded after each draw")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    config = textgen_llm.model_config(args.model)
    dtype = getattr(torch, textgen_llm.DTYPES[args.precision])
    every = torch.get_num_threads()
    prompt = [[(7 * j) % 1000 + 1 for j in range(128)]]
    draws: dict[int, list[float]] = {1: [], every: []}
    rates: dict[int, list[float]] = {1: [], every: []}
    tokens: dict[int, list[list[int]]] = {}
    for _ in range(args.runs):
        for threads in draws:
            start = time.perf_counter()
            model = textgen_llm._drawn(config, "cpu", dtype, 0, threads).eval()
            draws[threads].append(time.perf_counter() - start)
            generator = TorchGreedy(model, "cpu", static=False, compile=False)
            timing = time_generation(generator, prompt, args.decode)
            rates[threads].append(1.0 / (timing.time_per_output_token_s or float("inf")))
            tokens[threads] = timing.tokens
            del model, generator
            gc.collect()
    print(f"{args.model} {args.precision}: {every} threads decode")
    print("| drawn on | draw s (median) | decode tokens/s (median) | runs |")
    print("|---|---:|---:|---|")
    for threads in draws:
        runs = ", ".join(f"{rate:.2f}" for rate in rates[threads])
        print(
            f"| {threads} thread(s) | {statistics.median(draws[threads]):.1f} | "
            f"{statistics.median(rates[threads]):.2f} | {runs} |"
        )
    same = tokens[1] == tokens[every]
    print(f"\nthe same greedy tokens from both draws: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
