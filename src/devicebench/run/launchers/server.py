"""The uvicorn scoring server (`server: uvicorn`, the default): N processes behind one port, each
with its model, started by serving.process.ServerProcess in the cell worker's process group."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devicebench.run.launchers.base import ScoringServerLauncher

if TYPE_CHECKING:
    from devicebench.serving.process import ServerProcess


def server_options(
    settings: Mapping[str, Any], serve: Mapping[str, Any], log_dir: Path, tokenizer: Path | None
) -> dict[str, Any]:
    """What every scoring server is told, whichever starts it: the model, its batching and
    limits, the cell's threads, where it logs."""
    from devicebench.engines import cell_engine

    return dict(
        task=settings["task"],
        seq_len=int(settings.get("seq_len", 128)),
        tokenizer=tokenizer,
        framework=settings["framework"],
        model=settings["model"],
        device=settings["device"],
        precision=settings["precision"],
        engine=cell_engine(settings),
        threads=int(settings["threads_resolved"]),
        image_size=int(serve["image_size"]),
        max_batch=int(settings["batch_size"]),
        batch_wait_ms=float(serve["batch_wait_ms"]),
        batch_buckets=str(serve["batch_buckets"]),
        max_body_bytes=int(serve["max_body_bytes"]),
        max_pixels=int(serve["max_pixels"]),
        host=serve["host"],
        log_path=log_dir / "server.log",
    )


def decode_workers(serve: Mapping[str, Any], threads: int) -> int:
    """Decoder processes of each server process: as set, or `auto`: a quarter of its `threads`,
    at most 8, and none (threads of the server) below 8 threads, where extra processes would
    crowd the model."""
    given = serve["decode_workers"]
    if given != "auto":
        return int(given)
    return min(8, threads // 4) if threads >= 8 else 0


class Uvicorn(ScoringServerLauncher):
    SERVER = "uvicorn"

    def server(
        self,
        settings: Mapping[str, Any],
        serve: Mapping[str, Any],
        log_dir: Path,
        tokenizer: Path | None = None,
    ) -> ServerProcess:
        from devicebench.serving.process import ServerProcess

        replicas = int(settings.get("replicas", 1))
        workers = decode_workers(serve, int(settings["threads_resolved"]) // replicas)
        common = server_options(settings, serve, log_dir, tokenizer)
        return ServerProcess(**common, decode_workers=workers, replicas=replicas)


LAUNCHER = Uvicorn()
