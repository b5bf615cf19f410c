#!/usr/bin/env python3
"""Benchmark: drawing a random-weight Llama's weights on the CPU, torch's one-thread `normal_`
against the workload's chunked draw on every core (textgen_llm._fill_normal).

    python benchmarks/weight_draw.py [--model llama-1b] [--precision bf16]

Both fill the same parameters of one built model in turn, twice each alternated; prints the
seconds of each and their ratio, and whether the chunked draw is the same at one thread as at all.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.workloads import textgen_llm  # noqa: E402


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama-1b")
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    model = textgen_llm.build_model(args.model, "cpu", args.precision, seed=0)
    std = model.config.initializer_range
    parameters = [
        (index, parameter)
        for index, (name, parameter) in enumerate(model.named_parameters())
        if not name.endswith("norm.weight")
    ]
    count = sum(parameter.numel() for _, parameter in parameters)
    times: dict[str, list[float]] = {"torch normal_ (one thread)": [], "chunked, all cores": []}
    with torch.no_grad():
        for _ in range(args.runs):
            start = time.perf_counter()
            for _, parameter in parameters:
                parameter.normal_(0.0, std)
            times["torch normal_ (one thread)"].append(time.perf_counter() - start)
            start = time.perf_counter()
            textgen_llm._fill_normal(parameters, std, 0)
            times["chunked, all cores"].append(time.perf_counter() - start)
        first = parameters[0][1].clone()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        textgen_llm._fill_normal(parameters[:1], std, 0)
        torch.set_num_threads(threads)
        same = torch.equal(first, parameters[0][1])
    print(f"{args.model} {args.precision}: {count:,} weights, {threads} threads")
    print("| draw | median s | weights/s |")
    print("|---|---:|---:|")
    for label, values in times.items():
        median = statistics.median(values)
        print(f"| {label} | {median:.2f} | {count / median:.3g} |")
    ratio = statistics.median(times["torch normal_ (one thread)"]) / statistics.median(
        times["chunked, all cores"]
    )
    print(f"\nchunked draw {ratio:.1f}x faster; same weights at 1 thread as at {threads}: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
