"""Blocks of a study: sets of cells that run together in one call on one machine.

A lent GPU host gives a command 10 minutes, and two calls may land on two machines. A ratio is
only honest when both of its cells ran on one machine, so a study too large for one call is cut
into blocks (config key `blocks`), each holding a workload's CPU and GPU cells together.
Every cell belongs to exactly one block, and every selector of a block selects a cell, so a typo
in a block is a config error before anything runs, never a cell that silently runs nowhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from devicebench.plan.cellspec import CellSpec
from devicebench.plan.config import ConfigError
from devicebench.plan.grid import matches, selector_values


def assign_blocks(blocks: dict[str, Any], cells: Iterable[CellSpec]) -> dict[str, list[CellSpec]]:
    """Cells of each block, in grid order; raise ConfigError where a cell is in none or in two
    blocks, or a selector picks no cell. A study without blocks has none to check."""
    if not blocks:
        return {}
    members: dict[str, list[CellSpec]] = {name: [] for name in blocks}
    used = {
        (name, i): 0 for name, block in blocks.items() for i in range(len(block.get("cells", [])))
    }
    orphans: list[str] = []
    for cell in cells:
        values = selector_values(cell)
        homes = []
        for name, block in blocks.items():
            hits = [i for i, rule in enumerate(block.get("cells", [])) if matches(rule, values)]
            for index in hits:
                used[(name, index)] += 1
            if hits:
                homes.append(name)
        if len(homes) > 1:
            raise ConfigError(
                f"config key blocks: cell {cell.cell_id} is in blocks {', '.join(homes)}; "
                "a cell runs in exactly one block"
            )
        if homes:
            members[homes[0]].append(cell)
        else:
            orphans.append(cell.cell_id)
    if orphans:
        shown = "\n  ".join(orphans[:5]) + (
            f"\n  ... {len(orphans) - 5} more" if len(orphans) > 5 else ""
        )
        raise ConfigError(
            f"config key blocks: {len(orphans)} cells of the grid are in no block:\n  {shown}"
        )
    for (name, index), count in used.items():
        if count == 0:
            raise ConfigError(
                f"config key blocks.{name}.cells[{index}]: {blocks[name]['cells'][index]} "
                "selects no cell of the grid"
            )
    return members
