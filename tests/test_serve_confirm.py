"""The confirm step of a serving sweep (serve.slo.confirm: best): the choice of each device's best
sweep cell from real-format records, the confirm cell it runs, the blocks that hold it, the
record of a step with nothing to confirm (scripts/confirm_serve.py run for real), and the
verdict read from the confirm record, the sweep cells as context."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from devicebench.aggregate import analysis
from devicebench.aggregate.best import best_table
from devicebench.aggregate.collect import collect_records
from devicebench.aggregate.serving_slo import slo_table
from devicebench.plan.config import ConfigError, check_config, load_config
from devicebench.plan.confirm import assign_confirms, confirm_groups, confirm_spec
from devicebench.plan.grid import expand_grid
from devicebench.serving import slo
from devicebench.serving.sweep_choice import BY_COST, BY_RATE, candidate, choose

PRICES = {
    "cpu": {"per_vcpu_hour": 0.05, "min_vcpus": 2},
    "cuda": [{"match": "H100", "per_hour": 4}],
}
BOOT, CODE = "b-1", "0.1.0+abc1234"


def sweep_slo(status: str, probe_qps: float | None, bound: float = 15.0) -> dict:
    """A sweep cell's serving.slo as serving.slo.Search writes it with confirm: best."""
    return {
        "status": status, "message": f"probes only (confirm: best): {status}",
        "p99_bound_ms": bound, "max_valid_qps": None, "run_qps": None, "confirmed_at_qps": None,
        "probe_qps": probe_qps, "runs": 0, "duration_s": 60.0, "queries": [],
        "early_stopping_met": False, "probes": [], "confirms": [],
        "settings": {"p99_bound_ms": bound, "confirm": "best"},
    }  # fmt: skip


def record(device: str, found: dict | None, *, status: str = "ok", threads: int = 16, **axes):
    """A serve record in the format a serve cell writes."""
    rate = (found or {}).get("max_valid_qps") or 50.0
    return {
        "cell_id": axes.pop("cell_id", f"{device}-{threads}-{axes.get('replicas', 1)}"),
        "axes": {
            "task": "serve_image", "model": "resnet50", "framework": "torch", "device": device,
            "threads": threads, "precision": "bf16", "batch_size": 32, "mode": "serve",
            "clients": 128, "server": "uvicorn", "replicas": 1,
        } | axes,
        "status": status, "message": "" if status == "ok" else "it failed",
        "timings": {"latency_ms": {"p99": 30.0}},
        "throughput": {"samples_per_s": rate, "requests_per_s": rate},
        "serving": {"pool": {"requests_per_s": rate}, "slo": found, "inprocess_ratio": 0.9},
        "environment": {"boot_id": BOOT, "threads": threads,
                        "gpu_name": "NVIDIA H100 80GB HBM3" if device == "cuda" else None},
        "provenance": {"code_version": CODE},
    }  # fmt: skip


# the choice -------------------------------------------------------------------------------


def test_the_best_sweep_cell_is_the_highest_probe_rate_per_dollar_hour():
    # 4 threads at 300 QPS beats 16 threads at 600 QPS per dollar (4 vs 16 vCPUs rented)
    small = record("cpu", sweep_slo("probed", 300.0), threads=4, cell_id="t4")
    large = record("cpu", sweep_slo("probed", 600.0), threads=16, cell_id="t16")
    chosen = choose([candidate("t16", large, PRICES), candidate("t4", small, PRICES)])
    assert chosen.status == "chosen" and chosen.chosen.cell_id == "t4"
    assert chosen.ranked_by == BY_COST
    by_rate = choose([candidate("t16", large), candidate("t4", small)])  # no prices: rate alone
    assert by_rate.chosen.cell_id == "t16" and by_rate.ranked_by == BY_RATE


def test_a_tie_is_broken_the_same_way_whatever_the_order():
    a = candidate("b-cell", record("cuda", sweep_slo("probed", 500.0), replicas=2), PRICES)
    b = candidate("a-cell", record("cuda", sweep_slo("probed", 500.0), replicas=4), PRICES)
    assert choose([a, b]).chosen.cell_id == choose([b, a]).chosen.cell_id == "a-cell"


def test_cells_without_a_valid_probe_rate_are_never_chosen():
    found = [
        candidate("failed", record("cpu", None, status="error")),
        candidate("no-rate", record("cpu", sweep_slo("no_rate", None))),
        candidate("budget", record("cpu", sweep_slo("over_budget", None))),
        candidate("ok", record("cpu", sweep_slo("probed", 20.0))),
        candidate("missing", None),
    ]
    assert choose(found).chosen.cell_id == "ok"


def test_no_valid_rate_anywhere_says_no_rate_at_the_bound():
    none = [candidate(f"r{i}", record("cpu", sweep_slo("no_rate", None))) for i in range(3)]
    choice = choose(none)
    assert choice.chosen is None and choice.status == "no_rate"
    assert choice.message == "no rate meets p99 <= 15 ms in any of 3 sweep cell(s)"


def test_no_ok_sweep_record_says_what_the_records_were():
    bad = [candidate("e", record("cpu", None, status="error")), candidate("m", None)]
    choice = choose(bad)
    assert choice.chosen is None and choice.status == "no_candidate"
    assert "error 1" in choice.message and "missing 1" in choice.message


# the plan ---------------------------------------------------------------------------------


def _h100_serving() -> dict:
    with warnings.catch_warnings():  # its thread counts are the GPU host's, not this one's
        warnings.simplefilter("ignore", UserWarning)
        return load_config(REPO / "config" / "h100_serving.yaml")


def test_the_h100_serving_sweep_probes_and_confirms_each_devices_best_in_a_block():
    study = _h100_serving()
    cells = expand_grid(study)
    groups = confirm_groups(cells)
    assert len(cells) == 48 and len(groups) == 8  # 4 models x (CPU, GPU)
    assert sum(len(g.members) for g in groups.values()) == len(cells)
    for group in groups.values():
        assert {c.values["model"] for c in group.members} == {group.model}
        assert {c.values["device"] for c in group.members} == {group.device}
    blocks = assign_confirms(study["blocks"], groups.values())
    for name, steps in blocks.items():
        if name.endswith("-confirm"):  # a model's CPU and GPU confirm: one machine
            assert sorted(g.device for g in steps) == ["cpu", "cuda"], name
        else:
            assert steps == [], name
    served = json.loads(cells[0].settings["serve"])["slo"]  # as the sweep cell reads it
    search = slo.SloSettings.from_config("serve_image", "resnet50", served)
    assert search.confirm == "best" and search.confirm_runs >= 3 and search.confirm_s >= 60


def test_the_confirm_cell_is_the_chosen_cell_told_to_confirm_from_its_probe_rate():
    study = _h100_serving()
    cells = expand_grid(study)
    chosen = next(c for c in cells if c.values["device"] == "cuda")
    group = next(g for g in confirm_groups(cells, study["tasks"]).values() if chosen in g.members)
    spec = confirm_spec(chosen, 812.5, dict(group.settings))
    assert spec.values["confirm"] == "best" and spec.cell_id != chosen.cell_id
    assert {k: v for k, v in spec.values.items() if k != "confirm"} == chosen.values
    serve = json.loads(spec.settings["serve"])
    assert serve["slo"]["confirm"] == "each" and serve["slo"]["start_qps"] == 812.5
    assert serve["slo"]["max_probes"] == 0 and serve["slo"]["budget_s"] == 200
    assert spec.settings["timeout_s"] >= 200 + 150 and serve["loadgen_scenarios"] == []
    settings = slo.SloSettings.from_config("serve_image", chosen.values["model"], serve["slo"])
    assert settings.confirm == "each" and settings.confirm_runs == 3


def test_the_confirm_steps_own_settings_never_rerun_a_sweep_cell():
    study = _h100_serving()
    before = {c.cell_id: c.config_hash() for c in expand_grid(study)}
    study["tasks"]["serve_image"]["serve"]["slo"]["confirm_budget_s"] = 400
    study["tasks"]["serve_image"]["serve"]["slo"]["confirm_probes"] = 3
    cells = expand_grid(study)
    assert {c.cell_id: c.config_hash() for c in cells} == before
    assert all("confirm_budget_s" not in c.settings["serve"] for c in cells)
    groups = confirm_groups(cells, study["tasks"]).values()
    image = [dict(g.settings) for g in groups if g.task == "serve_image"]
    assert image and all(s == {"confirm_probes": 3, "confirm_budget_s": 400} for s in image)


def test_a_confirm_step_in_no_block_or_a_confirm_best_without_runs_stops_the_config():
    config = _h100_serving()
    del config["blocks"]["serve-resnet50-confirm"]
    with pytest.raises(ConfigError, match="confirm steps are in no block"):
        study = check_config(config)
        assign_confirms(study["blocks"], confirm_groups(expand_grid(study)).values())
    config = _h100_serving()
    config["tasks"]["serve_text"]["serve"]["slo"]["confirm_runs"] = 0
    with pytest.raises(ConfigError, match="confirm: best confirms"):
        check_config(config)
    config = _h100_serving()
    config["tasks"]["serve_text"]["serve"]["slo"]["confirm"] = "all"
    with pytest.raises(ConfigError, match="confirm"):
        check_config(config)


def test_a_confirm_without_probes_runs_the_confirming_runs_at_the_sweeps_rate(tmp_path):
    """max_probes 0 (confirm_probes 0): LoadGen Server runs against a real server of 100
    requests/s capacity (tests/queue_server.py) at the given rate, no probe."""
    from queue_server import queue_server

    settings = slo.SloSettings(
        p99_bound_ms=150.0, max_probes=0, start_qps=40.0, confirm_runs=1, confirm_s=1.0,
        budget_s=120.0, min_qps=10.0,
    )  # fmt: skip
    with queue_server(10.0) as url:
        found = slo.search(url, [b"x" * 64] * 8, tmp_path / "slo", settings, 0.0, "text/plain")
    assert found["probes"] == [] and len(found["confirms"]) >= 1
    assert found["confirms"][0]["target_qps"] == 40.0
    assert "no probes (max_probes 0)" in found["message"]
    assert found["status"] in ("ok", "not_confirmed"), found["message"]  # a shared host's stall


# the step with nothing to confirm, for real ---------------------------------------------


def test_a_confirm_step_whose_sweep_has_no_ok_record_writes_a_record_saying_so(tmp_path):
    cells = [c for c in expand_grid(_h100_serving()) if c.values["device"] == "cpu"][:2]
    paths = []
    for index in range(len(cells)):
        path = tmp_path / f"sweep{index}.json"
        path.write_text(json.dumps(record("cpu", None, status="error")))
        paths.append(str(path))
    group = {"id": "confirm/task~serve_image/model~mobilenetv2/device~cpu",
             "specs": [cell.to_dict() for cell in cells]}  # fmt: skip
    out = tmp_path / "confirm.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "confirm_serve.py"), "--group-json",
         json.dumps(group), "--sweep", *paths, "--out", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = json.loads(out.read_text())
    assert written["status"] == "skipped" and "nothing to confirm" in written["message"]
    assert written["serving"]["slo"]["status"] == "no_candidate"
    assert written["serving"]["slo"]["max_valid_qps"] is None
    assert written["axes"]["confirm"] == "best" and written["axes"]["device"] == "cpu"
    assert written["axes"]["threads"] == 16, "threads as the sweep records resolved them"
    assert written["confirm"]["chosen_cell"] is None
    assert written["environment"]["boot_id"] and written["provenance"]["code_version"]


# the verdict ------------------------------------------------------------------------------


def _confirmed(device: str, rate: float | None, status: str = "ok", **axes) -> dict:
    found = sweep_slo(status, rate) | {"max_valid_qps": rate, "runs": 3 if rate else 0}
    found["run_qps"] = [rate] * 3 if rate else None
    written = record(device, found, cell_id=f"confirm-{device}", confirm="best", **axes)
    written["confirm"] = {"status": "chosen", "chosen_cell": f"{device}-16-{axes['replicas']}"}
    return written


def _write(tmp: Path, records: list[dict]) -> list[Path]:
    paths = []
    for index, body in enumerate(records):
        paths.append(tmp / f"r{index}.json")
        paths[-1].write_text(json.dumps(body))
    return paths


def _best(paths: list[Path]) -> pd.DataFrame:
    frame = best_table(analysis.add_analysis(collect_records(paths), PRICES, "cpu"))
    return frame[frame["mode"].eq("serve")].set_index("pick")


def test_the_verdict_reads_the_confirm_records_and_never_a_sweep_probe(tmp_path):
    paths = _write(tmp_path, [
        record("cpu", sweep_slo("probed", 900.0), replicas=2),  # a high probe: context only
        record("cuda", sweep_slo("probed", 5000.0), replicas=8),
        _confirmed("cpu", 400.0, replicas=4),
        _confirmed("cuda", 3000.0, replicas=4),
    ])  # fmt: skip
    row = _best(paths).loc["fastest"]
    assert row["cpu_cell"] == "confirm-cpu" and row["gpu_cell"] == "confirm-cuda"
    assert row["cpu_samples_per_s"] == 400.0 and row["gpu_samples_per_s"] == 3000.0
    table = slo_table(paths, PRICES).set_index("cell_id")
    assert table.loc["confirm-cpu", "slo_role"] == "confirmed best"
    assert table.loc["confirm-cpu", "confirmed_cell"] == "cpu-16-4"
    assert table.loc["cpu-16-2", "slo_role"] == "sweep (probes only)"


def test_a_confirm_record_outranks_any_other_record_of_its_device(tmp_path):
    """A record that confirmed itself at a higher rate (an earlier config, same machine) is not
    the device's verdict once its confirm step judged it."""
    earlier = sweep_slo("ok", 900.0) | {"max_valid_qps": 900.0, "runs": 3}
    paths = _write(
        tmp_path, [record("cpu", earlier, replicas=2), _confirmed("cpu", 400.0, replicas=4)]
    )
    row = _best(paths).loc["fastest"]
    assert row["cpu_cell"] == "confirm-cpu" and row["cpu_samples_per_s"] == 400.0


def test_a_confirm_step_with_nothing_to_confirm_gives_its_reason(tmp_path):
    nothing = record("cpu", sweep_slo("no_candidate", None) | {"message": "no sweep cell has a "
                     "VALID probe rate at p99 <= 15 ms (error 2)"}, status="skipped",
                     cell_id="confirm-cpu", confirm="best")  # fmt: skip
    paths = _write(tmp_path, [nothing, _confirmed("cuda", 3000.0, replicas=4)])
    row = _best(paths).loc["fastest"]
    assert "CPU: nothing confirmed: no sweep cell has a VALID probe rate" in row["note"]


def test_a_device_whose_confirm_found_no_rate_says_so_never_a_made_up_rate(tmp_path):
    no_rate = record("cpu", sweep_slo("no_rate", None), status="skipped", cell_id="confirm-cpu",
                     confirm="best")  # fmt: skip
    paths = _write(tmp_path, [
        record("cpu", sweep_slo("no_rate", None), replicas=2),
        no_rate,
        _confirmed("cuda", 3000.0, replicas=4),
    ])  # fmt: skip
    row = _best(paths).loc["fastest"]
    assert "CPU: no rate meets p99 <= 15 ms" in row["note"]
    assert pd.isna(row["cpu_samples_per_s"]) and row["gpu_samples_per_s"] == 3000.0
    assert row["cheaper"] == "gpu"


def test_a_sweep_without_its_confirm_record_gives_no_verdict(tmp_path):
    paths = _write(tmp_path, [
        record("cpu", sweep_slo("probed", 900.0), replicas=2),
        record("cuda", sweep_slo("probed", 5000.0), replicas=8),
    ])  # fmt: skip
    row = _best(paths).loc["fastest"]
    assert pd.isna(row["cpu_samples_per_s"]) and pd.isna(row["gpu_samples_per_s"])
    assert "CPU: sweep probes only" in row["note"] and "GPU: sweep probes only" in row["note"]


def test_a_sweep_of_which_a_cell_ran_over_budget_is_still_a_sweep_without_its_confirm(tmp_path):
    over = sweep_slo("over_budget", None)
    paths = _write(tmp_path, [
        record("cpu", sweep_slo("probed", 900.0), replicas=1),
        record("cpu", over, replicas=4),
        record("cuda", sweep_slo("probed", 5000.0), replicas=8),
    ])  # fmt: skip
    note = _best(paths).loc["fastest"]["note"]
    assert "CPU: sweep probes only (over_budget 1, probed 1), no confirm record" in note
    assert "no confirmed rate" not in note


def test_a_sweep_confirmed_on_another_machine_gives_one_verdict_from_the_confirm(tmp_path):
    """The confirm blocks ran in a later session, on another machine and code version: the
    verdict pairs the two confirm records; the sweep gives no second, verdict-less row."""
    confirms = [_confirmed("cpu", 400.0, replicas=1), _confirmed("cuda", 3000.0, replicas=8)]
    for body in confirms:
        body["environment"]["boot_id"], body["provenance"]["code_version"] = "b-2", "0.1.0+def"
    paths = _write(tmp_path, [
        record("cpu", sweep_slo("probed", 900.0), replicas=1),
        record("cpu", sweep_slo("over_budget", None), replicas=4),
        record("cuda", sweep_slo("probed", 5000.0), replicas=8),
        *confirms,
    ])  # fmt: skip
    best = _best(paths)
    assert len(best) == 2 and set(best["boot_id"]) == {"b-2"}
    row = best.loc["fastest"]
    assert row["cpu_samples_per_s"] == 400.0 and row["gpu_samples_per_s"] == 3000.0
    # a sweep whose cells no confirm record names keeps its verdict-less row
    (tmp_path / "other").mkdir()
    unconfirmed = record("cuda", sweep_slo("probed", 5000.0), replicas=2)
    unconfirmed["environment"]["boot_id"] = "b-3"
    other = _write(tmp_path / "other", [unconfirmed])
    assert set(_best([*paths, *other])["boot_id"]) == {"b-2", "b-3"}


def test_blocks_py_hands_gpu_host_the_confirm_records_of_a_block(tmp_path):
    said = []

    def blocks(*args: str) -> str:
        command = [sys.executable, str(REPO / "scripts" / "blocks.py"), *args]
        done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO)
        said.append(done.stderr)
        return done.stdout

    config = str(REPO / "config" / "h100_serving.yaml")
    wanted = blocks(config, "--block", "serve-resnet50-confirm", "--missing", str(tmp_path)).split()
    assert wanted == [
        "results/cells/confirm/task~serve_image/model~resnet50/device~cpu.json",
        "results/cells/confirm/task~serve_image/model~resnet50/device~cuda.json",
    ]
    assert "confirm/task~serve_image/model~resnet50/device~cpu: 8 of its 8 sweep records" in said[0]
    assert len(blocks(config, "--pattern", "^confirm/").split()) == 8
    done = tmp_path / wanted[0].removeprefix("results/cells/")
    done.parent.mkdir(parents=True)
    done.write_text(json.dumps(record("cpu", None) | {"environment": {"boot_id": BOOT}}))
    left = blocks(config, "--block", "serve-resnet50-confirm", "--missing", str(tmp_path))
    assert left.split() == wanted[1:]
    row = next(r for r in blocks(config, "--records", str(tmp_path)).splitlines()
               if "serve-resnet50-confirm" in r)  # fmt: skip
    assert "| 2 (1 / 1) | 1 |" in row and "1 cells without a record" in row, row


def test_replica_scaling_is_based_on_the_sweep_not_on_a_confirms_repeat(tmp_path):
    from devicebench.aggregate.serving import serving_table

    def pooled(body: dict, rate: float) -> dict:
        body["serving"]["pool"] = {"requests_per_s": rate, "requests": 100}
        return body

    paths = _write(tmp_path, [
        pooled(record("cpu", sweep_slo("probed", 90.0), replicas=1), 100.0),
        pooled(record("cpu", sweep_slo("probed", 140.0), replicas=2), 150.0),
        pooled(_confirmed("cpu", 80.0, replicas=1), 50.0),  # the best per dollar, repeated
    ])  # fmt: skip
    table = serving_table(paths, PRICES)
    two = table[table["replicas"].eq(2)].iloc[0]
    assert two["replica_scaling_efficiency"] == pytest.approx(150.0 / (2 * 100.0))
    assert sorted(table["slo_role"]) == ["confirmed best", *["sweep (probes only)"] * 2]
