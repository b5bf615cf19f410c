"""A serve cell of the batch_wait sweep, end to end: its real scoring server batches in the
cell's window, and the record says so from the server's own health answer."""

from __future__ import annotations

import json

from devicebench.data import prepare_dataset
from devicebench.plan.grid import make_cell
from devicebench.run.runner import run_cell


def test_a_cell_without_a_batch_window_runs_a_server_without_one(tmp_path):
    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp_path / "d", train_samples=4, test_samples=16
    )
    values = dict(task="serve_image", model="mobilenetv2", framework="torch", device="cpu")
    values |= dict(threads=2, precision="fp32", batch_size=4, mode="serve")
    serve = {"image_size": 32, "requests": 24, "warmup_requests": 4, "loadgen_scenarios": []}
    settings = {"dataset": "jpeg_images", "seed": 1, "timeout_s": 300, "serve": json.dumps(serve)}
    cell = make_cell(values, {"clients": 4, "batch_wait": 0}, settings)
    assert "/batch_wait~0/" in cell.cell_id
    record = run_cell(
        cell, data=manifest, out=tmp_path / "cell.json", extra={"log_dir": str(tmp_path / "l")}
    )
    assert record["status"] == "ok", record.get("message")
    assert record["axes"]["batch_wait"] == 0
    assert record["serving"]["batch_wait_ms"] == 0.0  # the server's health answer says so
    assert record["serving"]["pool"]["ok"] == 24
