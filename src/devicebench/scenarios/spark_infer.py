"""Spark infer cells: the held-out set scored through a Spark DataFrame, as a batch job or a
Structured Streaming query (devicebench.spark), the model trained in-process first."""

from __future__ import annotations

from devicebench.engines import SPARK_ENGINES
from devicebench.frameworks.protocols import Classifier
from devicebench.run.inprocess import InProcessScenario
from devicebench.run.launchers.base import SparkLauncher
from devicebench.scenarios.base import QUALITY_SETTING


class SparkInfer(InProcessScenario):
    NAME = "spark_infer"
    MODE = "infer"
    fixed_passes = True
    scores = True
    ENGINES = SPARK_ENGINES
    needs = Classifier
    SETTINGS = QUALITY_SETTING  # quality: false measures speed only
    launches = (SparkLauncher,)

    def measure(self, backend, settings, dataset, quality):
        from devicebench.spark.cell import run_spark_infer

        spark = self.launcher(settings, SparkLauncher)
        return run_spark_infer(backend, settings, dataset, quality=quality, spark=spark)


SCENARIO = SparkInfer()
