#!/usr/bin/env python3
"""What does a batch size the model has not seen cost? First call against steady calls per size.

    python3 benchmarks/batch_shapes.py --device cuda --models mobilenetv2 resnet50 --sizes 1 3 7 32

A scoring server with dynamic batching hands the model whatever batch size formed. On a GPU the
first call at a new shape may pay for kernel selection and loading; this times, for each size in
turn (after one warm-up at the largest), the first call and the median of the next `--repeats`.
Needs torch and transformers (workloads/serve_image.py's classifiers, random weights).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.workloads.serve_image import Classifier  # noqa: E402


def timed(model: Classifier, batch: np.ndarray) -> float:
    """Milliseconds of one predict (it returns numpy, so the device work is done)."""
    start = time.perf_counter()
    model.predict(batch)
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--models", nargs="+", default=["mobilenetv2"])
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3, 5, 8, 13, 21, 32])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print("| model | device | precision | batch | first call ms | steady ms | first / steady |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name in args.models:
        model = Classifier("torch", name, args.image_size, args.device, args.precision)
        size = args.image_size
        timed(model, rng.integers(0, 256, (max(args.sizes), size, size, 3), dtype=np.uint8))
        for n in args.sizes:
            batch = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
            first = timed(model, batch)
            steady = statistics.median(timed(model, batch) for _ in range(args.repeats))
            print(
                f"| {name} | {args.device} | {args.precision} | {n} | {first:,.1f} | "
                f"{steady:,.2f} | {first / steady:,.1f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
