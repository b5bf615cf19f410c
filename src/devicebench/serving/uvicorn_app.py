"""What the scoring server and the generate server share around their FastAPI apps: one log line
for an unexpected error, the guarded uvicorn config (serving.http_limits) and the port file the
cell waits for."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from devicebench.serving.http_limits import guarded_protocol, refused


def client_of(request: Request) -> tuple[str] | None:
    """The client's host, as the refusal log line names it."""
    return (request.client.host,) if request.client else None


def add_one_line_errors(app: FastAPI) -> None:
    """An unexpected error is answered 500 with one log line, never a traceback."""

    @app.middleware("http")
    async def one_line_errors(request: Request, call_next):
        try:
            return await call_next(request)
        except Exception as error:  # noqa: BLE001 - answered 500 with one log line
            refused(500, client_of(request), f"{request.url.path}: {type(error).__name__}: {error}")
            return JSONResponse({"detail": "internal error"}, status_code=500)


def uvicorn_config(app: FastAPI, args: argparse.Namespace) -> Any:
    """uvicorn's config with the server's limits on headers, bodies, connections and idling."""
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        http=guarded_protocol(
            args.max_header_bytes,
            args.header_timeout_s,
            args.body_timeout_s,
            args.max_connections_per_client,
        ),
        limit_concurrency=args.max_concurrency,
        timeout_keep_alive=args.keep_alive_s,
    )


def publish_port(port_file: str | Path, port: int) -> None:
    """Write the bound port where the cell waits for it (renamed into place: never half a number);
    connections queue until uvicorn accepts."""
    port_file = Path(port_file)
    tmp = port_file.with_suffix(".tmp")
    tmp.write_text(str(port))
    tmp.replace(port_file)
