#!/usr/bin/env python3
"""Benchmark: a GPU decode loop that reads each token one step late against one that waits.

The same compiled CUDA-graph step (torch_static's loop, _torch_loop.TorchGreedy) of one model,
generations alternated between the two reads, so that both share the machine's state; prints
decode tokens/s and TPOT per read and whether both produced the same greedy tokens.

    python benchmarks/llm_late_read.py --model llama-1b --prompt 128 --output 128 --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.engines.generative._torch_loop import TorchGreedy  # noqa: E402
from devicebench.frameworks.generator import time_generation  # noqa: E402
from devicebench.workloads import textgen_llm  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-1b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--output", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    model = textgen_llm.build_model(args.model, args.device, args.precision, 0)
    generator = TorchGreedy(
        model, args.device, static=True, compile=args.device == "cuda",
        max_cache_len=args.prompt + args.output,
    )  # fmt: skip
    prompts = [[(7 * i + j) % 1000 + 1 for j in range(args.prompt)] for i in range(args.batch)]
    print(f"[bench] {args.model} {args.precision} batch {args.batch} on {args.device}: "
          "compiling and warming up", flush=True)  # fmt: skip
    for late in (True, False, True, False):  # compile, then warm both reads
        generator.late_read = late
        time_generation(generator, prompts, args.output)
    rows: dict[bool, list] = {True: [], False: []}
    for run in range(args.runs):
        for late in (True, False):
            generator.late_read = late
            rows[late].append(time_generation(generator, prompts, args.output))
        print(f"[bench] run {run + 1}/{args.runs}", flush=True)
    same = rows[True][0].tokens == rows[False][0].tokens
    print("\n| read | decode tokens/s (median, min-max) | TPOT ms (median) | runs |")
    print("|---|---|---:|---:|")
    for late, timings in rows.items():
        rates = [args.batch * len(t.token_s) / (t.total_s - t.first_token_s) for t in timings]
        tpot = statistics.median(t.time_per_output_token_s for t in timings) * 1e3
        print(f"| {'one step late' if late else 'at once'} | {statistics.median(rates):.1f} "
              f"({min(rates):.1f}-{max(rates):.1f}) | {tpot:.3f} | {len(timings)} |")  # fmt: skip
    print(f"\nsame greedy tokens from both reads: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
