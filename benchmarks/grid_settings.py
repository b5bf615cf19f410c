#!/usr/bin/env python3
"""Dump every config's cells and the settings each cell's run decodes to (ARCHITECTURE check 1).

    python benchmarks/grid_settings.py > before.json   # then again after a change, and diff

Each config/*.yaml (but schema and prices) is combined with the default, as the workflow does,
with check_devices off; the output maps config -> sorted {cell_id: settings}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from devicebench.config import check_config, combine_configs  # noqa: E402
from devicebench.config_files import read_yaml  # noqa: E402

NOT_STUDIES = {"schema.yaml", "prices.yaml"}


def decoded(cell) -> dict:
    """The settings a cell's run receives, whatever form crosses to the runner."""
    to_spec = getattr(cell, "to_json", None)
    if to_spec is not None:  # a CellSpec: the settings its JSON decodes back to
        from devicebench.plan.cellspec import CellSpec

        return CellSpec.from_json(to_spec()).run_settings()
    return cell.run_settings()


def grid_of(path: Path) -> dict[str, dict]:
    try:
        from devicebench.plan.grid import expand_grid
    except ImportError:
        from devicebench.grid import expand_grid
    default = read_yaml(REPO / "config" / "config.yaml")
    users = [] if path.name == "config.yaml" else [read_yaml(path)]
    study = combine_configs(default, users, {"check_devices": False})
    cells = expand_grid(check_config(study))
    return {cell.cell_id: decoded(cell) for cell in sorted(cells, key=lambda c: c.cell_id)}


def main() -> int:
    out = {}
    for path in sorted((REPO / "config").glob("*.yaml")):
        if path.name not in NOT_STUDIES:
            out[path.name] = grid_of(path)
            print(f"{path.name}: {len(out[path.name])} cells", file=sys.stderr)
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
