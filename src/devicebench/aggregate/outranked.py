"""Pairs that do not hold each device at its best: one work measured on several machines.

A verdict row pairs the CPU's and the GPU's best cell of one machine (boot_id) and one code
version. When a work's blocks ran on different machines (a block run again on a later machine,
a block split over calls), a machine may hold a device's lesser engine only: machine 11's 1B
1024/128 pair set torch eager on the GPU against the CPU, while the CUDA-graph loop, 10x
cheaper, ran on machine 12. Such a pair's ratio is not "each device at its best" (DESIGN), so
its row says which machine holds that device's better pick and by how much, and the verdict
(report.verdict.verdict_rows) leaves it out. A pick is outranked only beyond the lease-to-lease
variance (noise.LEASE_VARIANCE), which machine-to-machine noise alone can explain.
"""

from __future__ import annotations

import pandas as pd

from devicebench.aggregate.noise import LEASE_VARIANCE
from devicebench.aggregate.serving_best import DEVICES
from devicebench.aggregate.values import key_text, number_or_none
from devicebench.aggregate.verdict_words import OUTRANKED, finding

SAME_WORK = ["task", "mode", "model", "work", "pick"]


def mark_outranked(table: pd.DataFrame) -> pd.DataFrame:
    """`table` (best.csv's rows of one study) with `outranked`: True on a one-machine row whose
    CPU or GPU pick is beaten by more than LEASE_VARIANCE by that device's pick of the same
    work and pick on another machine; its note names that machine and the factor."""
    table = table.copy()
    table["outranked"] = False
    if table.empty:
        return table
    own = ~table["crosses_machines"].fillna(False).astype(bool)
    keys = pd.Series(
        [tuple(map(key_text, r)) for r in table[SAME_WORK].itertuples(index=False)],
        index=table.index,
    )
    for _, rows in table[own].groupby(keys[own]):
        if rows["boot_id"].map(key_text).nunique() < 2:
            continue
        for index in rows.index:
            why = [_beaten(table.loc[index], rows.drop(index), side) for side in DEVICES]
            why = [w for w in why if w]
            if why:
                mark_row(table, index, why, "out of the verdict")
    return table


def mark_row(table: pd.DataFrame, index: object, reasons: list[str], outcome: str) -> None:
    """Mark `table`'s row `index` outranked, in place: its note gains the reasons and the
    outcome, its finding is worded again (stale_confirm marks serve rows the same way)."""
    note = table.at[index, "note"]
    why = f"{OUTRANKED}: {'; '.join(reasons)}; {outcome}"
    table.at[index, "note"] = f"{note}; {why}" if _given(note) else why
    table.at[index, "outranked"] = True
    table.at[index, "finding"] = finding(table.loc[index].to_dict())


def _beaten(row: pd.Series, others: pd.DataFrame, side: str) -> str | None:
    """Why `row`'s `side` pick is not that device's best for this work, or None."""
    cost = str(row["pick"]) == "cheapest"
    column = f"{side}_usd_per_million" if cost else f"{side}_samples_per_s"
    mine = number_or_none(row.get(column))
    values = pd.to_numeric(others[column], errors="coerce")
    if mine is None or mine <= 0 or values.dropna().empty:
        return None
    best = values.idxmin() if cost else values.idxmax()
    factor = mine / values[best] if cost else values[best] / mine
    if not factor > LEASE_VARIANCE:
        return None
    where = key_text(others.at[best, "boot_id"])[:8]
    how = "cheaper" if cost else "faster"
    return (
        f"{DEVICES[side]}'s pick on boot {where} "
        f"({others.at[best, f'{side}_config']}) is {factor:.3g}x {how}"
    )


def _given(value: object) -> bool:
    return isinstance(value, str) and value != ""
