"""Structured Streaming inference over a folder source: Parquet files arrive, the UDF scores them.

A writer thread lands one Parquet file of `batch_size` rows every `stream_interval_s` (SparkOptions)
(written under a hidden name, then renamed, so Spark never reads half a file); each file carries
its arrival time. The query (one file per trigger) hands each micro-batch to foreachBatch on the
driver, where end-to-end latency = the time the predictions are in hand - the file's arrival.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from devicebench.spark import SparkOptions, frames
from devicebench.spark.scoring import make_udf


def log(message: str) -> None:
    print(f"[devicebench] {message}", flush=True)


def write_files(rows: pd.DataFrame, folder: Path, batch: int, interval_s: float) -> None:
    """Land the rows as Parquet files of `batch` rows, one every `interval_s` seconds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for index, start in enumerate(range(0, len(rows), batch)):
        chunk = rows.iloc[start : start + batch].copy()
        chunk["written_at"] = time.time()
        hidden = folder / f".part-{index:05d}.parquet"
        pq.write_table(pa.Table.from_pandas(chunk, preserve_index=False), hidden)
        os.replace(hidden, folder / f"part-{index:05d}.parquet")
        time.sleep(interval_s)


def stream_once(spark, spec, settings, rows: pd.DataFrame, schema, tag: str):
    """One streaming run over a fresh folder; returns (seconds, collected rows, micro-batches)."""
    batch = int(settings["batch_size"])
    own = SparkOptions.of(settings)
    interval, timeout = own.interval_s, float(own.stream_timeout_s or 300)
    with tempfile.TemporaryDirectory(prefix=f"devicebench-stream-{tag}-") as tmp:
        source, checkpoint = Path(tmp, "in"), Path(tmp, "checkpoint")
        source.mkdir()
        collected: list[pd.DataFrame] = []
        micro: list[dict[str, Any]] = []

        def sink(frame, batch_id: int) -> None:
            got = frame.select("id", "written_at", "out.prediction", "out.loss").toPandas()
            done = time.time()
            if got.empty:
                return
            latency = done - got["written_at"]
            collected.append(got)
            micro.append(
                {
                    "batch_id": int(batch_id),
                    "rows": len(got),
                    "latency_s_max": float(latency.max()),
                    "latency_s_mean": float(latency.mean()),
                }
            )

        stream = (
            spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source))
        )
        predict = make_udf(spec)
        scored = stream.select("id", "written_at", predict("features", "label").alias("out"))
        query = (
            scored.writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0 seconds")
            .start()
        )
        start = time.perf_counter()
        writer = threading.Thread(target=write_files, args=(rows, source, batch, interval))
        writer.start()
        try:
            while sum(len(c) for c in collected) < len(rows):
                if query.exception() is not None:
                    raise RuntimeError(f"streaming query failed: {query.exception()}")
                if time.perf_counter() - start > timeout:
                    raise TimeoutError(f"stream scored too few rows in {timeout:g} s")
                time.sleep(0.02)
            elapsed = time.perf_counter() - start
        finally:
            writer.join()
            query.stop()
    return elapsed, pd.concat(collected, ignore_index=True), micro


def run_streaming(spark, spec: dict[str, Any], settings: dict[str, Any], x_test, y_test):
    """A warm-up stream, then `repetitions` timed streams over the held-out set."""
    rows = frames.test_rows(x_test, y_test)
    schema = frames.schema(x_test, with_arrival=True)
    first, _, _ = stream_once(spark, spec, settings, rows, schema, "warmup")
    timings: dict[str, Any] = {"first_call_s": first}
    log(f"spark streaming warm-up run: {first:.2f} s")
    reps, rep_times, batches = int(settings["repetitions"]), [], []
    for rep in range(reps):
        elapsed, collected, micro = stream_once(spark, spec, settings, rows, schema, f"rep{rep}")
        rep_times.append(elapsed)
        batches.append(micro)
        p50 = np.median([m["latency_s_max"] for m in micro])
        log(
            f"rep {rep + 1}/{reps}: {elapsed:.3f} s, {len(micro)} micro-batches, "
            f"p50 e2e {p50:.3f} s"
        )
    predicted, loss, scored = frames.predictions_in_order(collected, len(rows))
    if scored != len(rows):
        raise RuntimeError(f"stream scored {scored} of {len(rows)} rows")
    latencies = [m["latency_s_max"] for micro in batches for m in micro]
    info = {
        "source": "folder of Parquet files",
        "files": -(-len(rows) // int(settings["batch_size"])),
        "arrival_interval_s": SparkOptions.of(settings).interval_s,
        "micro_batches": batches,
    }
    return timings, rep_times, [1] * reps, predicted, loss, info, latencies
