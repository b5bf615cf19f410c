"""No temporary folder outlives a server: by hand its files go to a temporary folder that stop()
removes (its exported models too); in a cell they live in the cell's own log folder, even when
the replica supervisor is killed with SIGKILL (nothing is left in /tmp)."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

from serving_helpers import gone_within, tree_of

from devicebench.serving.process import ServerProcess

SERVER = {"framework": "torch", "model": "mobilenetv2", "image_size": 32, "threads": 1}


def test_a_server_by_hand_removes_its_temporary_folder_when_stopped():
    with ServerProcess(**SERVER) as running:
        folder = running.log_path.parent
        assert folder.name.startswith("devicebench-serve-") and running.port_file.exists()
    assert not folder.exists()
    assert not tree_of(running.log_path)


def test_a_killed_replica_supervisor_leaves_nothing_outside_the_cells_folder(tmp_path):
    log = tmp_path / "server.log"
    server = ServerProcess(**SERVER, replicas=2, log_path=log)
    server.start()
    try:
        assert server.port_file.parent == tmp_path  # beside the cell's log, not in /tmp
        (replicas_folder,) = tmp_path.glob("replicas-*")  # the supervisor's, beside it
        assert (replicas_folder / "stats.bin").exists()
        os.kill(server.pid, signal.SIGKILL)
        server.process.wait()
        left = gone_within(log, 15)  # the replicas die with their supervisor
        assert not left, [p.cmdline() for p in left]
    finally:
        server.stop()
    assert replicas_folder.parent == tmp_path  # what the kill left is in the cell's folder


def test_an_engine_servers_exported_model_lives_beside_its_log_and_goes_when_stopped(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("DEVICEBENCH_ENGINE_CACHE", raising=False)
    in_tmp = set(Path(tempfile.gettempdir()).glob("devicebench-engines-*"))
    server = ServerProcess(**SERVER, engine="onnxruntime", log_path=tmp_path / "server.log")
    with server:
        assert server.engine_cache.parent == tmp_path
        assert list(server.engine_cache.glob("*.onnx")), "the server exported no model there"
    assert not server.engine_cache.exists()
    assert set(Path(tempfile.gettempdir()).glob("devicebench-engines-*")) == in_tmp
