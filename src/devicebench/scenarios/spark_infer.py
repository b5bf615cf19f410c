"""Spark infer cells: the held-out set scored through a Spark DataFrame, as a batch job or a
Structured Streaming query (devicebench.spark), the model trained in-process first."""

from __future__ import annotations

from devicebench.engines import SPARK_ENGINES
from devicebench.frameworks.protocols import Classifier
from devicebench.run.inprocess import InProcessScenario


class SparkInfer(InProcessScenario):
    NAME = "spark_infer"
    MODE = "infer"
    ENGINES = SPARK_ENGINES
    needs = Classifier

    def measure(self, backend, settings, dataset, quality):
        from devicebench.spark.cell import run_spark_infer

        return run_spark_infer(backend, settings, dataset, quality=quality)


SCENARIO = SparkInfer()
