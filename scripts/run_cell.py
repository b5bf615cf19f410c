#!/usr/bin/env python3
"""Run one cell of the grid and write its JSON record.

Snakemake calls this once per cell; it also runs by hand, for example:

    python scripts/run_cell.py --task mnist_mlp --framework torch --device cpu --threads 2 \\
        --batch-size 128 --mode train --out cell.json

Without --data, synthetic data for the task's dataset is prepared under results/data first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
try:
    import devicebench  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO / "src"))

from devicebench.cell import Orphaned, run_cell  # noqa: E402
from devicebench.devices import host_cores  # noqa: E402
from devicebench.engines import MODEL_ENGINES  # noqa: E402
from devicebench.grid import AXES, ENGINE_SETTINGS, SPARK_SETTINGS, make_cell  # noqa: E402
from devicebench.marks import mark, process_start  # noqa: E402
from devicebench.output_space import OutputUnusable  # noqa: E402
from devicebench.spark import ENGINES  # noqa: E402
from devicebench.workloads import NAMES, get  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    axes = parser.add_argument_group("cell axes")
    axes.add_argument("--task", required=True, choices=sorted(NAMES))
    axes.add_argument("--model", help="model of the task (default: the task's first model)")
    axes.add_argument("--framework", default="torch")
    axes.add_argument("--device", default="cpu", choices=["cpu", "cuda", "mps"])
    axes.add_argument("--threads", default="all", help="CPU threads: a number or 'all'")
    axes.add_argument(
        "--precision", default="fp32", choices=["fp32", "tf32", "bf16", "fp16", "int8", "int4"]
    )
    axes.add_argument("--batch-size", type=int, default=128)
    axes.add_argument(
        "--mode", default="train", choices=["train", "infer", "serve", "converge", "generate"]
    )
    axes.add_argument(
        "--gpus",
        type=int,
        help="data-parallel ranks of a train cell (GPUs on cuda, processes on cpu); torchrun",
    )
    axes.add_argument(
        "--engine",
        choices=[*ENGINES, *MODEL_ENGINES],
        help="how an infer cell scores: in-process, a Spark batch job, Spark Structured "
        "Streaming, ONNX Runtime or OpenVINO",
    )
    axes.add_argument(
        "--axis",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an extra axis of the grid (repeatable)",
    )
    run = parser.add_argument_group("run settings")
    run.add_argument("--epochs", type=int, help="default: the task's original epochs")
    run.add_argument("--steps-per-epoch", type=int, help="cap on optimizer steps per epoch")
    run.add_argument("--learning-rate", type=float)
    run.add_argument("--repetitions", type=int, default=3)
    run.add_argument("--warmup-steps", type=int, default=3)
    run.add_argument("--seed", type=int, default=1234)
    run.add_argument("--timeout-s", type=float, default=3600.0)
    run.add_argument("--noise-cov", type=float, default=0.1)
    run.add_argument(
        "--min-repetition-s",
        type=float,
        default=1.0,
        help="each timed repetition repeats its pass until it has run this long (default 1.0)",
    )
    run.add_argument(
        "--memory-limit-mb",
        type=int,
        help="cap on the memory the cell may allocate once its framework is loaded (oom beyond)",
    )
    run.add_argument("--dataset", help="dataset name (default: the task's)")
    run.add_argument(
        "--test-samples",
        type=int,
        help="score only the first N held-out samples (default: all the data set has)",
    )
    run.add_argument(
        "--profile", type=int, default=0, help="1: run torch.profiler on extra steps after timing"
    )
    run.add_argument(
        "--weights",
        choices=["random", "pretrained"],
        default="random",
        help="transformer tasks: random weights (default) or pretrained ones from --pretrained",
    )
    run.add_argument(
        "--pretrained",
        help="with --weights pretrained: a save_pretrained folder or a hub id in the local cache",
    )
    spark = parser.add_argument_group("Spark settings (engine spark / spark-streaming)")
    spark.add_argument("--spark-master", help="master URL (default local[threads,max-failures])")
    spark.add_argument("--spark-max-failures", type=int, help="spark.task.maxFailures (default 4)")
    spark.add_argument("--spark-partitions", type=int, help="default: the cell's threads")
    spark.add_argument("--spark-driver-memory", help="spark.driver.memory, e.g. 2g (default 1g)")
    spark.add_argument("--spark-stream-interval-s", type=float, help="seconds between files")
    spark.add_argument("--spark-stream-timeout-s", type=float, help="limit on one stream run")
    run.add_argument("--engine-hint", choices=["LATENCY", "THROUGHPUT"], help="openvino cells")
    run.add_argument("--engine-requests", type=int, help="openvino THROUGHPUT: requests in flight")
    run.add_argument("--config-hash", help=argparse.SUPPRESS)
    run.add_argument("--runner", default="run_cell.py", help=argparse.SUPPRESS)
    run.add_argument("--serve", help="serve cells: JSON of serve settings (image_size, ...)")
    run.add_argument(
        "--generate", help="generate cells: JSON of generate settings (bandwidth_mb, ...)"
    )
    run.add_argument("--converge", help="converge cells: JSON of the target (target, metric, ...)")
    parser.add_argument(
        "--log-dir",
        type=Path,
        help="folder for the cell's extra logs (server, LoadGen); default: beside --out",
    )
    parser.add_argument("--data", type=Path, help="dataset manifest.json (default: synthetic)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON record")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or args.repetitions < 1:
        parser.error("--batch-size and --repetitions must be at least 1")
    for flag in ("epochs", "steps_per_epoch", "test_samples"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1 (got {value})")
    if args.min_repetition_s < 0:
        parser.error(f"--min-repetition-s must be at least 0 (got {args.min_repetition_s})")
    if (args.weights == "pretrained") != bool(args.pretrained):
        parser.error("--weights pretrained and --pretrained FOLDER_OR_HUB_ID go together")
    if args.pretrained:
        from devicebench.frameworks.pretrained import MissingWeights, locate

        try:
            locate(args.model or args.task, args.pretrained)
        except MissingWeights as error:
            parser.error(str(error))
    if args.threads != "all":
        if not args.threads.isdigit() or int(args.threads) < 1:
            parser.error(f"--threads must be a positive number or 'all' (got {args.threads!r})")
        cores = host_cores()
        if int(args.threads) > cores:
            print(
                f"[devicebench] warning: --threads {args.threads} is more than the {cores} cores "
                "of this host; the cell will oversubscribe its CPU",
                file=sys.stderr,
                flush=True,
            )
    return args


def axis_value(text: str) -> int | float | str:
    """An --axis value as the grid holds it: a number where it reads as one (seq_len=128)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def default_data(dataset: str, seed: int) -> Path:
    """Prepare (once) the synthetic data a hand-run cell uses."""
    from devicebench.data import prepare_dataset

    manifest = REPO / "results" / "data" / dataset / "synthetic" / "manifest.json"
    if not manifest.exists():
        print(f"[devicebench] preparing synthetic {dataset} data in {manifest.parent}", flush=True)
        prepare_dataset(dataset, "synthetic", manifest.parent, seed=seed)
    return manifest


def main(argv: list[str] | None = None) -> int:
    if (started := process_start()) is not None:  # the record's timings.marks (fixed cost)
        mark("process_start", started)
    mark("runner_imported")
    args = parse_args(argv)
    spec = get(args.task).spec
    threads = args.threads if args.threads == "all" else int(args.threads)
    values = {
        "task": args.task,
        "model": args.model or spec.models[0],
        "framework": args.framework,
        "device": args.device,
        "threads": threads,
        "precision": args.precision,
        "batch_size": args.batch_size,
        "mode": args.mode,
    }
    # the task's own axes (lstm_kernel) take their default unless given
    extra = {axis: values[0] for axis, values in spec.axes.items()}
    extra |= {name: axis_value(value) for name, value in (a.split("=", 1) for a in args.axis)}
    if args.gpus is not None:
        extra["gpus"] = args.gpus
    if args.engine is not None:
        extra["engine"] = args.engine
    settings = {
        "dataset": args.dataset or spec.dataset,
        "epochs": args.epochs if args.epochs is not None else spec.epochs,
        "steps_per_epoch": args.steps_per_epoch,
        "learning_rate": args.learning_rate or spec.learning_rate,
        "repetitions": args.repetitions,
        "warmup_steps": args.warmup_steps,
        "seed": args.seed,
        "timeout_s": args.timeout_s,
        "noise_cov": args.noise_cov,
        "min_repetition_s": args.min_repetition_s,
        "runner": args.runner,
    }
    if args.memory_limit_mb:
        settings["memory_limit_mb"] = args.memory_limit_mb
    if args.test_samples is not None:
        settings["test_samples"] = args.test_samples
    if args.profile:
        settings["profile"] = 1
    for key in (*SPARK_SETTINGS, *ENGINE_SETTINGS):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    if args.serve:
        settings["serve"] = args.serve
    if args.generate:
        settings["generate"] = args.generate
    if args.converge:
        settings["converge"] = args.converge
    if args.weights == "pretrained":  # only then, as the grid does: other hashes stay the same
        extra["weights"] = "pretrained"
        settings["pretrained"] = args.pretrained
    assert set(values) == set(AXES)
    cell = make_cell(values, extra, settings)
    data = args.data or default_data(settings["dataset"], args.seed)
    try:
        log_dir = args.log_dir or args.out.parent / f"{args.out.stem}.logs"
        run_cell(cell, data=data, out=args.out, extra={"log_dir": str(log_dir)})
    except Orphaned as error:
        print(f"[devicebench] stopped: {error}", file=sys.stderr, flush=True)
        return 3
    except OutputUnusable as error:  # found before the cell ran: nothing measured, nothing lost
        print(f"[devicebench] error: {error}", file=sys.stderr, flush=True)
        return 2
    return 0  # a failed cell is a result too: its record says so, and the grid goes on


if __name__ == "__main__":
    sys.exit(main())
