"""The serving verdict's chart: p99 latency against the offered Poisson rate, per model.

Each LoadGen Server run of every latency-bound search is a point (filled: VALID, hollow:
INVALID), a line per server; the model's p99 bound is a dashed rule, and each server's verdict
(max_valid_qps, at the median p99 of its confirming runs) a large diamond.
"""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from devicebench.aggregate.charts import _empty
from devicebench.aggregate.serving_slo import verdict_p99

TITLE = "Serving: p99 latency against offered rate (LoadGen Server), the bound and the verdict"


def _values(df: pd.DataFrame, cols: list[str]) -> alt.Data:
    frame = df[cols].astype("object").where(df[cols].notna(), None)
    return alt.Data(values=json.loads(frame.to_json(orient="records")))


def p99_vs_rate(runs: pd.DataFrame) -> alt.TopLevelMixin:
    """One panel per model: every search run, the bound, the verdict points."""
    if runs.empty or runs["p99_ms"].dropna().empty:
        return _empty(TITLE, ["no serve cell ran the latency-bound search (serve.slo)"])
    runs = runs[runs["p99_ms"].notna() & runs["target_qps"].notna()].copy()
    runs["valid"] = runs["valid"].astype(bool)
    runs["kind"] = "run"
    verdicts = verdict_p99(runs)
    if not verdicts.empty:  # the verdict point: at max_valid_qps, its confirming runs' p99
        verdicts = verdicts.assign(
            kind="verdict", target_qps=verdicts["max_valid_qps"], p99_ms=verdicts["verdict_p99_ms"]
        )
        runs = pd.concat([runs, verdicts[runs.columns]], ignore_index=True)
    runs["line"] = runs["device_label"].astype(str) + " · " + runs["series"].astype(str)
    cols = ["model", "device_label", "line", "kind", "phase", "target_qps", "p99_ms", "valid"]
    cols += ["scheduled_qps", "p99_bound_ms", "validity", "max_valid_qps"]
    x = alt.X(
        "target_qps:Q", title="offered rate (queries/s, Poisson)", scale=alt.Scale(type="log")
    )
    y = alt.Y("p99_ms:Q", title="p99 latency (ms)", scale=alt.Scale(type="log"))
    color = alt.Color("device_label:N", title="device")
    run = alt.datum.kind == "run"
    lines = alt.Chart().mark_line(opacity=0.4).encode(x=x, y=y, color=color, detail="line:N")
    points = (
        alt.Chart()
        .mark_point(size=50)
        .encode(
            x=x,
            y=y,
            color=color,
            detail="line:N",
            fill=alt.condition(
                "datum.valid", alt.Fill("device_label:N", legend=None), alt.value("transparent")
            ),
            shape=alt.Shape("phase:N", title="run (filled: VALID)"),
            tooltip=[
                "line:N",
                "phase:N",
                "target_qps:Q",
                "scheduled_qps:Q",
                "p99_ms:Q",
                "validity:N",
            ],
        )  # fmt: skip
    )
    verdict = (
        alt.Chart()
        .mark_point(shape="diamond", size=260, filled=True, stroke="black")
        .encode(x=x, y=y, color=color, tooltip=["line:N", "max_valid_qps:Q", "p99_ms:Q"])
        .transform_filter(alt.datum.kind == "verdict")
    )
    bound = alt.Chart().mark_rule(strokeDash=[6, 4], color="gray").encode(y="p99_bound_ms:Q")
    panels = []
    for model, part in runs.groupby("model", sort=True):  # one panel a model, its own scales
        layers = [lines.transform_filter(run), points.transform_filter(run)]
        # a model without a confirmed rate: no verdict layer, whose empty extent Vega warns of
        layers += [verdict] if part["kind"].eq("verdict").any() else []
        panel = alt.layer(*layers, bound, data=_values(part, cols))
        panels.append(panel.properties(width=380, height=240, title=str(model)))
    chart = alt.vconcat(*panels)
    said = "dashed: the model's p99 bound; diamond: the verdict, max_valid_qps (confirmed runs)"
    if verdicts.empty:
        said = "dashed: the model's p99 bound; no verdict: no rate was confirmed at the bound"
    return chart.properties(title=alt.Title(TITLE, subtitle=[said]))
