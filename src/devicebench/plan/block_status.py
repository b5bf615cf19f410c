"""Which blocks of a study have been measured: the table a published README shows.

A block is *in* when every one of its cells has a record and all of them came from one machine
(boot_id) and one code version, so that its ratios pair like with like; otherwise it *waits*,
with the reason. The table is written between markers in the published README by code, never by
hand (scripts/blocks.py --readme).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devicebench.plan.cellspec import CellSpec
from devicebench.record import code_version_of

BEGIN = "<!-- blocks:begin -->"
END = "<!-- blocks:end -->"


def _provenance(path: Path) -> tuple[str | None, str | None, str | None]:
    record = json.loads(path.read_text())
    environment = record.get("environment") or {}
    provenance = record.get("provenance") or {}
    return environment.get("boot_id"), code_version_of(provenance), provenance.get("created")


def _record_id(member: CellSpec | str) -> str:
    """A cell's id, or a confirm step's record id (plan.confirm: already a string)."""
    return member if isinstance(member, str) else member.cell_id


def _device(member: CellSpec | str) -> str:
    if isinstance(member, str):  # confirm/task~T/model~M/device~D
        return member.rsplit("device~", 1)[-1]
    return member.values["device"]


def block_state(cells: list[CellSpec | str], records: Path) -> dict[str, Any]:
    """Records present, machines and code versions of one block's cells (and confirm steps),
    and whether it is in."""
    found = [records / f"{_record_id(cell)}.json" for cell in cells]
    present = [path for path in found if path.exists()]
    marks = [_provenance(path) for path in present]
    boots = sorted({boot or "unknown" for boot, _, _ in marks})
    versions = sorted({version or "unknown" for _, version, _ in marks})
    created = sorted(stamp for _, _, stamp in marks if stamp)
    if not present:
        state = "waits: not run yet"
    elif len(present) < len(cells):
        state = f"waits: {len(cells) - len(present)} cells without a record"
    elif len(boots) > 1 or "unknown" in boots:
        state = f"waits: records from {len(boots)} machines"
    elif len(versions) > 1:
        state = f"waits: records from {len(versions)} code versions"
    else:
        state = "in"
    return {
        "cells": len(cells),
        "cpu": sum(_device(cell) == "cpu" for cell in cells),
        "records": len(present),
        "boot_ids": boots,
        "code_versions": versions,
        "measured": f"{created[0][:16]} to {created[-1][11:16]}".replace("T", " ")
        if created
        else "",
        "state": state,
    }


def status_table(blocks: dict[str, list[CellSpec]], records: Path) -> str:
    """A Markdown table of every block's state, in config order."""
    lines = [
        "| block | cells (CPU / GPU) | records | machine (boot_id) | code version | measured (UTC) "
        "| state |",
        "|---|---|---:|---|---|---|---|",
    ]
    for name, cells in blocks.items():
        s = block_state(cells, records)
        boots = ", ".join(boot[:8] for boot in s["boot_ids"])
        lines.append(
            f"| {name} | {s['cells']} ({s['cpu']} / {s['cells'] - s['cpu']}) | {s['records']} "
            f"| {boots} | {', '.join(s['code_versions'])} | {s['measured']} | {s['state']} |"
        )
    return "\n".join(lines)


def with_table(readme: str, table: str) -> str:
    """The README text with the block table between its markers replaced."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"the README has no {BEGIN} ... {END} markers")
    head, rest = readme.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{table}\n{END}{rest.split(END, 1)[1]}"
