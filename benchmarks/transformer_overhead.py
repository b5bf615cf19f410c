#!/usr/bin/env python3
"""The transformer workloads: the harness against a bare hand-written loop, and GPU against CPU.

    PYTHONPATH=src python benchmarks/transformer_overhead.py --device cuda --json out.json
    PYTHONPATH=src python benchmarks/transformer_overhead.py --smoke     # tiny models, CPU only

Part 1 (overhead): BERT-base (seq 128, batch 64, bf16) and ResNet-50 (batch 256, bf16,
channels_last, CIFAR-10 resized to 224 on the device inside the step), each trained by a bare
loop and by the study's own path (the workload's make_backend driven by scenarios.train.run_train).
Rounds alternate bare and harness in one process; each side's throughput is the median over
rounds, `paired` the median of the per-round harness/bare ratios (DESIGN.md asks >= 0.95).

On CUDA a third overhead row trains ResNet-50 compiled (torch.compile on both sides; the first
repetition, compilation included, is warm-up and untimed), the published figure of the README.

Part 2 (speedup): ViT-base and ConvNeXt-tiny trained through the harness on the GPU and on this
host's CPU (all its cores), bf16, batch 64; the table gives the GPU's speedup.

Inputs are random token ids and random uint8 images: speed does not depend on the data, and
the benchmark needs no dataset on disk. Models have random weights (built from configurations).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.frameworks.torch_device import autocast_dtype  # noqa: E402
from devicebench.frameworks.transformer_backend import set_matmul_precision  # noqa: E402
from devicebench.run import window  # noqa: E402
from devicebench.scenarios.train import run_train  # noqa: E402
from devicebench.workloads import (  # noqa: E402
    cifar10_finetune,
    get,  # noqa: E402
    text_classify,
)


class Synthetic:
    """Random inputs in the layout the workload's loader gives (speed is data-independent)."""

    def __init__(self, task: str, train: int, test: int, seq_len: int) -> None:
        rng = np.random.default_rng(0)
        self.task, self.num_classes = task, get(task).spec.num_classes
        if task == "text_classify":
            self.splits = {
                split: {
                    "input_ids": rng.integers(5, 30000, size=(n, seq_len)),
                    "attention_mask": np.ones((n, seq_len), dtype=np.int64),
                    "labels": rng.integers(0, 2, size=n),
                }
                for split, n in (("train", train), ("test", test))
            }
            self.dataset = text_classify.TextData(self.splits, 2, "random", "random", True)
        else:
            self.x_train = rng.integers(0, 256, size=(train, 3, 32, 32), dtype=np.uint8)
            self.y_train = rng.integers(0, 10, size=train)
            self.x_test = rng.integers(0, 256, size=(test, 3, 32, 32), dtype=np.uint8)
            self.y_test = rng.integers(0, 10, size=test)
            self.dataset = self


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bare_loop(case: dict, data: Synthetic, device: torch.device, steps: int, reps: int) -> float:
    """A hand-written loop of the same model, optimizer and precision. Samples/s."""
    task, model_name, batch = case["task"], case["model"], case["batch"]
    spec = get(task).spec
    dtype = autocast_dtype(case["precision"])
    set_matmul_precision(case["precision"])
    if task == "text_classify":
        train = {k: torch.as_tensor(v, device=device) for k, v in data.splits["train"].items()}
        model = text_classify.build_model(model_name, 1234).to(device)
    else:
        images = torch.as_tensor(data.x_train, device=device)
        labels = torch.as_tensor(data.y_train, device=device)
        model = cifar10_finetune.build_model(model_name, 1234).to(device)
        side = cifar10_finetune.image_size(model_name)
        mean = torch.tensor(cifar10_finetune.MEAN, device=device).view(1, 3, 1, 1)
        std = torch.tensor(cifar10_finetune.STD, device=device).view(1, 3, 1, 1)
    channels_last = case.get("channels_last", False)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=spec.learning_rate,
        weight_decay=spec.optimizer_options["weight_decay"],
    )
    model.train()
    forward = torch.compile(model) if case.get("compile") == "compiled" else model
    n = steps * batch
    times = []
    for rep in range(reps + 1):  # the first pass warms up
        sync(device)
        start = time.perf_counter()
        order = torch.randperm(n, device=device)
        for step in range(steps):
            index = order[step * batch : (step + 1) * batch]
            with torch.autocast(device.type, dtype=dtype):
                if task == "text_classify":
                    logits = forward(
                        input_ids=train["input_ids"][index],
                        attention_mask=train["attention_mask"][index],
                    )
                    y = train["labels"][index]
                else:
                    x = (images[index].float() / 255.0 - mean) / std
                    x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
                    if channels_last:
                        x = x.contiguous(memory_format=torch.channels_last)
                    logits, y = forward(pixel_values=x), labels[index]
            loss = F.cross_entropy(logits.float(), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        sync(device)
        if rep:
            times.append(time.perf_counter() - start)
    return steps * batch / statistics.median(times)


def harness(case: dict, data: Synthetic, device: torch.device, steps: int, reps: int) -> float:
    """The study's path: the workload's backend driven by scenarios.train.run_train. Samples/s."""
    workload = get(case["task"])
    spec = workload.spec
    settings = {
        "task": case["task"],
        "model": case["model"],
        "framework": "torch",
        "device": device.type,
        "precision": case["precision"],
        "batch_size": case["batch"],
        "learning_rate": spec.learning_rate,
        "seed": 1234,
        "epochs": 1,
        "steps_per_epoch": steps,
        "repetitions": reps,
        "warmup_steps": 2 if device.type == "cuda" else 1,
        "noise_cov": 0.1,
        "compile": case.get("compile", "eager"),
        "seq_len": case.get("seq_len", 128),
        "image_size": "native",
    }
    backend = workload.make_backend(settings, data.dataset)
    layout_given = (
        "channels_last" in case
    )  # the overhead cases fix it; speedup cases take the backend's
    if layout_given and case["channels_last"] != backend.channels_last and device.type == "cuda":
        raise RuntimeError(f"{case['model']}: the harness and the bare loop differ in layout")
    result = run_train(backend, settings, data.dataset, quality=workload.quality)
    return result["throughput"]["samples_per_s"]


def overhead(cases: list[dict], device: torch.device, args) -> list[dict]:
    rows = []
    print(f"{'model':<20} {'compile':>8} {'batch':>5} {'prec':>5} {'bare /s':>10} "
          f"{'harness /s':>11} {'ratio':>6} {'paired':>7}")  # fmt: skip
    for case in cases:
        data = Synthetic(case["task"], case["batch"] * case["steps"], case["batch"], 128)
        bare, ours = [], []
        for _ in range(args.rounds):
            bare.append(bare_loop(case, data, device, case["steps"], args.reps))
            ours.append(harness(case, data, device, case["steps"], args.reps))
        row = case | {
            "device": device_name(device),
            "bare": statistics.median(bare),
            "harness": statistics.median(ours),
            "bare_rounds": bare,
            "harness_rounds": ours,
        }
        row["ratio"] = row["harness"] / row["bare"]
        row["paired_ratio"] = statistics.median(o / b for o, b in zip(ours, bare, strict=True))
        rows.append(row)
        print(
            f"{case['model']:<20} {case.get('compile', 'eager'):>8} {case['batch']:>5} "
            f"{case['precision']:>5} {row['bare']:>10,.1f} "
            f"{row['harness']:>11,.1f} {row['ratio']:>6.3f} {row['paired_ratio']:>7.3f}",
            flush=True,
        )
    return rows


def speedups(cases: list[dict], devices: list[torch.device], args) -> list[dict]:
    rows = []
    print(f"\n{'model':<20} {'batch':>5} {'prec':>5} " + " ".join(
        f"{device_name(d) + ' /s':>24}" for d in devices) + f" {'speedup':>8}")  # fmt: skip
    for case in cases:
        data = Synthetic(case["task"], case["batch"] * case["steps"], case["batch"], 128)
        rates = {}
        for device in devices:
            steps = case["steps"] if device.type == "cuda" else case["cpu_steps"]
            precision = case["precision"] if device.type == "cuda" else args.cpu_precision
            rates[device.type] = harness(case | {"precision": precision}, data, device, steps,
                                         args.reps)  # fmt: skip
        row = case | {"samples_per_s": rates}
        if "cuda" in rates:
            row["speedup"] = rates["cuda"] / rates["cpu"]
        rows.append(row)
        print(
            f"{case['model']:<20} {case['batch']:>5} {case['precision']:>5} "
            + " ".join(f"{rates[d.type]:>24,.1f}" for d in devices)
            + (f" {row['speedup']:>8.1f}" if "speedup" in row else ""),
            flush=True,
        )
    return rows


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu x{torch.get_num_threads()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=3, help="alternating bare/harness rounds")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per round")
    parser.add_argument("--smoke", action="store_true", help="tiny models, few steps, CPU")
    parser.add_argument("--cpu-precision", default="bf16", choices=["fp32", "bf16"],
                        help="precision of the CPU side of the speedup table")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    parts = ["overhead", "compiled", "speedup"]
    parser.add_argument("--parts", nargs="+", default=parts, choices=parts,
                        help="eager harness/bare rows, compiled ResNet-50, GPU/CPU")  # fmt: skip
    args = parser.parse_args()
    window.log = lambda message: None  # keep the tables readable
    if args.smoke:
        args.device = "cpu"
        big, small = ("bert-tiny", "vit-tiny"), ("vit-tiny", "vit-tiny")
        steps, cpu_steps = 3, 2
    else:
        big, small = ("bert-base", "resnet-50"), ("vit-base-patch16", "convnext-tiny")
        steps, cpu_steps = 40, 2
    device = torch.device(args.device)
    began = time.perf_counter()
    print(f"device: {device_name(device)}, torch {torch.__version__}, {args.rounds} rounds")
    text = {"task": "text_classify", "seq_len": 128, "precision": "bf16"}
    image = {"task": "cifar10_finetune", "precision": "bf16"}
    cases = [
        text | {"model": big[0], "batch": 64, "steps": steps},
        image
        | {
            "model": big[1],
            "batch": 256 if not args.smoke else 16,
            "steps": steps,
            "channels_last": device.type == "cuda",
        },  # fmt: skip
    ]
    if device.type == "cuda":  # the published ResNet-50 row: bf16, channels_last, compiled
        cases.append(cases[1] | {"compile": "compiled"})
    chosen = {
        "overhead": [c for c in cases if c.get("compile") != "compiled"],
        "compiled": [c for c in cases if c.get("compile") == "compiled"],
    }
    rows = {"overhead": overhead([c for p in args.parts if p in chosen for c in chosen[p]],
                                 device, args)}  # fmt: skip
    devices = [device] if device.type == "cpu" else [device, torch.device("cpu")]
    compare = [
        image
        | {
            "model": name,
            "batch": 64 if not args.smoke else 16,
            "steps": steps,
            "cpu_steps": cpu_steps,
        }  # fmt: skip
        for name in dict.fromkeys(small)
    ]
    rows["speedup"] = speedups(compare if "speedup" in args.parts else [], devices, args)
    print(
        f"\n(GPU at bf16; CPU at {args.cpu_precision}; {time.perf_counter() - began:.0f} s in all)"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
