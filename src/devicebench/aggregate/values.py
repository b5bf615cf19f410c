"""Reading one value of a table cell as a number or as a group-key text, missing values agreed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
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


def is_missing(value: Any) -> bool:
    """None, NA or a NaN float: an empty table cell."""
    if value is None or value is pd.NA:
        return True
    try:
        return isinstance(value, float | np.floating) and math.isnan(value)
    except TypeError:
        return False


def format_value(value: Any) -> str:
    """Floats to 4 significant digits, missing values empty, everything else as text."""
    if is_missing(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        value = float(value)
        return str(int(value)) if value.is_integer() and abs(value) < 1e4 else f"{value:.4g}"
    return str(value)
