"""The work one sample is, as a verdict row holds it fixed.

A verdict divides throughputs of equal work: a 2,048-token prompt with one output token is not
the work of a 1,024-token prompt with 128, nor a 512-token review that of a 128-token one. The
workloads name the axes that change it (TaskSpec.work_axes); best.csv groups by them and each
row says which work it compares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from devicebench.aggregate.values import key_text, number_or_none
from devicebench.workloads import work_axes


def work_columns(cells: pd.DataFrame) -> list[str]:
    """The work axes among a cells frame's columns (none for a study without them)."""
    return [axis for axis in work_axes() if axis in cells.columns]


def work_text(row: Mapping[str, Any], columns: list[str]) -> str:
    """'prompt_len 2048, output_len 1' from a row's work axes; '' where it has none."""
    shown = [(axis, _shown(row.get(axis))) for axis in columns]
    return ", ".join(f"{axis} {value}" for axis, value in shown if value)


def _shown(value: Any) -> str:
    """A length as the config wrote it: 2048, never 2048.0 (a table column of floats)."""
    number = number_or_none(value)
    return (
        str(int(number)) if number is not None and float(number).is_integer() else key_text(value)
    )
