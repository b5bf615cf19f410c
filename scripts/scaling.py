#!/usr/bin/env python3
"""Scaling efficiency table and chart from train records with a `gpus` axis.

    python scripts/scaling.py --records results/cells --out results/scaling
    python scripts/scaling.py --records results/published/ddp_h200x2/cells \
        --out results/published/ddp_h200x2/scaling

Writes scaling.csv and scaling.md, and (with Altair installed, unless --no-chart) the chart
scaling_efficiency.html and .png; reads cell records and benchmarks/ddp_scaling.py's records.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("devicebench") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.aggregate.scaling import (  # noqa: E402
    format_table,
    load_rows,
    scaling_chart,
    scaling_table,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, action="append", required=True)
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--no-chart", action="store_true", help="the table only")
    args = parser.parse_args(argv)
    paths = sorted(
        p for folder in args.records for p in folder.rglob("*.json") if not p.name.startswith(".")
    )
    table = scaling_table(load_rows(paths))
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "scaling.csv", index=False)
    markdown = format_table(table)
    (args.out / "scaling.md").write_text(markdown)
    print(markdown)
    if not args.no_chart:
        from devicebench.aggregate.charts import save_chart

        save_chart(scaling_chart(table), args.out / "scaling_efficiency")
    return 0


if __name__ == "__main__":
    sys.exit(main())
