"""Start the scoring server as a child process, wait for its health check, always stop it.

The server stays in the cell worker's process group (a cell timeout kills the group) and gets
SIGKILL when the worker dies (parent-death signal, as the runner gives its worker), so no server
outlives its cell, even when the worker itself is killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devicebench.engines import IN_PROCESS, is_in_process
from devicebench.run.processes import REPO, die_with_parent
from devicebench.workloads.base import BATCH_WAIT_MS


def task_arguments(
    task: str | None, image_size: int, seq_len: int, tokenizer: Path | str | None
) -> list[str]:
    """The server options saying what it scores: images of a size, or texts of a length."""
    from devicebench.serving.scoring import serve_tasks
    from devicebench.workloads import get

    workload = get(task or serve_tasks()[0])
    return workload.server_arguments(image_size=image_size, seq_len=seq_len, tokenizer=tokenizer)


class ServerFailed(RuntimeError):
    """The server exited or never answered its health check; the message has its log's tail."""


class ServerProcess:
    """A running scoring server: `with ServerProcess(...) as server: server.url`."""

    def __init__(
        self,
        *,
        framework: str,
        model: str,
        task: str | None = None,  # default: the first serve task (serve_image)
        device: str = "cpu",
        precision: str = "fp32",
        engine: str = IN_PROCESS,
        threads: int = 0,
        image_size: int = 224,
        seq_len: int = 128,
        tokenizer: Path | str | None = None,
        max_batch: int = 8,
        batch_wait_ms: float = BATCH_WAIT_MS,
        batch_buckets: str = "auto",
        max_body_bytes: int = 1 << 20,
        max_pixels: int | None = None,
        max_concurrency: int | None = None,
        decode_workers: int = 0,
        replicas: int = 1,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: Path | None = None,
        startup_timeout_s: float = 300.0,
        module: str = "devicebench.serving.app",
        engine_arguments: list[str] | None = None,
        server_arguments: list[str] = (),
        arguments: list[str] | None = None,
    ):
        """`module` is the server program; `engine_arguments` its own options after the common
        ones (app.add_server_arguments), by default uvicorn's threads, decode workers (each
        replica's) and replicas (processes behind the port, sharing the threads). `arguments`
        replaces all of them (a program with other options: serving.generate_app); --host,
        --port and --port-file are added."""
        # Without a log path (by hand, tests) the log and port file go to a temporary folder that
        # `stop` removes; a cell's live in its own log folder, which outlasts any kill.
        self._tmp = None if log_path else Path(tempfile.mkdtemp(prefix="devicebench-serve-"))
        self.log_path = Path(log_path) if log_path else self._tmp / "server.log"
        self.port_file = self.log_path.parent / f"{self.log_path.stem}.port"
        self.host, self.startup_timeout_s = host, startup_timeout_s
        self.command = [
            sys.executable,
            "-m",
            module,
            *("--framework", framework, "--model", model, "--device", device),
            *("--precision", precision),
            *(() if is_in_process(engine) else ("--engine", engine)),
            *task_arguments(task, image_size, seq_len, tokenizer),
            *("--max-batch", str(max_batch), "--batch-buckets", batch_buckets),
            *("--batch-wait-ms", str(batch_wait_ms), "--max-body-bytes", str(max_body_bytes)),
            *("--host", host, "--port", str(port), "--port-file", str(self.port_file)),
            *(["--max-pixels", str(max_pixels)] if max_pixels else []),
            *(["--max-concurrency", str(max_concurrency)] if max_concurrency else []),
            *(
                engine_arguments
                if engine_arguments is not None
                else [
                    *("--threads", str(threads), "--decode-workers", str(decode_workers)),
                    *("--replicas", str(replicas)),
                ]
            ),
            *server_arguments,  # any further option of the server program, as given
        ]
        if arguments is not None:
            where = ("--host", host, "--port", str(port), "--port-file", str(self.port_file))
            self.command = [sys.executable, "-m", module, *arguments, *where]
        self.process: subprocess.Popen | None = None
        self.engine_cache: Path | None = None
        self.url = ""
        self.health: dict[str, Any] = {}

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> None:
        env = dict(os.environ)
        paths = [str(REPO / "src"), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        env["DEVICEBENCH_SERVER_LOG"] = str(self.log_path)  # marks the server's process tree
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if not env.get("DEVICEBENCH_ENGINE_CACHE"):  # exported models beside the log, not in /tmp
            folder = tempfile.mkdtemp(prefix="engines-", dir=self.log_path.parent)
            self.engine_cache = Path(folder)
            env["DEVICEBENCH_ENGINE_CACHE"] = folder
        self.port_file.unlink(missing_ok=True)  # an earlier server's
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW  # not through a link
        with os.fdopen(os.open(self.log_path, flags, 0o644), "ab") as log:
            self.process = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, env=env,
                preexec_fn=die_with_parent,
            )  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerFailed(
                    f"server exited {self.process.returncode} before answering its health "
                    f"check; its log ends:\n{self.log_tail()}"
                )
            if self.port_file.exists():
                host = f"[{self.host}]" if ":" in self.host else self.host
                url = f"http://{host}:{self.port_file.read_text()}"
                try:
                    answer = httpx.get(f"{url}/health", timeout=5.0)
                    if answer.status_code == 200:
                        self.url, self.health = url, answer.json()
                        return
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
        raise ServerFailed(
            f"server did not answer its health check within {self.startup_timeout_s:g} s; "
            f"its log ends:\n{self.log_tail()}"
        )

    def stats(self) -> dict[str, Any]:
        import httpx

        return httpx.get(f"{self.url}/stats", timeout=10.0).json()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM (uvicorn shuts down gracefully), SIGKILL after 10 s; reap the process; remove
        the exported models and the temporary folder."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.engine_cache is not None:
            shutil.rmtree(self.engine_cache, ignore_errors=True)
        self.remove_folder()

    def remove_folder(self) -> None:
        """Remove the temporary folder (when there is one), its log included."""
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
