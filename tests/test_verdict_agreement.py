"""One wording everywhere: the published h100 best.csv, the README's answer block and the
write-up's per-workload findings say the same thing, row by row.

The README block and the page's findings are computed here with the code that writes them
(report.readme, report.page) from the published tables, so a regenerated README or page can
only say what this test checked; best.csv is read as published.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from devicebench.aggregate import noise
from devicebench.aggregate.analysis import load_prices
from devicebench.aggregate.collect import read_table
from devicebench.report.answer import call
from devicebench.report.page import verdict_findings
from devicebench.report.readme import results_block, study_answer
from devicebench.report.verdict import load_best, reprice, verdict_rows

REPO = Path(__file__).resolve().parents[1]
STUDY = Path("results/published/h100")
TABLES = REPO / STUDY / "tables"
OLD_WORDS = ("about even", "within 10%")  # the +/-10 % band every view has dropped


@pytest.fixture(scope="module")
def published() -> pd.DataFrame:
    """The published verdict rows (pick = cheapest), as best.csv has them."""
    if not (TABLES / "best.csv").exists():
        pytest.skip("no published h100 tables in this checkout")
    return verdict_rows(load_best(TABLES))


@pytest.fixture(scope="module")
def repriced() -> pd.DataFrame:
    """The verdict rows as the README and the page compute them: best.csv repriced at the
    repository's prices (the prices the published aggregate used)."""
    prices = load_prices(REPO / "config" / "prices.yaml")
    return verdict_rows(reprice(load_best(TABLES), read_table(TABLES / "cells.csv"), prices))


def published_call(row: pd.Series) -> str:
    """What best.csv's own columns say about a row: too close, or which side is cheaper."""
    if row["confidence"] == noise.TOO_CLOSE:
        return "close"
    return str(row["cheaper"])


def paired(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["cost_ratio"].notna()]


def test_best_csv_confidence_is_the_one_rule(published: pd.DataFrame) -> None:
    rows = paired(published)
    assert not rows.empty
    for _, row in rows.iterrows():
        rule = noise.confidence(row["cost_ratio"], row["cost_ratio_low"], row["cost_ratio_high"])
        assert row["confidence"] == rule, row["label"]
        assert (row["cheaper"] == "gpu") == (row["cost_ratio"] > 1), row["label"]
        assert noise.TOO_CLOSE in row["finding"] if rule == noise.TOO_CLOSE else True


def test_repricing_at_the_same_prices_says_what_best_csv_says(
    published: pd.DataFrame, repriced: pd.DataFrame
) -> None:
    rows = paired(published)
    again = repriced.loc[rows.index]
    assert list(again["confidence"]) == list(rows["confidence"])
    assert list(again["finding"]) == list(rows["finding"])
    assert list(again.apply(call, axis=1)) == list(rows.apply(published_call, axis=1))


def test_the_readme_block_counts_and_names_every_row_as_best_csv_calls_it(
    published: pd.DataFrame,
) -> None:
    prices = load_prices(REPO / "config" / "prices.yaml")
    _, answers = study_answer(REPO, STUDY, prices)
    block, _ = results_block(REPO)
    calls = paired(published).apply(published_call, axis=1)
    seen = 0
    for answer in [a for a in answers if a.measured]:
        assert f"| {answer.verdict} |" in block  # the block's table shows this class's words
        mine = calls.loc[answer.rows.index]
        seen += len(mine)
        counts, n, verdict = Counter(mine), len(mine), answer.verdict
        lead = "gpu" if counts["gpu"] >= counts["cpu"] else "cpu"
        other = "cpu" if lead == "gpu" else "gpu"
        if counts[lead] == n:
            assert verdict.startswith(f"{lead.upper()} cheaper"), verdict
        elif counts["close"] == n:
            assert verdict.startswith(noise.TOO_CLOSE), verdict
        else:
            assert verdict.startswith(f"{lead.upper()} cheaper in {counts[lead]} of {n}"), verdict
            if counts[other]:
                assert f"{other.upper()} in {counts[other]}" in verdict, verdict
            if counts["close"]:
                assert f"{counts['close']} {noise.TOO_CLOSE}" in verdict, verdict
            for label in answer.rows.loc[mine.index[mine.ne(lead)], "label"]:
                assert label in verdict, (verdict, label)  # each minority row is named
    assert seen == len(calls)  # every paired row of best.csv is in some class of the block


def test_the_write_ups_findings_carry_best_csv_s_sentence_for_every_row(
    published: pd.DataFrame, repriced: pd.DataFrame
) -> None:
    for task, rows in published.groupby("task"):
        said = verdict_findings(repriced, str(task))
        for finding in rows["finding"].dropna():
            assert finding in said, (task, finding)


def test_no_view_keeps_the_old_even_band(published: pd.DataFrame, repriced: pd.DataFrame) -> None:
    block, _ = results_block(REPO)
    words = [block, *published["finding"].dropna()]
    for task in published["task"].unique():
        words += verdict_findings(repriced, str(task))
    assert not [w for w in words if any(old in w for old in OLD_WORDS)]
