#!/usr/bin/env python3
"""The confirm step of a serving sweep: choose one device's best sweep cell of one model from the
sweep records, run it again with the confirming runs, and write the confirm record.

    python scripts/confirm_serve.py --group-json JSON --sweep REC [REC ...] --out OUT
        [--prices FILE] [--data MANIFEST] [--log-dir DIR] [--runner TEXT]

--group-json is {"id": "confirm/task~T/model~M/device~D", "specs": [spec, ...], "confirm":
{"confirm_probes": 2, "confirm_budget_s": 600}} with one CellSpec per --sweep record, in the same
order (the workflow's rule confirm_serve passes both). The choice
is serving.sweep_choice's; the run is scripts/run_cell.py's on plan.confirm.confirm_spec of the
chosen cell; its record gains a `confirm` section (the choice, every candidate). Where no sweep
cell can be confirmed (none ok, or no VALID probe rate at the bound) the record says so, status
skipped, with `serving.slo.status` no_rate or no_candidate and no rate. By hand, the records of
an earlier sweep: --group-json from `snakemake -n -p` or built from the records' specs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
try:
    import devicebench  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO / "src"))

from devicebench.measure.machine import machine_identity  # noqa: E402
from devicebench.plan.cellspec import CellSpec, SpecError  # noqa: E402
from devicebench.plan.confirm import CONFIRM_AXIS, confirm_spec  # noqa: E402
from devicebench.record import new_record, write_atomic  # noqa: E402
from devicebench.run.runner import code_version  # noqa: E402
from devicebench.serving.sweep_choice import Choice, candidate, choose  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group-json", required=True, help="the confirm job: id and specs")
    parser.add_argument("--sweep", type=Path, nargs="+", required=True, help="sweep records")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prices", type=Path, help="rank by rate per dollar-hour with these")
    parser.add_argument("--data", type=Path, help="the dataset's manifest (run_cell.py --data)")
    parser.add_argument("--log-dir", type=Path)
    parser.add_argument("--runner", default="confirm_serve")
    return parser.parse_args(argv)


def read(path: Path) -> dict[str, Any] | None:
    """A sweep record, or None when it cannot be read (the choice says so)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def load_prices(path: Path | None) -> dict[str, Any] | None:
    """The price file, or None (rank by rate alone) where none is given or it is unusable."""
    if path is None or not path.exists():
        return None
    from devicebench.aggregate.pricing import PriceFileError
    from devicebench.aggregate.pricing import load_prices as load

    try:
        return load(path)
    except (PriceFileError, OSError, ValueError) as error:
        print(f"[devicebench] prices unusable, ranking by rate: {error}", file=sys.stderr)
        return None


def nothing_to_confirm(
    group_id: str, specs: list[CellSpec], records: list[Any], choice: Choice
) -> dict[str, Any]:
    """The record of a confirm step that confirms nothing: which sweep and why, no rate."""
    shared = dict(specs[0].axes)
    for spec in specs[1:]:  # the axes every sweep cell shares (task, model, device, mode ...)
        shared = {k: v for k, v in shared.items() if spec.values.get(k) == v}
    # threads as the sweep's records resolved them ("all" -> 16), as a cell's record says them
    counts = {(r.get("axes") or {}).get("threads") for r in records if isinstance(r, dict)}
    if "threads" in shared and len(counts) == 1 and isinstance(next(iter(counts)), int):
        shared["threads"] = next(iter(counts))
    record = new_record(group_id, shared | {CONFIRM_AXIS: "best"})
    record["status"] = "skipped"
    record["message"] = f"nothing to confirm: {choice.message}"
    bound = next((c.p99_bound_ms for c in choice.candidates if c.p99_bound_ms), None)
    record["serving"] = {
        "slo": {
            "status": choice.status,  # no_rate or no_candidate
            "message": choice.message,
            "p99_bound_ms": bound,
            "max_valid_qps": None,
            "run_qps": None,
            "runs": 0,
            "probes": [],
            "confirms": [],
        }
    }
    record["confirm"] = choice.section()
    record["environment"] = machine_identity()
    boots = {(r.get("environment") or {}).get("boot_id") for r in records if r}
    record["environment"]["sweep_boot_ids"] = sorted(b for b in boots if b)
    record["provenance"] = {"code_version": code_version(), "runner": "confirm_serve"}
    return record


def run_confirm(spec: CellSpec, args: argparse.Namespace) -> int:
    """scripts/run_cell.py on the confirm cell (a fresh process, as every cell)."""
    command = [sys.executable, str(REPO / "scripts" / "run_cell.py"), "--spec-json", spec.to_json()]
    command += ["--out", str(args.out), "--runner", args.runner]
    if args.data:
        command += ["--data", str(args.data)]
    if args.log_dir:
        command += ["--log-dir", str(args.log_dir)]
    return subprocess.run(command, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        group = json.loads(args.group_json)
        specs = [CellSpec.from_dict(spec) for spec in group["specs"]]
    except (ValueError, KeyError, TypeError, SpecError) as error:
        print(f"[devicebench] error: --group-json: {error}", file=sys.stderr)
        return 2
    if len(specs) != len(args.sweep) or not specs:
        print(f"[devicebench] error: {len(specs)} specs for {len(args.sweep)} records",
              file=sys.stderr)  # fmt: skip
        return 2
    records = [read(path) for path in args.sweep]
    prices = load_prices(args.prices)
    choice = choose(
        candidate(spec.cell_id, record, prices) for spec, record in zip(specs, records, strict=True)
    )
    print(f"[devicebench] confirm {group['id']}: {choice.message}", flush=True)
    if choice.chosen is None:
        write_atomic(args.out, nothing_to_confirm(group["id"], specs, records, choice))
        return 0
    chosen = next(spec for spec in specs if spec.cell_id == choice.chosen.cell_id)
    spec = confirm_spec(chosen, choice.chosen.probe_qps, group.get("confirm"))
    status = run_confirm(spec, args)
    if not args.out.exists():
        return status or 1  # run_cell said why; no record, so the job fails and reruns
    record = json.loads(args.out.read_text())
    record["confirm"] = choice.section()
    write_atomic(args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
