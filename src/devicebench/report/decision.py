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


CALLS = alt.Scale(
    domain=["GPU cheaper", "CPU cheaper", "too close to call"],
    range=["#d62728", "#1f77b4", "#7f7f7f"],
)
RATIO_TITLE = "CPU cost ÷ GPU cost per sample (log; right of 1 the GPU is cheaper)"
CALL_WORDS = {"gpu": "GPU cheaper", "cpu": "CPU cheaper", "close": "too close to call"}


def _ratio_frame(ranged: pd.DataFrame, lane: pd.Series) -> pd.DataFrame:
    from devicebench.report.answer import call

    return pd.DataFrame(
        {
            "lane": lane.to_numpy(),
            "workload": ranged["label"].astype(str).to_numpy(),
            "ratio": ranged["cost_ratio"].astype(float).to_numpy(),
            "low": ranged["low"].astype(float).to_numpy(),
            "high": ranged["high"].astype(float).to_numpy(),
            "call": ranged.apply(call, axis=1).map(CALL_WORDS).to_numpy(),
            "spread": ranged["spread"].astype(str).to_numpy(),
        }
    )


def _records(frame: pd.DataFrame) -> list[dict]:
    return json.loads(frame.astype("object").where(frame.notna(), None).to_json(orient="records"))


def _ratio_layers(y: alt.Y, x_domain: list[float], extra_y: dict) -> list:
    x = alt.X("ratio:Q", scale=alt.Scale(type="log", domain=x_domain), title=RATIO_TITLE)
    tooltip = [
        "workload:N",
        "call:N",
        alt.Tooltip("ratio:Q", format=".3g", title="CPU cost ÷ GPU cost"),
        alt.Tooltip("low:Q", format=".3g", title="range from"),
        alt.Tooltip("high:Q", format=".3g", title="range to"),
        alt.Tooltip("spread:N", title="range over"),
    ]
    color = alt.Color("call:N", scale=CALLS, title=None, legend=alt.Legend(orient="top"))
    rule = alt.Chart().mark_rule(strokeWidth=2, opacity=0.6)
    rule = rule.encode(y=y, x=alt.X("low:Q", scale=alt.Scale(type="log")), x2="high:Q")
    dots = alt.Chart().mark_point(filled=True, size=60, opacity=0.9)
    return [
        rule.encode(color=color, **extra_y),
        dots.encode(y=y, x=x, color=color, tooltip=tooltip, **extra_y),
    ]


def _domain(frame: pd.DataFrame) -> list[float]:
    low = min(float(frame["low"].min()), 1.0) / 1.3
    high = max(float(frame["high"].max()), 1.0) * 1.3
    return [low, high]


def class_chart(answers: list, ranged: pd.DataFrame, width: int = 560):
    """The answer as one chart: a lane per workload class, each workload-mode a dot at its cost
    ratio with its range as a line; classes without a measurement say so in their lane. None
    when no class has a row (a chart with no marks is never drawn)."""
    measured = [a for a in answers if a.measured]
    if not measured:
        return None
    lanes = {}
    for a in measured:
        for label in a.rows["label"]:
            lanes[str(label)] = a.title
    mine = ranged[ranged["label"].astype(str).isin(lanes)]
    frame = _ratio_frame(mine, mine["label"].astype(str).map(lanes))
    titles = [a.title for a in answers]
    y = alt.Y("lane:N", sort=titles, scale=alt.Scale(domain=titles), title=None)
    y = y.axis(labelLimit=0, labelFontSize=12)
    domain = _domain(frame)
    layers = _ratio_layers(y, domain, {"yOffset": alt.YOffset("workload:N")})
    even = alt.Chart().mark_rule(color="#444", strokeDash=[4, 3])
    layers.append(even.encode(x=alt.datum(1)))
    missing = pd.DataFrame({"lane": [a.title for a in answers if not a.measured]})
    if not missing.empty:
        note = alt.Chart(alt.Data(values=_records(missing))).mark_text(
            align="left", color="#777", fontStyle="italic", dx=4
        )
        layers.append(note.encode(y=y, x=alt.datum(domain[0]), text=alt.value("not measured")))
    chart = alt.layer(*layers, data=alt.Data(values=_records(frame)))
    height = max(34 * len(titles), 150)
    title = "Which is cheaper per sample, by workload class (a dot per workload, a line its range)"
    return chart.properties(width=width, height=height, title=title)


def rows_chart(ranged: pd.DataFrame, width: int = 520):
    """One class's rows: a dot per workload-mode at its cost ratio, its range as a line."""
    if ranged.empty:
        return None
    frame = _ratio_frame(ranged, ranged["label"].astype(str))
    order = list(dict.fromkeys(frame["workload"]))
    y = alt.Y("workload:N", sort=order, title=None, axis=alt.Axis(labelLimit=0))
    layers = _ratio_layers(y, _domain(frame), {})
    layers.append(alt.Chart().mark_rule(color="#444", strokeDash=[4, 3]).encode(x=alt.datum(1)))
    chart = alt.layer(*layers, data=alt.Data(values=_records(frame)))
    return chart.properties(width=width, height=max(60, 22 * len(order)))
