"""Batch inference on Spark: the held-out DataFrame scored by the UDF, timed per job."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from devicebench.spark import frames
from devicebench.spark.scoring import make_udf
from devicebench.spark.session import failed_tasks, partitions


def log(message: str) -> None:
    print(f"[devicebench] {message}", flush=True)


def score_once(spark, frame, predict, group: str) -> pd.DataFrame:
    """One Spark job: every row through the UDF, results collected to the driver."""
    spark.sparkContext.setJobGroup(group, f"devicebench {group}")
    out = frame.select("id", predict("features", "label").alias("out"))
    return out.select("id", "out.prediction", "out.loss").toPandas()


def run_batch(spark, spec: dict[str, Any], settings: dict[str, Any], x_test, y_test):
    """A warm-up job, then `repetitions` timed jobs over the cached held-out DataFrame."""
    rows = frames.test_rows(x_test, y_test)
    frame = spark.createDataFrame(rows, schema=frames.schema(x_test))
    frame = frame.repartition(partitions(settings)).cache()
    frame.count()  # materialise the input once, so timed jobs measure scoring
    predict = make_udf(spec)
    start = time.perf_counter()
    first = score_once(spark, frame, predict, "warmup")
    timings: dict[str, Any] = {"first_call_s": time.perf_counter() - start}
    log(f"spark warm-up job (workers start, model loads): {timings['first_call_s']:.2f} s")
    reps, rep_times, collected = int(settings["repetitions"]), [], first
    for rep in range(reps):
        start = time.perf_counter()
        collected = score_once(spark, frame, predict, f"rep{rep}")
        rep_times.append(time.perf_counter() - start)
        log(f"rep {rep + 1}/{reps}: {rep_times[-1]:.3f} s, {len(rows) / rep_times[-1]:,.0f} rows/s")
    predicted, loss, scored = frames.predictions_in_order(collected, len(rows))
    if scored != len(rows):
        raise RuntimeError(f"spark scored {scored} of {len(rows)} rows")
    failures = sum(failed_tasks(spark, g) for g in ["warmup", *(f"rep{r}" for r in range(reps))])
    info = {"partitions": partitions(settings), "failed_task_attempts": failures}
    return timings, rep_times, predicted, loss, info, np.asarray(rows["label"])
