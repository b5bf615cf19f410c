"""Draw the study's charts from the aggregated tables.

    python scripts/charts.py --tables results/tables --out results/charts
    python scripts/charts.py --cells results/tables/cells.csv --out results/charts

Writes every chart of devicebench.aggregate.writeup_charts.CHART_NAMES (time, throughput, speedup
and samples per dollar vs batch size, throughput, accuracy and TFLOP/s per cell, utilization
timelines, top operators) as self-contained HTML and PNG.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pandas as pd

if importlib.util.find_spec("devicebench") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.aggregate.collect import read_table  # noqa: E402
from devicebench.aggregate.generation import GENERATION_COLUMNS  # noqa: E402
from devicebench.aggregate.serving import SERVING_COLUMNS  # noqa: E402
from devicebench.aggregate.serving_slo import RUN_COLUMNS  # noqa: E402
from devicebench.aggregate.tables import speedup_table  # noqa: E402
from devicebench.aggregate.timelines import OPS_COLUMNS, TIMELINE_COLUMNS  # noqa: E402
from devicebench.aggregate.writeup_charts import write_all_charts  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=Path, help="folder of aggregate.py's tables")
    parser.add_argument("--cells", type=Path, help="cells.csv (default: TABLES/cells.csv)")
    parser.add_argument(
        "--speedup",
        type=Path,
        help="speedup.csv from aggregate.py (default: computed from --cells)",
    )
    parser.add_argument(
        "--base",
        default="cpu",
        help="base device when --speedup is not given (default: %(default)s)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results/charts"),
        help="output folder (default: %(default)s)",
    )
    parser.add_argument(
        "--skip-empty",
        action="store_true",
        help="write no file for a chart with nothing to draw, and remove an old one "
        "(for published studies; the workflow keeps a placeholder)",
    )
    return parser.parse_args(argv)


def load_tables(args: argparse.Namespace) -> dict[str, pd.DataFrame]:
    """The tables the charts draw; optional ones are empty when their file is absent."""
    folder = args.tables
    cells_path = args.cells or (folder / "cells.csv" if folder else None)
    if cells_path is None:
        raise SystemExit("give --tables or --cells")
    cells = read_table(cells_path)
    speedup_path = args.speedup or (folder / "speedup.csv" if folder else None)
    if speedup_path and speedup_path.exists():
        speedup = read_table(speedup_path)
    else:
        speedup = speedup_table(cells, args.base)
    tables = {"cells": cells, "speedup": speedup}
    serving = folder / "serving.csv" if folder else None
    tables["serving"] = (
        read_table(serving)
        if serving and serving.exists()
        else pd.DataFrame(columns=SERVING_COLUMNS)
    )
    generation = folder / "generation.csv" if folder else None
    tables["generation"] = (
        read_table(generation)
        if generation and generation.exists()
        else pd.DataFrame(columns=GENERATION_COLUMNS)
    )
    for name, columns in (
        ("utilization", TIMELINE_COLUMNS),
        ("profile_ops", OPS_COLUMNS),
        ("serving_slo_runs", RUN_COLUMNS),  # absent in results from before the search
    ):
        path = folder / f"{name}.csv" if folder else None
        tables[name] = (
            pd.read_csv(path) if path and path.exists() else pd.DataFrame(columns=columns)
        )
    return tables


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        written = write_all_charts(load_tables(args), args.out, skip_empty=args.skip_empty)
    except OSError as error:  # a full disk: one line naming what could not be written
        where = error.filename or args.out
        print(f"error: cannot write charts ({where}): {error.strerror or error}", file=sys.stderr)
        return 1
    print(f"{len(written)} chart files -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
