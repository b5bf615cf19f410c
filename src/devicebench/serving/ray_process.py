"""Start the Ray Serve scoring server as a child process tree the cell owns; always stop all of it.

The server process (devicebench.serving.ray_app) starts its own local Ray: GCS, raylet, the Serve
controller, proxy and replica workers, all its descendants. Like the uvicorn server it stays in
the cell worker's process group (a cell timeout kills the group) and gets SIGKILL when the worker
dies; Ray's processes share the fate of the process that started them. `stop` asks for a clean
shutdown and then SIGKILLs every descendant it saw, so no raylet or Ray worker outlives the cell.
"""

from __future__ import annotations

import signal
import time
from typing import Any

from devicebench.serving.process import ServerProcess


def tree(pid: int) -> list:
    """The process and all its descendants now (psutil.Process objects); [] when it is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


class RayServeProcess(ServerProcess):
    """A running Ray Serve scoring server: `with RayServeProcess(replicas=2, ...) as server:`."""

    def __init__(
        self,
        *,
        threads: int = 1,
        replicas: int = 1,
        ray_address: str = "",
        startup_timeout_s: float = 600.0,
        stop_timeout_s: float = 30.0,
        **options: Any,
    ):
        """`options`: ServerProcess's (model, task, batching, host, port, log); `threads` are the
        CPUs of all replicas together."""
        if "decode_workers" in options:
            raise TypeError("Ray Serve replicas decode their own requests: no decode_workers")
        super().__init__(
            module="devicebench.serving.ray_app",
            engine_arguments=[
                *("--threads", str(max(1, threads)), "--replicas", str(replicas)),
                *("--ray-address", ray_address),
            ],
            startup_timeout_s=startup_timeout_s,
            **options,
        )
        self.stop_timeout_s = stop_timeout_s
        self.seen: dict[int, object] = {}

    def processes(self) -> list:
        """The server and its Ray processes now (remembered, so that `stop` kills all)."""
        found = tree(self.pid) if self.pid else []
        self.seen |= {p.pid: p for p in found}
        return found

    def _wait_ready(self) -> None:
        super()._wait_ready()
        self.processes()

    def stop(self) -> None:
        """SIGTERM (Serve and Ray shut down), SIGKILL after `stop_timeout_s`; then SIGKILL every
        process of the tree that is still there, and reap them."""
        import psutil

        if self.process is None:
            self.remove_folder()
            return
        self.processes()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + self.stop_timeout_s
            while self.process.poll() is None and time.monotonic() < deadline:
                self.processes()
                time.sleep(0.2)
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
        left = [p for p in self.seen.values() if p.is_running()]
        for process in left:
            try:
                process.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(left, timeout=10)
        self.remove_folder()
