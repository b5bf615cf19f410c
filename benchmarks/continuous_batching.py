#!/usr/bin/env python3
"""Benchmark: transformers' continuous batching (the transformers_cb engine) with and without CUDA
graphs, and its step budget, against the requests at once a server would hold.

    python benchmarks/continuous_batching.py [--model llama-8b] [--device cuda] [--batches 1 16 64]

One model (random weights, bf16), one manager per configuration in turn. For each number of
requests at once: that many prompts of --prompt tokens submitted together, --output tokens each
(EOS ignored), timed on the generate scenario's clock (time_generation): time to first token,
time per output token and output tokens/s, the median of --repeats after one warm-up. Prints one
table; the ratios a reader needs are within one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.engines.generative._continuous import ContinuousGreedy  # noqa: E402
from devicebench.frameworks.generator import time_generation  # noqa: E402
from devicebench.workloads import textgen_llm  # noqa: E402


def measure(generator: ContinuousGreedy, prompts: list[list[int]], output: int, repeats: int):
    time_generation(generator, prompts, output)  # warm-up: graphs are captured here
    timings = [time_generation(generator, prompts, output) for _ in range(repeats)]
    return {
        "ttft_s": statistics.median(t.first_token_s for t in timings),
        "tpot_s": statistics.median(t.time_per_output_token_s or 0.0 for t in timings),
        "tokens_per_s": statistics.median(t.tokens_per_s for t in timings),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="llama-tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--prompt", type=int, default=1024)
    parser.add_argument("--output", type=int, default=128)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--graphs", nargs="+", default=["none", "on"], help="none: transformers'")
    parser.add_argument("--batch-tokens", type=int, nargs="+", default=[2048])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = textgen_llm.build_model(args.model, args.device, args.precision, seed=0)
    rng = np.random.default_rng(0)
    vocab = int(model.config.vocab_size)
    rows = []
    for graphs in args.graphs:
        for batch_tokens in args.batch_tokens:
            generator = ContinuousGreedy(
                model, args.device, max_batch=max(args.batches),
                max_cache_len=args.prompt + args.output, max_batch_tokens=batch_tokens,
                cuda_graphs={"none": None, "on": True, "off": False}[graphs],
            )  # fmt: skip
            try:
                for batch in args.batches:
                    prompts = rng.integers(0, vocab, (batch, args.prompt)).tolist()
                    started = time.perf_counter()
                    found = measure(generator, prompts, args.output, args.repeats)
                    row = {"cuda_graphs": graphs, "batch_tokens": batch_tokens, "requests": batch}
                    rows.append(row | found | {"wall_s": time.perf_counter() - started})
                    print(rows[-1], flush=True)
            finally:
                generator.stop()
    table = pd.DataFrame(rows)
    print(f"\n{args.model} {args.precision} on {args.device}, {args.prompt}/{args.output}:\n")
    try:
        print(table.to_markdown(index=False, floatfmt=".4g"))
    except ImportError:  # no tabulate (the GPU host's image)
        print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
