#!/usr/bin/env python3
"""Do two (or more) runs of the same cells hold the same results, timings aside?

    python benchmarks/same_records.py RUN_A/results/cells RUN_B/results/cells [...]

For each cell found in every folder it compares status, message, quality, the model section
(parameters, fit loop, FLOPs, precision math), the engine's agreement and format, the
environment and provenance.deterministic; keys that are times (ending in _s or _at) are left
out. It prints each difference and exits 1 if there is one: what a cut of a cell's fixed cost
must not change (benchmarks/RESULTS.md, "Per-cell fixed cost").
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

TIME = re.compile(r"(_s|_at)$")
SECTIONS = ("status", "message", "quality", "model", "engine", "environment")


def content(record: dict[str, Any]) -> dict[str, Any]:
    """What a cell found, without its timings."""

    def untimed(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if not TIME.search(str(k))}
        return value

    found = {section: untimed(record.get(section)) for section in SECTIONS}
    found["deterministic"] = (record.get("provenance") or {}).get("deterministic")
    return found


def main(argv: list[str]) -> int:
    folders = [Path(arg) for arg in argv]
    if len(folders) < 2 or not all(folder.is_dir() for folder in folders):
        print("usage: same_records.py FOLDER FOLDER [FOLDER ...] (folders of records)")
        return 2
    runs = [{str(p.relative_to(f)): p for p in f.rglob("*.json")} for f in folders]
    common = sorted(set(runs[0]).intersection(*runs[1:]))
    differences = 0
    for cell in common:
        contents = [content(json.loads(run[cell].read_text())) for run in runs]
        for key in contents[0]:
            values = [json.dumps(c[key], sort_keys=True) for c in contents]
            if len(set(values)) > 1:
                differences += 1
                print(f"DIFFERS {cell} {key}: " + " | ".join(v[:200] for v in values))
    print(f"{len(common)} cells in all {len(folders)} folders, {differences} differences")
    return 1 if differences or not common else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
