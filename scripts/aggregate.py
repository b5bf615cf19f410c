"""Collect cell records into the study's tables.

    python scripts/aggregate.py --records results/cells --tables results/tables --base cpu
    python scripts/aggregate.py results/cells/a.json results/cells/b.json --tables out

Writes cells, timing, speedup, quality, environment, cost, efficiency, utilization, profile_ops,
top_ops, not_ok, engines, best, serving, generation and generation_best tables, each as CSV and
Markdown. Prices (--prices) are read here, so a price change reruns only the aggregates.
"""

import argparse
import contextlib
import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("devicebench") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.aggregate import analysis, timelines  # noqa: E402
from devicebench.aggregate.best import best_table  # noqa: E402
from devicebench.aggregate.collect import collect_records, write_table  # noqa: E402
from devicebench.aggregate.engines import engine_table  # noqa: E402
from devicebench.aggregate.environment import environment_table, read_records  # noqa: E402
from devicebench.aggregate.generation import generation_best, generation_table  # noqa: E402
from devicebench.aggregate.serving import serving_table  # noqa: E402
from devicebench.aggregate.serving_slo import slo_runs_table, slo_table  # noqa: E402
from devicebench.aggregate.tables import (  # noqa: E402
    not_ok_table,
    quality_table,
    speedup_table,
    timing_table,
)

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="record files (or folders) to read")
    parser.add_argument(
        "--records",
        type=Path,
        action="append",
        default=[],
        help="folder searched recursively for *.json records (repeatable)",
    )
    parser.add_argument("--records-list", type=Path, help="file listing record paths, one per line")
    parser.add_argument(
        "--tables",
        type=Path,
        default=Path("results/tables"),
        help="output folder for the tables (default: %(default)s)",
    )
    parser.add_argument(
        "--base",
        default="cpu",
        help="base device for speedups: a label like cpu:16t or cuda, or a "
        "device name like cpu meaning its most-threaded cell (default: %(default)s)",
    )
    parser.add_argument(
        "--prices",
        type=Path,
        default=REPO / "config" / "prices.yaml",
        help="hourly prices per device profile (default: %(default)s)",
    )
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="TASK=ACCURACY",
        help="target accuracy of a task for cost-to-target (repeatable)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.02,
        help="accuracy difference across devices above which a cell is flagged",
    )
    return parser.parse_args(argv)


def record_paths(args: argparse.Namespace) -> list[Path]:
    """Every record named on the command line, in a list file, or under a records folder."""
    given = list(args.paths) + list(args.records)
    if args.records_list:
        lines = args.records_list.read_text().splitlines()
        given += [Path(line.strip()) for line in lines if line.strip()]
    found: set[Path] = set()
    for path in given:
        if path.is_dir():
            found.update(  # a hand-run serve cell keeps LoadGen's .json logs beside it
                p for p in path.rglob("*.json") if not p.name.startswith((".", "mlperf_log"))
            )
        else:
            found.add(path)
    return sorted(found)


def aggregate(
    paths: list[Path],
    tables_dir: Path,
    base: str,
    prices: Path | None = None,
    targets: dict[str, float] | None = None,
    tolerance: float = 0.02,
) -> None:
    """Write every table for the records in `paths`."""
    price_table = analysis.load_prices(prices or REPO / "config" / "prices.yaml")
    cells = analysis.add_analysis(collect_records(paths), price_table, base, targets)
    ops = timelines.profile_ops_table(paths)
    tables = {
        "cells": cells,
        "timing": timing_table(cells),
        "speedup": speedup_table(cells, base),
        "quality": analysis.add_agreement(quality_table(cells), tolerance),
        "environment": environment_table(read_records(paths)),
        "cost": analysis.cost_table(cells),
        "efficiency": analysis.efficiency_table(cells),
        "utilization": timelines.utilization_table(paths),
        "profile_ops": ops,
        "top_ops": timelines.top_ops_side_by_side(ops),
        "not_ok": not_ok_table(cells),
        "engines": engine_table(cells),
        "best": best_table(cells, price_table),
        "serving": serving_table(paths, price_table),
        "serving_slo": slo_table(paths, price_table),
        "serving_slo_runs": slo_runs_table(paths),
        "generation": (generation := generation_table(paths, price_table)),
        "generation_best": generation_best(generation),
    }
    for name, table in tables.items():
        write_table(table, tables_dir / name)
    not_ok = int((cells["status"] != "ok").sum())
    print(f"{len(cells)} records ({not_ok} not ok) -> {tables_dir}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    targets = {k: float(v) for k, v in (item.split("=", 1) for item in args.target)}
    aggregate(record_paths(args), args.tables, args.base, args.prices, targets, args.tolerance)
    return 0


def from_snakemake(smk) -> None:
    """Entry point under Snakemake's `script:` (a grid's paths can exceed a command line)."""
    with open(smk.log[0], "w") as log, contextlib.redirect_stderr(log):
        aggregate(
            [Path(p) for p in smk.input.records],
            Path(smk.output[0]).parent,
            smk.params.base,
            Path(smk.input.prices),
            dict(smk.params.targets),
            float(smk.params.tolerance),
        )


if "snakemake" in globals():
    from_snakemake(snakemake)  # noqa: F821 - injected by Snakemake
elif __name__ == "__main__":
    sys.exit(main())
