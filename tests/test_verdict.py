"""The verdict from hand-made best.csv rows: costs re-priced from the prices given, sentences
computed from the rows, an honest verdict when no GPU cell ran."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from devicebench.report.decision import decision_chart, decision_frame
from devicebench.report.page import task_summary
from devicebench.report.verdict import (
    BEST_COLUMNS,
    compact,
    display_table,
    load_best,
    number,
    reprice,
    sentences,
    times,
    why_no_gpu,
)
from devicebench.report.verdict_section import verdict_html

PRICES = {
    "currency": "USD",
    "source": "test prices",
    "cpu": {"per_vcpu_hour": 0.0425},
    "cuda": [{"match": "H100", "per_hour": 4.0}],
}
CPU_CELL = "task~t/device~cpu/threads~16/mode~infer"
GPU_CELL = "task~t/device~cuda/mode~infer"


def cells() -> pd.DataFrame:
    """The two cells best.csv names: 16 CPU threads and one H100."""
    return pd.DataFrame(
        {
            "cell_id": [CPU_CELL, GPU_CELL, "task~u/device~cpu"],
            "device": ["cpu", "cuda", "cpu"],
            "threads": [16, float("nan"), 16],
            "gpu_name": [None, "NVIDIA H100 80GB HBM3", None],
            "status": ["ok", "ok", "ok"],
            "message": ["", "", ""],
        }
    )


def best_row(pick: str, **values) -> dict:
    row = dict.fromkeys(BEST_COLUMNS, float("nan"))
    row.update(task="t", mode="infer", pick=pick, boot_id="boot-1", code_version="v1")
    row.update(
        cpu_cell=CPU_CELL,
        cpu_config="torch, bf16, batch 64, 16 threads",
        cpu_samples_per_s=1000.0,
        cpu_usd_per_million=999.0,  # stale: re-priced from the prices given
        cpu_joules_per_sample=0.2,
        gpu_cell=GPU_CELL,
        gpu_config="torch, bf16, compiled, batch 256",
        gpu_name="NVIDIA H100 80GB HBM3",
        gpu_samples_per_s=5000.0,
        gpu_usd_per_million=999.0,
        gpu_joules_per_sample=0.05,
    )
    row.update(values)
    return row


def best(*rows: dict) -> pd.DataFrame:
    """best.csv's columns in order, and `model` where a row names one (as the table adds it)."""
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in BEST_COLUMNS))
    return pd.DataFrame(list(rows)).reindex(columns=[*BEST_COLUMNS, *extra])


def test_costs_are_worked_out_again_from_the_prices_given():
    table = reprice(best(best_row("cheapest")), cells(), PRICES)
    row = table.iloc[0]
    # 16 threads x 0.0425 $/h = 0.68 $/h over 1,000 samples/s: 0.189 $ per million samples
    assert row["cpu_usd_per_million"] == pytest.approx(0.68 / 3600 / 1000 * 1e6)
    assert row["gpu_usd_per_million"] == pytest.approx(4.0 / 3600 / 5000 * 1e6)
    assert row["cheaper"] == "cpu"
    assert row["cost_ratio"] == pytest.approx((0.68 / 1000) / (4.0 / 5000))
    # the GPU price at which both cost the same per sample: 0.68 $/h x 5000 / 1000
    assert row["breakeven_gpu_usd_per_hour"] == pytest.approx(3.4)
    assert math.isnan(row["speedup"])  # fastest against fastest: not re-priced, not made up
    cheaper_gpu = dict(PRICES, cuda=[{"match": "H100", "per_hour": 2.0}])
    assert reprice(best(best_row("cheapest")), cells(), cheaper_gpu).iloc[0]["cheaper"] == "gpu"


def test_a_cell_missing_from_the_cells_table_keeps_the_tables_cost():
    row = best_row("cheapest", gpu_cell="not-a-cell", gpu_usd_per_million=0.5)
    table = reprice(best(row), cells(), PRICES)
    assert table.iloc[0]["gpu_usd_per_million"] == 0.5
    assert table.iloc[0]["priced"] == "the aggregate's prices"


def test_sentences_come_from_the_rows():
    other = best_row("cheapest", task="u", cpu_cell="task~u/device~cpu", cpu_samples_per_s=10.0)
    fastest = best_row("fastest", gpu_samples_per_s=8000.0, speedup=8.0)
    cheap_cpu = best_row("cheapest", gpu_samples_per_s=2500.0)  # CPU 2.35x cheaper per sample
    table = reprice(best(cheap_cpu, other, fastest), cells(), PRICES)
    said = sentences(table, PRICES)
    assert said[0] == (
        "Per sample, the GPU is cheaper in 1 of 2 workload-modes (u infer) and the CPU in 1 "
        "(t infer)."
    )
    assert "the CPU's widest lead is t infer, 2.35x cheaper" in said[1]
    assert said[1].startswith("The GPU's widest lead is u infer")
    # speedups from the fastest picks only (the cheapest rows give 2.5x and 250x)
    assert said[2] == "Fastest GPU over fastest CPU configuration: 8x (t infer)."
    assert "US$1.70 (t infer)" in said[3] and "charge US$4 per GPU-hour" in said[3]
    shown = display_table(table)
    assert list(shown["workload"]) == ["t", "u"]  # the cheapest rows only
    assert shown.loc[0, "cheaper, by"] == "CPU, 2.35x"
    assert shown.loc[1, "cheaper, by"] == "GPU, 85x"


def test_a_lead_within_the_lease_variance_or_a_range_across_even_is_too_close_to_call():
    # 16 threads at US$0.68/h against an H100 at US$4/h: equal cost at 5,882 GPU samples/s
    even = 1000.0 * 4.0 / 0.68
    near = best_row("cheapest", gpu_samples_per_s=even * 1.3)  # GPU 1.3x: within 1.35x
    clear = best_row("cheapest", task="u", cpu_cell="task~u/device~cpu", gpu_samples_per_s=even * 2)
    crossing = best_row("cheapest", task="w", gpu_samples_per_s=even * 2)
    priced = reprice(best(near, clear, crossing), cells(), PRICES)  # costs as the aggregate's
    priced.loc[2, ["cost_ratio_low", "cost_ratio_high"]] = [0.9, 2.5]  # a range across even
    table = reprice(priced, cells(), PRICES)
    said = sentences(table, PRICES)
    assert said[0] == (
        "Per sample, the GPU is cheaper in 1 of 3 workload-modes (u infer) and the CPU in 0, "
        "and 2 too close to call (t infer, w infer)."
    )
    assert said[1].startswith("The GPU's widest lead is u infer, 2x cheaper")
    shown = display_table(table)
    assert list(shown["cheaper, by"]) == [
        "too close to call (GPU 1.30x)",
        "GPU, 2x",
        "too close to call (GPU 2x)",
    ]
    assert list(table["confidence"]) == ["too close to call", "clear", "too close to call"]
    assert table["finding"].iloc[0].startswith("t infer: too close to call (GPU 1.3x cheaper")
    assert task_summary(table, "t") == " — infer: too close to call (GPU 1.30x)"
    assert task_summary(table, "u") == " — infer: GPU 2x cheaper"


def test_repricing_scales_the_range_and_a_converge_ratio_stays_cost_to_target():
    # a converge row's ratio is of costs to the target (the CPU needs 3x the time of 1.5x
    # cheaper samples): halving the GPU price must double it, not replace it per sample
    row = best_row("cheapest", mode="converge", cost_ratio=4.0, cost_ratio_low=3.0)
    row.update(cost_ratio_high=5.0, cpu_usd_per_million=0.68 / 3.6, gpu_usd_per_million=4 / 18)
    half = dict(PRICES, cuda=[{"match": "H100", "per_hour": 2.0}])
    again = reprice(best(row), cells(), PRICES).iloc[0]
    assert again["cost_ratio"] == pytest.approx(4.0)
    cheaper = reprice(best(row), cells(), half).iloc[0]
    assert cheaper["cost_ratio"] == pytest.approx(8.0)
    assert (cheaper["cost_ratio_low"], cheaper["cost_ratio_high"]) == pytest.approx((6.0, 10.0))
    assert cheaper["breakeven_gpu_usd_per_hour"] == pytest.approx(2.0 * 8.0)
    assert "the GPU is 8x cheaper to the target, 6x-10x over its runs" in cheaper["finding"]


def test_a_declared_machine_is_repriced_as_itself():
    box = {"name": "box", "hostname": "cpu01", "instance": "c7i.8xlarge", "per_hour": 1.36}
    declared = dict(PRICES, machines=[box])
    on_box = cells().assign(hostname=["cpu01", "gpu01", "cpu01"])
    row = reprice(best(best_row("cheapest")), on_box, declared).iloc[0]
    assert row["cpu_usd_per_million"] == pytest.approx(1.36 / 3600 / 1000 * 1e6)
    assert row["cpu_priced_as"] == "box: c7i.8xlarge"
    assert "CPU priced as box: c7i.8xlarge" in row["finding"]


def test_without_gpu_rows_the_verdict_says_so_and_why():
    row = best_row("cheapest", note="no ok cuda cell")
    for column in [c for c in BEST_COLUMNS if c.startswith("gpu_")]:
        row[column] = float("nan")
    cpu_only = cells().iloc[[0]]
    skipped = pd.DataFrame(
        {
            "cell_id": ["gpu"],
            "device": ["cuda"],
            "threads": [float("nan")],
            "status": ["skipped"],
            "message": ["no CUDA device on this machine"],
        }
    )
    all_cells = pd.concat([cpu_only, skipped], ignore_index=True)
    table = reprice(best(row), all_cells, PRICES)
    said = sentences(table, PRICES, why_no_gpu(all_cells))
    assert said[0].startswith("No workload has both a CPU and a GPU cell: no GPU cell ran ok")
    assert "(no ok cuda cell)" in said[0]
    assert said[1] == "Why: 1 GPU cells were skipped: no CUDA device on this machine."
    page = verdict_html(table, all_cells, PRICES)
    assert "nan" not in page.lower().replace("nanosecond", "")
    assert "no ok cuda cell" in page
    frame = decision_frame(table)
    assert list(frame["device"]) == ["CPU"]  # the chart draws what there is, GPU absent


def test_no_best_table_and_no_costs_draw_nothing(tmp_path):
    assert load_best(tmp_path) is None
    assert "no best.csv" in verdict_html(None, cells(), PRICES)
    row = best_row("cheapest", cpu_samples_per_s=float("nan"), gpu_samples_per_s=float("nan"))
    assert decision_chart(reprice(best(row), cells(), PRICES)) is None


def test_a_best_table_missing_columns_is_refused(tmp_path):
    pd.DataFrame({"task": ["t"]}).to_csv(tmp_path / "best.csv", index=False)
    with pytest.raises(ValueError, match="missing columns mode, pick"):
        load_best(tmp_path)


def test_numbers_keep_three_digits_and_never_print_nan():
    assert number(0.955) == "0.955" and times(0.955) == "0.955x"
    assert number(1234567.8) == "1,234,568" and number(50.0) == "50"
    assert number(math.nan) == "—" and times(None) == "—"
    assert number(0.000098) == "0.0000980"


def test_models_and_code_versions_keep_rows_apart_and_ddp_break_even_is_per_gpu():
    ddp = cells()
    ddp.loc[1, "gpus"] = 2  # the GPU cell occupies two H100s: 8 $/h
    one = best_row("cheapest", model="a")
    other = best_row("cheapest", model="b", code_version="v2")
    again = best_row("cheapest", model="b", code_version="v3", gpu_cell=float("nan"))
    table = reprice(best(one, other, again), ddp, PRICES)
    assert table.iloc[0]["gpu_usd_per_million"] == pytest.approx(8.0 / 3600 / 5000 * 1e6)
    # break-even per GPU (prices are per GPU): 0.68 $/h x 5000 / 1000 / 2 GPUs
    assert table.iloc[0]["breakeven_gpu_usd_per_hour"] == pytest.approx(1.7)
    said = sentences(table, PRICES)
    assert "t infer (a)" in said[0] and "t infer (b) [v2 boot-1]" in said[0]
    shown, empty = compact(display_table(table))
    assert list(shown["model"]) == ["a", "b", "b"]
    assert list(shown["code version"]) == ["v1", "v2", "v3"]
    assert "note" not in shown and "note" not in empty  # an empty note column goes silently
    assert "best GPU configuration" not in empty
    assert {"CPU J / sample", "GPU J / sample"}.isdisjoint(empty)  # both sides measured
