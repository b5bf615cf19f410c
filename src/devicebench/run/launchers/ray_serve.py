"""The Ray Serve scoring server (`server: ray-serve`): N replicas behind Serve's proxy, its local
Ray (or the configured cluster) started by serving.ray_process.RayServeProcess, whose stop kills
every Ray process it saw."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devicebench.run.launchers.base import ScoringServerLauncher
from devicebench.run.launchers.server import server_options

if TYPE_CHECKING:
    from devicebench.serving.process import ServerProcess


class RayServe(ScoringServerLauncher):
    SERVER = "ray-serve"

    def server(
        self,
        settings: Mapping[str, Any],
        serve: Mapping[str, Any],
        log_dir: Path,
        tokenizer: Path | None = None,
    ) -> ServerProcess:
        from devicebench.serving.ray_process import RayServeProcess

        replicas = int(settings.get("replicas", 1))
        common = server_options(settings, serve, log_dir, tokenizer)
        return RayServeProcess(**common, replicas=replicas, ray_address=serve["ray_address"])


LAUNCHER = RayServe()
