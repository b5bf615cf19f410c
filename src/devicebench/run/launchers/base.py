"""What a launcher is: whatever starts the processes a cell runs in, chosen in one place.

A launcher starts one of the things a cell needs, and the need is its base class here:
- ``WorkerLauncher``: the cell's measuring process(es), which the runner starts (one worker, or
  torchrun's ranks);
- ``ScoringServerLauncher``: a model server answering /predict (uvicorn or Ray Serve), started
  by the serve scenario inside its worker and measured from outside;
- ``GenerateServerLauncher``: the generate server streaming tokens, for a generate cell's
  goodput;
- ``SparkLauncher``: the Spark session a Spark infer cell scores on.

``devicebench.run.launchers.for_cell(settings, need)`` picks the launcher of a need, so neither
the runner nor a scenario tells launchers apart by name. Standard library only at import time:
the runner asks before the worker imports any framework; a launcher imports its implementation
(devicebench.distributed, serving, spark) when it starts something.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from devicebench.serving.process import ServerProcess


class Launcher(ABC):
    """One way to start something a cell needs: found by module name in devicebench.run.launchers.

    Among the launchers of one need, the ones that are not the default claim a cell (``fits``);
    the need's default takes a cell none claims. A need may have no default: then a cell no
    launcher claims is refused (``unclaimed``)."""

    default: ClassVar[bool] = False  # takes any cell no other launcher of its need claims

    @abstractmethod
    def fits(self, settings: Mapping[str, Any]) -> bool:
        """Whether this launcher starts the cell (the default launcher fits any)."""

    def skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        """Why this host cannot start the cell this way (recorded skipped), or None."""
        return None

    @classmethod
    def unclaimed(cls, settings: Mapping[str, Any], known: Mapping[str, Launcher]) -> str:
        """The error when no launcher of this need (`known`, by module name) takes the cell."""
        return f"no {cls.__name__} takes the cell; known: {', '.join(known)}"


class WorkerLauncher(Launcher):
    """Starts a cell's measuring process(es): the runner asks it once and no longer tells cells
    apart itself: the settings it adds before the worker starts (threads per rank), the command
    and environment that start it, and where a failed rank left its result."""

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


class ScoringServerLauncher(Launcher):
    """Starts the model server a serve cell measures, one per value of the `server` axis."""

    SERVER: ClassVar[str]  # the `server` axis value it starts
    DEFAULT_SERVER: ClassVar[str] = "uvicorn"  # a cell without the axis

    def fits(self, settings: Mapping[str, Any]) -> bool:
        return settings.get("server", self.DEFAULT_SERVER) == self.SERVER

    @classmethod
    def unclaimed(cls, settings: Mapping[str, Any], known: Mapping[str, Launcher]) -> str:
        servers = ", ".join(one.SERVER for one in known.values() if isinstance(one, cls))
        return f"unknown server {settings.get('server')!r}; known: {servers}"

    @abstractmethod
    def server(
        self,
        settings: Mapping[str, Any],
        serve: Mapping[str, Any],
        log_dir: Path,
        tokenizer: Path | None = None,
    ) -> ServerProcess:
        """The cell's server, not started yet (``with server:`` starts it and always stops it,
        its whole process tree with it); `serve` are the cell's serve settings."""


class GenerateServerLauncher(Launcher):
    """Starts the server a generate cell's goodput search drives (tokens streamed back)."""

    @abstractmethod
    def server(
        self, settings: Mapping[str, Any], arguments: list[str], log_dir: Path
    ) -> ServerProcess:
        """The generate server with its own `arguments`, logging in `log_dir`, not started."""


class SparkLauncher(Launcher):
    """Starts the Spark session a Spark infer cell scores on, and always stops it."""

    @abstractmethod
    def session(self, settings: Mapping[str, Any]) -> AbstractContextManager[Any]:
        """``with launcher.session(settings) as spark:``: a started SparkSession, stopped after."""

    @abstractmethod
    def master(self, settings: Mapping[str, Any]) -> str:
        """The master URL the session runs on (recorded)."""
