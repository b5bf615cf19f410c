#!/usr/bin/env python3
"""Benchmark: what a SmolLM2 cell spends loading its model and tokenizer, from the GGUF as
shipped (read and dequantized by transformers' GGUF loader) against the folder it is converted
into once (textgen_llm.converted: config, safetensors, tokenizer).

    python benchmarks/gguf_convert.py [--rounds 3]

Each load runs in a fresh Python process, as a cell does (no in-process cache helps it), the two
ways taking turns each round so that they see the same machine. Prints the median seconds per
way and their ratio. The folder is made first, outside the timing (a study's first cell pays
that once).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

MODEL = "smollm2-135m"
LOADS = {
    "GGUF, dequantized": (
        "from transformers import AutoTokenizer\n"
        "from devicebench.workloads import textgen_llm as t\n"
        "p = t.gguf_path(MODEL)\n"
        "AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)\n"
        "t._from_gguf(MODEL)\n"
    ),
    "converted folder": (
        "from devicebench.workloads import textgen_llm as t\n"
        "t.tokenizer(MODEL)\n"
        "t.build_model(MODEL, 'cpu', 'fp32', 0)\n"
    ),
}


def _timed(code: str) -> float:
    """Seconds the load itself takes in a fresh process (imports done before the clock)."""
    script = (
        "import time, torch, transformers\n"
        f"MODEL = {MODEL!r}\n"
        "start = time.perf_counter()\n"
        f"{code}"
        "print(time.perf_counter() - start)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from devicebench.workloads import textgen_llm

    started = time.perf_counter()
    folder = textgen_llm.converted(MODEL)
    print(f"converted folder {folder} ready in {time.perf_counter() - started:.1f} s", flush=True)
    seconds: dict[str, list[float]] = {way: [] for way in LOADS}
    for round_ in range(args.rounds):
        for way, code in LOADS.items():
            seconds[way].append(_timed(code))
            print(f"round {round_ + 1}: {way} {seconds[way][-1]:.2f} s", flush=True)
    base = statistics.median(seconds["GGUF, dequantized"])
    print("\n| load (tokenizer + fp32 model) | median s | runs | vs GGUF |")
    print("|---|---:|---|---:|")
    for way, runs in seconds.items():
        median = statistics.median(runs)
        print(f"| {way} | {median:.2f} | {', '.join(f'{s:.2f}' for s in runs)} | "
              f"{base / median:.0f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
