"""The generate server (serving.generate_app): a language model streaming tokens over HTTP in its
own process, which a generate cell's goodput search drives; 600 s to load a large model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devicebench.run.launchers.base import GenerateServerLauncher

if TYPE_CHECKING:
    from devicebench.serving.process import ServerProcess

MODULE = "devicebench.serving.generate_app"
STARTUP_TIMEOUT_S = 600.0


class GenerateServer(GenerateServerLauncher):
    default = True

    def fits(self, settings: Mapping[str, Any]) -> bool:
        return True

    def server(
        self, settings: Mapping[str, Any], arguments: list[str], log_dir: Path
    ) -> ServerProcess:
        from devicebench.serving.process import ServerProcess

        return ServerProcess(
            framework="torch", model=str(settings["model"]), module=MODULE, arguments=arguments,
            log_path=log_dir / "server.log", startup_timeout_s=STARTUP_TIMEOUT_S,
        )  # fmt: skip


LAUNCHER = GenerateServer()
