#!/usr/bin/env python3
"""The study's infer cells against the same engines called bare, side by side in one run.

    PYTHONPATH=src python benchmarks/cell_vs_bare.py --models bert-base,resnet-50 --threads 16 \
        --batch 32 --json out.json
    PYTHONPATH=src python benchmarks/cell_vs_bare.py --smoke        # tiny models, seconds

Per model (text_classify bert-base at seq 128 on synthetic IMDb; cifar10_finetune resnet-50 at
224 px on synthetic CIFAR-10; bert-tiny for --smoke) one fresh process, with the thread variables
a cell's worker gets set before torch is imported, runs every engine, format and hint twice:

- the cell: ``devicebench.run.worker.measure`` with the settings scripts/run_cell.py makes (one
  untimed training step, warm-up, timed passes over the test split with the utilization sampler
  and the energy meter running, agreement with torch fp32 after timing), in this process;
- bare: the same model trained the same way (same seed, same step), the same test batches and
  int8 calibration batches (``engine_inputs``, as the cell takes them), loaded by
  ``engines.get(name).load`` with options set here, timed as benchmarks/cpu_engines.py times:
  whole passes over the batches, median of ``--reps`` windows of at least ``--min-s``; nothing
  else runs. The export and quantization are the cell's own (ONNX files in the engine cache,
  OpenVINO models kept in the process), so both score the same file.

The torch cell times its backend's own step, which prepares each batch inside the timed window
(cifar10_finetune: scale, normalize and resize the 32 px uint8 images to 224 px; text: the
index gather); bare torch scores the prepared batches. A line per variant gives cell and bare
samples/s and their ratio; the issue's goal is every ratio within 10 % (0.9-1.1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

# model -> (task, the study's model name, dataset, the task's axes for the cell)
MODELS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "bert-base": ("text_classify", "bert-base", "imdb", {"seq_len": 128, "compile": "eager"}),
    "resnet-50": ("cifar10_finetune", "resnet-50", "cifar10", {"image_size": "native"}),
    "bert-tiny": ("text_classify", "bert-tiny", "imdb", {"seq_len": 128, "compile": "eager"}),
}
# (engine axis value, format, openvino hint, requests)
VARIANTS: list[tuple[str, str, str | None, int | None]] = [
    ("inprocess", "fp32", None, None),
    ("inprocess", "bf16", None, None),
    ("onnxruntime", "fp32", None, None),
    ("onnxruntime", "int8", None, None),
    ("openvino", "fp32", "LATENCY", None),
    ("openvino", "bf16", "LATENCY", None),
    ("openvino", "bf16", "THROUGHPUT", 4),
    ("openvino", "int8", "LATENCY", None),
    ("openvino", "int8", "THROUGHPUT", 4),
]
GOAL = (0.9, 1.1)
_TRAINED: dict[str, Any] = {}  # bare runs' trained backends, by the precision they trained in


def cell_settings(model: str, variant: tuple, args: argparse.Namespace, data: Path) -> dict:
    """The settings a study cell of this model and variant runs with (as run_cell.py makes)."""
    from devicebench.plan.grid import make_cell
    from devicebench.workloads import get

    task, name, dataset, axes = MODELS[model]
    engine, precision, hint, requests = variant
    spec = get(task).spec
    values = {
        "task": task,
        "model": name,
        "framework": "torch",
        "device": "cpu",
        "threads": args.threads,
        "precision": precision,
        "batch_size": args.batch,
        "mode": "infer",
    }
    extra = {axis: options[0] for axis, options in spec.axes.items()} | axes | {"engine": engine}
    settings = {
        "dataset": dataset,
        "epochs": 1,
        "steps_per_epoch": 1,
        "learning_rate": spec.learning_rate,
        "repetitions": args.reps,
        "warmup_steps": 1,
        "seed": 1234,
        "timeout_s": 600.0,
        "noise_cov": 0.1,
        "min_repetition_s": args.min_s,
    }
    options = {"hint": hint, "requests": requests} if hint or requests else None
    cell = make_cell(values, extra, settings, options)
    runner = {"runner": "cell_vs_bare.py", "threads_resolved": args.threads, "data": str(data)}
    return cell.run_settings() | runner


def bare(settings: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The same engine on the same trained model and batches, timed with nothing around it."""
    from cpu_engines import timed

    from devicebench import engines
    from devicebench.engines.agreement import top1
    from devicebench.engines.base import LoadOptions
    from devicebench.engines.cell import engine_inputs, is_convolutional, torch_settings
    from devicebench.workloads import get

    trained = torch_settings(settings)  # int8: torch trains in fp32, as the cell's does
    key = str(trained["precision"])
    if key not in _TRAINED:  # one backend per precision it trains in: the same weights
        workload = get(settings["task"])
        backend = workload.make_backend(trained, workload.load_data(trained))
        backend.new_model(int(settings["seed"]))
        backend.train_steps(1)
        _TRAINED[key] = backend
    backend = _TRAINED[key]
    view = backend.engine_view()
    precision = str(settings["precision"])
    batches, calibration = engine_inputs(view, args.batch, precision, backend.train_samples)
    full = [b for b in batches if len(next(iter(b.values()))) == args.batch]
    options = LoadOptions(
        precision=precision,
        threads=args.threads,
        engine=owner.of(settings) if (owner := engines.options_class(settings["engine"])) else None,
        calibration=calibration,
        convolutional=is_convolutional(view.model),
    )
    engine = engines.get(str(settings["engine"]))
    loaded = engine.load(view.model.eval(), batches[0], options)
    row = timed(loaded, full, args.reps, args.min_s)
    outputs, _ = loaded.score_all(batches)
    row["predicted"] = [int(p) for o in outputs for p in top1(o, view.binary)]
    row["info"] = {k: v for k, v in loaded.info.items() if isinstance(v, int | float | str)}
    if args.random_calibration and calibration and row["info"].get("calibration_batches"):
        options.calibration = [random_like(batch, seed) for seed, batch in enumerate(calibration)]
        other = engine.load(view.model.eval(), batches[0], options)
        row["random_calibration"] = timed(other, full, args.reps, args.min_s)
    return row


def random_like(batch: dict[str, Any], seed: int) -> dict[str, Any]:
    """Inputs of a batch's shapes and types with random content, as benchmarks/cpu_engines.py
    calibrates: token ids drawn from the batch's range with every position attended (masks of
    ones), images from a standard normal."""
    import numpy as np

    rng = np.random.default_rng(100 + seed)
    out = {}
    for name, array in batch.items():
        if "mask" in name:
            out[name] = np.ones_like(array)
        elif np.issubdtype(array.dtype, np.integer):
            high = int(array.max()) + 1
            out[name] = rng.integers(min(int(array.min()), high - 1), high, array.shape)
            out[name] = out[name].astype(array.dtype)
        else:
            out[name] = rng.standard_normal(array.shape).astype(array.dtype)
    return out


def run_model(model: str, args: argparse.Namespace, data: Path) -> list[dict[str, Any]]:
    """Every variant of one model: the cell, then bare; one row each (this process)."""
    import torch

    from devicebench import engines
    from devicebench.run.worker import measure

    torch.set_num_threads(args.threads)
    rows = []
    for variant in VARIANTS:
        engine, precision, hint, requests = variant
        if args.engines and engines.engine_name(engine) not in args.engines:
            continue
        settings = cell_settings(model, variant, args, data)
        row: dict[str, Any] = {"model": model, "engine": engines.engine_name(engine)}
        row |= {"format": precision, "hint": hint, "requests": requests}
        if reason := engines.skip_reason(settings):
            rows.append(row | {"status": "skipped", "message": reason})
            print(f"{model} {engine} {precision}: skipped: {reason}", flush=True)
            continue
        start = time.perf_counter()
        record = measure(settings)
        cell_s = time.perf_counter() - start
        engine_info = record.get("engine", {})
        row["cell"] = {
            "samples_per_s": record["throughput"]["samples_per_s"],
            "agreement_fp32": record["quality"].get("agreement_fp32"),
            "info": {k: v for k, v in engine_info.items() if isinstance(v, int | float | str)},
            "wall_s": cell_s,
        }
        start = time.perf_counter()
        row["bare"] = bare(settings, args) | {"wall_s": time.perf_counter() - start}
        row["ratio"] = row["cell"]["samples_per_s"] / row["bare"]["samples_per_s"]
        row["status"] = "ok"
        rows.append(row)
        print(line(row), flush=True)
        args.json.write_text(json.dumps(rows, indent=1))  # a run cut short keeps its rows
    return rows


def line(row: dict[str, Any]) -> str:
    hint = f" {row['hint']}({row['requests'] or 1})" if row["hint"] else ""
    if row["status"] != "ok":
        return f"{row['model']} {row['engine']} {row['format']}{hint}: {row['message']}"
    cell, bare_row, ratio = row["cell"], row["bare"], row["ratio"]
    verdict = "within 10 %" if GOAL[0] <= ratio <= GOAL[1] else "OUTSIDE 10 %"
    other = bare_row.get("random_calibration")
    more = f"; bare calibrated on random inputs {other['samples_per_s']:.1f}/s" if other else ""
    return (
        f"{row['model']} {row['engine']} {row['format']}{hint}: cell "
        f"{cell['samples_per_s']:.1f}/s, bare {bare_row['samples_per_s']:.1f}/s, "
        f"cell/bare {ratio:.3f} ({verdict}); cell agreement {cell['agreement_fp32']}{more} "
        f"[cell {cell['wall_s']:.0f} s, bare {bare_row['wall_s']:.0f} s]"
    )


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: cell and bare samples/s, their ratio, x the torch fp32 cell, agreement."""
    out = [
        "| model | engine | format | hint (requests) | cell samples/s | bare samples/s | "
        "cell / bare | x torch fp32 cell | cell agreement | bare, random calibration |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    base = {
        r["model"]: r["cell"]["samples_per_s"]
        for r in rows
        if r["status"] == "ok" and r["engine"] == "torch" and r["format"] == "fp32"
    }
    for r in rows:
        hint = (
            f"{r['hint']} ({r['cell']['info'].get('requests_in_flight', 1)})"
            if r.get("hint") and r["status"] == "ok"
            else (r["hint"] or "")
        )
        head = f"| {r['model']} | {r['engine']} | {r['format']} | {hint} |"
        if r["status"] != "ok":
            out.append(f"{head} {r['status']}: {r['message'][:80]} | | | | | |")
            continue
        cell = r["cell"]["samples_per_s"]
        times = f"{cell / base[r['model']]:.2f}" if r["model"] in base else ""
        agreement = r["cell"]["agreement_fp32"]
        agreement = "reference" if agreement is None else f"{agreement:.3f}"
        other = r["bare"].get("random_calibration")
        other = f"{other['samples_per_s']:.1f}" if other else ""
        out.append(
            f"{head} {cell:.1f} | {r['bare']['samples_per_s']:.1f} | {r['ratio']:.3f} | "
            f"{times} | {agreement} | {other} |"
        )
    return "\n".join(out)


def prepare(dataset: str, folder: Path, args: argparse.Namespace) -> Path:
    from devicebench.data import prepare_dataset

    return prepare_dataset(
        dataset,
        "synthetic",
        folder / dataset,
        train_samples=args.train_samples,
        test_samples=args.test_samples,
        seed=1234,
    )


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="bert-base,resnet-50", help=", ".join(MODELS))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--engines", default="", help="only these engines (torch,openvino,...)")
    parser.add_argument("--test-samples", type=int, default=128)
    parser.add_argument("--train-samples", type=int, default=128, help="int8 calibrates on 4")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--min-s", type=float, default=1.0)
    parser.add_argument("--smoke", action="store_true", help="bert-tiny, batch 8, short windows")
    parser.add_argument(
        "--random-calibration",
        action="store_true",
        help="int8 rows: also time the engine bare with its quantization calibrated on random "
        "inputs of the same shapes (as cpu_engines.py calibrates): does the data matter?",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--table-from", type=Path, help="print the table of a saved --json report")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # a model, run in this process
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.models, args.batch, args.min_s, args.reps = "bert-tiny", 8, 0.2, 3
        args.test_samples, args.train_samples = 32, 32
    for model in args.models.split(","):
        if model not in MODELS:
            parser.error(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    if args.test_samples < args.batch or args.train_samples < args.batch:
        parser.error("--test-samples and --train-samples must hold at least one --batch")
    args.engines = [e for e in args.engines.split(",") if e]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.table_from:  # a run made elsewhere (the GPU host), shown here
        print(table(json.loads(args.table_from.read_text())["rows"]))
        return 0
    if args.worker:  # one model, in a process whose thread variables are already set
        rows = run_model(args.worker, args, args.data)
        args.json.write_text(json.dumps(rows, indent=1))
        return 0
    from cpu_engines import versions

    from devicebench.engines.cpu_features import cpu_features
    from devicebench.run.threads import thread_environment

    report: dict[str, Any] = {"threads": args.threads, "batch": args.batch, "rows": []}
    report |= {"cpu_features": cpu_features(), "versions": versions()}
    report["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    with tempfile.TemporaryDirectory(prefix="cell-vs-bare-") as tmp:
        env = dict(os.environ) | thread_environment(args.threads)
        env |= {"DEVICEBENCH_ENGINE_CACHE": str(Path(tmp, "engines")), "PYTHONUNBUFFERED": "1"}
        for model in args.models.split(","):
            data = prepare(MODELS[model][2], Path(tmp), args)
            folder = args.json.parent if args.json else Path(tmp)
            out = folder / f"{args.json.stem if args.json else 'rows'}.{model}.json"
            command = [sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])]
            command += ["--worker", model, "--data", str(data), "--json", str(out)]
            started = time.perf_counter()
            code = subprocess.run(command, env=env).returncode
            print(f"== {model}: {time.perf_counter() - started:.0f} s, exit {code}", flush=True)
            if out.exists():
                report["rows"] += json.loads(out.read_text())
            if args.json:
                args.json.write_text(json.dumps(report, indent=1))
    print(table(report["rows"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
