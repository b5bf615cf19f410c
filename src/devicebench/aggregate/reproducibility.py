"""Published cells run again, set against their published records (the rerun check).

A reader who acts on a number needs to know whether it comes back. Each rerun record is matched
to the published record of the same cell id; the table gives both throughputs, the change, both
runs' CoV, whether the change lies within the noise the runs themselves showed (|change| <= the
larger CoV), and whether the held-out accuracy came back exactly (CPU cells are deterministic:
their worker turns on torch's deterministic algorithms; GPU cells keep their fast kernels).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from devicebench.aggregate.pairing import crossing_reason, record_pairing

COLUMNS = """
    run task model framework device batch_size mode published_samples_per_s rerun_samples_per_s
    change published_cov rerun_cov within_cov published_accuracy rerun_accuracy accuracy_equal
    deterministic published_created rerun_created cell_id note
""".split()


def _records(folder: Path) -> dict[str, dict]:
    records = {}
    for path in sorted(Path(folder).rglob("*.json")):
        record = json.loads(path.read_text())
        if isinstance(record, dict) and "cell_id" in record:
            records[record["cell_id"]] = record
    return records


def _row(run: str, published: dict, rerun: dict) -> dict:
    def rate(record: dict) -> float:
        return float(record["throughput"]["samples_per_s"])

    def cov(record: dict) -> float:
        return float(record["timings"]["cov"])

    def accuracy(record: dict) -> float | None:
        return record.get("quality", {}).get("accuracy")

    crossing = crossing_reason(record_pairing(published), record_pairing(rerun))
    change = float("nan") if crossing else rate(rerun) / rate(published) - 1.0
    axes = rerun["axes"]
    return {
        "run": run,
        **{key: axes.get(key) for key in ("task", "model", "framework", "device", "mode")},
        "batch_size": axes.get("batch_size"),
        "published_samples_per_s": rate(published),
        "rerun_samples_per_s": rate(rerun),
        "change": change,
        "published_cov": cov(published),
        "rerun_cov": cov(rerun),
        "within_cov": None if crossing else abs(change) <= max(cov(published), cov(rerun)),
        "published_accuracy": accuracy(published),
        "rerun_accuracy": accuracy(rerun),
        "accuracy_equal": accuracy(published) == accuracy(rerun),
        "deterministic": bool(rerun["provenance"].get("deterministic")),
        "published_created": published["provenance"].get("created"),
        "rerun_created": rerun["provenance"].get("created"),
        "cell_id": rerun["cell_id"],
        "note": crossing or "",
    }


def compare_runs(published: Path, reruns: dict[str, Path]) -> pd.DataFrame:
    """One row per rerun record (`reruns`: a label per folder of records) against `published`."""
    known = _records(published)
    rows = []
    for run, folder in reruns.items():
        found = _records(folder)
        if not found:
            raise ValueError(f"no cell records under {folder} (rerun {run!r})")
        for cell_id, record in found.items():
            if cell_id not in known:
                raise ValueError(f"{cell_id}: rerun in {folder} but not published in {published}")
            for name, which in (("published", known[cell_id]), ("rerun", record)):
                if which.get("status") != "ok":
                    raise ValueError(f"{cell_id}: the {name} record is {which.get('status')}")
            rows.append(_row(run, known[cell_id], record))
    return pd.DataFrame(rows, columns=COLUMNS)


def reproducibility_findings(table: pd.DataFrame) -> list[str]:
    """What the rerun check found, per run: throughput within noise, accuracy exactly back."""
    out = []
    for run, rows in table.groupby("run", sort=False):
        within = int(rows["within_cov"].fillna(False).astype(bool).sum())
        changes = ", ".join(
            f"{r.task} {r.framework} {r.device} b{r.batch_size} {r.mode} {r.change:+.1%}"
            for r in rows.itertuples()
        )
        line = f"{run}: {within} of {len(rows)} cells' throughput within their CoV ({changes})"
        exact = rows[rows["deterministic"].astype(bool)]
        if not exact.empty:
            line += (
                f"; accuracy identical in {int(exact['accuracy_equal'].sum())} of {len(exact)} "
                "deterministic (CPU) cells"
            )
        out.append(line + ".")
    return out
