"""What the serving tests share: finding a server's processes, and running a small serve cell."""

from __future__ import annotations

import json
import time

import psutil

from devicebench.data import prepare_dataset


def tree_of(log_path) -> list[psutil.Process]:
    """Every live process started for the server that logs to `log_path` (replicas and Ray's
    processes included: they inherit the marker the launcher puts in the server's environment)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("DEVICEBENCH_SERVER_LOG") == str(log_path):
                if process.status() != psutil.STATUS_ZOMBIE:
                    found.append(process)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def servers_under(folder) -> list[psutil.Process]:
    """Every live process of the servers whose log is under `folder` (a test's own tmp_path):
    the processes a test started, found by the marker they inherit, never a server that someone
    else runs on the same host."""
    prefix = str(folder).rstrip("/") + "/"
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("DEVICEBENCH_SERVER_LOG", "").startswith(prefix):
                if process.status() != psutil.STATUS_ZOMBIE:
                    found.append(process)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


def gone_within(log_path, seconds: float) -> list[psutil.Process]:
    """The server's processes still alive after waiting up to `seconds` for them to go."""
    deadline = time.monotonic() + seconds
    while (left := tree_of(log_path)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def serve_cell(tmp_path, server: str, replicas: int) -> dict:
    """A serve cell of MobileNetV2 at 32 px on 2 CPU threads, 4 clients in 2 processes x 48
    requests, no LoadGen; its record, with `_path`. No process of its server may outlive it."""
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp_path / "d", train_samples=4, test_samples=16
    )
    values = dict(task="serve_image", model="mobilenetv2", framework="torch", device="cpu")
    values |= dict(threads=2, precision="fp32", batch_size=4, mode="serve")
    serve = {"image_size": 32, "requests": 48, "warmup_requests": 8, "loadgen_scenarios": []}
    serve |= {"client_processes": 2}
    settings = {"dataset": "jpeg_images", "seed": 1, "timeout_s": 540, "serve": json.dumps(serve)}
    axes = {"clients": 4, "server": server, "replicas": replicas}
    log_dir = tmp_path / f"{server}-r{replicas}"
    out = tmp_path / f"cell-{server}-r{replicas}.json"
    record = run_cell(
        make_cell(values, axes, settings), data=manifest, out=out, extra={"log_dir": str(log_dir)}
    )
    left = gone_within(log_dir / "server.log", 30)
    assert not left, f"server processes outlived the cell: {[p.cmdline() for p in left]}"
    return record | {"_path": str(out)}


def server_in_a_parent(tmp_path, engine: str, options: dict, timeout_s: float = 300):
    """A Python process (a stand-in for the cell's worker) that starts a server of `engine`
    (ServerProcess or RayServeProcess) with `options`, logging to tmp_path/server.log, and
    sleeps; returned once the server is up, with the server's pid."""
    import os
    import subprocess
    import sys
    import textwrap

    from conftest import REPO

    module = {"ServerProcess": "process", "RayServeProcess": "ray_process"}[engine]
    log, ready = tmp_path / "server.log", tmp_path / "ready"
    code = f"""
        import time
        from pathlib import Path
        from devicebench.serving.{module} import {engine}
        server = {engine}(**{options!r}, log_path=Path({str(log)!r}))
        server.start()
        Path({str(ready)!r}).write_text(str(server.pid))
        time.sleep(600)
    """
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=os.environ | {"PYTHONPATH": str(REPO / "src")},
    )
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        assert parent.poll() is None and time.monotonic() < deadline, "server never came up"
        time.sleep(0.2)
    return parent, int(ready.read_text())


def replica_cells(tmp_path, server: str) -> tuple[dict, object]:
    """Serve cells of 1 and 2 replicas of `server`, checked ok with every request scored and
    each replica's peak memory; the records by replicas and their serving table."""
    import pytest

    from devicebench.aggregate.serving import serving_table

    records = {n: serve_cell(tmp_path, server, n) for n in (1, 2)}
    for n, record in records.items():
        if record["status"] != "ok":
            pytest.fail(f"{n}-replica cell: {record['status']}: {record['message']}")
        serving = record["serving"]
        assert serving["server"] == server and serving["replicas"] == n
        assert serving["pool"]["ok"] == 48 and serving["pool"]["processes"] == 2
        assert sum(map(int, serving["batch_sizes"].values())) > 0
    assert len(records[2]["serving"]["replica_peaks_mb"]) == 2
    table = serving_table([r["_path"] for r in records.values()], prices={})
    by_replicas = table.set_index("replicas")
    one, two = (by_replicas.loc[n, "requests_per_s"] for n in (1, 2))
    assert by_replicas.loc[1, "replica_scaling_efficiency"] == pytest.approx(1.0)
    assert by_replicas.loc[2, "replica_scaling_efficiency"] == pytest.approx(two / (2 * one))
    return records, table
