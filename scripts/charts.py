"""Draw the study's charts from the aggregated tables.

    python scripts/charts.py --cells results/tables/cells.csv \
        --speedup results/tables/speedup.csv --out results/charts

Writes time_vs_batch, speedup_vs_batch, throughput_per_cell and accuracy_per_cell as
self-contained HTML and PNG.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("devicebench") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.aggregate.charts import write_charts  # noqa: E402
from devicebench.aggregate.collect import read_table  # noqa: E402
from devicebench.aggregate.tables import speedup_table  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=Path, required=True, help="cells.csv from aggregate.py")
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
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cells = read_table(args.cells)
    speedup = read_table(args.speedup) if args.speedup else speedup_table(cells, args.base)
    written = write_charts(cells, speedup, args.out)
    print(f"{len(written)} chart files -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
