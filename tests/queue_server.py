"""A tiny real HTTP server of known capacity, for the latency-bound search's tests.

POST /predict waits its turn (one request at a time) and then `service_ms`: a single-server
queue whose capacity is 1000 / service_ms requests/s. Under Poisson arrivals its p99 grows
without bound as the offered rate nears that capacity, so a search with a bound of a few
service times must find a rate below it, and a bound under one service time has no rate at all.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def main(argv: list[str]) -> int:
    import asyncio

    from aiohttp import web

    service_s = float(argv[1]) / 1000
    turn = asyncio.Lock()

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        async with turn:
            await asyncio.sleep(service_s)
        return web.Response(body=b"{}", content_type="application/json")

    async def ready(app: web.Application) -> None:
        print("ready", flush=True)

    app = web.Application()
    app.router.add_post("/predict", answer)
    app.on_startup.append(ready)
    web.run_app(app, sock=socket.socket(fileno=int(argv[0])), print=None, access_log=None)
    return 0


@contextmanager
def queue_server(service_ms: float) -> Iterator[str]:
    """The URL of a queue server with the given service time, stopped on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    child = subprocess.Popen(
        [sys.executable, __file__, str(sock.fileno()), str(service_ms)],
        pass_fds=[sock.fileno()],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError(f"queue server did not start: {child.poll()}")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/predict"
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        sock.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
