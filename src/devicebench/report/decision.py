"""The decision chart: cost per million samples of the best CPU and best GPU configuration, per
workload and mode, on a log axis so that both devices stay visible however far apart they are."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from devicebench.report.verdict import verdict_rows

TITLE = "Cost per million samples: best CPU vs best GPU configuration (log axis)"
COLORS = alt.Scale(domain=["CPU", "GPU"], range=["#1f77b4", "#d62728"])


def decision_frame(best: pd.DataFrame) -> pd.DataFrame:
    """Long form: one row per workload, mode and device with a cost."""
    rows = verdict_rows(best)
    frames = []
    for side in ("cpu", "gpu"):
        part = pd.DataFrame(
            {
                "workload": rows["label"],
                "device": side.upper(),
                "configuration": rows[f"{side}_config"].astype("object"),
                "usd_per_million": pd.to_numeric(rows[f"{side}_usd_per_million"]),
                "samples_per_s": pd.to_numeric(rows[f"{side}_samples_per_s"]),
            }
        )
        frames.append(part)
    long = pd.concat(frames, ignore_index=True)
    return long[long["usd_per_million"].gt(0)].reset_index(drop=True)


def decision_chart(best: pd.DataFrame) -> alt.TopLevelMixin | None:
    """The chart, or None when no row has a cost (a chart with no data is not drawn)."""
    long = decision_frame(best)
    if long.empty:
        return None
    values = json.loads(long.astype("object").where(long.notna(), None).to_json(orient="records"))
    order = list(dict.fromkeys(long["workload"]))
    y = alt.Y("workload:N", sort=order, title=None, axis=alt.Axis(labelLimit=0))
    x = alt.X(
        "usd_per_million:Q",
        scale=alt.Scale(type="log"),
        title="US$ per million samples (log scale; lower is cheaper)",
    )
    link = alt.Chart().mark_rule(color="#bbb").encode(y=y, x="min(usd_per_million):Q")
    link = link.encode(x2="max(usd_per_million):Q")
    dots = (
        alt.Chart()
        .mark_point(filled=True, size=110)
        .encode(
            y=y,
            x=x,
            color=alt.Color("device:N", scale=COLORS, title="device"),
            tooltip=[
                "workload:N",
                "device:N",
                "configuration:N",
                alt.Tooltip("usd_per_million:Q", format=".3g", title="US$ per M samples"),
                alt.Tooltip("samples_per_s:Q", format=",.4g", title="samples/s"),
            ],
        )
    )
    height = max(60, 26 * len(order))
    chart = alt.layer(link, dots, data=alt.Data(values=values))
    return chart.properties(width=560, height=height, title=TITLE).configure_legend(labelLimit=0)
