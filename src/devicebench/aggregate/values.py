"""Reading one value of a table cell as a number or as a group-key text, missing values agreed."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def number_or_none(value: Any) -> float | None:
    """The value as a float; None where it is missing (NaN) or not a number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def key_text(value: Any) -> str:
    """A group key part: missing values (NaN, None, NA, "nan") become the empty string."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if value is pd.NA or str(value) in ("nan", "<NA>"):
        return ""
    return str(value)
