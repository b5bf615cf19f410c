"""The work one sample is, as a verdict row holds it fixed.

A verdict divides throughputs of equal work: a 2,048-token prompt with one output token is not
the work of a 1,024-token prompt with 128, nor a 512-token review that of a 128-token one. The
workloads name the axes that change it (TaskSpec.work_axes); best.csv groups by them and each
row says which work it compares.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd

from devicebench.aggregate.values import format_value, key_text
from devicebench.workloads import work_axes


def work_columns(cells: pd.DataFrame) -> list[str]:
    """The work axes among a cells frame's columns (none for a study without them)."""
    return [axis for axis in work_axes() if axis in cells.columns]


def work_text(row: Mapping[str, Any], columns: list[str]) -> str:
    """'prompt_len 2048, output_len 1' from a row's work axes; '' where it has none."""
    shown = [(axis, format_value(row.get(axis))) for axis in columns]
    return ", ".join(f"{axis} {value}" for axis, value in shown if value)


def groups_of_one_work(
    frame: pd.DataFrame, keys: list[str]
) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:
    """`frame`'s groups by `keys` (missing values agreed) and its work axes, in key order: each
    with its keys' texts and its `work`, the start of a best.csv row."""
    work = work_columns(frame)
    texts = [tuple(map(key_text, row)) for row in frame[[*keys, *work]].itertuples(index=False)]
    for key, group in frame.groupby(pd.Series(texts, index=frame.index), sort=True):
        yield (
            dict(zip(keys, key[: len(keys)], strict=True))
            | {"work": work_text(group.iloc[0], work)},
            group,
        )
