#!/usr/bin/env python3
"""Why the openvino_genai engine turns prefix caching off: time to first token of one prompt
asked again and again, and of a fresh one, through LLMPipeline as it comes (its CPU default
caches the KV of prompts it has seen) and through the engine's pipeline (no prefix caching).
A cell repeats its prompts in every repetition, so a cache would time no prefill at all.

    python benchmarks/openvino_prefix_cache.py [--threads 2] [--prompt-tokens 500]

Prints a table (seconds, one run each: the ratio, not the figures, is the point).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def ttft_llm_pipeline(path: str, prompts: list[list[int]], threads: int) -> list[float]:
    import openvino as ov
    import openvino_genai

    pipe = openvino_genai.LLMPipeline(path, "CPU", INFERENCE_NUM_THREADS=threads)
    config = openvino_genai.GenerationConfig(max_new_tokens=1, ignore_eos=True, do_sample=False)
    pipe.generate(ov.Tensor(np.array([[7] * 16], dtype=np.int64)), config)  # compile, warm
    times = []
    for prompt in prompts:
        started = time.perf_counter()
        pipe.generate(ov.Tensor(np.array([prompt], dtype=np.int64)), config)
        times.append(time.perf_counter() - started)
    return times


def ttft_engine(prompts: list[list[int]], threads: int) -> list[float]:
    from devicebench.engines.generative import get
    from devicebench.frameworks.generator import time_generation

    engine = get("openvino_genai")
    options = engine.Options(precision="int4", threads=threads, model="smollm2-135m",
                             max_cache_len=len(prompts[0]) + 8)  # fmt: skip
    generator = engine.load("smollm2-135m", options)
    time_generation(generator, [[7] * 16], 1)  # compile, warm
    return [time_generation(generator, [prompt], 1).first_token_s for prompt in prompts]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=500)
    args = parser.parse_args()
    from devicebench.workloads import textgen_llm

    n = args.prompt_tokens
    same, fresh = list(range(1000, 1000 + n)), list(range(3000, 3000 + n))
    prompts, labels = [same, same, same, fresh], ["first", "again", "again", "a fresh one"]
    path = str(textgen_llm.gguf_path("smollm2-135m"))  # its Q4_1, as shipped
    cached = ttft_llm_pipeline(path, prompts, args.threads)
    engine = ttft_engine(prompts, args.threads)
    print(f"SmolLM2-135M Q4_1, {n}-token prompts, {args.threads} threads: time to first token, s\n")
    print("| prompt | LLMPipeline (its default) | openvino_genai engine (no prefix caching) |")
    print("|---|---:|---:|")
    for label, a, b in zip(labels, cached, engine, strict=True):
        print(f"| {label} | {a:.4f} | {b:.4f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
