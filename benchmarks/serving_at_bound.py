#!/usr/bin/env python3
"""Benchmark tables of a published serving study judged at a p99 bound: each sweep cell's
search and confirm record, its server against its own device in process
(serving.inprocess_ratio), and every confirming run, from the study's tables
(scripts/aggregate.py's serving_slo*.csv).

    python benchmarks/serving_at_bound.py results/published/h200_serving [SUBFOLDER ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

SWEEP = ["model", "device_label", "engine", "replicas", "slo_role", "slo_status", "p99_bound_ms"]
SWEEP += ["probe_qps", "max_valid_qps"]
SWEEP += ["closed_loop_rps", "inprocess_samples_per_s", "inprocess_ratio"]
RUNS = ["model", "device_label", "target_qps", "scheduled_qps", "queries", "p50_ms", "p99_ms"]
RUNS += ["validity"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", type=Path, help="a published folder (its tables/)")
    parser.add_argument("parts", nargs="*", default=[""], help="subfolders with tables/ too")
    args = parser.parse_args()
    for part in args.parts:
        tables = args.study / part / "tables"
        search = pd.read_csv(tables / "serving_slo.csv")
        sweep = search[search["slo_role"].astype(str).str.match("sweep|confirmed")]
        print(f"\n{tables}: sweep cells (probes), confirm records and in-process yardstick\n")
        print(sweep[SWEEP].to_markdown(index=False, floatfmt=".4g"))
        runs = pd.read_csv(tables / "serving_slo_runs.csv")
        confirms = runs[runs["phase"] == "confirm"]
        if not confirms.empty:
            print(f"\n{tables}: confirming runs\n")
            print(confirms[RUNS].to_markdown(index=False, floatfmt=".4g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
