"""Serve verdicts whose confirmed server a later sweep has beaten: not each device at its best.

The confirm step (plan.confirm) confirms each device's best sweep cell of a model, chosen by
serving.sweep_choice: the highest VALID probe rate per dollar-hour. A sweep block run after it
(MobileNetV2's `serve-mobilenetv2-sweep-more`, on a later machine) may probe a configuration
that beats the one confirmed: the GPU without a batch window, the CPU as 4 processes of 4
threads. The confirm records then pair a device's lesser server, so the row says which sweep
cell beats it and by how much, and is `outranked`: out of the verdict
(report.verdict.verdict_rows) until that device's confirm block runs again. Probe against probe
(one model, one bound, the same short LoadGen runs), ranked as sweep_choice ranks, and only
beyond the lease-to-lease variance (noise.LEASE_VARIANCE) that machine-to-machine noise alone
can explain.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from devicebench.aggregate.noise import LEASE_VARIANCE
from devicebench.aggregate.outranked import mark_row
from devicebench.aggregate.serving_best import DEVICES, ROLES
from devicebench.aggregate.values import key_text, number_or_none
from devicebench.serving.sweep_choice import Candidate, choose, score

SAME_SWEEP = ["task", "model", "device", "p99_bound_ms"]


def mark_stale_confirms(
    rows: pd.DataFrame, serve: pd.DataFrame, name: Callable[[pd.Series], str]
) -> pd.DataFrame:
    """best.csv's serve `rows` with `outranked` True where a device's confirmed sweep cell is
    beaten, beyond LEASE_VARIANCE, by another sweep cell of that model and bound among the serve
    cells `serve` (any machine); the note names both (`name`: best.py's configuration text),
    the beating cell's machine and the factor."""
    rows = rows.copy()
    rows["outranked"] = False
    if rows.empty or "confirmed_cell" not in serve:
        return rows
    by_id = serve.drop_duplicates("cell_id").set_index("cell_id")
    sweeps = serve[serve["slo_role"].map(key_text).eq(ROLES["sweep"])]
    for index, row in rows.iterrows():
        why = [_beaten(row, side, by_id, sweeps, name) for side in DEVICES]
        why = [w for w in why if w]
        if why:
            mark_row(rows, index, why, "out of the verdict until it is confirmed")
    return rows


def _beaten(
    row: pd.Series,
    side: str,
    by_id: pd.DataFrame,
    sweeps: pd.DataFrame,
    name: Callable[[pd.Series], str],
) -> str | None:
    """Why `row`'s `side` confirm record confirmed a sweep cell that another one beats, or None."""
    confirm = key_text(row.get(f"{side}_cell"))
    if confirm not in by_id.index:
        return None
    chosen = key_text(by_id.at[confirm, "confirmed_cell"])
    if chosen not in by_id.index:
        return None
    same = sweeps
    for column in SAME_SWEEP:
        same = same[same[column].map(key_text).eq(key_text(by_id.at[chosen, column]))]
    candidates = [_candidate(cell) for _, cell in same.iterrows()]
    choice = choose(candidates)  # the confirm step's own choice, over every sweep cell now
    mine = next((c for c in candidates if c.cell_id == chosen and c.eligible), None)
    best = choice.chosen
    if mine is None or best is None or best.cell_id == chosen:
        return None
    factor = score(best, choice.ranked_by) / score(mine, choice.ranked_by)
    if not factor > LEASE_VARIANCE:
        return None
    beating = same[same["cell_id"].eq(best.cell_id)].iloc[0]
    return (
        f"{DEVICES[side]}'s confirmed server ({name(by_id.loc[chosen])}) probed "
        f"{mine.probe_qps:.4g} QPS; the sweep's {name(beating)} on boot "
        f"{key_text(beating['boot_id'])[:8]} probed {best.probe_qps:.4g} QPS, {factor:.3g}x "
        f"its {choice.ranked_by}"
    )


def _candidate(cell: pd.Series) -> Candidate:
    """A sweep cell of the cells frame as serving.sweep_choice sees a sweep record."""
    return Candidate(
        cell_id=key_text(cell["cell_id"]),
        status=key_text(cell["status"]),
        slo_status=key_text(cell["slo_status"]) or None,
        probe_qps=number_or_none(cell["probe_qps"]),
        p99_bound_ms=number_or_none(cell["p99_bound_ms"]),
        price_per_hour=number_or_none(cell["price_per_hour"]),
    )
