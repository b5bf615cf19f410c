"""The held-out set as rows: id, flat features, label (the same rows in batch and streaming)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def test_rows(x_test: np.ndarray, y_test: np.ndarray) -> pd.DataFrame:
    """One row per held-out sample, its features flattened (float32 images, int64 token ids)."""
    flat = x_test.reshape(len(x_test), -1)
    return pd.DataFrame(
        {
            "id": np.arange(len(flat), dtype=np.int64),
            "features": list(flat),
            "label": np.asarray(y_test, dtype=np.int64),
        }
    )


def schema(x_test: np.ndarray, *, with_arrival: bool = False):
    """The Spark schema of test_rows (plus the arrival time column of streamed files)."""
    from pyspark.sql.types import (
        ArrayType,
        DoubleType,
        FloatType,
        LongType,
        StructField,
        StructType,
    )

    element = FloatType() if x_test.dtype == np.float32 else LongType()
    fields = [
        StructField("id", LongType(), False),
        StructField("features", ArrayType(element, False), False),
        StructField("label", LongType(), False),
    ]
    if with_arrival:
        fields.append(StructField("written_at", DoubleType(), False))
    return StructType(fields)


def predictions_in_order(rows: pd.DataFrame, samples: int) -> tuple[np.ndarray, float, int]:
    """(predictions by id, mean loss, rows scored) from collected (id, prediction, loss) rows."""
    rows = rows.sort_values("id")
    predicted = np.full(samples, -1, dtype=np.int64)
    predicted[rows["id"].to_numpy()] = rows["prediction"].to_numpy()
    return predicted, float(rows["loss"].mean()), int(rows["id"].nunique())


def model_spec(backend: Any, settings: dict[str, Any], weights: Any) -> dict[str, Any]:
    """What the UDF needs to rebuild the cell's trained model on a Spark worker."""
    return {
        "task": settings["task"],
        "model": settings["model"],
        "outputs": int(backend.outputs),
        "lstm_kernel": str(settings.get("lstm_kernel", "cudnn")),
        "weights": weights,  # a Broadcast of the torch.save'd state dict
        "weights_id": int(weights._jbroadcast.id()),
        "input_shape": list(backend.x_test.shape[1:]),
        "binary": bool(backend.binary),
        "threads_per_task": 1,
        "precision": str(settings["precision"]),
        "fail_once": settings.get("spark_fail_once"),  # fault injection (tests)
        "fail_every_attempt": bool(settings.get("spark_fail_every_attempt")),
    }
