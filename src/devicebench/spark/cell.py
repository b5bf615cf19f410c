"""An infer cell on Spark: train in-process (untimed), then score the held-out set on Spark.

The engine axis says how: `spark` (a batch job over a DataFrame) or `spark-streaming` (a
Structured Streaming query over a folder source). The same trained model is also scored
in-process, so the record shows whether Spark's predictions agree with it.
"""

from __future__ import annotations

import io
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from devicebench.engines import SPARK_ENGINES, streams
from devicebench.measure.timing import latency_percentiles
from devicebench.run import window as w
from devicebench.spark import frames, skip_reason

if TYPE_CHECKING:
    from devicebench.run.launchers.base import SparkLauncher


def _train_untimed(backend, settings: dict[str, Any]) -> None:
    steps = w.train_steps(backend, settings)
    backend.new_model(int(settings["seed"]))
    start = time.perf_counter()
    for _ in range(int(settings["epochs"])):
        backend.train_steps(steps)
    w.log(f"trained untimed for {settings['epochs']} epoch(s): {time.perf_counter() - start:.2f} s")


def run_spark_infer(
    backend, settings: dict[str, Any], dataset: Any, *, quality: w.Quality, spark: SparkLauncher
) -> dict[str, Any]:
    """Measure one Spark infer cell, its session started and stopped by `spark` (the cell's
    launcher, from run.launchers), and return the record sections it fills."""
    import torch

    reason = skip_reason(settings, claimed=SPARK_ENGINES)  # run by the scenario that claims them
    if reason:  # run_cell records such a cell as skipped before it gets here
        raise ValueError(reason)
    from devicebench.spark.batch import run_batch
    from devicebench.spark.streaming import run_streaming

    if w.speed_only(settings):  # a fresh model: nothing trained, nothing scored in-process
        backend.new_model(int(settings["seed"]))
    else:
        _train_untimed(backend, settings)
        inprocess, inprocess_loss = backend.evaluate()
    x_test, y_test = backend.x_test.cpu().numpy(), backend.y_test.cpu().numpy()
    engine = settings["engine"]
    buffer = io.BytesIO()
    torch.save(backend.model.state_dict(), buffer)
    with spark.session(settings) as session:  # stopped however the scoring ends
        # the weights reach the executors as a broadcast: no shared file system needed
        weights = session.sparkContext.broadcast(buffer.getvalue())
        spec = frames.model_spec(backend, settings, weights)
        window = w.Window(settings).start()
        run = run_streaming if streams(engine) else run_batch
        timings, windows, passes, predicted, loss, info, extra = run(
            session, spec, settings, x_test, y_test
        )
        window.stop(len(y_test) * sum(passes))
        info |= {"master": spark.master(settings), "spark_version": session.version}
    if streams(engine):
        timings["latency_ms"] = latency_percentiles(extra)
        timings["latency_what"] = "end to end per micro-batch: file landed -> predictions on driver"
    result = w.result(
        backend,
        settings,
        timings,
        windows,
        passes,
        len(y_test),
        window,
        w.not_measured() if w.speed_only(settings) else quality(dataset, predicted, loss),
    )
    if not w.speed_only(settings):
        result["quality"] |= {
            "inprocess_accuracy": float(np.mean(inprocess == y_test)),
            "inprocess_loss": inprocess_loss,
            "predictions_equal_inprocess": bool(np.array_equal(inprocess, predicted)),
        }
    result["spark"] = info | {"engine": engine, "arrow_batch_rows": int(settings["batch_size"])}
    result["model"]["fit_loop"] = (
        "trained in-process (untimed); scored by an iterator-of-batches pandas UDF, "
        "model loaded once per Spark Python worker"
    )
    return result | {"utilization": window.utilization, "energy": window.energy}
