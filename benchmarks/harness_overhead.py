#!/usr/bin/env python3
"""Does the harness cost anything? The same model trained by a bare loop and by the harness.

    python benchmarks/harness_overhead.py --device cpu --threads 2 --cases mnist_mlp:128:1:100
    python benchmarks/harness_overhead.py --device cuda --cases mnist_mlp:128:2 mnist_mlp:1024:10

A case is task:batch[:epochs[:steps]]: each timed repetition trains `epochs` passes of `steps`
steps (default: the whole training set), long enough that clock noise does not dominate.

Rounds alternate bare loop and harness in one process, so both see the same machine state; each
side's throughput is the median over rounds of (samples / median repetition time), and `paired`
is the median of the per-round harness/bare ratios. The
harness must reach at least 0.95 of the bare loop (DESIGN.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.data import load_dataset, prepare_dataset  # noqa: E402
from devicebench.frameworks.torch_backend import TorchBackend, make_optimizer  # noqa: E402
from devicebench.run import window  # noqa: E402
from devicebench.scenarios.train import run_train  # noqa: E402
from devicebench.workloads import get  # noqa: E402


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bare_loop(
    task: str, data, device: torch.device, batch: int, steps: int, reps: int, epochs: int
) -> float:
    """A hand-written training loop: the reference the harness is held to. Samples/s."""
    workload = get(task)
    spec = workload.spec
    x = torch.as_tensor(data.x_train, device=device).float().div_(255.0)
    x = x.reshape(len(x), *workload.input_shape).contiguous()
    y = torch.as_tensor(data.y_train, device=device).long()
    times = []
    for rep in range(reps + 1):  # the first pass warms up
        model = workload.build_torch(spec.models[0], 1234).to(device)
        optimizer = make_optimizer(
            spec.optimizer, model.parameters(), spec.learning_rate, spec.optimizer_options
        )
        model.train()
        sync(device)
        start = time.perf_counter()
        for _ in range(epochs):
            order = torch.randperm(len(y), device=device)
            for step in range(steps):
                index = order[step * batch : (step + 1) * batch]
                loss = F.cross_entropy(model(x[index]), y[index])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
        sync(device)
        if rep:
            times.append(time.perf_counter() - start)
    return epochs * steps * batch / statistics.median(times)


def harness(
    task: str, data, device: torch.device, batch: int, steps: int, reps: int, epochs: int
) -> float:
    """The study's own path: TorchBackend driven by scenarios.train.run_train. Samples/s."""
    workload = get(task)
    spec = workload.spec
    settings = {
        "task": task,
        "model": spec.models[0],
        "device": device.type,
        "precision": "fp32",
        "batch_size": batch,
        "learning_rate": spec.learning_rate,
        "seed": 1234,
        "epochs": 1,
        "steps_per_epoch": steps,
        "repetitions": reps,
        "warmup_steps": 3,
        "noise_cov": 0.1,
    }
    backend = TorchBackend(workload, settings, data)
    return run_train(backend, settings, data, quality=workload.quality)["throughput"][
        "samples_per_s"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--cases", nargs="+", default=["mnist_mlp:128", "mnist_cnn:128"], help="task:batch pairs"
    )
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating bare/harness rounds")
    parser.add_argument("--train-samples", type=int, default=60000)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    window.log = lambda message: None  # keep the table readable
    with tempfile.TemporaryDirectory() as tmp:
        manifest = prepare_dataset(
            "mnist", "synthetic", tmp, train_samples=args.train_samples, test_samples=1000, seed=1
        )
        data = load_dataset(manifest)
    name = (
        torch.cuda.get_device_name(0)
        if device.type == "cuda"
        else f"cpu x{torch.get_num_threads()}"
    )
    rows = []
    print(f"device: {name}, torch {torch.__version__}, {args.rounds} alternating rounds")
    print(
        f"{'task':<10} {'batch':>6} {'steps/rep':>9} {'bare samples/s':>15} "
        f"{'harness samples/s':>18} {'ratio':>6} {'paired':>7}"
    )
    for case in args.cases:
        task, *numbers = case.split(":")
        batch, epochs, steps = [int(n) for n in numbers] + [1, 0][len(numbers) - 1 :]
        steps = min(steps or len(data.y_train), len(data.y_train) // batch)
        bare, ours = [], []
        for _ in range(args.rounds):
            bare.append(bare_loop(task, data, device, batch, steps, args.reps, epochs))
            ours.append(harness(task, data, device, batch, steps, args.reps, epochs))
        row = {
            "task": task,
            "batch": batch,
            "device": name,
            "torch": torch.__version__,
            "bare": statistics.median(bare),
            "harness": statistics.median(ours),
            "bare_rounds": bare,
            "harness_rounds": ours,
        }
        row["ratio"] = row["harness"] / row["bare"]
        row["paired_ratio"] = statistics.median(o / b for o, b in zip(ours, bare, strict=True))
        rows.append(row)
        print(
            f"{task:<10} {batch:>6} {steps * epochs:>9} {row['bare']:>15,.0f} "
            f"{row['harness']:>18,.0f} {row['ratio']:>6.3f} {row['paired_ratio']:>7.3f}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
