#!/usr/bin/env python3
"""How long Snakemake takes to plan grids of growing size (nothing is executed).

    python benchmarks/dag_scaling.py [--sizes 1000 2500 5000 10000]

For each size it times, in one run: `snakemake --dag` (building the DAG only), `snakemake -n`
(the dry run: the DAG plus one printed job per cell), and the same dry run of a one-rule workflow
with as many jobs and no lookups at all (Snakemake's own floor on this machine). Cost should grow
about linearly with the number of cells.
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
FLOOR = """
CELLS = [f"task~t/batch~{i}/mode~train" for i in range(int(config["cells"]))]
rule all:
    input: expand("results/cells/{cell}.json", cell=CELLS)
rule cell:
    output: "results/cells/{cell}.json"
    log: "results/logs/{cell}.log"
    shell: "touch {output}"
"""


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


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def measure(cells: int, workdir: Path) -> dict[str, float]:
    """Seconds for the DAG alone, the dry run, and the floor workflow's dry run."""
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump(grid_config(cells)))
    base = [sys.executable, "-m", "snakemake", "--cores", "1", "--directory", str(workdir)]
    ours = [*base, "--snakefile", str(REPO / "Snakefile"), "--configfile", str(config)]
    floor = workdir / "Floor.smk"
    floor.write_text(FLOOR)
    n = len_grid(cells)
    return {
        "cells": n,
        "dag_s": timed([*ours, "--dag"]),
        "dry_run_s": timed([*ours, "--dry-run", "--quiet", "all"]),
        "floor_dry_run_s": timed(
            [*base, "--snakefile", str(floor), "--config", f"cells={n}", "-n", "--quiet", "all"]
        ),
    }


def len_grid(cells: int) -> int:
    return PER_BATCH * max(1, round(cells / PER_BATCH))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2500, 5000, 10000])
    args = parser.parse_args()
    print(f"{'cells':>7} {'dag s':>7} {'dry-run s':>10} {'floor s':>8} {'dry-run ms/cell':>16}")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            row = measure(size, Path(tmp))
        per_cell = row["dry_run_s"] / row["cells"] * 1000
        print(
            f"{row['cells']:>7} {row['dag_s']:>7.1f} {row['dry_run_s']:>10.1f} "
            f"{row['floor_dry_run_s']:>8.1f} {per_cell:>16.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
