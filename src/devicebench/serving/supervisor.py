"""The uvicorn engine's replicas: N server processes behind one port, as `uvicorn --workers N`.

A single Python front end tops out near 1,000 requests/s (HTTP parsing, the event loop, the
answers): on the H100 one process served ResNet-50 at 974 images/s against 4,961 in-process,
with full batches (benchmarks/RESULTS.md). So, as FastAPI model services are deployed with
uvicorn's or gunicorn's workers, this supervisor binds the port and starts N replicas of
app.py that accept on the same listening socket (the kernel gives each connection to one),
each with its own model on the device (GPU replicas share the GPU) and its own batcher. The
replicas count into one shared table (stats.py), so /stats covers them all. A replica that
dies is started again in its slot; the port answers throughout through the others. On SIGTERM
the supervisor stops every replica; each replica also dies with it (parent-death signal).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devicebench.run.processes import die_with_parent
from devicebench.serving.net import bind
from devicebench.serving.stats import ServerStats


class Replicas:
    """The replica processes, each in its slot, started (and started again) with its options."""

    def __init__(self, argv: list[str], listen_fd: int, folder: Path, note: str):
        self.argv, self.listen_fd, self.folder, self.note = argv, listen_fd, folder, note
        self.table = folder / "stats.bin"
        self.processes: dict[int, subprocess.Popen] = {}

    def ready_file(self, slot: int) -> Path:
        return self.folder / f"replica-{slot}.port"

    def start(self, slot: int) -> None:
        self.ready_file(slot).unlink(missing_ok=True)
        command = [
            *(sys.executable, "-m", "devicebench.serving.app", *self.argv),
            *("--listen-fd", str(self.listen_fd), "--stats-table", str(self.table)),
            *("--replica-slot", str(slot), "--port-file", str(self.ready_file(slot))),
            *("--port-note", self.note),
        ]
        self.processes[slot] = subprocess.Popen(
            command, pass_fds=[self.listen_fd], preexec_fn=die_with_parent
        )

    def exited(self) -> dict[int, int]:
        """Slot -> exit status of each replica that is no longer running."""
        return {s: p.returncode for s, p in self.processes.items() if p.poll() is not None}

    def all_ready(self) -> bool:
        return all(self.ready_file(slot).exists() for slot in self.processes)

    def stop(self, timeout_s: float = 8.0) -> None:
        """SIGTERM to each (uvicorn ends gracefully), SIGKILL to what is left after `timeout_s`."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def supervise(args: argparse.Namespace, argv: list[str]) -> int:
    """Serve --replicas replicas of app.py's server on one port until SIGTERM; `argv` are the
    server's own options, which each replica gets (with its socket, slot and ready file)."""
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda number, _frame: stopping.append(number))
    signal.signal(signal.SIGINT, lambda number, _frame: stopping.append(number))
    sock, note = bind(args.host, args.port)
    # Beside the port file (the cell's log folder, or its ServerProcess's temporary folder):
    # removed below, and never left in /tmp when this supervisor is killed.
    folder = Path(tempfile.mkdtemp(prefix="replicas-", dir=args.port_file.parent))
    ServerStats.shared(folder / "stats.bin", args.replicas, args.max_batch)  # zeroed
    replicas = Replicas(argv, sock.fileno(), folder, note)
    try:
        for slot in range(args.replicas):
            replicas.start(slot)
        while not replicas.all_ready():
            if stopping:
                return 0
            failed = replicas.exited()
            if failed:
                print(f"[serve] replicas exited before serving: {failed}", file=sys.stderr)
                return 1
            time.sleep(0.1)
        port = sock.getsockname()[1]
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(port))
        tmp.replace(args.port_file)
        print(f"[serve] {args.replicas} replicas on {args.host}:{port} {note}", flush=True)
        while not stopping:
            for slot, status in replicas.exited().items():
                print(f"[serve] replica {slot} exited {status}; starting it again", flush=True)
                replicas.start(slot)
            time.sleep(0.2)
        return 0
    finally:
        replicas.stop()
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)
