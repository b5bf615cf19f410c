"""The latency-bound search: MLPerf LoadGen's Server scenario against a tiny real HTTP server
of known capacity (tests/queue_server.py: one request at a time, a fixed service time), short
bounds and short runs; and the config errors of the per-model bounds."""

from __future__ import annotations

import statistics
import warnings

import pytest
from conftest import REPO
from queue_server import queue_server

from devicebench.plan.config import ConfigError, check_config, load_config
from devicebench.serving import slo
from devicebench.serving.bounds import NoBound, bound_ms, check_bounds

BODIES = [b"x" * 64] * 8
KIND = "application/octet-stream"


def _search(url, tmp_path, **given):
    settings = slo.SloSettings(**({"probe_s": 1.0, "confirm_s": 1.0, "budget_s": 300.0} | given))
    return slo.search(url, BODIES, tmp_path / "slo", settings, 40.0, KIND)


def test_search_brackets_bisects_and_confirms_below_the_servers_capacity(tmp_path):
    # capacity 100 requests/s: above it the queue grows by the excess, past the 150 ms bound
    # within a run; the bound stays well above this shared host's scheduling stalls (~60 ms)
    service_ms, bound = 10.0, 150.0
    with queue_server(service_ms) as url:
        found = _search(
            url, tmp_path, p99_bound_ms=bound, confirm_runs=2, min_qps=10.0, max_probes=6,
            tolerance=0.1, confirm_attempts=3, backoff=0.7,
        )  # fmt: skip
    probes = found["probes"]
    assert found["status"] == "ok", found["message"]
    valid = [p["target_qps"] for p in probes if p["valid"]]
    invalid = [p["target_qps"] for p in probes if not p["valid"]]
    assert valid and invalid, "the search brackets: a VALID rate and an INVALID one"
    assert max(valid) < min(invalid), "the bracket only narrows"
    assert probes[1]["target_qps"] == 2 * probes[0]["target_qps"], "doubles from a VALID start"
    assert found["probe_qps"] == max(valid) < min(invalid)
    assert found["confirmed_at_qps"] <= found["probe_qps"]
    assert found["runs"] == 2 and len(found["run_qps"]) == 2
    assert found["max_valid_qps"] == statistics.median(found["run_qps"])
    assert found["confirmed_at_qps"] < 1000 / service_ms
    assert found["early_stopping_met"] is True
    assert all(q >= slo.loadgen.SERVER_EARLY_STOPPING_QUERIES for q in found["queries"])
    confirmed = [r for r in found["confirms"] if r["target_qps"] == found["confirmed_at_qps"]]
    assert all(r["valid"] and r["p99_ms"] <= bound for r in confirmed)
    assert len({r["log_dir"] for r in found["probes"] + found["confirms"]}) == len(
        found["probes"] + found["confirms"]
    ), "every run keeps its own LoadGen logs"


def _confirm_only(tmp_path, start_qps, **given):
    """The confirming runs alone (no probes, as the confirm step of a sweep) against a server of
    100 requests/s (one at a time, 10 ms each) at a 150 ms bound: over its capacity the queue
    grows past the bound within a run."""
    with queue_server(10.0) as url:
        return _search(url, tmp_path, p99_bound_ms=150.0, start_qps=start_qps, max_probes=0,
                       **given)  # fmt: skip


def test_an_invalid_confirming_run_ends_its_attempt_and_the_next_backs_off(tmp_path):
    # 200 QPS overflows the server, which falls behind: it completes about its capacity
    # (100/s), and the next attempt starts a quarter of that, not of 200 (50 QPS)
    found = _confirm_only(tmp_path, 200.0, confirm_runs=2, confirm_attempts=2, backoff=0.25,
                          min_qps=10.0)  # fmt: skip
    assert found["probes"] == []
    first = found["confirms"][0]
    rates = [run["target_qps"] for run in found["confirms"]]
    assert len(rates) == 3 and rates[0] == 200.0, "the attempt at 200 QPS stopped at once"
    assert not first["valid"] and first["completed_qps"] < 0.95 * first["scheduled_qps"]
    assert rates[1] == rates[2] == pytest.approx(0.25 * first["completed_qps"])
    assert rates[1] < 50.0
    assert found["status"] == "ok", found["message"]
    assert found["confirmed_at_qps"] == rates[1] and found["runs"] == 2


def test_a_probe_far_over_capacity_steps_under_the_rate_the_server_completed(tmp_path):
    # 400 QPS against a server of 100/s: the probe falls behind and completes about 100/s, so
    # the next probe is backoff (0.5) under that, about 50, not half of 400 (200 QPS, which
    # would fall behind again and drain a longer queue); min_qps 40 stops the search there
    with queue_server(10.0) as url:
        found = _search(url, tmp_path, p99_bound_ms=150.0, start_qps=400.0, confirm_runs=0,
                        max_probes=2, backoff=0.5, min_qps=40.0)  # fmt: skip
    first, second = found["probes"]
    assert not first["valid"] and first["completed_qps"] < 0.95 * first["scheduled_qps"]
    assert second["target_qps"] == pytest.approx(max(0.5 * first["completed_qps"], 40.0))
    assert second["target_qps"] < 100.0


def test_not_confirmed_counts_the_attempts_it_made(tmp_path):
    # a 5 ms bound under the 10 ms service time: every run fails; 40 QPS is under the capacity
    # (no falling behind), so each attempt backs off by half, until 10 QPS is under min_qps
    with queue_server(10.0) as url:
        found = _search(url, tmp_path, p99_bound_ms=5.0, start_qps=40.0, max_probes=0,
                        confirm_runs=3, confirm_attempts=3, backoff=0.5, min_qps=15.0)  # fmt: skip
    assert found["status"] == "not_confirmed"
    assert [run["target_qps"] for run in found["confirms"]] == [40.0, 20.0]
    assert (
        found["message"]
        == "a confirming run INVALID (p99 <= 5 ms) in each of 2 attempt(s): at 40, 20 QPS"
    ), found["message"]


def test_a_confirm_out_of_budget_after_an_invalid_run_says_both(tmp_path):
    # the first confirming run (200 QPS, over the capacity) fails; its backoff (459 queries
    # at 50 QPS: 9.2 s) would pass the 6 s budget
    found = _confirm_only(tmp_path, 200.0, confirm_runs=2, confirm_attempts=2, backoff=0.25,
                          min_qps=10.0, budget_s=6.0)  # fmt: skip
    assert found["status"] == "over_budget" and found["max_valid_qps"] is None
    assert [run["target_qps"] for run in found["confirms"]] == [200.0]
    assert found["message"].startswith("confirming run(s) (p99 <= 150 ms): INVALID at 200 QPS")
    assert "would pass the search's budget_s 6" in found["message"]


def test_a_bound_under_one_service_time_has_no_rate(tmp_path):
    with queue_server(10.0) as url:  # every answer takes 10 ms: a 5 ms p99 cannot be met
        found = _search(url, tmp_path, p99_bound_ms=5.0, min_qps=50.0, start_qps=100.0)
    assert found["status"] == "no_rate"
    assert found["max_valid_qps"] is None and found["runs"] == 0
    assert [p["target_qps"] for p in found["probes"]] == [100.0, 50.0]
    assert all(not p["valid"] and p["p99_ms"] > 5.0 for p in found["probes"])
    assert "p99 <= 5 ms" in found["message"]


def test_probes_alone_give_no_verdict(tmp_path):
    with queue_server(2.0) as url:
        found = _search(url, tmp_path, p99_bound_ms=200.0, confirm_runs=0, max_probes=1)
    assert found["status"] == "probed"
    assert found["probe_qps"] == 40.0 and found["max_valid_qps"] is None
    assert found["runs"] == 0 and found["confirms"] == []


def test_a_search_past_its_budget_says_so_without_running(tmp_path):
    with queue_server(2.0) as url:
        found = _search(url, tmp_path, p99_bound_ms=50.0, budget_s=0.5)
    assert found["status"] == "over_budget"
    assert "budget_s 0.5" in found["message"]
    assert found["probes"] == [] and found["max_valid_qps"] is None


def test_probing_stops_to_leave_the_confirming_runs_their_time(tmp_path):
    # at 50 QPS a run of 459 queries lasts 9.2 s: the budget holds the first probe and one
    # confirming run (18.4 s) with 2.3 s to spare, but not the next probe (4.6 s) as well
    with queue_server(2.0) as url:
        found = _search(
            url, tmp_path, p99_bound_ms=200.0, start_qps=50.0, confirm_runs=1, budget_s=20.6
        )
    assert found["status"] == "ok", found["message"]
    assert [p["target_qps"] for p in found["probes"]] == [50.0]
    assert (
        "probing stopped" in found["message"]
        and "kept for the confirming runs" in (found["message"])
    )
    assert found["confirmed_at_qps"] == 50.0 and found["runs"] == 1


def test_loadgen_that_cannot_start_is_recorded_as_failed(tmp_path):
    blocker = tmp_path / "slo"
    blocker.write_text("a file where LoadGen's log folder must go")
    with queue_server(2.0) as url:
        found = _search(url, tmp_path, p99_bound_ms=50.0)
    assert found["status"] == "loadgen_failed"
    assert "LoadGen failed at 40 QPS" in found["message"]
    assert found["max_valid_qps"] is None


def test_mlperf_bounds_are_the_defaults():
    assert bound_ms("serve_image", "resnet50") == 15.0
    assert bound_ms("serve_text", "bert-base") == 130.0
    assert bound_ms("serve_image", "resnet50", {"resnet50": 20}) == 20.0


def test_a_model_without_a_bound_is_an_error_naming_it():
    with pytest.raises(NoBound, match="'convnext-serve'.*serve_image"):
        bound_ms("serve_image", "convnext-serve")
    with pytest.raises(NoBound, match="convnext-serve"):
        check_bounds("serve_image", ["resnet50", "convnext-serve"], {"probe_s": 1})
    check_bounds("serve_image", ["convnext-serve"], None)  # no search asked: no bound needed


def test_slo_settings_name_an_unknown_key():
    with pytest.raises(ValueError, match="probe_seconds"):
        slo.SloSettings.from_config("serve_image", "resnet50", {"probe_seconds": 1})
    # a serve cell's LoadGen runs issue the early-stopping estimate's 459 queries at least
    with pytest.raises(ValueError, match="min_queries must be a whole number >= 459"):
        slo.SloSettings.from_config("serve_image", "resnet50", {"min_queries": 64})
    given = {"min_queries": 600}
    assert slo.SloSettings.from_config("serve_image", "resnet50", given).min_queries == 600


@pytest.mark.parametrize(
    ("bounds", "words"),
    [
        ({"resnet152": 40}, ["tasks.serve_image.serve.slo.p99_bounds_ms.resnet152", "not served"]),
        ({"mobilenetv2": -1}, ["p99_bounds_ms", "-1"]),
    ],
)
def test_config_bounds_are_checked_before_any_cell(bounds, words):
    config = load_config(REPO / "config" / "config.yaml")
    config["tasks"]["serve_image"]["serve"]["slo"]["p99_bounds_ms"] = bounds
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    for word in words:
        assert word in str(caught.value), str(caught.value)


def test_a_study_s_bounds_replace_the_quick_study_s_whole():
    """A study serving other models gives its own bounds; the quick study's bound for
    MobileNetV2 does not leak in (it would be a bound for a model not served)."""
    from devicebench.plan.config import combine_configs

    default = load_config(REPO / "config" / "config.yaml")
    assert default["tasks"]["serve_image"]["serve"]["slo"]["p99_bounds_ms"] == {"mobilenetv2": 250}
    study = {
        "tasks": {
            "serve_image": {
                "models": ["resnet50"],
                "serve": {"slo": {"p99_bounds_ms": {"resnet50": 50}}},
            }
        }
    }
    combined = check_config(combine_configs(default, [study]))
    slo_settings = combined["tasks"]["serve_image"]["serve"]["slo"]
    assert slo_settings["p99_bounds_ms"] == {"resnet50": 50}
    assert slo_settings["probe_s"] == 1  # the rest of the default's settings still fill in


def test_a_serve_cell_records_its_search_and_its_in_process_yardstick(tmp_path):
    """A real serve cell (MobileNetV2 at 32 px on 2 threads behind the scoring server) with a
    short search and the yardstick: the record's serving.slo and serving.inprocess_ratio."""
    import json

    from devicebench.data import prepare_dataset
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    manifest = prepare_dataset(
        "jpeg_images", "synthetic", tmp_path / "d", train_samples=4, test_samples=16
    )
    values = dict(task="serve_image", model="mobilenetv2", framework="torch", device="cpu")
    values |= dict(threads=2, precision="fp32", batch_size=4, mode="serve")
    search = {"p99_bounds_ms": {"mobilenetv2": 500}, "probe_s": 0.5, "confirm_runs": 1}
    search |= {"confirm_s": 0.5, "max_probes": 2, "min_qps": 20, "budget_s": 120}
    serve = {"image_size": 32, "requests": 24, "warmup_requests": 4, "loadgen_scenarios": []}
    serve |= {"slo": search, "inprocess_s": 0.5}
    settings = {"dataset": "jpeg_images", "seed": 1, "timeout_s": 400, "serve": json.dumps(serve)}
    out = tmp_path / "cell.json"
    record = run_cell(
        make_cell(values, {"clients": 4}, settings),
        data=manifest,
        out=out,
        extra={"log_dir": str(tmp_path / "logs")},
    )
    assert record["status"] == "ok", record.get("message")
    found = record["serving"]["slo"]
    assert found["status"] in slo.STATUSES and found["p99_bound_ms"] == 500
    assert found["probes"], found["message"]
    assert all(p["queries"] >= slo.loadgen.SERVER_EARLY_STOPPING_QUERIES for p in found["probes"])
    if found["status"] == "ok":
        assert found["max_valid_qps"] == statistics.median(found["run_qps"])
    else:
        assert found["max_valid_qps"] is None
    yardstick = record["serving"]["inprocess"]
    assert yardstick["samples_per_s"] > 0 and yardstick["batch"] == 4
    ratio = record["serving"]["inprocess_ratio"]
    pool = record["serving"]["pool"]["requests_per_s"]
    assert ratio == pytest.approx(pool / yardstick["samples_per_s"])
    assert record["serving"]["inprocess_below_target"] == (ratio < 0.8)
    assert json.loads(out.read_text())["serving"]["slo"]["status"] == found["status"]


def test_the_h100_serving_config_confirms_at_mlperf_length_in_blocks_that_pair():
    """study.yaml confirms every serve cell; h100_serving.yaml sweeps with probes and confirms
    each device's best (tests/test_serve_confirm.py): 3 runs of 60 s either way, sweep blocks
    pairing CPU and GPU cells, confirm blocks holding no cell."""
    from devicebench.plan.blocks import assign_blocks
    from devicebench.plan.grid import expand_grid

    for name in ("h100_serving.yaml", "study.yaml"):
        with warnings.catch_warnings():  # their thread counts are the GPU host's, not this one's
            warnings.simplefilter("ignore", UserWarning)
            study = load_config(REPO / "config" / name)
        for task in ("serve_image", "serve_text"):
            search = study["tasks"][task]["serve"]["slo"]
            assert search["confirm_runs"] >= 3 and search["confirm_s"] >= 60, name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        study = load_config(REPO / "config" / "h100_serving.yaml")
    cells = expand_grid(study)
    gpu = [c.values for c in cells if c.values["device"] == "cuda"]
    assert gpu and all(v["precision"] == "bf16" for v in gpu)
    assert {int(c.values["replicas"]) for c in cells} == {1, 2, 4, 8}
    blocks = assign_blocks(study["blocks"], cells)
    assert sum(len(members) for members in blocks.values()) == len(cells)
    for block, members in blocks.items():
        devices = {cell.values["device"] for cell in members}
        assert devices == (set() if block.endswith("-confirm") else {"cpu", "cuda"}), block


def test_a_served_model_with_no_bound_anywhere_stops_the_config(monkeypatch):
    from devicebench.workloads.serve_image import ServeImage

    defaults = {k: v for k, v in ServeImage.p99_bounds_ms.items() if k != "mobilenetv2"}
    monkeypatch.setattr(ServeImage, "p99_bounds_ms", defaults)  # a model added without one
    config = load_config(REPO / "config" / "config.yaml")
    del config["tasks"]["serve_image"]["serve"]["slo"]["p99_bounds_ms"]
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    message = str(caught.value)
    assert "tasks.serve_image.serve.slo.p99_bounds_ms" in message and "'mobilenetv2'" in message
