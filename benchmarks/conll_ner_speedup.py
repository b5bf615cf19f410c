#!/usr/bin/env python3
"""conll_ner on one device: training and inference sentences/s per model, embedding and batch.

    python benchmarks/conll_ner_speedup.py --device cuda --out benchmarks/results/conll_cuda.json
    python benchmarks/conll_ner_speedup.py --device cpu --threads 16 \\
        --out benchmarks/results/conll_cpu16.json
    python benchmarks/conll_ner_speedup.py --compare benchmarks/results/conll_cuda.json \\
        benchmarks/results/conll_cpu16.json

Data: synthetic CoNLL-2003 at the real sizes (14,041 training, 3,250 test sentences), prepared
once under --data. Each case builds the backend every cell uses (NerBackend), warms up, then times
`--steps` training steps and a pass over `--steps` test batches, `--reps` times (median
reported); no scoring. `--compare` prints the GPU/CPU speedup per case from two result files.
Needs torch, transformers, tokenizers, numpy (no snakemake, keras or seqeval).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CASES = (
    ("bilstm_cnn_bert", "live"),
    ("bilstm_cnn_bert", "cached"),
    ("bert_tokencls", "live"),
)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 256, 1024])
    p.add_argument("--models", nargs="+", default=None, help="model[:embedding] (default: all)")
    p.add_argument("--steps", type=int, default=10, help="timed steps per repetition")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--data", type=Path, default=Path("results/data/conll2003/bench"))
    p.add_argument("--train-samples", type=int, default=14_041)
    p.add_argument("--out", type=Path)
    p.add_argument("--compare", type=Path, nargs=2, metavar=("GPU_JSON", "CPU_JSON"))
    return p.parse_args(argv)


def _timed(run, reps: int, sync) -> float:
    times = []
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(args: argparse.Namespace) -> list[dict]:
    import torch

    from devicebench.data import prepare_dataset
    from devicebench.run.limits import is_oom
    from devicebench.workloads import conll_ner

    if args.threads:
        os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
        torch.set_num_threads(args.threads)
    manifest = args.data / "manifest.json"
    if not manifest.exists():
        prepare_dataset(
            "conll2003", "synthetic", args.data, train_samples=args.train_samples, seed=1234
        )
    cases = [tuple((m.split(":") + ["live"])[:2]) for m in args.models] if args.models else CASES
    rows = []
    for model, embedding in cases:
        settings = {
            "task": "conll_ner", "model": model, "framework": "torch", "device": args.device,
            "precision": args.precision, "seed": 1234, "learning_rate": 0.003,
            "data": str(manifest), "embedding": embedding, "train_fraction": 1.0,
        }  # fmt: skip
        data = conll_ner.load_data(settings)
        for batch in args.batch_sizes:
            if args.device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            backend = conll_ner.make_backend(conll_ner.SPEC, settings | {"batch_size": batch}, data)
            backend.new_model(1234)
            steps = min(args.steps, backend.train_samples // batch)
            infer_steps = min(args.steps, backend.test_samples // batch)
            try:
                backend.train_steps(2)  # warm-up
                train_s = _timed(
                    lambda b=backend, n=steps: b.train_steps(n), args.reps, backend.sync
                )
                backend.infer_batches(2)
                infer_s = _timed(
                    lambda b=backend, n=infer_steps: b.infer_batches(n), args.reps, backend.sync
                )
                status = "ok"
            except Exception as error:  # noqa: BLE001 - an OOM is a result here
                if not is_oom(error):
                    raise
                train_s = infer_s = float("nan")
                status = "oom"
            row = {
                "model": model, "embedding": embedding, "batch": batch, "status": status,
                "train_per_s": steps * batch / train_s,
                "infer_per_s": infer_steps * batch / infer_s,
                "steps": steps, "device": args.device, "threads": torch.get_num_threads(),
                "peak_device_mb": backend.peak_device_memory_mb(),
                "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
                "torch": torch.__version__,
            }  # fmt: skip
            print(
                f"{model:<16} {embedding:<6} batch {batch:>5}: train {row['train_per_s']:>9,.1f} "
                f"infer {row['infer_per_s']:>9,.1f} sentences/s ({status})",
                flush=True,
            )
            rows.append(row)
            del backend
            if args.device == "cuda":
                torch.cuda.empty_cache()
    return rows


def compare(gpu_path: Path, cpu_path: Path) -> None:
    gpu, cpu = json.loads(gpu_path.read_text()), json.loads(cpu_path.read_text())
    key = lambda r: (r["model"], r["embedding"], r["batch"])  # noqa: E731
    base = {key(r): r for r in cpu}
    print("| model | embedding | batch | GPU train/s | CPU train/s | train speedup "
          "| GPU infer/s | CPU infer/s | infer speedup |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in gpu:
        c = base.get(key(r))
        if c is None:
            continue
        print(
            f"| {r['model']} | {r['embedding']} | {r['batch']} | {r['train_per_s']:,.0f} | "
            f"{c['train_per_s']:,.1f} | {r['train_per_s'] / c['train_per_s']:.1f}x | "
            f"{r['infer_per_s']:,.0f} | {c['infer_per_s']:,.1f} | "
            f"{r['infer_per_s'] / c['infer_per_s']:.1f}x |"
        )


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.compare:
        compare(*args.compare)
        return 0
    rows = measure(args)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
