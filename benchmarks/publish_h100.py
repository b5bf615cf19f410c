#!/usr/bin/env python3
"""Measure the catalog on a GPU host and publish its records and speedup table.

Every task in torch and keras-torch, train and infer, three batch sizes each, on CUDA and on the
CPU at 16 threads (by default): one fresh worker process per cell, exactly as the workflow runs
them, on synthetic data prepared here (the GPU host is offline). Needs only numpy, torch and
keras on the host (no snakemake, jsonschema, yaml or pandas); tables are built with the study's
aggregate code when pandas is there, else later with --aggregate-only on any machine.

    python benchmarks/publish_h100.py --out results/published/h100 --devices cuda --budget-s 540
    python benchmarks/publish_h100.py --out results/published/h100 --devices cpu --budget-s 540
    python benchmarks/publish_h100.py --out results/published/h100 --aggregate-only

A run stops starting cells once --budget-s is spent and lists the cells it left out, so a
time-limited session still returns every record it measured.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from devicebench.cell import run_cell  # noqa: E402
from devicebench.grid import AXES, make_cell  # noqa: E402
from devicebench.tasks import TASKS  # noqa: E402

# Three batch sizes per task: the original example's, and two larger ones a GPU is built for.
BATCH_SIZES = {
    "mnist_mlp": (128, 512, 2048),
    "mnist_cnn": (128, 512, 2048),
    "cifar10_cnn": (32, 128, 512),
    "imdb_fasttext": (32, 128, 512),
    "imdb_bilstm": (32, 128, 512),
    "textgen_lstm": (128, 512, 2048),
}
STEPS_PER_EPOCH = 10  # steps per timed repetition (one epoch, capped)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for records and tables")
    parser.add_argument("--tasks", nargs="+", default=list(BATCH_SIZES), choices=sorted(TASKS))
    parser.add_argument("--frameworks", nargs="+", default=["torch", "keras-torch"])
    parser.add_argument("--devices", nargs="+", default=["cuda", "cpu"], choices=["cuda", "cpu"])
    parser.add_argument("--cpu-threads", type=int, default=16)
    parser.add_argument("--modes", nargs="+", default=["train", "infer"])
    parser.add_argument("--lstm-kernels", nargs="+", default=["cudnn"])
    parser.add_argument("--batch-scale", type=float, default=1.0, help="scale batch sizes (tests)")
    parser.add_argument("--steps", type=int, default=STEPS_PER_EPOCH)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=540.0, help="start no cell after this")
    parser.add_argument("--timeout-s", type=float, default=240.0, help="limit per cell")
    parser.add_argument("--aggregate-only", action="store_true")
    return parser.parse_args(argv)


def batch_sizes(task: str, scale: float) -> list[int]:
    return sorted({max(2, int(b * scale)) for b in BATCH_SIZES[task]})


def prepare_data(args: argparse.Namespace) -> dict[str, Path]:
    """Synthetic data sized for the largest batch: `steps` batches to train, one to infer."""
    from devicebench.data import prepare_dataset

    manifests: dict[str, Path] = {}
    for task in args.tasks:
        name = TASKS[task].dataset
        biggest = max(
            max(batch_sizes(t, args.batch_scale)) for t in args.tasks if TASKS[t].dataset == name
        )
        if name not in manifests:
            folder = args.out / "data" / name
            manifests[name] = prepare_dataset(
                name,
                "synthetic",
                folder,
                train_samples=biggest * args.steps,
                test_samples=biggest,
                seed=1234,
            )
    return manifests


def plan(args: argparse.Namespace) -> list:
    cells = []
    devices = [("cuda", "all") if d == "cuda" else ("cpu", args.cpu_threads) for d in args.devices]
    for (device, threads), task, framework in itertools.product(
        devices, args.tasks, args.frameworks
    ):
        spec = TASKS[task]
        extras = (
            [{}]
            if "lstm_kernel" not in spec.axes
            else [{"lstm_kernel": k} for k in args.lstm_kernels]
        )
        for batch, mode, extra in itertools.product(
            batch_sizes(task, args.batch_scale), args.modes, extras
        ):
            values = dict(
                zip(
                    AXES,
                    (task, spec.models[0], framework, device, threads, "fp32", batch, mode),
                    strict=True,
                )
            )
            settings = {
                "dataset": spec.dataset,
                "epochs": 1,
                "steps_per_epoch": args.steps,
                "learning_rate": spec.learning_rate,
                "repetitions": args.repetitions,
                "warmup_steps": args.warmup_steps,
                "seed": 1234,
                "timeout_s": args.timeout_s,
                "noise_cov": 0.1,
            }
            cells.append(make_cell(values, extra, settings))
    return cells


def aggregate(out: Path) -> None:
    """cells/timing/speedup/quality tables over every record under out/cells."""
    records = sorted((out / "cells").rglob("*.json"))
    try:
        from devicebench.aggregate.collect import collect_records, write_table
        from devicebench.aggregate.tables import quality_table, speedup_table, timing_table
    except ImportError as e:
        print(f"[publish] no tables here ({e}); run --aggregate-only where pandas is installed")
        return
    cells = collect_records(records)
    for name, table in {
        "cells": cells,
        "timing": timing_table(cells),
        "speedup": speedup_table(cells, "cpu"),
        "quality": quality_table(cells),
    }.items():
        write_table(table, out / "tables" / name)
    print(f"[publish] {len(records)} records -> {out / 'tables'}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.aggregate_only:
        start = time.monotonic()
        manifests = prepare_data(args)
        cells = plan(args)
        left: list[str] = []
        for index, cell in enumerate(cells):
            if time.monotonic() - start > args.budget_s:
                left = [c.cell_id for c in cells[index:]]
                break
            out = args.out / "cells" / f"{cell.cell_id}.json"
            record = run_cell(cell, data=manifests[cell.run_settings()["dataset"]], out=out)
            rate = record.get("throughput", {}).get("samples_per_s", float("nan"))
            print(
                f"[publish] {index + 1}/{len(cells)} {record['status']:>7} {rate:>12,.0f}/s "
                f"{cell.cell_id} ({time.monotonic() - start:.0f} s)",
                flush=True,
            )
        if left:
            print(f"[publish] budget spent: {len(left)} cells not run:", *left, sep="\n  ")
            (args.out / "not_run.json").write_text(json.dumps(left, indent=1))
    aggregate(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
