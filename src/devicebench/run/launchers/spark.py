"""The Spark session of a Spark infer cell (spark.session: local[N, maxFailures] unless the
config names a master URL), started in the worker and always stopped when the cell's scoring
ends or fails."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from devicebench.run.launchers.base import SparkLauncher


class Spark(SparkLauncher):
    default = True

    def fits(self, settings: Mapping[str, Any]) -> bool:
        return True

    @contextmanager
    def session(self, settings: Mapping[str, Any]) -> Iterator[Any]:
        from devicebench.spark.session import start_session

        spark = start_session(dict(settings))
        try:
            yield spark
        finally:
            spark.stop()

    def master(self, settings: Mapping[str, Any]) -> str:
        from devicebench.spark.session import master_url

        return master_url(dict(settings))


LAUNCHER = Spark()
