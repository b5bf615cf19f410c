"""The cell record: one JSON document per grid cell, written atomically.

A reader may find a record only complete or absent, never half-written: the record goes to a
temporary file in the same folder first and is then renamed over the final path.

Layout (every key always present; values may be null where they do not apply)::

    schema_version   int
    cell_id          "task~mnist_mlp/model~mlp/.../mode~train" (the path under results/cells)
    axes             {task, model, framework, device, threads, precision, batch_size, mode, ...}
    status           "ok" | "oom" | "timeout" | "error" | "skipped"
    message          why, for anything but ok
    data             {dataset, source, synthetic: bool, train_samples, test_samples}
    timings          {first_call_s, warmup_s: [..], repetitions_s: [..] (seconds per pass),
                      window_s: [..], passes: [..] (each repetition repeats its pass until its
                      window lasts min_repetition_s), min_repetition_s, epoch_s: [[..], ..],
                      latency_ms: {p50, p90, p99}, median_s, iqr_s, cov, noisy: bool,
                      timed_start, timed_end (unix seconds)}
    throughput       {samples_per_s, samples_per_pass}
    quality          {accuracy, f1_macro, f1_micro, loss}
    memory           {peak_host_mb, peak_device_mb, limit: {limit_mb, baseline_mb, rlimit_as}}
    environment      {python, libraries: {..}, cpu_model, cpu_flags: [..], cpu_cores, threads,
                      memory_gb, hostname, gpu_name, gpu_driver, cuda, cudnn, slurm_job_id,
                      slurm_partition}
    provenance       {seed, config_hash, code_version, created, deterministic}
    model            {parameters, fit_loop, flops_per_sample_train, flops_per_sample_infer}
    utilization      (ok cells) {interval_s, t: [..], cpu_percent_mean: [..],
                      cpu_percent_per_core: [[..], ..], gpu_util, gpu_mem_mb, gpu_power_w: [..],
                      summary: {cpu_util_mean, cpu_util_peak, gpu_util_mean, gpu_util_peak, ..}}
                      sampled at ~10 Hz by a separate process during the timed section only
    generation       (generate cells) {requests, ttft_p50_s, ttft_p99_s, tpot_p50_s, tpot_p99_s,
                      itl_p50_s, itl_p99_s, prefill_tokens_per_s, decode_tokens_per_s,
                      output_tokens_per_s, prompt_tokens, output_tokens (counted, checked
                      against what was asked), memory_bandwidth_gbs, bandwidth_method,
                      bandwidth_bound_tokens_per_s, bandwidth_fraction, weight_bytes,
                      kv_cache_bytes, engine, generator, format, hint, batch_size,
                      joules_per_output_token}; its quality is greedy_agreement and perplexity
                      against torch fp32 (real weights) or {status: "n/a: random weights"}
    profile          (cells in config profile_cells) {steps, what, activities,
                      top_self_cpu: [{op, calls, self_cpu_ms, self_device_ms, ..}], top_self_device}
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from devicebench.atomic import atomic_path

SCHEMA_VERSION = 1
STATUSES = ("ok", "oom", "timeout", "error", "skipped")
SECTIONS = ("data", "timings", "throughput", "quality", "memory", "environment", "provenance")


def new_record(cell_id: str, axes: dict[str, Any]) -> dict[str, Any]:
    """An empty record for a cell: the skeleton every status shares."""
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "cell_id": cell_id,
        "axes": dict(axes),
        "status": "error",
        "message": "",
    }
    for section in SECTIONS:
        record[section] = {}
    return record


def write_atomic(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Write `record` as JSON to `path` so that `path` is never seen half-written."""
    if record.get("status") not in STATUSES:
        raise ValueError(f"record status must be one of {STATUSES}, got {record.get('status')!r}")
    try:
        with atomic_path(path) as tmp, open(tmp, "w") as handle:
            json.dump(record, handle, indent=2, sort_keys=False, default=_jsonable)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:  # e.g. a full disk: say which record could not be written
        raise OSError(error.errno, f"cannot write record {path}: {error.strerror}") from error


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read one record back."""
    with open(path) as handle:
        return json.load(handle)


def _jsonable(value: Any) -> Any:
    """Turn numpy scalars and paths into plain JSON values."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"cannot store {type(value).__name__} in a cell record")


def code_version_of(provenance: Mapping[str, Any]) -> Any:
    """provenance.code_version with a version prefix written twice read as once.

    Records of 2026-11-24 03:36-04:00 UTC (results/published/h100) say '0.1.0+0.1.0+e7938f1':
    the host was handed the whole version string and the cell put its version in front again
    (cell.code_version takes either form since). Both spellings name one commit, and a reader
    that groups or pairs by code version must see them as one."""
    value = provenance.get("code_version")
    if not isinstance(value, str):
        return value
    head, plus, rest = value.partition("+")
    while plus and rest.startswith(f"{head}+"):
        rest = rest[len(head) + 1 :]
    return f"{head}{plus}{rest}"
