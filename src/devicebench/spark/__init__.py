"""Distributed inference on Apache Spark: the held-out set scored through a DataFrame.

`session` starts Spark (local[N] by default, any master URL from the config), `scoring` is the
iterator-of-batches pandas UDF that holds the model, `batch` and `streaming` time a batch job and
a Structured Streaming query over a folder source, and `cell` runs one infer cell on them.
"""

from dataclasses import dataclass
from typing import ClassVar

from devicebench.engines import AXIS_VALUES, SPARK_ENGINES, cell_engine
from devicebench.engines.base import EngineOptions

ENGINES = (*AXIS_VALUES, *SPARK_ENGINES)


@dataclass(frozen=True)
class SparkOptions(EngineOptions):
    """The Spark engines' own options (config key `spark`; None: Spark's or the cell's default)."""

    CONFIG_KEY: ClassVar[str] = "spark"
    ENGINE: ClassVar[str] = "spark"

    master: str | None = None  # master URL (default local[threads,max_failures])
    max_failures: int | None = None  # spark.task.maxFailures (default 4)
    partitions: int | None = None  # default: the cell's threads
    driver_memory: str | None = None  # spark.driver.memory, e.g. 2g (default 1g)
    stream_interval_s: float | None = None  # spark-streaming: seconds between files
    stream_timeout_s: float | None = None  # spark-streaming: limit on one stream run

    @property
    def task_failures(self) -> int:
        """spark.task.maxFailures: the option, else Spark's default 4."""
        return 4 if self.max_failures is None else int(self.max_failures)

    @property
    def interval_s(self) -> float:
        """Seconds between the stream's files: the option, else 0.1."""
        return 0.1 if self.stream_interval_s is None else float(self.stream_interval_s)


OPTIONS = SparkOptions


def skip_reason(settings: dict, *, claimed: tuple[str, ...]) -> str | None:
    """Why a Spark infer cell cannot run, or None (checked before the cell starts any work).

    `claimed` are the engines the cell's scenario claims (``Scenario.ENGINES``): a Spark engine
    runs only under the scenario that claims it (spark_infer, of infer cells), so that this
    module tells no mode apart by its name."""
    engine = cell_engine(settings)
    if engine not in SPARK_ENGINES:
        return None
    if engine not in claimed:
        return f"engine {engine} applies to infer cells only"
    if settings["framework"] != "torch" or settings["device"] != "cpu":
        return (
            f"engine {engine} scores torch models on CPU executors; this cell is "
            f"{settings['framework']} on {settings['device']}"
        )
    return None
