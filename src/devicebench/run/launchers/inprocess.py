"""The default launcher: one worker process measures the cell in its own process (the
scenario may still start a scoring server or a Spark session from there)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from devicebench.run.launchers.base import WorkerLauncher


class InProcess(WorkerLauncher):
    default = True

    def fits(self, settings: Mapping[str, Any]) -> bool:
        return True


LAUNCHER = InProcess()
