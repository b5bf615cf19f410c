"""Does the utilization sampler (or the energy meter) slow the cell it watches? The harness
with and without it.

    PYTHONPATH=src python benchmarks/sampler_overhead.py --device cpu --threads 2 --rounds 5
    PYTHONPATH=src python benchmarks/sampler_overhead.py --device cuda --batch-size 128
    PYTHONPATH=src python benchmarks/sampler_overhead.py --device cuda --what energy

`--what energy` toggles the energy meter (NVML's energy counter, RAPL) instead of the sampler,
and first times what one window's readings cost (a start and a stop, `--reads` times).

One process, one dataset, one backend: the driver's timed training runs alternate between the
sampler on and off (ABAB…), so drift of the machine hits both alike. Each run reports the
median repetition's samples/s; the table gives the median over rounds and the ratio on/off
(1.00 means no cost; the design's budget for the harness is 5 %), and `paired` the median of
the per-round ratios. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="mnist_mlp", choices=["mnist_mlp", "mnist_cnn"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps per repetition")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5, help="on/off pairs")
    parser.add_argument("--what", default="sampler", choices=["sampler", "energy"])
    parser.add_argument("--reads", type=int, default=1000, help="energy: windows timed alone")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import psutil
    import torch

    from devicebench.data import load_dataset, prepare_dataset
    from devicebench.frameworks.torch_backend import TorchBackend
    from devicebench.scenarios.train import run_train
    from devicebench.workloads import get

    threads = args.threads or psutil.cpu_count(logical=True)
    torch.set_num_threads(threads)
    workload = get(args.task)
    spec = workload.spec
    samples = args.batch_size * args.steps
    with tempfile.TemporaryDirectory() as tmp:
        prepare_dataset(
            "mnist", "synthetic", Path(tmp), seed=1, train_samples=samples, test_samples=1024
        )
        dataset = load_dataset(Path(tmp) / "manifest.json")
    settings = {
        "task": args.task,
        "model": spec.models[0],
        "device": args.device,
        "precision": "fp32",
        "batch_size": args.batch_size,
        "epochs": 1,
        "steps_per_epoch": args.steps,
        "repetitions": args.repetitions,
        "warmup_steps": 5,
        "seed": 1,
        "noise_cov": 0.1,
        "learning_rate": spec.learning_rate,
    }
    backend = TorchBackend(workload, settings, dataset)
    if args.what == "energy":
        print(energy_read_cost(args.device, args.reads))
    toggle = "sample_utilization" if args.what == "sampler" else "measure_energy"
    other = "measure_energy" if args.what == "sampler" else "sample_utilization"
    settings[other] = False  # the other one off: each comparison isolates one
    rates: dict[bool, list[float]] = {True: [], False: []}
    samples_taken = []
    for _ in range(args.rounds):
        for sampled in (False, True):
            run = settings | {toggle: sampled}
            result = run_train(backend, run, dataset, quality=workload.quality)
            rates[sampled].append(result["throughput"]["samples_per_s"])
            if sampled and args.what == "sampler":
                samples_taken.append(result["utilization"]["summary"]["samples"])
            elif sampled:
                samples_taken.append(result["energy"]["joules_per_sample"] or float("nan"))
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    paired = statistics.median(a / b for a, b in zip(rates[True], rates[False], strict=True))
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else f"{threads} threads"
    print(
        f"\n{args.task} {args.device} ({name}), batch {args.batch_size}, "
        f"{args.steps} steps x {args.repetitions} repetitions, {args.rounds} rounds, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(
        f"| device | task | batch | harness samples/s | harness + {args.what} samples/s | ratio "
        f"| paired | {'samples per run' if args.what == 'sampler' else 'J/sample'} |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.device} ({name}) | {args.task} | {args.batch_size} | {off:,.0f} | {on:,.0f} "
        f"| {on / off:.3f} | {paired:.3f} | {statistics.median(samples_taken):.4g} |"
    )
    print(f"off runs: {[round(r) for r in rates[False]]}")
    print(f"on runs: {[round(r) for r in rates[True]]}")
    return 0


def energy_read_cost(device: str, reads: int) -> str:
    """What the meter adds to one timed window: a start and a stop (the counters read twice)."""
    from devicebench.energy import EnergyMeter

    meter = EnergyMeter(device)
    start = time.perf_counter()
    for _ in range(reads):
        meter.start().stop(1)
    per_window = (time.perf_counter() - start) / reads
    sources = f"gpu: {meter.gpu_reason or 'NVML'}; cpu: {meter.cpu_reason or 'RAPL'}"
    cost = f"{per_window * 1e6:.1f} us per window (start + stop), {reads} windows"
    return f"energy meter: {cost}; {sources}"


if __name__ == "__main__":
    sys.exit(main())
