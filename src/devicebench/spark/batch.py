"""Batch inference on Spark: the held-out DataFrame scored by the UDF, timed per job."""

from __future__ import annotations

import time
import uuid
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
    return out.select("id", "out.*").toPandas()


def run_batch(spark, spec: dict[str, Any], settings: dict[str, Any], x_test, y_test):
    """A warm-up job, then `repetitions` timed repetitions over the cached held-out DataFrame.

    A repetition runs whole scoring jobs until it has lasted `min_repetition_s` (at least one),
    as the in-process infer cell repeats its passes.
    """
    rows = frames.test_rows(x_test, y_test)
    frame = spark.createDataFrame(rows, schema=frames.schema(x_test))
    frame = frame.repartition(partitions(settings)).cache()
    frame.count()  # materialise the input once, so timed jobs measure scoring
    predict = make_udf(spec)
    run = uuid.uuid4().hex[:8]  # job groups of this run only, should the session be shared
    groups = [f"{run}-warmup", *(f"{run}-rep{rep}" for rep in range(int(settings["repetitions"])))]
    start = time.perf_counter()
    collected = score_once(spark, frame, predict, groups[0])
    timings: dict[str, Any] = {"first_call_s": time.perf_counter() - start}
    log(f"spark warm-up job (workers start, model loads): {timings['first_call_s']:.2f} s")
    check_all_scored(collected, len(rows))
    attempts = int(collected["attempt"].max())
    reps, minimum = int(settings["repetitions"]), float(settings.get("min_repetition_s", 0.0))
    windows: list[float] = []
    passes: list[int] = []
    for rep in range(reps):
        count, window = 0, 0.0
        while count == 0 or window < minimum:
            start = time.perf_counter()
            collected = score_once(spark, frame, predict, groups[rep + 1])
            window += time.perf_counter() - start
            attempts = max(attempts, int(collected["attempt"].max()))
            count += 1
        windows.append(window)
        passes.append(count)
        log(
            f"rep {rep + 1}/{reps}: {count} job(s) in {window:.3f} s, "
            f"{count * len(rows) / window:,.0f} rows/s"
        )
    predicted, loss = check_all_scored(collected, len(rows))
    failures = sum(failed_tasks(spark, group) for group in groups)
    info = {
        "partitions": partitions(settings),
        "failed_task_attempts": failures,
        "python_workers": int(collected["worker"].nunique()),
        "max_task_attempt": attempts,
    }
    return timings, windows, passes, predicted, loss, info, np.asarray(rows["label"])


def check_all_scored(collected: pd.DataFrame, samples: int) -> tuple[np.ndarray, float]:
    """Predictions by id and mean loss, after checking that every row came back exactly once."""
    predicted, loss, scored = frames.predictions_in_order(collected, samples)
    if scored != samples or len(collected) != samples:
        raise RuntimeError(f"spark returned {len(collected)} rows for {scored} of {samples} ids")
    return predicted, loss
