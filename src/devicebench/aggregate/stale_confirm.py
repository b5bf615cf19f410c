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
from devicebench.aggregate.serving_best import DEVICES, ROLES
from devicebench.aggregate.values import key_text
from devicebench.aggregate.verdict_words import OUTRANKED, finding
from devicebench.serving.sweep_choice import BY_COST, BY_RATE

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
            note = rows.at[index, "note"]
            why = f"{OUTRANKED}: {'; '.join(why)}; out of the verdict until it is confirmed"
            rows.at[index, "note"] = f"{note}; {why}" if isinstance(note, str) and note else why
            rows.at[index, "outranked"] = True
            rows.at[index, "finding"] = finding(rows.loc[index].to_dict())
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
    rates = pd.to_numeric(same["probe_qps"], errors="coerce")
    prices = pd.to_numeric(same["price_per_hour"], errors="coerce")
    rated = same[(rates > 0) & same["status"].eq("ok")].index
    if chosen not in set(same.loc[rated, "cell_id"]) or len(rated) < 2:
        return None
    priced = bool((prices[rated] > 0).all())
    score = rates[rated] / prices[rated] if priced else rates[rated]
    best, mine = score.idxmax(), same.index[same["cell_id"].eq(chosen)][0]
    factor = score[best] / score[mine]
    if not factor > LEASE_VARIANCE:
        return None
    return (
        f"{DEVICES[side]}'s confirmed server ({name(same.loc[mine])}) probed {rates[mine]:.4g} "
        f"QPS; the sweep's {name(same.loc[best])} on boot "
        f"{key_text(same.at[best, 'boot_id'])[:8]} probed {rates[best]:.4g} QPS, {factor:.3g}x "
        f"its {BY_COST if priced else BY_RATE}"
    )
