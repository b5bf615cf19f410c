"""Write the study's HTML write-up from the aggregate tables.

    python scripts/report.py --tables results/tables --out results/report \
        [--config config/config.yaml] [--prices config/prices.yaml]

Writes results/report/index.html (one self-contained page: opens from disk, no network) and
charts.json (the charts it embeds, for the browser test).
"""

import argparse
import contextlib
import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("devicebench") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import yaml  # noqa: E402

from devicebench.aggregate.analysis import load_prices  # noqa: E402
from devicebench.report import load_tables  # noqa: E402
from devicebench.report.page import write_report  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=Path, default=Path("results/tables"))
    parser.add_argument("--out", type=Path, default=Path("results/report"))
    parser.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml")
    parser.add_argument("--prices", type=Path, default=REPO / "config" / "prices.yaml")
    return parser.parse_args(argv)


def report(tables: Path, out: Path, study: dict, prices: Path) -> Path:
    page = write_report(load_tables(tables), study, load_prices(prices), out)
    print(f"write-up -> {page}", file=sys.stderr)
    return page


def study_settings(path: Path) -> dict:
    """The study a config means, as the workflow reads it: the default fills what it leaves out."""
    from devicebench.plan.config import check_config, combine_configs

    if not path.exists():
        return {}
    default_path = REPO / "config" / "config.yaml"
    default = yaml.safe_load(default_path.read_text())
    users = [] if path.resolve() == default_path.resolve() else [yaml.safe_load(path.read_text())]
    return check_config(combine_configs(default, users))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report(args.tables, args.out, study_settings(args.config), args.prices)
    return 0


def from_snakemake(smk) -> None:
    """Entry point under Snakemake's `script:` (the study settings come as a params mapping)."""
    with open(smk.log[0], "w") as log, contextlib.redirect_stderr(log):
        tables = Path(smk.input.tables[0]).parent
        study = yaml.safe_load(yaml.safe_dump(dict(smk.params.study)))
        report(tables, Path(smk.output[0]).parent, study, Path(smk.input.prices))


if "snakemake" in globals():
    from_snakemake(snakemake)  # noqa: F821 - injected by Snakemake
elif __name__ == "__main__":
    sys.exit(main())
