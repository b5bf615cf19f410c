"""Write the README's answer block from the published studies' tables.

    python scripts/readme_results.py            # rewrite the block (and the verdict charts)
    python scripts/readme_results.py --check    # exit 1 if the README block is not what it makes

The block lies between `<!-- results:begin -->` and `<!-- results:end -->` in README.md; every
figure in it comes from results/published/*/tables (see devicebench.report.readme).
"""

import argparse
import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("devicebench") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.report.readme import replace_block, results_block  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def draw_verdict_charts(charts: list[tuple[Path, Path]]) -> None:
    """The answer study's verdict chart (by workload class, with ranges) as PNG."""
    from devicebench.aggregate.analysis import load_prices
    from devicebench.aggregate.collect import read_table
    from devicebench.report.answer import answer, row_ranges
    from devicebench.report.decision import class_chart
    from devicebench.report.verdict import load_best, reprice, verdict_rows

    prices = load_prices(REPO / "config" / "prices.yaml")
    for tables, png in charts:
        cells = read_table(tables / "cells.csv")
        best = reprice(load_best(tables), cells, prices)
        serving = tables / "serving.csv"
        answers = answer(best, cells, read_table(serving) if serving.exists() else None)
        rows = verdict_rows(best)
        chart = class_chart(answers, row_ranges(rows[rows["cost_ratio"].notna()], cells))
        if chart is not None:
            png.parent.mkdir(parents=True, exist_ok=True)
            chart.save(png, scale_factor=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", type=Path, default=REPO / "README.md")
    parser.add_argument("--check", action="store_true", help="compare only; write nothing")
    args = parser.parse_args(argv)
    block, charts = results_block(REPO)
    readme = args.readme.read_text()
    wanted = replace_block(readme, block)
    if args.check:
        if wanted != readme:
            print(f"{args.readme}: results block differs; run scripts/readme_results.py")
            return 1
        return 0
    draw_verdict_charts(charts)
    args.readme.write_text(wanted)
    print(f"results block -> {args.readme} ({len(charts)} verdict chart(s))", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
