"""What a launcher is: how the runner starts a cell's measuring process(es).

The runner asks ``devicebench.run.launchers.for_cell`` once and no longer tells cells apart
itself: a launcher says whether it takes the cell (``fits``), why the host cannot run it
(``skip_reason``), the settings it adds before the worker starts (threads per rank), the command
and environment that start it, and where a failed rank left its result.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar


class Launcher(ABC):
    """One way to start a cell's worker: found by module name in devicebench.run.launchers."""

    default: ClassVar[bool] = False  # the one that takes any cell no other launcher claims

    @abstractmethod
    def fits(self, settings: Mapping[str, Any]) -> bool:
        """Whether this launcher starts the cell (the default launcher fits any)."""

    def skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        """Why this host cannot start the cell this way (recorded skipped), or None."""
        return None

    def settings(self, settings: Mapping[str, Any], threads: int) -> dict[str, Any]:
        """Run settings it adds before the worker starts (e.g. threads per rank)."""
        return {}

    def command(
        self, settings_path: Path, result_path: Path, settings: Mapping[str, Any], env: dict
    ) -> tuple[list[str], dict[str, str]]:
        """The worker's command line and environment."""
        worker = [sys.executable, "-m", "devicebench.run.worker"]
        return [*worker, str(settings_path), str(result_path)], env

    def failed_result(self, result_path: Path) -> Path | None:
        """Where a failed worker left its result when not at `result_path`, or None."""
        return None
