"""One generate cell: bandwidth, model, warm-up, timed repetitions on the token clock, quality.

The timed window covers whole batches of requests (prefill and decode), repeated
`repetitions` times after one untimed warm-up batch of the same shapes (which also compiles).
Tokens are stamped when they reach the host, as a streaming server would send them.
"""

from __future__ import annotations

import resource
import statistics
import time
from typing import Any

import numpy as np

from devicebench.engines import generative
from devicebench.frameworks.generator import time_generation
from devicebench.generation import bandwidth, clock
from devicebench.generation.settings import generate_settings
from devicebench.measure.energy import EnergyMeter
from devicebench.measure.marks import mark
from devicebench.workloads import textgen_llm

BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1, "int4": 0.5}


def kv_value_bytes(precision: str) -> int:
    """Bytes of one KV-cache value: the compute dtype's (weight-only int8/int4 keep bf16)."""
    return int(BYTES[precision]) if precision in ("fp32", "bf16", "fp16") else 2


class ModelTooLarge(MemoryError):
    """Weights plus KV cache exceed the device's free memory (checked before loading)."""


def planned_bytes(settings: dict[str, Any]) -> tuple[int, int]:
    """(weight bytes, full KV-cache bytes) the cell will hold, from the config alone."""
    shape = textgen_llm.shape(settings["model"])
    per_value = BYTES[str(settings["precision"])]
    kv = bandwidth.kv_cache_bytes(
        layers=shape.layers,
        kv_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        tokens=int(settings["prompt_len"]) + int(settings["output_len"]),
        batch=int(settings["batch_size"]),
        bytes_per_value=kv_value_bytes(str(settings["precision"])),
    )
    return int(shape.parameters * per_value), kv


def free_bytes(device: str) -> int:
    if device == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    import psutil

    return int(psutil.virtual_memory().available)


def check_fits(settings: dict[str, Any]) -> None:
    weights, kv = planned_bytes(settings)
    free = free_bytes(str(settings["device"]))
    if weights + kv > 0.9 * free:
        raise ModelTooLarge(
            f"{settings['model']} needs {weights / 1e9:.2f} GB of weights + {kv / 1e9:.2f} GB of "
            f"KV cache; {settings['device']} has {free / 1e9:.2f} GB free (90 % usable)"
        )


def engine_options(settings: dict[str, Any]) -> Any:
    """The generative engine and its options for this cell."""
    engine = generative.get(str(settings["generator"]))
    common = {
        "precision": str(settings["precision"]),
        "threads": int(settings.get("threads_resolved", 1)),
        "device": str(settings["device"]),
    }
    given = {"seed": int(settings["seed"]), "model": str(settings["model"])}
    given["max_cache_len"] = int(settings["prompt_len"]) + int(settings["output_len"])
    given["max_batch"] = int(settings.get("batch_size") or settings.get("max_batch") or 1)
    owned = {f for f in engine.Options.__dataclass_fields__}
    return engine, engine.options_from({k: v for k, v in given.items() if k in owned}, **common)


def run_generate(settings: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The record sections of one generate cell."""
    device, precision = str(settings["device"]), str(settings["precision"])
    prompt_len, output_len = int(settings["prompt_len"]), int(settings["output_len"])
    batch = int(settings["batch_size"])
    prompts = [list(map(int, row)) for row in data["prompts"]]
    check_fits(settings)
    how = generate_settings(settings)
    measured = bandwidth.measure_bandwidth(device, int(how.get("bandwidth_mb", 1024)))
    mark("bandwidth_measured")
    engine, options = engine_options(settings)
    generator = engine.load(settings["model"], options)
    mark("backend_built")
    try:
        timed = _timed(generator, prompts, settings)
    finally:  # a generator with threads of its own (transformers_cb) ends them
        if stop := getattr(generator, "stop", None):
            stop()
    first_call_s, timings, summary, energy, timed_start, timed_end = timed
    mark("run_done")
    shape = textgen_llm.shape(settings["model"])
    kv_full = bandwidth.kv_cache_bytes(
        layers=shape.layers, kv_heads=shape.kv_heads, head_dim=shape.head_dim,
        tokens=prompt_len + output_len, batch=batch, bytes_per_value=kv_value_bytes(precision),
    )  # fmt: skip
    kv_mean = kv_full * (prompt_len + output_len / 2) / (prompt_len + output_len)
    weights = int(generator.weight_bytes)
    bound = bandwidth.bound_section(
        measured["memory_bandwidth_gbs"], weight_bytes=weights, kv_bytes_mean=kv_mean,
        batch=batch, decode_tokens_per_s=summary["decode_tokens_per_s"],
    )  # fmt: skip
    from devicebench.generation.quality import quality_section

    tokens = np.array(timings[-1].tokens, dtype=np.int64)
    scored = generator if hasattr(generator, "score_windows") else getattr(generator, "model", None)
    quality = quality_section(settings, scored, prompts, tokens)
    mark("reference_done")
    section = summary | measured | bound | engine.describe(options)
    section |= {"generator": engine.name, "weight_bytes": weights, "kv_cache_bytes": kv_full,
                "batch_size": batch}  # fmt: skip
    section["joules_per_output_token"] = energy.get("joules_per_sample")
    windows = [t.total_s for t in timings]
    median = statistics.median(windows)
    return {
        "generation": section,
        "timings": {
            "first_call_s": first_call_s,
            "repetitions_s": windows,
            "median_s": median,
            "timed_start": timed_start,
            "timed_end": timed_end,
        },  # fmt: skip
        "throughput": {
            "samples_per_s": batch / median,
            "samples_per_pass": batch,
            "tokens_per_s": summary["output_tokens_per_s"],
        },  # fmt: skip
        "quality": quality,
        "energy": energy,
        "memory": {
            "peak_host_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_device_mb": generator.peak_device_memory_mb(),
        },  # fmt: skip
        "model": {
            "parameters": generator.parameter_count(),
            "weights": _weights(settings["model"]),
        },
        "data": {key: data[key] for key in ("dataset", "source", "synthetic")},
    }


def _timed(generator: Any, prompts: list[list[int]], settings: dict[str, Any]) -> tuple:
    """One untimed warm-up batch (it compiles), then the timed repetitions, each checked, and
    their summary (clock.summarize) and energy."""
    prompt_len, output_len = int(settings["prompt_len"]), int(settings["output_len"])
    batch, device = int(settings["batch_size"]), str(settings["device"])
    started = time.perf_counter()
    time_generation(generator, prompts, output_len)  # warm-up (and compile), untimed
    first_call_s = time.perf_counter() - started
    mark("warmed_up")
    timings = []
    meter = EnergyMeter(device, enabled=bool(settings.get("measure_energy", True))).start()
    timed_start = time.time()
    for repetition in range(int(settings["repetitions"])):
        timing = time_generation(generator, prompts, output_len)
        clock.check_counts(timing, batch=batch, prompt_len=prompt_len, output_len=output_len)
        timings.append(timing)
        print(f"[generate] repetition {repetition + 1}: {timing.total_s:.3f} s", flush=True)
    timed_end = time.time()
    summary = clock.summarize(timings)
    energy = meter.stop(summary["output_tokens"])
    return first_call_s, timings, summary, energy, timed_start, timed_end


def _weights(model: str) -> str:
    if model in textgen_llm.REAL_MODELS:
        return f"real: {textgen_llm.REAL_MODELS[model][1]} (dequantized)"
    return "random: normal(0, initializer_range), seeded"
