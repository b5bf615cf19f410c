"""A confirmed serve verdict whose confirmed server a later sweep beats is out of the verdict
(aggregate.stale_confirm): MobileNetV2's published records on the H200, where the second sweep
block (machine 6) beat both servers that machine 5 confirmed."""

from __future__ import annotations

import shutil
from pathlib import Path

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
LATER_SWEEP = "d4fc2c85"  # machine 6: serve-mobilenetv2-sweep-more


def _cells(paths: list[Path]):
    return analysis.add_analysis(
        collect_records(paths), load_prices(REPO / "config/prices.yaml"), "cpu"
    )


def _best(paths: list[Path]):
    return best_table(_cells(paths))


def _records(root: Path) -> list[Path]:
    return sorted(root.glob("**/*.json"))


def test_a_confirmed_pair_beaten_by_a_later_sweep_is_out_of_the_verdict() -> None:
    rows = _best(_records(SERVING))
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
    line = next(a for a in answer(rows, _cells(_records(SERVING))) if a.key == "serving_bound")
    assert line.verdict.startswith("GPU cheaper in all 2")
    assert line.caveat == "no pair for serve_image serve (mobilenetv2)"


def test_without_the_later_sweep_the_confirmed_pair_stands(tmp_path) -> None:
    kept = tmp_path / "cells"
    shutil.copytree(SERVING, kept)
    for record in _records(kept):
        if f'"boot_id": "{LATER_SWEEP}' in record.read_text():
            record.unlink()
    rows = _best(_records(kept))
    mobilenet = rows[rows["model"].eq("mobilenetv2") & rows["cheaper"].notna()]
    assert len(mobilenet) == 2 and not mobilenet["outranked"].any()
    assert "not each device at its best" not in " ".join(mobilenet["note"])
    assert "mobilenetv2" in set(verdict_rows(rows)["model"])
