"""Spark infer cells: the held-out set scored through a Spark DataFrame, as a batch job or a
Structured Streaming query (devicebench.spark), the model trained in-process first."""

from __future__ import annotations

from devicebench.frameworks.protocols import Classifier
from devicebench.run.inprocess import InProcessScenario
from devicebench.spark import ENGINES


class SparkInfer(InProcessScenario):
    NAME = "spark_infer"
    MODE = "infer"
    ENGINES = tuple(engine for engine in ENGINES if engine.startswith("spark"))
    needs = Classifier

    def measure(self, backend, settings, dataset, quality):
        from devicebench.spark.cell import run_spark_infer

        return run_spark_infer(backend, settings, dataset, quality=quality)


SCENARIO = SparkInfer()
