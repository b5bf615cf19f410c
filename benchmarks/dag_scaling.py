#!/usr/bin/env python3
"""How long Snakemake takes to plan grids of growing size (dry run, nothing executed).

    python benchmarks/dag_scaling.py [--sizes 1000 2500 5000 10000]

Prints a table of cells, seconds and microseconds per cell; the cost should grow about
linearly and a 10,000-cell grid should plan in under 30 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PER_BATCH = 2 * 2 * 3 * 3  # tasks x modes x precisions x devices (cpu:1, cpu:2, cuda)


def grid_config(cells: int) -> dict:
    batches = max(1, round(cells / PER_BATCH))
    return {
        "study": f"dag-{cells}",
        "devices": {"cpu": {"threads": [1, 2]}, "cuda": "auto"},
        "frameworks": ["torch"],
        "precisions": ["fp32", "bf16", "fp16"],
        "modes": ["train", "infer"],
        "batch_sizes": list(range(1, batches + 1)),
        "tasks": {"mnist_mlp": {"epochs": 1}, "mnist_cnn": {"epochs": 1}},
    }


def plan_seconds(config: dict, workdir: Path) -> tuple[int, float]:
    """Seconds for `snakemake -n` to build the DAG; also the number of cell jobs it planned."""
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "--cores",
        "1",
        "--quiet",
        "rules",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(path),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{done.stderr[-2000:]}")
    cells = next(
        int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("cell ")
    )
    return cells, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2500, 5000, 10000])
    args = parser.parse_args()
    print(f"{'cells':>8} {'seconds':>9} {'us/cell':>9}")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            cells, seconds = plan_seconds(grid_config(size), Path(tmp))
        print(f"{cells:>8} {seconds:>9.2f} {seconds / cells * 1e6:>9.0f}", flush=True)


if __name__ == "__main__":
    main()
