"""Quality only where it means something: which cells' accuracy, F1 and agreement say anything.

A model trained a few steps on synthetic data, or scored with random weights, is at chance or a
constant predictor: its accuracy is not a property of the device, and a reduced format that
"agrees" with a constant fp32 reference has shown nothing. Such cells read "n/a" with the reason
(`quality_na`); their figures are blanked so no table shows them. Converge cells (trained to a
target on real or learnable data) keep theirs. Where a reduced-format or engine cell carried an
agreement check, `quality_check` says what it came to: "agrees", "below reference",
"unverified: ..." (the fp32 reference predicts one class) or "n/a: ...".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from devicebench.scenarios import modes

QUALITY_COLUMNS = (
    "accuracy",
    "f1_macro",
    "f1_micro",
    "precision_micro",
    "recall_micro",
    "perplexity",
    "agreement_fp32",
)
SYNTHETIC = "synthetic data"
RANDOM = "random weights (an untrained model)"
CONSTANT = "unverified: the fp32 reference predicts one class"
# Integer weight formats of a generate cell (torchao's int8, llama.cpp's Q8_0 and Q4_0): on random
# weights nothing can say what they cost in answers (SmolLM2's real-weight cells measure that)
WEIGHT_ONLY = ("int8", "int4")


def quality_reason(row: pd.Series) -> str:
    """Why a cell's quality figures cannot mean anything, or "" where they can."""
    mode = str(row.get("mode"))
    if isinstance(skipped := row.get("quality_not_measured"), str) and skipped:
        return skipped  # a speed-only cell: not trained, not scored
    if mode in modes(to_target=True):
        return ""
    if _true(row.get("synthetic")):
        return SYNTHETIC
    if mode in modes(scores=True) and str(row.get("model_weights")) == "random":
        return RANDOM
    return ""


def mark_quality(cells: pd.DataFrame) -> pd.DataFrame:
    """cells with `quality_na` and `quality_check`, and the figures of n/a cells blanked."""
    df = cells.copy()
    reasons = df.apply(quality_reason, axis=1) if len(df) else pd.Series(dtype="str")
    df["quality_na"] = reasons.replace("", np.nan).astype("object")
    checked = _column(df, "agreement_fp32").notna()
    constant = _column(df, "agreement_note").notna()
    below = _column(df, "quality_below_reference").astype("boolean").fillna(False).astype(bool)
    check = np.where(below, "below reference", "agrees")
    check = np.where(constant, CONSTANT, check)
    check = np.where(reasons.ne(""), "n/a: " + reasons.astype(str), check)
    df["quality_check"] = pd.Series(check, index=df.index).where(checked).astype("object")
    na = reasons.ne("")
    for column in QUALITY_COLUMNS:
        if column in df:
            df[column] = df[column].where(~na)
    if "quality_below_reference" in df:  # only a verified check excludes a cell
        verified = df["quality_check"].isin(["agrees", "below reference"])
        df["quality_below_reference"] = df["quality_below_reference"].where(verified)
    return df


def unchecked_format(precision: str, weights: str) -> bool:
    """Whether a generate cell's integer weight format has nothing to vouch for its answers:
    its model's weights are random (`weights`: the record's model.weights, or its quality "n/a:
    random weights")."""
    return precision in WEIGHT_ONLY and "random" in weights


def unverified(check: object) -> bool:
    """Whether an agreement check was made but can vouch for nothing (n/a or unverified)."""
    return isinstance(check, str) and check.startswith(("n/a", "unverified"))


def unverified_reason(cell: pd.Series) -> str:
    """Why a verdict pick's quality is unverified, or "": its agreement check could vouch for
    nothing (n/a, a constant reference), or it ran a reduced format or another engine in an
    infer or serve cell without a verified check against a trained fp32 reference."""
    from devicebench import engines

    check = cell.get("quality_check")
    if unverified(check):
        return f"agreement with fp32 {check}"
    precision, engine = str(cell.get("precision")), str(cell.get("engine"))
    generating = str(cell.get("mode")) in modes(generates=True)
    if generating and unchecked_format(precision, str(cell.get("model_weights"))):
        return f"{precision} weights on random weights: no real model checks the format here"
    if generating and isinstance(why := cell.get("quality_unverified"), str) and why:
        return f"quality: {why}"  # an engine without logits per position: tokens unchecked
    reduced = precision in engines.REDUCED_FORMATS or engine in engines.MODEL_ENGINES
    inferring = str(cell.get("mode")) in modes(scores=True)
    if reduced and inferring and check not in ("agrees", "below reference"):
        what = " ".join(
            v
            for v in (precision, engine)
            if v in (*engines.REDUCED_FORMATS, *engines.MODEL_ENGINES)
        )
        return f"{what} not checked against a trained fp32 reference"
    return ""


def _column(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(np.nan, index=df.index)


def _true(value: object) -> bool:
    return value is True or (isinstance(value, np.bool_ | bool) and bool(value))
