"""Aggregate stage: records -> tidy tables -> derived tables -> charts, failures kept."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from devicebench.aggregate.charts import write_charts
from devicebench.aggregate.collect import collect_records, read_table, write_table
from devicebench.aggregate.tables import quality_table, speedup_table, timing_table
from devicebench.record import new_record, write_atomic

REPO = Path(__file__).resolve().parents[1]
LEAD = [
    "task", "model", "framework", "device", "threads", "precision", "batch_size", "mode",
    "status", "message", "median_s", "samples_per_s", "accuracy", "f1_macro", "f1_micro",
]  # fmt: skip
TAIL = [
    "iqr_s", "cov", "noisy", "first_call_s", "n_repetitions", "passes", "window_s", "p50_ms",
    "p90_ms", "p99_ms",
    "loss", "peak_host_mb", "peak_device_mb", "synthetic", "dataset", "source", "cpu_model",
    "gpu_name", "torch_version", "hostname", "slurm_job_id", "boot_id", "seed", "config_hash",
    "code_version", "timed_start", "timed_end", "cell_id",
]  # fmt: skip
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_record(
    root: Path,
    *,
    task: str = "mnist_mlp",
    device: str = "cpu",
    threads: int | None = 2,
    batch_size: int = 128,
    mode: str = "train",
    median_s: float = 1.0,
    status: str = "ok",
    accuracy: float = 0.9,
    **extra: Any,
) -> Path:
    """Write one realistic record; ok rows get timings, throughput, quality and environment."""
    axes = {
        "task": task, "model": "mlp", "framework": "torch", "device": device,
        "threads": threads, "precision": "fp32", "batch_size": batch_size, "mode": mode, **extra,
    }  # fmt: skip
    cell_id = "/".join(f"{k}~{v}" for k, v in axes.items())
    record = new_record(cell_id, axes)
    record["status"] = status
    record["message"] = "" if status == "ok" else f"{status}: something happened"
    record["data"] = {"dataset": "mnist", "source": "synthetic", "synthetic": True,
                      "train_samples": 1024, "test_samples": 256}  # fmt: skip
    record["environment"] = {
        "python": "3.11.9", "libraries": {"torch": "2.13.0"}, "cpu_model": "Xeon",
        "cpu_cores": 16, "threads": threads, "hostname": "node1",
        "gpu_name": "H100" if device == "cuda" else None, "slurm_job_id": None,
    }  # fmt: skip
    record["provenance"] = {"seed": 0, "config_hash": "abc123", "code_version": "deadbeef"}
    if status == "ok":
        reps = [median_s * f for f in (0.98, 1.0, 1.03)]
        record["timings"] = {
            "first_call_s": median_s * 3, "warmup_s": [median_s * 1.5], "repetitions_s": reps,
            "epoch_s": [reps], "latency_ms": {"p50": 1.0, "p90": 1.5, "p99": 2.0},
            "median_s": median_s, "iqr_s": median_s * 0.025, "cov": 0.02, "noisy": False,
            "timed_start": 1_700_000_000.0, "timed_end": 1_700_000_010.0,
            "passes": [2, 2, 3], "window_s": [r * n for r, n in zip(reps, (2, 2, 3), strict=True)],
        }  # fmt: skip
        record["throughput"] = {"samples_per_s": 1024 / median_s, "samples_per_pass": 1024}
        record["quality"] = {"accuracy": accuracy, "f1_macro": accuracy - 0.01,
                             "f1_micro": accuracy, "loss": 0.3}  # fmt: skip
        record["memory"] = {"peak_host_mb": 512.0, "peak_device_mb": 64.0}
    path = root / f"{cell_id}.json"
    write_atomic(path, record)
    return path


@pytest.fixture
def records(tmp_path: Path) -> list[Path]:
    root = tmp_path / "cells"
    return [
        make_record(root, device="cpu", threads=2, median_s=4.0),
        make_record(root, device="cpu", threads=8, median_s=2.0),
        make_record(root, device="cuda", threads=None, median_s=0.5, accuracy=0.91),
        make_record(root, device="cpu", threads=8, batch_size=512, median_s=3.0),
        make_record(root, device="cuda", threads=None, batch_size=512, status="error"),
        make_record(root, device="cuda", threads=None, mode="infer", median_s=0.1),
        make_record(root, device="cpu", threads=8, mode="infer", median_s=0.2),
        make_record(root, task="imdb_lstm", device="cpu", threads=8, status="skipped"),
        make_record(root, task="imdb_lstm", device="cuda", threads=None, lstm_kernel="cudnn"),
    ]


@pytest.fixture
def cells(records: list[Path]) -> pd.DataFrame:
    return collect_records(records)


def test_columns_present_and_in_order(cells: pd.DataFrame) -> None:
    cols = list(cells.columns)
    assert cols[: len(LEAD)] == LEAD
    assert cols[len(LEAD)] == "device_label"
    assert cols[len(LEAD) + 1] == "lstm_kernel"
    start = len(LEAD) + 2
    assert cols[start : start + len(TAIL)] == TAIL
    assert len(cells) == 9


def test_values_labels_and_sorting(cells: pd.DataFrame) -> None:
    labels = set(cells["device_label"])
    assert {"cpu:2t", "cpu:8t", "cuda"} <= labels
    mlp = cells[cells.task == "mnist_mlp"]
    row = mlp[(mlp.device_label == "cuda") & (mlp["mode"] == "train")].iloc[0]
    assert row.median_s == 0.5 and row.samples_per_s == 2048
    assert row.torch_version == "2.13.0" and row.gpu_name == "H100"
    assert row.n_repetitions == 3 and bool(row.synthetic) and not bool(row.noisy)
    assert row.passes == 2 and row.window_s > row.median_s
    assert pd.isna(row.slurm_job_id)
    assert list(cells["task"]) == sorted(cells["task"])
    kernel = cells[cells.lstm_kernel.notna()]
    assert list(kernel.lstm_kernel) == ["cudnn"]


def test_failures_kept_with_nan_numbers(cells: pd.DataFrame) -> None:
    failed = cells[cells.status != "ok"]
    assert sorted(failed.status) == ["error", "skipped"]
    assert failed[["median_s", "samples_per_s", "accuracy"]].isna().all().all()
    assert failed.message.str.contains("something happened").all()


def test_missing_keys_and_unreadable_record(tmp_path: Path) -> None:
    sparse = tmp_path / "task~t/device~cpu/mode~train.json"
    write_atomic(sparse, {"status": "timeout", "axes": {"task": "t"}})
    broken = tmp_path / "task~x/batch_size~64/mode~infer.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    df = collect_records([sparse, broken])
    assert len(df) == 2
    bad = df[df.task == "x"].iloc[0]
    assert bad.status == "error" and "unreadable" in bad.message and bad.batch_size == 64
    assert pd.isna(df[df.task == "t"].iloc[0].median_s)


def test_speedup_against_exact_label(cells: pd.DataFrame) -> None:
    sp = speedup_table(cells, "cpu:8t")
    train = sp[(sp.task == "mnist_mlp") & (sp["mode"] == "train") & (sp.batch_size == 128)]
    by_label = train.set_index("device_label")["speedup"]
    assert by_label["cuda"] == pytest.approx(4.0)  # 2.0 s / 0.5 s
    assert by_label["cpu:8t"] == pytest.approx(1.0)
    assert by_label["cpu:2t"] == pytest.approx(0.5)


def test_speedup_base_resolves_to_most_threads(cells: pd.DataFrame) -> None:
    sp = speedup_table(cells, "cpu")
    cuda_train = sp[(sp.device_label == "cuda") & (sp["mode"] == "train") & (sp.batch_size == 128)]
    row = cuda_train[cuda_train.task == "mnist_mlp"].iloc[0]
    assert row.base_label == "cpu:8t" and row.speedup == pytest.approx(4.0)
    infer = sp[(sp.device_label == "cuda") & (sp["mode"] == "infer")].iloc[0]
    assert infer.speedup == pytest.approx(2.0)


def test_speedup_missing_base_and_failures(cells: pd.DataFrame) -> None:
    sp = speedup_table(cells, "cpu")
    assert len(sp) == len(cells)
    lstm = sp[sp.task == "imdb_lstm"]  # cpu cell skipped; cuda cell has another kernel axis
    assert lstm.speedup.isna().all()
    assert (lstm[lstm.status == "ok"].note == "base_missing").all()
    failed = sp[sp.status == "error"].iloc[0]
    assert math.isnan(failed.speedup) and failed.note == "not_ok"


def test_timing_table(cells: pd.DataFrame) -> None:
    tt = timing_table(cells)
    assert len(tt) == len(cells)
    assert {"status", "median_s", "iqr_s", "cov", "noisy", "samples_per_s"} <= set(tt.columns)
    assert tt[tt["mode"] == "infer"].p99_ms.notna().all()
    assert tt[tt["mode"] == "train"].p99_ms.isna().all()


def test_quality_table(cells: pd.DataFrame) -> None:
    qt = quality_table(cells)
    assert len(qt) == 7  # every train row, failures included
    assert {"accuracy", "f1_macro", "f1_micro", "loss", "synthetic"} <= set(qt.columns)
    assert qt.accuracy_spread.isna().all()  # train cells are not compared: nothing converged
    assert qt.synthetic.all()


def _converge(root: Path, device: str, accuracy: float, converged: bool = True) -> Path:
    path = make_record(root, device=device, threads=2 if device == "cpu" else None,
                       mode="converge", accuracy=accuracy)  # fmt: skip
    record = json.loads(path.read_text())
    record["converge"] = {"metric": "accuracy", "target": 0.85, "converged": converged,
                          "time_to_target_s": 5.0 if converged else None, "epochs": 3}  # fmt: skip
    write_atomic(path, record)
    return path


def test_agreement_compares_converged_cells_only(tmp_path: Path) -> None:
    root = tmp_path / "cells"
    both = [_converge(root, "cpu", 0.87), _converge(root, "cuda", 0.90)]
    qt = quality_table(collect_records([*both, make_record(root, device="cpu", accuracy=0.1)]))
    converge = qt[qt["mode"] == "converge"]
    assert converge.accuracy_spread.tolist() == pytest.approx([0.03, 0.03])
    assert qt[qt["mode"] == "train"].accuracy_spread.isna().all()
    short = [_converge(tmp_path / "b", "cpu", 0.87), _converge(tmp_path / "b", "cuda", 0.5, False)]
    qt = quality_table(collect_records(short))
    # the unconverged cell is left out, so the converged one has nothing to be compared with
    assert qt.accuracy_spread.isna().all()


def test_markdown_and_csv_output(cells: pd.DataFrame, tmp_path: Path) -> None:
    csv_path, md_path = write_table(cells, tmp_path / "t" / "cells")
    assert csv_path.name == "cells.csv" and md_path.name == "cells.md"
    lines = md_path.read_text().splitlines()
    assert lines[0].startswith("| task | model | framework |")
    assert set(lines[1]) <= {"|", "-"} and len(lines) == len(cells) + 2
    assert "| 0.025 |" in md_path.read_text() or "0.025" in md_path.read_text()
    assert "3.333e+04" in md_path.read_text() or "| 2048 |" in md_path.read_text()
    back = read_table(csv_path)
    assert list(back.columns) == list(cells.columns)
    assert back.device_label.tolist() == cells.device_label.tolist()


def _check_charts(paths: list[Path], count: int = 8) -> None:
    assert len(paths) == count
    for path in paths:
        assert path.exists() and path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == PNG_MAGIC
        else:
            html = path.read_text()
            assert '<script src="http' not in html and "src='http" not in html


def test_charts_written(cells: pd.DataFrame, tmp_path: Path) -> None:
    paths = write_charts(cells, speedup_table(cells, "cpu"), tmp_path / "charts")
    _check_charts(paths)
    html = (tmp_path / "charts" / "time_vs_batch.html").read_text()
    assert (
        "synthetic data" in html and "not drawn: 1 error, 1 skipped (see the not_ok table)" in html
    )


def test_charts_without_ok_cells(cells: pd.DataFrame, tmp_path: Path) -> None:
    failed = cells[cells.status != "ok"]
    _check_charts(write_charts(failed, speedup_table(failed, "cpu"), tmp_path / "failed"))
    assert "no ok cells" in (tmp_path / "failed" / "throughput_per_cell.html").read_text()
    empty = collect_records([])
    _check_charts(write_charts(empty, speedup_table(empty, "cpu"), tmp_path / "empty"))


def test_scripts_end_to_end(records: list[Path], tmp_path: Path) -> None:
    tables, charts = tmp_path / "tables", tmp_path / "charts"
    run = [sys.executable, str(REPO / "scripts" / "aggregate.py"), "--tables", str(tables)]
    subprocess.run([*run, "--records", str(records[0].parents[8]), "--base", "cpu"], check=True)
    names = {p.name for p in tables.iterdir()}
    tables_written = ("cells", "timing", "speedup", "quality", "environment", "cost", "efficiency",
                      "utilization", "profile_ops", "top_ops", "not_ok", "engines", "best",
                      "serving", "serving_slo", "serving_slo_runs",
                      "generation", "generation_best")  # fmt: skip
    assert names == {f"{n}.{e}" for n in tables_written for e in ("csv", "md")}
    assert len(pd.read_csv(tables / "cells.csv")) == len(records)
    not_ok = pd.read_csv(tables / "not_ok.csv")
    assert sorted(not_ok.status) == ["error", "skipped"] and not_ok.message.notna().all()
    subprocess.run([*run, *map(str, records[:3])], check=True)
    assert len(pd.read_csv(tables / "cells.csv")) == 3
    chart_cmd = [
        *(sys.executable, str(REPO / "scripts" / "charts.py"), "--out", str(charts)),
        *("--cells", str(tables / "cells.csv"), "--speedup", str(tables / "speedup.csv")),
    ]
    subprocess.run(chart_cmd, check=True)
    from devicebench.aggregate.writeup_charts import CHART_NAMES

    # every chart of the registry, as PNG and HTML
    _check_charts(sorted(charts.iterdir()), count=2 * len(CHART_NAMES))
    help_out = subprocess.run([*run[:2], "--help"], check=True, capture_output=True, text=True)
    assert "--records-list" in help_out.stdout


def test_requested_thread_count_is_not_an_axis(tmp_path: Path) -> None:
    """Records keep the requested count ('all' for a GPU cell's host); speedups still pair up."""
    cpu = make_record(tmp_path, device="cpu", threads=12, median_s=2.0, threads_requested=12)
    gpu = make_record(tmp_path, device="cuda", threads=4, median_s=0.5, threads_requested="all")
    sp = speedup_table(collect_records([cpu, gpu]), "cpu")
    assert sp.set_index("device_label").loc["cuda", "speedup"] == pytest.approx(4.0)


def test_a_thread_count_left_unresolved_is_labelled_not_a_crash():
    # a confirm step that confirmed nothing once wrote threads "all" (before its fix): the
    # aggregation of a whole study must not stop at one such record
    from devicebench.aggregate.collect import device_label

    assert device_label("cpu", 16) == "cpu:16t"
    assert device_label("cpu", "all") == "cpu:all"
    assert device_label("cuda", "all") == "cuda"


def test_an_unresolved_thread_count_is_unpriced_and_a_count_in_any_number_type_priced():
    from devicebench.aggregate.pricing import price_per_hour

    prices = {"cpu": {"per_vcpu_hour": 0.05, "min_vcpus": 2}}
    assert math.isnan(price_per_hour("cpu", "all", None, prices))
    assert price_per_hour("cpu", 16, None, prices) == price_per_hour("cpu", 16.0, None, prices)
    assert price_per_hour("cpu", 16.0, None, prices) == pytest.approx(0.8)
