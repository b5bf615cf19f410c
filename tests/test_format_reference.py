"""The reduced-format gate on trained models: infer cells of a task that asks for a trained
reference read its converge dataset (real data) and train whole epochs first, so a format's or
engine's agreement is judged against a trained fp32 model; a pick without such a check says
"quality unverified"."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import REPO

from devicebench.aggregate.best import best_table
from devicebench.aggregate.quality_gate import mark_quality
from devicebench.plan.config import ConfigError, check_config
from devicebench.plan.grid import expand_grid

PRICES_PER_HOUR = {"cpu": 0.68, "cuda": 4.0}


def _study(**task) -> dict:
    study = {"tasks": {"mnist_mlp": task}, "frameworks": ["torch"], "precisions": ["fp32"]}
    cpu = {"cpu": {"threads": [1]}}
    return study | {"devices": cpu, "modes": ["train", "infer"], "batch_sizes": [64]}


FASHION = {"target": 0.85, "dataset": "fashion_mnist"}


def test_infer_cells_train_a_reference_on_the_converge_data_and_train_cells_stay():
    plain = {c.values["mode"]: c for c in expand_grid(check_config(_study(converge=FASHION)))}
    asked = _study(converge=FASHION, trained_reference={"epochs": 2})
    cells = {c.values["mode"]: c for c in expand_grid(check_config(asked))}
    infer = cells["infer"].run_settings()
    assert (infer["dataset"], infer["epochs"], infer["steps_per_epoch"]) == (
        "fashion_mnist",
        2,
        None,
    )
    assert cells["train"].config_hash() == plain["train"].config_hash()
    assert plain["infer"].run_settings()["dataset"] == "mnist"


@pytest.mark.parametrize(
    ("task", "words"),
    [
        ({"trained_reference": {"epochs": 2}}, "needs converge.dataset"),
        ({"converge": FASHION, "trained_reference": {"epochs": 0}}, "trained_reference"),
    ],
)
def test_a_reference_that_cannot_train_is_a_config_error(task, words):
    with pytest.raises(ConfigError, match=words):
        check_config(_study(**task))


def cells(gpu: dict, cpu: dict | None = None) -> pd.DataFrame:
    """One CPU fp32 cell and one GPU cell of mnist_mlp infer, priced per hour."""
    base = dict(task="mnist_mlp", model="mlp", framework="torch", mode="infer", status="ok")
    base |= dict(batch_size=128, boot_id="b", code_version="v", synthetic=False)
    rows = [
        base
        | dict(cell_id="cpu", device="cpu", threads=16, precision="fp32", engine="inprocess")
        | (cpu or {}),
        base | dict(cell_id="gpu", device="cuda", threads=16, precision="fp32") | gpu,
    ]
    df = pd.DataFrame(rows)
    df["samples_per_s"] = [1000.0, 20000.0]
    df["price_per_hour"] = df["device"].map(PRICES_PER_HOUR)
    df["median_s"] = df["min_s"] = df["max_s"] = 1.0
    return mark_quality(df)


def cheapest(frame: pd.DataFrame) -> pd.Series:
    best = best_table(frame)
    return best[best["pick"].eq("cheapest")].iloc[0]


def test_a_reduced_format_pick_without_a_trained_reference_check_is_unverified():
    row = cheapest(cells({"precision": "bf16"}))
    assert row["quality"] == "quality unverified"
    assert "gpu pick's bf16 not checked against a trained fp32 reference" in row["note"]
    assert "quality unverified" in row["finding"]


def test_an_engine_pick_checked_on_real_data_is_verified_and_fp32_needs_no_check():
    checked = {"agreement_fp32": 0.998, "quality_below_reference": False}
    row = cheapest(cells({}, cpu={"engine": "openvino", "precision": "int8", **checked}))
    assert pd.isna(row["quality"]) and "not checked" not in row["note"]
    synthetic = {"engine": "openvino", "precision": "int8", "synthetic": True, **checked}
    row = cheapest(cells({}, cpu=synthetic))
    assert row["quality"] == "quality unverified"  # agreement on synthetic data vouches nothing
    assert "n/a: synthetic data" in row["note"]


SMOLLM2 = REPO / "results/published/h200/cells/task~textgen_llm/model~smollm2-135m"


def test_a_generate_cell_flagged_below_fp32s_greedy_tokens_is_never_a_best():
    # SmolLM2's 15 published real-weight cells (machine 15, OpenVINO GenAI's on machine 16):
    # every reduced format is flagged under 99 % greedy agreement with fp32, OpenVINO GenAI's
    # too (scored from its log probabilities and greedy tokens), so each device's pick is its
    # fp32 cell: not the GPU's int4 loop, its fastest, nor the CPU's fastest (llama.cpp on the
    # shipped Q4_1)
    from devicebench.aggregate import analysis
    from devicebench.aggregate.collect import collect_records

    prices = analysis.load_prices(REPO / "config/prices.yaml")
    frame = analysis.add_analysis(collect_records(sorted(SMOLLM2.rglob("*.json"))), prices, "cpu")
    by_cell = frame.set_index("cell_id")
    flagged = by_cell[by_cell["quality_below_reference"].eq(True)].index
    assert len(by_cell) == 15 and not by_cell["quality_unverified"].notna().any()
    assert len(flagged) == 12 and all("fp32" not in cell for cell in flagged)
    assert sum("openvino_genai" in cell for cell in flagged) == 3
    fastest = by_cell.groupby("device")["samples_per_s"].idxmax()
    assert set(fastest) <= set(flagged) and "precision~int4" in fastest["cuda"]
    best = best_table(frame, prices)
    paired = best[best["cpu_cell"].notna() & best["gpu_cell"].notna()]
    assert len(paired) and paired["boot_id"].nunique() == 1
    assert set(paired["gpu_cell"]) == {fastest["cuda"].replace("int4", "fp32")}
    assert {cell.split("generator~")[1].split("/")[0] for cell in paired["cpu_cell"]} == {
        "torch_eager"
    }
    assert all("precision~fp32" in cell for cell in paired["cpu_cell"])
    assert (paired["quality"].fillna("") != "quality unverified").all()
