"""One machine and one code version per ratio: the keys every paired table adds to its groups.

A speedup, cost, engine, serving, scaling or rerun ratio divides two records; it means something
only when both ran on the same boot of the same machine (`environment.boot_id`) with the same
code (`provenance.code_version`, clean or +dirty). A pair that would cross is not formed, and the
table says why instead of leaving a silent gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from devicebench.record import code_version_of

PAIRING = ("boot_id", "code_version")
CROSSING = "unpaired: the base ran on another boot_id or code_version"


def pairing_columns(df: pd.DataFrame) -> list[str]:
    """The pairing keys the frame has (a frame from old records may lack boot_id)."""
    return [c for c in PAIRING if c in df.columns]


def record_pairing(record: Mapping[str, Any]) -> dict[str, Any]:
    """boot_id and code_version of one record ("" where it predates them: a groupable value)."""
    env = record.get("environment") or {}
    provenance = record.get("provenance") or {}
    return {
        "boot_id": _text(env.get("boot_id")),
        "code_version": _text(code_version_of(provenance)),
    }


def crossing_reason(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """Why two records' pairings differ, or None when they may form a ratio."""
    differ = [k for k in PAIRING if _text(a.get(k)) != _text(b.get(k))]
    if not differ:
        return None
    parts = [f"{k} {_text(a.get(k))!r} vs {_text(b.get(k))!r}" for k in differ]
    return "unpaired: " + "; ".join(parts)


def base_elsewhere(loose: pd.Series, is_base: pd.Series) -> pd.Series:
    """Per row: whether its looser group (the same axes, any pairing) holds a base row."""
    return loose.isin(set(loose[is_base]))


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def span_sentence(cells: pd.DataFrame) -> str:
    """How many machine boots and code versions a study's records span, for the write-up."""
    boots = _distinct(cells, "boot_id")
    versions = _distinct(cells, "code_version")
    dirty = sum(v.endswith("+dirty") for v in versions)
    missing = int(cells["boot_id"].isna().sum()) if "boot_id" in cells else len(cells)
    text = (
        f"{len(boots)} machine boot(s) (boot_id) and {len(versions)} code version(s) "
        f"({dirty} with uncommitted changes); ratios pair only records of one boot and version"
    )
    return text + (f"; {missing} record(s) predate boot_id" if missing else "")


def _distinct(cells: pd.DataFrame, column: str) -> set[str]:
    if column not in cells:
        return set()
    return {str(v) for v in cells[column].dropna() if str(v) not in ("", "nan")}
