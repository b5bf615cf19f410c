"""The HTML write-up: findings computed from the aggregate tables, and the self-contained page."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from devicebench.aggregate.collect import read_table
from devicebench.aggregate.generation import GENERATION_COLUMNS
from devicebench.aggregate.serving import SERVING_COLUMNS
from devicebench.aggregate.serving_slo import RUN_COLUMNS, SLO_COLUMNS
from devicebench.aggregate.timelines import OPS_COLUMNS, TIMELINE_COLUMNS
from devicebench.report.verdict import load_best

REPORT_TABLES = (
    "cells",
    "speedup",
    "timing",
    "cost",
    "quality",
    "efficiency",
    "top_ops",
    "not_ok",
)


def load_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """The aggregate tables the write-up needs, read back with their dtypes."""
    folder = Path(folder)
    tables = {name: read_table(folder / f"{name}.csv") for name in REPORT_TABLES}
    for name, columns in (
        ("utilization", TIMELINE_COLUMNS),
        ("profile_ops", OPS_COLUMNS),
        ("serving_slo_runs", RUN_COLUMNS),  # absent in results from before the search
    ):
        path = folder / f"{name}.csv"
        tables[name] = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=columns)
    engines = folder / "engines.csv"  # only studies with an engine axis (Spark) fill it
    tables["engines"] = read_table(engines) if engines.exists() else pd.DataFrame()
    serving = folder / "serving.csv"  # absent in results from before the serving study
    tables["serving"] = (
        read_table(serving) if serving.exists() else pd.DataFrame(columns=SERVING_COLUMNS)
    )
    slo = folder / "serving_slo.csv"  # absent in results from before the latency-bound search
    tables["serving_slo"] = read_table(slo) if slo.exists() else pd.DataFrame(columns=SLO_COLUMNS)
    generation = folder / "generation.csv"  # absent in results from before generate cells
    tables["generation"] = (
        read_table(generation) if generation.exists() else pd.DataFrame(columns=GENERATION_COLUMNS)
    )
    rerun = folder / "reproducibility.csv"  # only where published cells were run again
    tables["reproducibility"] = read_table(rerun) if rerun.exists() else pd.DataFrame()
    best = load_best(folder)  # the verdict's rows; absent in tables from before best.csv
    if best is not None:
        tables["best"] = best
    if "accuracy_agrees" in tables["quality"]:
        agrees = tables["quality"]["accuracy_agrees"]
        tables["quality"]["accuracy_agrees"] = agrees.astype("object").where(agrees.notna(), None)
    return tables
