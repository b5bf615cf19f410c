"""A pair that does not hold each device at its best (aggregate.outranked): one work on two
machines, one of which ran only a device's lesser engine, is out of the verdict, with why."""

from __future__ import annotations

import pandas as pd
import pytest

from devicebench.aggregate.best import COLUMNS
from devicebench.aggregate.outranked import mark_outranked
from devicebench.report.verdict import verdict_rows

pytestmark = pytest.mark.fast


def _row(boot: str, cpu: float, gpu: float, pick: str = "cheapest", **more) -> dict:
    """A one-machine best.csv row of llama-1b 1024/128: the two picks' cost per million."""
    row = dict.fromkeys(COLUMNS)
    row |= {
        "task": "textgen_llm", "mode": "generate", "model": "llama-1b", "pick": pick,
        "work": "prompt_len 1024, output_len 128", "boot_id": boot, "code_version": "v",
        "cpu_config": f"cpu engine of {boot}", "gpu_config": f"gpu engine of {boot}",
        "cpu_usd_per_million": cpu, "gpu_usd_per_million": gpu, "cost_ratio": cpu / gpu,
        "cpu_samples_per_s": 1 / cpu, "gpu_samples_per_s": 1 / gpu,
        "cheaper": "gpu" if cpu > gpu else "cpu", "crosses_machines": False, "note": "",
    }  # fmt: skip
    return row | more


def test_a_pair_whose_gpu_ran_its_lesser_engine_is_out_of_the_verdict() -> None:
    # machine 11: eager against eager (CPU 1.38x cheaper); machine 12: each device's best
    table = pd.DataFrame([_row("aaaa1111", 1852, 2559), _row("bbbb2222", 941, 304)])
    marked = mark_outranked(table)
    assert marked["outranked"].tolist() == [True, False]
    note = marked.at[0, "note"]
    assert "cpu's pick on boot bbbb2222 (cpu engine of bbbb2222) is 1.97x cheaper" in note
    assert "cuda's pick on boot bbbb2222 (gpu engine of bbbb2222) is 8.42x cheaper" in note
    assert note.startswith("not each device at its best: cpu's pick")
    assert note.endswith("out of the verdict") and note.count("not each device") == 1
    assert "not each device at its best" in marked.at[0, "finding"]
    shown = verdict_rows(marked)
    assert shown["boot_id"].tolist() == ["bbbb2222"]


def test_machine_noise_alone_outranks_nothing() -> None:
    # the same engines on two machines, within the lease-to-lease variance (1.35x): both stand
    table = pd.DataFrame([_row("aaaa1111", 1000, 300), _row("bbbb2222", 800, 250)])
    marked = mark_outranked(table)
    assert not marked["outranked"].any()
    assert len(verdict_rows(marked)) == 2


def test_the_fastest_pick_compares_throughput_and_other_work_is_not_compared() -> None:
    fast = _row("aaaa1111", 1000, 300, pick="fastest")
    other_work = _row("bbbb2222", 100, 10) | {"work": "prompt_len 128, output_len 128"}
    quicker = _row("cccc3333", 1000, 300, pick="fastest") | {"gpu_samples_per_s": 1 / 300 * 2}
    crossing = _row("dddd4444", 10, 1) | {"crosses_machines": True}  # a declared pair
    marked = mark_outranked(pd.DataFrame([fast, other_work, quicker, crossing]))
    assert marked["outranked"].tolist() == [True, False, False, False]
    assert (
        "cuda's pick on boot cccc3333 (gpu engine of cccc3333) is 2x faster" in marked.at[0, "note"]
    )
