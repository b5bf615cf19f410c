"""The Spark session of a cell: local[N, maxFailures] unless the config names a master URL."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from devicebench.spark import SparkOptions


def master_url(settings: dict[str, Any]) -> str:
    """The configured master, or local mode with the cell's threads and task retries."""
    own = SparkOptions.of(settings)
    if own.master:
        return str(own.master)
    return f"local[{int(settings['threads_resolved'])},{own.task_failures}]"


def java_missing() -> str | None:
    """Why Spark cannot start its JVM here (no java), or None."""
    home = os.environ.get("JAVA_HOME")
    if (home and Path(home, "bin", "java").exists()) or shutil.which("java"):
        return None
    return "Spark needs Java 17: no `java` on PATH and no JAVA_HOME"


def start_session(settings: dict[str, Any]):
    """A SparkSession for this cell: Arrow on, one Arrow batch = the cell's batch size."""
    import warnings

    missing = java_missing()
    if missing:
        raise RuntimeError(missing)

    from pyspark.sql import SparkSession

    # pyspark 4.3 warns on every pandas conversion that it "does not yet fully support" pandas 3;
    # the conversions used here (numeric columns, arrays of numbers) are checked by the tests.
    warnings.filterwarnings("ignore", category=FutureWarning, module="pyspark")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    own = SparkOptions.of(settings)
    builder = (
        SparkSession.builder.master(master_url(settings))
        .appName(f"devicebench {settings['task']} infer")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(int(settings["batch_size"])))
        .config("spark.sql.shuffle.partitions", str(partitions(settings)))
        .config("spark.task.maxFailures", str(own.task_failures))
        .config("spark.driver.memory", str(own.driver_memory or "1g"))
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def partitions(settings: dict[str, Any]) -> int:
    """Partitions of the scored DataFrame: one per task slot (the threads) unless configured."""
    return int(SparkOptions.of(settings).partitions or settings["threads_resolved"])


def failed_tasks(spark, group: str) -> int:
    """Task attempts that failed in the jobs of `group` (retried ones included)."""
    tracker = spark.sparkContext.statusTracker()
    failed = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else []:
            stage_info = tracker.getStageInfo(stage)
            failed += stage_info.numFailedTasks if stage_info else 0
    return failed
