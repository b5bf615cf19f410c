"""A trivial route on this host: `python -m devicebench.serving.trivial FD`.

POST anything, get 200 and a two-byte body, from an aiohttp app on the listening socket the
parent passed as file descriptor FD. A serve cell drives it with its own client pool to learn
how many requests per second the pool can issue at all (see serving.steady): a server that
answers faster than half of that was measured by its clients as much as by itself.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from devicebench.run.processes import die_with_parent


def main(argv: list[str]) -> int:
    from aiohttp import web

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=b"{}", content_type="application/json")

    async def ready(app: web.Application) -> None:
        print("ready", flush=True)  # the parent waits for this line from every process

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/predict", answer)
    app.on_startup.append(ready)
    web.run_app(app, sock=socket.socket(fileno=int(argv[0])), print=None, access_log=None)
    return 0


@contextmanager
def trivial_server(processes: int = 1, host: str = "127.0.0.1") -> Iterator[str]:
    """The trivial route's URL, served by `processes` processes on one listening socket."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    sock.listen(1024)  # connections queue here until a process accepts them
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "devicebench.serving.trivial", str(sock.fileno())],
            pass_fds=[sock.fileno()],
            preexec_fn=die_with_parent,  # a killed cell takes its trivial server along
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(max(1, processes))
    ]
    try:
        for child in children:  # all up before the pool is timed against them
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError(f"trivial server {child.pid} did not start: {child.poll()}")
        yield f"http://{host}:{sock.getsockname()[1]}/predict"
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        sock.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
