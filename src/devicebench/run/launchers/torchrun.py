"""Data-parallel cells (`gpus` axis above 1): torchrun starts one rank per device (or per CPU
process, gloo), each running devicebench.distributed.rank; the cell's threads are shared."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from devicebench.distributed import launch
from devicebench.run.launchers.base import WorkerLauncher


class Torchrun(WorkerLauncher):
    def fits(self, settings: Mapping[str, Any]) -> bool:
        return launch.world_size(dict(settings)) > 1

    def skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        return launch.skip_reason(dict(settings))

    def settings(self, settings: Mapping[str, Any], threads: int) -> dict[str, Any]:
        world = launch.world_size(dict(settings))
        return {"threads_per_rank": launch.threads_per_rank(threads, world)}

    def command(
        self, settings_path: Path, result_path: Path, settings: Mapping[str, Any], env: dict
    ) -> tuple[list[str], dict[str, str]]:
        world = launch.world_size(dict(settings))
        command = launch.torchrun_command(settings_path, result_path, world)
        return command, launch.distributed_env(env, dict(settings))

    def failed_result(self, result_path: Path) -> Path | None:
        return launch.first_rank_failure(result_path)


LAUNCHER = Torchrun()
