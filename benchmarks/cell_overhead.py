#!/usr/bin/env python3
"""A cell's fixed cost: from its process start to timed_start, by stage, and what follows.

    python benchmarks/cell_overhead.py results/cells --log .snakemake/log/LATEST.snakemake.log
    python benchmarks/cell_overhead.py results/published/h100/cells \\
        --log results/published/h100/logs/snakemake-slice2.log --by task,framework,device,mode

Per group of records (default task, device, mode): cells, the median fixed cost (process start ->
timed_start; records without `timings.marks` start at their job's start in the Snakemake log, else
at provenance.created, whole seconds), its stages (each mark minus the one before), the timed
window, the tail (timed_end -> record written, or the job's end in the log), the job's length in
the log (spawn_s: its start in the log -> the process start), the gap from the job's end to the
next cell job's start, and the job of a cell without a timed window (skipped or failed;
untimed_job_s). Figures are over the cells with a timed window. --json writes every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.aggregate import fixed_cost  # noqa: E402
from devicebench.snakemake_log import Job, gaps, parse_offset, read_jobs  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", type=Path, help="folder of cell records (searched recursively)")
    parser.add_argument(
        "--log", type=Path, action="append", default=[], help="a Snakemake log (repeatable)"
    )
    parser.add_argument(
        "--utc-offset",
        help="the log's clock offset from UTC, e.g. +0000 (default: provenance.created's)",
    )
    parser.add_argument(
        "--by", default=",".join(fixed_cost.GROUP_AXES), help="axes to group by (comma-separated)"
    )
    parser.add_argument("--json", type=Path, help="write the groups and every record's figures")
    args = parser.parse_args(argv)
    if not args.records.is_dir():
        parser.error(f"records folder {args.records} does not exist")
    for log in args.log:
        if not log.is_file():
            parser.error(f"--log {log} is not a file")
    if args.utc_offset:
        try:
            parse_offset(args.utc_offset)
        except ValueError as error:
            parser.error(str(error))
    args.by = tuple(axis.strip() for axis in args.by.split(",") if axis.strip())
    return args


def collect(args: argparse.Namespace) -> tuple[list[dict], list[Job]]:
    """Every record's figures, with its job from the logs where one matches."""
    records = fixed_cost.load_records(args.records)
    offsets = {fixed_cost.created_offset(record) for record in records} - {None}
    offset = args.utc_offset or (offsets.pop() if len(offsets) == 1 else "+0000")
    jobs, gap_of = [], {}
    for log in args.log:
        found = read_jobs(log, parse_offset(offset))
        for jobid, gap in gaps(found).items():
            gap_of[(str(log), jobid)] = gap
        jobs += found
    rows = []
    for record in records:
        job = fixed_cost.match_job(record, jobs)
        row = fixed_cost.record_cost(record, job)
        row["gap_s"] = gap_of.get((job.log, job.jobid)) if job else None
        rows.append(row)
    return rows, jobs


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def table(summary: list[dict], by: tuple[str, ...]) -> str:
    """The groups as Markdown: the main figures, then the stages before timed_start and after."""
    figures = ("fixed_s", "window_s", "after_s", "job_s", "spawn_s", "gap_s", "untimed_job_s")
    lines = [
        "| " + " | ".join([*by, "cells", "timed", *figures]) + " |",
        "|" + "---|" * len(by) + "---:|" * (2 + len(figures)),
    ]
    for row in summary:
        values = [str(row[a]) for a in by] + [str(row["cells"]), str(row["timed"])]
        lines.append("| " + " | ".join(values + [_cell(row[f]) for f in figures]) + " |")
    for key, title in (("phases", "before timed_start"), ("after_phases", "after timed_end")):
        names = list(summary[0][key]) if summary else []
        if not names:
            continue
        lines += ["", f"Stages {title} (median seconds, each mark minus the one before):", ""]
        lines.append("| " + " | ".join([*by, *names]) + " |")
        lines.append("|" + "---|" * len(by) + "---:|" * len(names))
        for row in summary:
            values = [str(row[a]) for a in by] + [_cell(row[key][n]) for n in names]
            lines.append("| " + " | ".join(values) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows, jobs = collect(args)
    if not rows:
        print(f"no cell records under {args.records}", file=sys.stderr)
        return 1
    summary = fixed_cost.summarize(rows, args.by)
    between = fixed_cost.record_gaps(rows)
    print(table(summary, args.by))
    print(
        f"\n{len(rows)} records ({sum(r['timed'] for r in rows)} with a timed window), "
        f"{len(jobs)} log jobs; start from: "
        + ", ".join(sorted({str(r["start_from"]) for r in rows}))
    )
    if between:
        print(
            "record written -> next cell's process start: median "
            f"{statistics.median(between):.2f} s over {len(between)} pairs "
            "(snakemake between two jobs, with the shell's start)"
        )
    if args.json:
        document = {"by": list(args.by), "groups": summary, "records": rows, "gaps_s": between}
        args.json.write_text(json.dumps(document, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
