"""The runner side of the `copies` axis: N copies of one cell at once, timed windows aligned.

Each copy is the cell's ordinary worker process (its own threads, its own model); before its
timed window it waits at a file barrier until every copy has arrived, so the windows overlap and
the summed throughput is what a host full of such jobs delivers. The record is copy 0's with the
throughput replaced by the sum and a `packed` section listing every copy's throughput.
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BARRIER_TIMEOUT_S = 600.0


def copies_of(settings: dict[str, Any]) -> int:
    """The cell's `copies` axis value (1 where it has none)."""
    return int(settings.get("copies") or 1)


def run_packed(
    settings: dict[str, Any],
    timeout_s: float,
    run_one: Callable[[dict[str, Any], float], dict[str, Any]],
) -> dict[str, Any]:
    """Run `copies` workers of the cell at once (run_one: the runner's one-worker function) and
    merge their results; a copy that failed makes the cell fail, naming that copy."""
    count = copies_of(settings)
    with tempfile.TemporaryDirectory(prefix="devicebench-barrier-") as barrier:
        each = [settings | {"copy_index": i, "barrier_dir": barrier} for i in range(count)]
        print(f"[devicebench] packed cell: {count} copies at once", flush=True)
        with ThreadPoolExecutor(max_workers=count) as pool:
            results = list(pool.map(lambda s: run_one(s, timeout_s), each))
    return merge(results)


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from the copies': the summed throughput, or the first copy's failure."""
    for index, result in enumerate(results):
        if result.get("status", "ok") != "ok":
            failed = dict(result)
            failed["message"] = f"copy {index} of {len(results)}: {result.get('message', '')}"
            return failed
    merged = copy.deepcopy(results[0])
    rates = [float(r["throughput"]["samples_per_s"]) for r in results]
    merged["throughput"]["samples_per_s"] = sum(rates)
    energy = merged.get("energy") or {}
    if energy.get("joules_per_sample"):  # the meters read the whole host: every copy's samples
        energy["joules_per_sample"] /= len(results)
        energy["samples_per_kwh"] = (energy.get("samples_per_kwh") or 0) * len(results) or None
        energy["packed_note"] = "host energy of copy 0's window over all copies' samples"
    merged["packed"] = {
        "copies": len(results),
        "per_copy_samples_per_s": rates,
        "aligned": all((r.get("timings") or {}).get("barrier", {}).get("aligned") for r in results),
    }
    return merged


def wait_at_barrier(settings: dict[str, Any]) -> dict[str, Any] | None:
    """Called by a worker just before its timed window: mark arrival and wait for every copy.
    None for an ordinary (unpacked) cell; else what happened, for the record."""
    folder, count = settings.get("barrier_dir"), copies_of(settings)
    if not folder or count < 2:
        return None
    Path(folder, f"ready.{settings.get('copy_index', 0)}").touch()
    start = time.monotonic()
    while len(list(Path(folder).glob("ready.*"))) < count:
        if time.monotonic() - start > BARRIER_TIMEOUT_S:
            return {"aligned": False, "waited_s": time.monotonic() - start}
        time.sleep(0.001)
    return {"aligned": True, "waited_s": time.monotonic() - start}
