"""Set rerun cell records against the published ones: throughput within noise, accuracy back.

    python scripts/reproducibility.py --published results/published/h100/cells \
        --rerun "new lease=DIR" [--rerun "same lease, again=DIR2"] \
        --out results/published/h100/tables/reproducibility

Writes OUT.csv and OUT.md; the write-up (scripts/report.py) shows them when they lie beside the
other tables. The reruns come from the workflow itself (benchmarks/gpu_host.sh with a pattern).
"""

import argparse
import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("devicebench") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.aggregate.collect import write_table  # noqa: E402
from devicebench.aggregate.reproducibility import (  # noqa: E402
    compare_runs,
    reproducibility_findings,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--published", type=Path, required=True, help="published records")
    parser.add_argument(
        "--rerun", action="append", required=True, help="LABEL=FOLDER of rerun records"
    )
    parser.add_argument("--out", type=Path, required=True, help="table stem (no suffix)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    reruns = {}
    for item in args.rerun:
        label, sep, folder = item.partition("=")
        if not sep or not label or not folder:
            sys.exit(f"--rerun {item!r}: expected LABEL=FOLDER")
        reruns[label] = Path(folder)
    try:
        table = compare_runs(args.published, reruns)
    except ValueError as error:
        sys.exit(f"reproducibility: {error}")
    write_table(table, args.out)
    for line in reproducibility_findings(table):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
