#!/usr/bin/env python3
"""Benchmark: how long one full garbage collection holds a scoring server's interpreter lock,
with its loaded heap as CPython leaves it and frozen (devicebench/serving/gc_pause.py).

    python benchmarks/gc_pause.py [--model resnet50] [--engine openvino] [--precision bf16]

Builds the scorer as the server does (the same model, engine and warm-up), then times
`gc.collect()` 5 times each way and prints a table of the tracked objects and the median pause.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import pandas as pd


def pause_ms(times: int = 5) -> float:
    """The median wall time of a full collection, in ms."""
    pauses = []
    for _ in range(times):
        began = time.perf_counter()
        gc.collect()
        pauses.append((time.perf_counter() - began) * 1000)
    return statistics.median(pauses)


def main() -> int:
    from devicebench.serving.gc_pause import freeze_loaded_heap
    from devicebench.serving.scoring import make_scorer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="serve_image")
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--engine", default="openvino")
    parser.add_argument("--precision", default="bf16")
    args = parser.parse_args()
    scorer = make_scorer(
        args.task, "torch", args.model, "cpu", args.precision, max_batch=8, engine=args.engine
    )
    scorer.warm_up(8)
    rows = [{"heap": "as loaded", "tracked_objects": len(gc.get_objects()), "pause_ms": pause_ms()}]
    frozen = freeze_loaded_heap()
    rows.append(
        {"heap": f"frozen ({frozen} objects)", "tracked_objects": len(gc.get_objects()),
         "pause_ms": pause_ms()}
    )  # fmt: skip
    print(f"\nfull collection in a {args.model} {args.engine} {args.precision} server process\n")
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
