"""Goodput's settings, its search over token latencies (serving.slo's, with a runner that models
a server whose TTFT and TPOT grow with the offered rate), the record section and the generation
table's goodput columns."""

from __future__ import annotations

import math

import pytest
from conftest import REPO

from devicebench.aggregate import generation as table
from devicebench.generation.serving import (
    GoodputSettings,
    TokenSearch,
    check_serving,
    failed_section,
    for_cell,
    goodput_section,
    over_alone,
    within_time_limit,
)

TOKENS = 16


def test_settings_default_to_mlperfs_llama_bounds_and_name_unknown_keys() -> None:
    s = GoodputSettings.from_config({})
    assert (s.ttft_p99_ms, s.tpot_p99_ms) == (2000.0, 100.0)
    s = GoodputSettings.from_config({"ttft_p99_ms": 500, "tpot_p99_ms": 20, "probe_s": 3})
    assert s.slo.p99_bound_ms == 500 and s.slo.probe_s == 3 and s.tpot_p99_ms == 20
    with pytest.raises(ValueError, match=r"unknown generate.serving setting\(s\) \['tpot_ms'\]"):
        GoodputSettings.from_config({"tpot_ms": 100})
    with pytest.raises(ValueError, match="ttft_p99_ms must be a number above 0"):
        GoodputSettings.from_config({"ttft_p99_ms": 0})
    with pytest.raises(ValueError, match="max_batch must be a whole number above 0, not 2.5"):
        GoodputSettings.from_config({"max_batch": 2.5})


def model_server(capacity: float, calls: list):
    """A runner for a server of `capacity` requests/s: TTFT and TPOT rise as the offered rate
    nears it and pass their bounds beyond it; LoadGen's verdict follows both bounds."""

    def run(qps: float, seconds: float, queries: int, number: int) -> dict:
        calls.append(qps)
        load = qps / capacity
        ttft, tpot = 50.0 * load / max(1e-3, 1 - load) if load < 1 else 10_000.0, 10 * load
        if load >= 1:
            tpot = 400.0
        met = ttft <= 2000 and tpot <= 100
        enough = queries >= 459  # LoadGen's early-stopping estimate: INVALID on fewer queries
        valid = met and enough
        return {
            "valid": valid, "validity": "VALID" if valid else "INVALID", "queries": queries,
            "scheduled_qps": qps * 0.99, "completed_qps": min(qps, capacity) * 0.99,
            "latency_met": met, "early_stopping_met": enough, "http_errors": 0,
            "latency_ms": {"p99": ttft + tpot * (TOKENS - 1)},
            "ttft_ms": {"p50": ttft / 2, "p99": ttft}, "tpot_ms": {"p50": tpot / 2, "p99": tpot},
            "output_tokens_per_s": qps * 0.99 * TOKENS,
        }  # fmt: skip

    return run


def _settings(**given) -> GoodputSettings:
    base = {"probe_s": 1.0, "confirm_s": 1.0, "confirm_runs": 3, "min_qps": 0.5}
    return GoodputSettings.from_config(base | given)


def test_search_finds_the_highest_rate_meeting_both_token_bounds() -> None:
    calls: list[float] = []
    s = _settings()
    found = TokenSearch(s, model_server(20.0, calls), clock=lambda: 0.0).run(4.0)
    section = goodput_section(found, s)
    assert section["status"] == "ok", section["message"]
    # the rate where TTFT reaches 2 s: 50 x/(1-x) = 2000 -> x = 40/41 of 20/s
    assert 15.0 <= section["goodput_qps"] <= 20.0 * 40 / 41
    assert section["goodput_qps"] == pytest.approx(section["confirmed_at_qps"] * 0.99)
    assert section["ttft_p99_s"] <= 2.0 and section["tpot_p99_s"] <= 0.1
    assert section["output_tokens_per_s"] == pytest.approx(section["goodput_qps"] * TOKENS)
    assert section["runs"] == 3 and section["early_stopping_met"] is True
    assert any(not p["valid"] for p in section["probes"])  # it bracketed
    assert all("ttft_p99_ms" in p and "tpot_p99_ms" in p for p in section["probes"])
    assert section["ttft_bound_s"] == 2.0 and section["tpot_bound_s"] == 0.1


def test_runs_under_the_early_stopping_count_are_judged_on_their_own_p99() -> None:
    # a server of 2 requests/s: 459 queries would take minutes a run, so the study asks 32
    calls: list[float] = []
    s = _settings(min_queries=32, probe_s=10.0, confirm_s=10.0)
    found = TokenSearch(s, model_server(2.0, calls), clock=lambda: 0.0).run(4.0)
    section = goodput_section(found, s)
    assert section["status"] == "ok", section["message"]
    assert 1.5 <= section["goodput_qps"] <= 2.0 * 40 / 41
    assert all(32 <= q < 459 for q in section["queries"])
    assert section["early_stopping_met"] is False
    runs = section["probes"] + section["confirms"]
    assert {run["judged_on"] for run in runs} == {"p99 of its queries"}
    assert any(not run["valid"] for run in runs)  # the latency check still fails a run
    assert "under the 459 that LoadGen's early-stopping estimate needs" in section["message"]
    with pytest.raises(ValueError, match="min_queries must be a whole number >= 1, not 0"):
        GoodputSettings.from_config({"min_queries": 0})
    # by default every run has the estimate's queries, and LoadGen's verdict judges it
    found = TokenSearch(_settings(), model_server(20.0, []), clock=lambda: 0.0).run(4.0)
    assert all(run["queries"] >= 459 and run["judged_on"] == "loadgen" for run in found["probes"])


def test_a_confirming_run_that_fell_behind_backs_off_under_what_the_server_completed() -> None:
    # offered 30/s, a server of 20/s completes 19.8/s: the next attempt starts 0.9 x 19.8, not
    # 0.9 x 30 (27/s, still over the capacity, where a second attempt would fail as well)
    calls: list[float] = []
    s = _settings(max_probes=0, start_qps=30.0, confirm_runs=2, confirm_attempts=2)
    found = TokenSearch(s, model_server(20.0, calls), clock=lambda: 0.0).run(1.0)
    section = goodput_section(found, s)
    assert calls[0] == 30.0 and calls[1] == pytest.approx(0.9 * 20.0 * 0.99)
    assert section["status"] == "ok", section["message"]
    assert section["confirmed_at_qps"] == pytest.approx(17.82)
    assert section["confirms"][0]["completed_qps"] == pytest.approx(19.8)


def test_no_rate_and_a_loadgen_failure_give_no_rate_and_say_why() -> None:
    s = _settings(min_qps=2.0)
    found = TokenSearch(s, model_server(0.1, []), clock=lambda: 0.0).run(4.0)
    section = goodput_section(found, s)
    assert section["status"] == "no_rate" and section["goodput_qps"] is None
    assert "p99 TTFT <= 2000 ms and p99 TPOT <= 100 ms" in section["message"]
    assert section["ttft_p99_s"] is None and section["output_tokens_per_s"] is None

    def broken(*_args):
        raise RuntimeError("LoadGen exploded")

    section = goodput_section(TokenSearch(s, broken, clock=lambda: 0.0).run(4.0), s)
    assert section["status"] == "loadgen_failed" and section["goodput_qps"] is None
    assert "LoadGen exploded" in section["message"]
    section = failed_section("server_failed", "server exited 1", s)
    assert section["goodput_qps"] is None and section["runs"] == 0


def _record(serving: dict | None) -> dict:
    gen = {"output_tokens_per_s": 500.0} | ({"serving": serving} if serving else {})
    axes = {"task": "textgen_llm", "model": "llama-tiny", "device": "cpu", "threads": 2}
    return {"axes": axes | {"mode": "generate"}, "generation": gen, "status": "ok"}


def test_a_probe_far_over_capacity_steps_to_what_the_server_completed() -> None:
    # a start 18x over a server of 8 requests/s (batches stepped in turn multiplied the start
    # rate, machine 14): the next probe is backoff under the 7.92/s it completed, not 75 QPS,
    # and the search still brackets, bisects and confirms under the capacity
    calls: list[float] = []
    s = _settings(backoff=0.9)
    section = goodput_section(
        TokenSearch(s, model_server(8.0, calls), clock=lambda: 0.0).run(150.0), s
    )
    assert calls[0] == 150.0 and calls[1] == pytest.approx(0.9 * 8.0 * 0.99)
    assert section["status"] == "ok", section["message"]
    assert section["goodput_qps"] < 8.0
    # a server that completes less than min_qps: the floor is tried once, then no_rate
    calls.clear()
    s = _settings(min_qps=2.0)
    none = goodput_section(TokenSearch(s, model_server(0.5, calls), clock=lambda: 0.0).run(16.0), s)
    assert calls == [16.0, 2.0] and none["status"] == "no_rate"


def test_the_generation_table_prices_the_tokens_at_goodput() -> None:
    prices = {"cpu": {"per_vcpu_hour": 0.05}}
    s = _settings()
    found = TokenSearch(s, model_server(20.0, []), clock=lambda: 0.0).run(4.0)
    served = goodput_section(found, s)
    row = table._row(_record(served), prices)
    assert row["serving_status"] == "ok" and row["goodput_qps"] == served["goodput_qps"]
    assert row["no_rate_down_to_qps"] is None
    assert row["goodput_tokens_per_s"] == served["output_tokens_per_s"]
    hourly = 0.05 * 2
    assert row["goodput_cost_per_million_tokens_usd"] == pytest.approx(
        hourly / 3600 / served["output_tokens_per_s"] * 1e6
    )
    assert row["goodput_ttft_p99_s"] == served["ttft_p99_s"]
    assert row["goodput_queries"] >= 459 and row["goodput_early_stopping_met"] is True
    # runs under the early-stopping estimate's queries: the row says how few, and that it failed
    s = _settings(min_queries=32, probe_s=10.0, confirm_s=10.0)
    few = goodput_section(TokenSearch(s, model_server(2.0, []), clock=lambda: 0.0).run(4.0), s)
    row = table._row(_record(few), prices)
    assert row["goodput_queries"] == min(few["queries"]) < 459
    assert row["goodput_early_stopping_met"] is False
    # no rate: the status, no figure
    s = _settings(min_qps=2.0)
    none = goodput_section(TokenSearch(s, model_server(0.1, []), clock=lambda: 0.0).run(4.0), s)
    row = table._row(_record(none), prices)
    assert row["serving_status"] == "no_rate" and row["goodput_qps"] is None
    # ... and how low it looked: the lowest rate it tried, at or over its floor (min_qps 2)
    tried = [run["target_qps"] for run in none["probes"]]
    assert len(tried) > 1 and row["no_rate_down_to_qps"] == min(tried) >= 2.0
    # and the least its million output tokens could cost at a rate under that (tokens asked
    # per request: the cell's output_len; without it, no figure)
    assert row["no_rate_least_cost_per_million_tokens_usd"] is None
    record = _record(none)
    record["axes"]["output_len"] = TOKENS
    least = table._row(record, prices)["no_rate_least_cost_per_million_tokens_usd"]
    assert least == pytest.approx(hourly / 3600 / (min(tried) * TOKENS) * 1e6)
    # confirming runs that failed confirm nothing: no goodput, so no queries behind one
    failed = goodput_section(
        TokenSearch(
            _settings(max_probes=0, start_qps=30.0, confirm_attempts=1),
            model_server(20.0, []), clock=lambda: 0.0,
        ).run(1.0),
        s,
    )  # fmt: skip
    assert failed["status"] == "not_confirmed" and failed["queries"]
    assert table._row(_record(failed), prices)["goodput_queries"] is None
    assert row["goodput_cost_per_million_tokens_usd"] is None
    assert row["goodput_queries"] is None and row["goodput_early_stopping_met"] is None
    # a server that died: its log's tail stays in the record, the table says its first and last line
    died = failed_section(
        "server_failed",
        "server exited 1; its log ends:\nTraceback\n  File x\n"
        "ModuleNotFoundError: No module named 'opentelemetry'",
        s,
    )
    row = table._row(_record(died), prices)
    assert row["serving_message"] == (
        "server exited 1; its log ends: ... ModuleNotFoundError: No module named 'opentelemetry'"
    )
    assert (
        table.one_line("one stream failed") == "one stream failed" and table.one_line(None) is None
    )
    # a cell that did not serve: no goodput column filled
    row = table._row(_record(None), prices)
    assert not any(key in row for key in table.GOODPUT)
    assert set(table.GOODPUT) <= set(table.GENERATION_COLUMNS)
    assert not math.isnan(row["cost_per_million_tokens_usd"])


def test_one_stream_over_a_bound_means_no_rate_without_loadgen() -> None:
    s = GoodputSettings.from_config({"tpot_p99_ms": 100})
    assert over_alone({"qps": 0.2, "ttft_s": 0.3, "tpot_s": 0.09}, s) is None
    why = over_alone({"qps": 0.02, "ttft_s": 0.3, "tpot_s": 0.31}, s)
    assert why is not None and "median TPOT 310 ms over the 100 ms bound" in why
    assert "median TTFT 2500 ms" in over_alone({"qps": 0.1, "ttft_s": 2.5, "tpot_s": 0.0}, s)


def test_cells_selectors_pick_the_cells_that_serve_and_their_own_settings() -> None:
    cell = {"model": "llama-8b", "device": "cpu", "prompt_len": 1024, "batch_size": 1}
    assert for_cell(cell, {"max_batch": 16}) == {"max_batch": 16}  # no selectors: every cell
    given = {
        "max_batch": 16,
        "probe_s": 10,
        "cells": [
            {
                "prompt_len": 1024,
                "device": "cuda",
                "model": "llama-1b",
                "settings": {"max_batch": 32},
            },
            {"prompt_len": 1024, "device": "cuda"},
            {"model": "llama-1b"},
        ],
    }
    assert for_cell(cell, given) is None
    eight = for_cell(cell | {"device": "cuda"}, given)
    assert eight == {"max_batch": 16, "probe_s": 10}
    one = for_cell(cell | {"device": "cuda", "model": "llama-1b"}, given)
    assert one == {"max_batch": 32, "probe_s": 10}  # the first selector that picks it
    assert GoodputSettings.from_config(one).max_batch == 32
    assert GoodputSettings.from_config(eight).max_batch == 16
    check_serving(given)


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        ({"model": "llama-1b", "settings": {"max_batch": 0}}, "max_batch must be a whole number"),
        ({"model": "llama-1b", "settings": {"batch": 32}}, "unknown generate.serving setting"),
        ({"model": "llama-1b", "settings": [32]}, "is not axis -> value"),
        ("llama-1b", "is not axis -> value"),
    ],
)
def test_a_wrong_selector_is_a_config_error(rule, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        check_serving({"max_batch": 16, "cells": [rule]})


def test_the_best_rows_take_the_highest_goodput_among_cells_that_served() -> None:
    import pandas as pd

    prices = {"cpu": {"per_vcpu_hour": 0.05}}
    rows = []
    for capacity, batch in ((20.0, 1), (40.0, 16)):
        s = _settings()
        found = goodput_section(TokenSearch(s, model_server(capacity, []), lambda: 0.0).run(4), s)
        record = _record(found)
        record["axes"] |= {"batch_size": batch, "prompt_len": 1024, "output_len": 128}
        rows.append(table._row(record, prices) | {"quality": "n/a: random weights"})
    rows.append(table._row(_record(None), prices) | {"quality": "n/a: random weights"})
    best = table.generation_best(pd.DataFrame(rows, columns=table.GENERATION_COLUMNS))
    chosen = best.set_index("criterion").loc["highest goodput at the token bounds"]
    assert chosen["batch_size"] == 16 and chosen["goodput_qps"] == rows[1]["goodput_qps"]


@pytest.mark.parametrize(
    ("serving", "words"),
    [
        ({"tpot_ms": 100}, ["tpot_ms"]),
        ({"ttft_p99_ms": -5}, ["ttft_p99_ms", "-5"]),
        ({"cells": [{"prompt_length": 1024}]}, ["prompt_length"]),
        ({"cells": [{"prompt_len": 32, "settings": {"max_batch": 0}}]}, ["max_batch", "0"]),
    ],
)
def test_serving_settings_are_checked_before_any_cell(serving, words) -> None:
    from devicebench.plan.config import ConfigError, check_config, load_config

    config = load_config(REPO / "config" / "config.yaml")
    config["tasks"]["textgen_llm"]["generate"]["serving"] = serving
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    for word in words:
        assert word in str(caught.value), str(caught.value)
    config["tasks"]["textgen_llm"]["generate"]["serving"] = {"cells": [{"prompt_len": 32}]}
    check_config(config)  # a well-formed block passes
    own = {"prompt_len": 32, "settings": {"max_batch": 32}}
    config["tasks"]["textgen_llm"]["generate"]["serving"] = {"max_batch": 16, "cells": [own]}
    check_config(config)  # and one whose selector has its own settings


def test_the_search_gets_what_is_left_of_the_cells_time_limit_after_the_servers_load() -> None:
    """run_serving cuts the budget once the server has loaded and warmed up (a CUDA-graph
    server compiles each batch bucket: minutes at 8B), STOP_RESERVE_S kept for the last run's
    queue, the server's stop and the record; never above the config's budget."""
    import time

    s = GoodputSettings.from_config({"budget_s": 360})
    now = time.perf_counter()
    assert within_time_limit(s, {}, now - 1000).slo.budget_s == 360  # no time limit
    cut = within_time_limit(s, {"timeout_s": 500}, now - 300).slo.budget_s
    assert 165 < cut <= 170  # 500 - 300 spent - 30
    assert within_time_limit(s, {"timeout_s": 500}, now).slo.budget_s == 360
    assert within_time_limit(s, {"timeout_s": 500}, now - 480).slo.budget_s == 0.0
    later = within_time_limit(s, {"timeout_s": 500}, now - 480)
    assert later.max_batch == s.max_batch and later.slo.min_queries == s.slo.min_queries


def test_a_search_out_of_budget_names_the_confirming_runs_it_met_and_missed() -> None:
    """Machine 12's 8B: a confirming run at the bracket missed the bound, one under it met it,
    and the second run under it did not fit the budget: the message says all three."""
    spent = [0.0]

    def server(qps: float, seconds: float, queries: int, number: int) -> dict:
        spent[0] += seconds
        bound = 10.0 if seconds < 5 else 9.5  # a longer run sees more of the queue
        run = model_server(1e6, [])(qps, seconds, queries, number)
        met = qps <= bound
        ttft = 1000.0 if met else 2500.0
        return run | {"valid": met, "validity": "VALID" if met else "INVALID",
                      "latency_met": met, "ttft_ms": {"p50": ttft / 2, "p99": ttft}}  # fmt: skip

    s = _settings(min_queries=1, confirm_runs=2, confirm_s=10.0, max_probes=8, budget_s=36)
    found = TokenSearch(s, server, clock=lambda: spent[0]).run(4.0)
    section = goodput_section(found, s)
    assert section["status"] == "over_budget" and section["goodput_qps"] is None
    assert [run["valid"] for run in section["confirms"]] == [False, True]
    missed, met = (f"{run['target_qps']:.4g}" for run in section["confirms"])
    assert section["message"].startswith(
        "confirming run(s) (p99 TTFT <= 2000 ms and p99 TPOT <= 100 ms): INVALID at "
        f"{missed} QPS; VALID at {met} QPS; then a confirm at {met} QPS"
    ), section["message"]
