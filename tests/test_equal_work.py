"""A verdict divides throughputs of equal work (TaskSpec.work_axes): best.csv never sets a 2048/1
prefill against a 1024/128 generation, nor a 512-token review against a 128-token one, and each
row names the work it compares. Read from the published H200 records (real format, one machine
holding both LLM shapes) and every published best.csv."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from devicebench.aggregate import analysis
from devicebench.aggregate.best import best_table
from devicebench.aggregate.collect import collect_records, read_table
from devicebench.aggregate.generation import PREFILL_CRITERIA, generation_best, generation_table
from devicebench.aggregate.pricing import load_prices
from devicebench.workloads import spec, work_axes

PRICES = load_prices(REPO / "config" / "prices.yaml")
H200 = REPO / "results" / "published" / "h200"
# the machine that ran every 1B cell: 128/128, 1024/128 and 2048/1 (its 1024/128 cells were
# measured again on machines 0896fe5e and a48a4aeb for their goodput search: they are kept
# under superseded/)
ONE_MACHINE = "fd54ec94"


def _axes(cell_id: str) -> dict[str, str]:
    return dict(part.split("~", 1) for part in str(cell_id).split("/") if "~" in part)


def _records_of(boot: str) -> list[Path]:
    return [p for p in H200.glob("**/cells/**/*.json") if boot in p.read_text()]


def test_the_workloads_name_the_axes_that_change_a_samples_work():
    assert spec("textgen_llm").work_axes == ("prompt_len", "output_len")
    assert spec("text_classify").work_axes == ("seq_len",)
    assert set(work_axes()) == {"seq_len", "prompt_len", "output_len"}
    for name in ("textgen_llm", "text_classify", "serve_text"):
        assert set(spec(name).work_axes) <= set(spec(name).axes)  # each is one of its axes


def test_three_llm_works_on_one_machine_make_three_verdicts_each_of_one_work():
    paths = _records_of(ONE_MACHINE)
    assert len(paths) == 25  # the 1B's 128/128, 1024/128 and 2048/1 blocks, CPU and GPU
    cells = analysis.add_analysis(collect_records(paths), PRICES, "cpu")
    best = best_table(cells, PRICES)
    assert set(best["work"]) == {
        "prompt_len 128, output_len 128",
        "prompt_len 1024, output_len 128",
        "prompt_len 2048, output_len 1",
    }
    for row in best.itertuples():
        assert pd.notna(row.cost_ratio), row.note
        for cell in (row.cpu_cell, row.gpu_cell, row.speedup_cpu_cell, row.speedup_gpu_cell):
            shape = _axes(cell)
            assert f"prompt_len {shape['prompt_len']}, output_len {shape['output_len']}" == row.work
        assert row.work in row.finding


def test_a_prefill_only_pair_is_judged_on_its_first_token_and_prompt_tokens():
    table = generation_table(_records_of(ONE_MACHINE), PRICES)
    best = generation_best(table)
    prefill = best[best["output_len"].eq(1)]
    assert set(prefill["criterion"]) == set(PREFILL_CRITERIA)
    assert prefill["ttft_p50_s"].notna().all()
    assert prefill["cost_per_million_prompt_tokens_usd"].notna().all()
    decode = best[best["output_len"].eq(128)]
    assert not set(decode["criterion"]) & set(PREFILL_CRITERIA)
    cpu = table[table["output_len"].eq(1) & table["device_label"].str.startswith("cpu")].iloc[0]
    usd = cpu["price_per_hour"] / 3600 / cpu["prefill_tokens_per_s"] * 1e6
    assert cpu["cost_per_million_prompt_tokens_usd"] == pytest.approx(usd, rel=1e-12)


@pytest.mark.parametrize(
    "study", sorted(p.parent.parent.name for p in REPO.glob("results/published/*/tables/best.csv"))
)
def test_every_published_verdict_pairs_cells_of_one_work(study: str):
    best = read_table(REPO / "results" / "published" / study / "tables" / "best.csv")
    paired = best[best["cpu_cell"].notna() & best["gpu_cell"].notna()]
    for row in paired.itertuples():
        cpu, gpu = _axes(row.cpu_cell), _axes(row.gpu_cell)
        for axis in work_axes():
            assert cpu.get(axis) == gpu.get(axis), (study, axis, row.cpu_cell, row.gpu_cell)


def test_the_write_up_names_each_verdict_by_its_work_and_shows_a_work_column():
    from devicebench.report.verdict import display_table, verdict_rows

    cells = analysis.add_analysis(collect_records(_records_of(ONE_MACHINE)), PRICES, "cpu")
    best = best_table(cells, PRICES)
    labels = verdict_rows(best)["label"].tolist()
    assert sorted(labels) == [
        "textgen_llm generate (prompt_len 1024, output_len 128)",
        "textgen_llm generate (prompt_len 128, output_len 128)",
        "textgen_llm generate (prompt_len 2048, output_len 1)",
    ]
    shown = display_table(best)
    assert shown["work"].tolist() == sorted(set(best["work"]))
