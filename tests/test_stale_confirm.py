"""A confirmed serve verdict whose confirmed server a later sweep beats is out of the verdict
(aggregate.stale_confirm): MobileNetV2's published records on the H200, where the second sweep
block (machine 6) beat both servers that machine 5 confirmed (those confirms now superseded),
machine 7's confirms of the servers that sweep found best (superseded too), and machine 9's, which
give the verdict with ResNet-152's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from devicebench.aggregate import analysis
from devicebench.aggregate.best import best_table
from devicebench.aggregate.collect import collect_records
from devicebench.aggregate.pricing import load_prices
from devicebench.report.answer import answer
from devicebench.report.verdict import verdict_rows

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parents[1]
SERVING = REPO / "results/published/h200_serving/cells"
MACHINE_5 = SERVING.parent / "superseded/2026-11-30-mobilenetv2-confirm-machine-5/cells"
MACHINE_7 = SERVING.parent / "superseded/2026-11-30-mobilenetv2-confirm-machine-7/cells"
LATER_SWEEP = "d4fc2c85"  # machine 6: serve-mobilenetv2-sweep-more
RECONFIRMED = "33d7b884"  # machine 7: serve-mobilenetv2-confirm-cpu, -gpu (and ResNet-152's sweeps)
CONFIRMED_BOTH = "ab1064af"  # machine 9: MobileNetV2's and ResNet-152's confirm steps
LATER = (RECONFIRMED, "396a4bbe", CONFIRMED_BOTH)  # machines 7, 8 (a ResNet-152 sweep cell), 9


def _cells(paths: list[Path]):
    return analysis.add_analysis(
        collect_records(paths), load_prices(REPO / "config/prices.yaml"), "cpu"
    )


def _best(paths: list[Path]):
    return best_table(_cells(paths))


def _records(root: Path) -> list[Path]:
    return sorted(root.glob("**/*.json"))


def _without(tmp: Path, *boots: str, superseded: Path = MACHINE_5) -> list[Path]:
    """The published records less these machines', with a superseded set of confirms back."""
    kept = tmp / "cells"
    shutil.copytree(SERVING, kept)
    shutil.copytree(superseded, kept, dirs_exist_ok=True)
    for record in _records(kept):
        if any(f'"boot_id": "{boot}' in record.read_text() for boot in boots):
            record.unlink()
    return _records(kept)


def test_a_confirmed_pair_beaten_by_a_later_sweep_is_out_of_the_verdict(tmp_path) -> None:
    before = _without(tmp_path, *LATER)  # as it stood after machine 6
    rows = _best(before)
    mobilenet = rows[rows["model"].eq("mobilenetv2") & rows["cheaper"].notna()]
    assert len(mobilenet) == 2 and mobilenet["outranked"].all()
    note = mobilenet["note"].iloc[0]
    assert note.count("not each device at its best") == 1
    assert "cuda's confirmed server" in note and "probed 119.9 QPS" in note
    assert f"on boot {LATER_SWEEP} probed 424 QPS, 3.54x its probe_qps per USD/hour" in note
    assert "cpu's confirmed server" in note and "probed 222.6 QPS, 1.4x" in note
    assert note.endswith("out of the verdict until it is confirmed")
    # the other models' confirmed pairs stand, and the verdict shows them alone
    others = rows[~rows["model"].eq("mobilenetv2") & rows["cheaper"].notna()]
    assert len(others) == 4 and not others["outranked"].any()
    shown = verdict_rows(rows)
    judged = shown[shown["cheaper"].notna()]
    assert set(judged["model"]) == {"resnet50", "bert-base"}
    # MobileNetV2 shows as machine 6's sweep alone: no verdict, and why
    said = shown.loc[shown["model"].eq("mobilenetv2"), "note"]
    assert len(said) == 1 and "sweep probes only, no confirm record" in said.iloc[0]
    # the answer's serving line counts the two pairs, and its main caveat names the third model
    line = next(a for a in answer(rows, _cells(before)) if a.key == "serving_bound")
    assert line.verdict.startswith("GPU cheaper in all 2")
    assert line.caveat == "no pair for serve_image serve (mobilenetv2)"


def test_without_the_later_sweep_the_confirmed_pair_stands(tmp_path) -> None:
    rows = _best(_without(tmp_path, *LATER, LATER_SWEEP))  # as it stood after machine 5
    mobilenet = rows[rows["model"].eq("mobilenetv2") & rows["cheaper"].notna()]
    assert len(mobilenet) == 2 and not mobilenet["outranked"].any()
    assert "not each device at its best" not in " ".join(mobilenet["note"])
    assert "mobilenetv2" in set(verdict_rows(rows)["model"])


def test_machine_7_confirmed_the_best_servers_and_the_cpu_did_not_hold_its_rate(tmp_path) -> None:
    """The confirms of the servers the later sweep found best stand (nothing outranks them).
    The GPU confirmed; the CPU's two attempts missed the bound (222.6, then 155.8 QPS at p99
    55 ms): not "the CPU cannot serve", so no verdict until its confirm block runs again."""
    rows = _best(_without(tmp_path, CONFIRMED_BOTH, superseded=MACHINE_7))  # after machine 8
    mobilenet = rows[rows["model"].eq("mobilenetv2") & rows["gpu_cell"].notna()]
    assert len(mobilenet) == 2 and not mobilenet["outranked"].fillna(False).any()
    row = mobilenet.set_index("pick").loc["cheapest"]
    assert row["boot_id"].startswith(RECONFIRMED)
    assert row["gpu_samples_per_s"] == pytest.approx(295.313)  # the median of 3 runs of 60 s
    assert "CPU: no confirmed rate at p99 <= 50 ms (not_confirmed 1)" in row["note"]
    assert "no verdict until the CPU's rate at the bound confirms" in row["note"]
    assert pd.isna(row["cheaper"]) and pd.isna(row["cpu_cell"])
    shown = verdict_rows(rows)
    assert set(shown.loc[shown["cheaper"].notna(), "model"]) == {"resnet50", "bert-base"}
    # machine 5's and 6's sweeps, which machine 7's confirm steps weighed, give no rows of their own
    boots = rows.loc[rows["model"].eq("mobilenetv2"), "boot_id"].str[:8]
    assert set(boots) == {RECONFIRMED}


def test_machine_9_confirmed_both_models_and_the_cpu_serves_mobilenetv2_cheaper() -> None:
    """Machine 9 ran MobileNetV2's and ResNet-152's confirm steps in consecutive calls: both
    pairs are of one machine and code version, and with them all four models have a verdict."""
    rows = _best(_records(SERVING))
    judged = rows[rows["task"].str.startswith("serve") & rows["cheaper"].notna()]
    assert not judged["outranked"].fillna(False).any()
    assert set(judged["model"]) == {"resnet50", "mobilenetv2", "resnet152", "bert-base"}
    for model in ("mobilenetv2", "resnet152"):
        pair = judged[judged["model"].eq(model)]
        assert len(pair) == 2 and set(pair["boot_id"].str[:8]) == {CONFIRMED_BOTH}
    mobilenet = judged[judged["model"].eq("mobilenetv2")].set_index("pick").loc["cheapest"]
    assert mobilenet["cheaper"] == "cpu"
    # the medians of 3 runs of 60 s each, the CPU's at 0.49x of its probe rate
    assert mobilenet["cpu_samples_per_s"] == pytest.approx(106.566)
    assert mobilenet["gpu_samples_per_s"] == pytest.approx(205.022)
    assert "the CPU is 3.82x cheaper per request, 3.74x-3.93x" in mobilenet["finding"]
    resnet152 = judged[judged["model"].eq("resnet152")].set_index("pick").loc["cheapest"]
    assert resnet152["cheaper"] == "gpu" and resnet152["p99_bound_ms"] == 100
    assert "the GPU is 1.9x cheaper per request, 1.85x-1.95x" in resnet152["finding"]
    # every sweep the confirm steps weighed (machines 5 to 8) gives no row of its own
    boots = rows.loc[rows["model"].isin(["mobilenetv2", "resnet152"]), "boot_id"].str[:8]
    assert set(boots) == {CONFIRMED_BOTH}
    line = next(a for a in answer(rows, _cells(_records(SERVING))) if a.key == "serving_bound")
    assert line.verdict.startswith(
        "GPU cheaper in 3 of 4, CPU in 1 (serve_image serve (mobilenetv2))"
    )
