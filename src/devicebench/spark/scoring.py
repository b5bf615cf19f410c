"""The pandas UDF that scores rows: an iterator of Arrow batches, one model load per worker.

The model is rebuilt from its architecture and the trained weights the cell broadcast; a
module-level cache keeps it for every later partition the same Python worker runs. Fault
injection (tests) kills a worker on a task's first or every attempt, to see Spark retry or fail.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

_MODELS: dict[str, Any] = {}


def _model(spec: dict[str, Any]):
    import torch

    from devicebench.measure.precision import apply_precision_math
    from devicebench.workloads import get

    key = spec["weights_id"]  # one model per broadcast, i.e. per cell
    if key not in _MODELS:
        torch.set_num_threads(int(spec["threads_per_task"]))
        apply_precision_math(spec.get("precision", "fp32"))
        net = get(spec["task"]).build_torch(
            spec["model"], 0, outputs=spec["outputs"], lstm_kernel=spec["lstm_kernel"]
        )
        state = torch.load(io.BytesIO(spec["weights"].value), map_location="cpu", weights_only=True)
        net.load_state_dict(state)
        _MODELS[key] = net.eval()
    return _MODELS[key]


def _maybe_fail(spec: dict[str, Any], task) -> None:
    """Fault injection on partition 0: `fail_every_attempt` kills its Python worker on every
    attempt (the job fails once spark.task.maxFailures is spent); `fail_once` (a marker file's
    path) on the first attempt only, once per cell (local mode shares the driver's files)."""
    if task.partitionId() != 0:
        return
    if spec.get("fail_every_attempt"):
        os._exit(1)
    marker = spec.get("fail_once")
    if marker and task.attemptNumber() == 0 and not Path(marker).exists():
        Path(marker).write_text(f"stage {task.stageId()} attempt 0, pid {os.getpid()}\n")
        os._exit(1)  # the Python worker dies mid-task, as a crashed executor process would


def score(spec: dict[str, Any], features: pd.Series, labels: pd.Series) -> pd.DataFrame:
    """Predictions and per-row loss of one Arrow batch."""
    import torch
    import torch.nn.functional as F

    net = _model(spec)
    x = torch.from_numpy(np.stack(features.to_numpy())).reshape(-1, *spec["input_shape"])
    y = torch.from_numpy(np.array(labels.to_numpy(), dtype=np.int64))
    with torch.inference_mode():
        logits = net(x).float()
        if spec["binary"]:
            loss = F.binary_cross_entropy_with_logits(logits, y.float(), reduction="none")
            predicted = (logits > 0).long()
        else:
            loss = F.cross_entropy(logits, y, reduction="none")
            predicted = logits.argmax(dim=1)
    return pd.DataFrame({"prediction": predicted.numpy(), "loss": loss.numpy().astype(np.float64)})


def _tagged(scores: pd.DataFrame, task) -> pd.DataFrame:
    """Scores with the task attempt and the Python worker that made them (retries, model loads)."""
    return scores.assign(attempt=int(task.attemptNumber()), worker=os.getpid())


def make_udf(spec: dict[str, Any]):
    """The iterator-of-batches pandas UDF: (features, label) -> struct(prediction, loss, attempt,
    worker)."""
    from pyspark import TaskContext
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("prediction long, loss double, attempt int, worker long")
    def predict(batches: Iterator[tuple[pd.Series, pd.Series]]) -> Iterator[pd.DataFrame]:
        task = TaskContext.get()
        _maybe_fail(spec, task)
        for features, labels in batches:
            yield _tagged(score(spec, features, labels), task)

    return predict
