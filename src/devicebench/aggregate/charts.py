"""Altair charts of the study, saved as offline HTML (inline JavaScript) and PNG.

Failed cells are never drawn as values (a missing bar would read as zero); the not_ok table names
them, and a chart's subtitle only counts them. Every axis that varies within a chart (framework,
precision, extra axes such as lstm_kernel) is encoded by colour, shape, dash or facet with a legend,
so no two marks stand for the same values. Titles say "synthetic data" when a row is synthetic.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from devicebench.aggregate.collect import extra_axis_columns
from devicebench.scenarios import modes

# Columns the charts add to their data; never mistaken for extra axes of the grid.
HELPER_COLUMNS = {"panel", "series", "iqr_lo", "iqr_hi", "cell"}
_REMOTE_SCRIPT = re.compile(r"<script[^>]*\bsrc\s*=\s*[\"']?https?:", re.IGNORECASE)


def time_vs_batch(cells: pd.DataFrame) -> alt.TopLevelMixin:
    """Median time per repetition against batch size, one panel per task and mode."""
    plotted, subtitle = _split(cells, "median_s")
    title = _title("Median time per repetition vs batch size", plotted)
    if plotted.empty:
        return _empty(title, subtitle)
    plotted = plotted.assign(
        panel=plotted["task"].astype(str) + " · " + plotted["mode"].astype(str),
        series=_series(plotted),
        iqr_lo=(plotted["median_s"] - plotted["iqr_s"].fillna(0) / 2).clip(lower=0),
        iqr_hi=plotted["median_s"] + plotted["iqr_s"].fillna(0) / 2,
    )
    if "noisy" in plotted:  # a noisy cell (CoV above noise_cov) is drawn as a cross
        plotted["noisy"] = plotted["noisy"].map(lambda v: "noisy" if _truthy(v) else "steady")
    cols = ["panel", "series", "iqr_lo", "iqr_hi", "median_s", "iqr_s", "cov", "noisy"]
    data = _data(plotted, cols)
    x = _batch_axis(plotted)
    y_title = "median s per pass (bars: median ± IQR/2)"
    color = alt.Color("device_label:N", title="device")
    tooltip = _tooltip(plotted, ["median_s", "iqr_s", "cov", "samples_per_s", "passes"])
    dash = _series_dash(plotted)
    line = (
        alt.Chart()
        .mark_line(point=True)
        .encode(x=x, y=alt.Y("median_s:Q", title=y_title, scale=log_if_wide(plotted["median_s"])))
        .encode(color=color, detail="series:N")
        .encode(tooltip=tooltip, **dash)
    )
    if "noisy" in plotted:  # a noisy cell (CoV above noise_cov) gets a cross over its point
        line = alt.layer(
            line,
            alt.Chart()  # every point, transparent unless noisy: no panel is left empty
            .mark_point(size=90, shape="cross", color="black")
            .encode(x=x, y="median_s:Q", detail=["series:N", "device_label:N"], tooltip=tooltip)
            .encode(**_noisy_key()),
        )
    bars = (
        alt.Chart()
        .mark_errorbar(ticks=True)
        .encode(x=x, y=alt.Y("iqr_lo:Q", title=y_title), y2="iqr_hi:Q")
        .transform_filter(alt.datum.iqr_lo > 0)
        .encode(color=color, detail="series:N")
    )
    chart = panels(alt.layer(line, bars, data=data), plotted)
    return chart.properties(title=alt.Title(title, subtitle=subtitle))


def speedup_vs_batch(speedup: pd.DataFrame) -> alt.TopLevelMixin:
    """Speedup over the base device against batch size, one panel per task and mode."""
    plotted, subtitle = _split(speedup, "speedup")
    base = ", ".join(sorted({str(b) for b in speedup.get("base_label", []) if pd.notna(b)}))
    title = _title(f"Speedup over {base or 'base'} vs batch size", plotted)
    if plotted.empty:
        return _empty(title, subtitle)
    plotted = plotted.assign(
        panel=plotted["task"].astype(str) + " · " + plotted["mode"].astype(str),
        series=_series(plotted),
    )
    data = _data(plotted, ["panel", "series", "speedup", "samples_per_s", "base_samples_per_s"])
    line = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=_batch_axis(plotted),
            y=alt.Y("speedup:Q", scale=alt.Scale(type="log"), title="speedup (×)"),
            color=alt.Color("device_label:N", title="device"),
            detail="series:N",
            tooltip=_tooltip(plotted, ["speedup", "samples_per_s", "base_samples_per_s"]),
            **_series_dash(plotted),
        )
    )
    one = alt.Chart().mark_rule(strokeDash=[4, 4], color="gray").encode(y=alt.datum(1))
    chart = panels(alt.layer(line, one, data=data), plotted)
    return chart.properties(title=alt.Title(title, subtitle=subtitle))


def throughput_per_cell(cells: pd.DataFrame) -> alt.TopLevelMixin:
    """Samples per second of every ok cell, devices side by side, one panel per task."""
    plotted, subtitle = _split(cells, "samples_per_s")
    title = _title("Throughput per cell (samples/s)", plotted)
    return _bars(plotted, "samples_per_s", "samples/s", title, subtitle, unit_range=False)


def accuracy_per_cell(cells: pd.DataFrame) -> alt.TopLevelMixin:
    """Held-out accuracy of every training cell: it should agree across devices."""
    fixed = modes(trains=True, to_target=False)
    train = cells[cells["mode"].isin(fixed)] if "mode" in cells else cells.iloc[0:0]
    plotted, subtitle = _split(train, "accuracy")
    title = _title("Held-out accuracy per training cell (dashed: chance)", plotted)
    return _bars(plotted, "accuracy", "accuracy", title, subtitle, unit_range=True, chance=True)


def chance_accuracy(task: str) -> float | None:
    """The accuracy of guessing, 1 / classes, from the workload's spec (None if unknown)."""
    from devicebench.workloads import get

    try:
        classes = get(task).spec.num_classes
    except KeyError:
        return None
    return 1.0 / classes if classes and classes > 1 else None


def write_charts(cells: pd.DataFrame, speedup: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write the four charts as HTML and PNG into `out_dir`; return the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = {
        "time_vs_batch": time_vs_batch(cells),
        "speedup_vs_batch": speedup_vs_batch(speedup),
        "throughput_per_cell": throughput_per_cell(cells),
        "accuracy_per_cell": accuracy_per_cell(cells),
    }
    written: list[Path] = []
    for name, chart in charts.items():
        written.extend(save_chart(chart, out_dir / name))
    return written


def save_chart(chart: alt.TopLevelMixin, stem: Path) -> list[Path]:
    """Save `stem.html` with inline JavaScript (works offline) and `stem.png`."""
    html = stem.with_name(stem.name + ".html")
    png = stem.with_name(stem.name + ".png")
    chart = chart.properties(padding={"left": 5, "top": 5, "right": 30, "bottom": 5})
    chart.save(html, inline=True)
    if _REMOTE_SCRIPT.search(html.read_text()):
        raise RuntimeError(f"{html} loads a script from the network; it must be self-contained")
    chart.save(png, scale_factor=1)
    return [html, png]


MAX_HEIGHT = 1800  # px: a chart a person reads is at most about 2,000 px tall


def _bars(
    plotted: pd.DataFrame,
    value: str,
    axis_title: str,
    title: str,
    subtitle: list[str],
    unit_range: bool,
    chance: bool = False,
) -> alt.TopLevelMixin:
    """Horizontal bars per cell, grouped by the cell's non-device axes, coloured by device;
    with `chance`, a dashed line at each task's chance accuracy.

    Log scales where the values span more than 10x (else the small bars vanish), independent
    per task panel.
    """
    if plotted.empty:
        return _empty(title, subtitle)
    plotted = plotted.assign(cell=_cell_label(plotted, with_task=False, with_device=False))
    scale = alt.Scale(domain=[0, 1]) if unit_range else log_if_wide(plotted[value])
    start = {}
    if scale.type == "log":  # a log bar has no zero: it starts at the decade below the least
        plotted = plotted[pd.to_numeric(plotted[value]) > 0]
        floor = 10 ** math.floor(math.log10(pd.to_numeric(plotted[value]).min()))
        start = {"x2": alt.datum(floor)}
        axis_title = f"{axis_title} (log scale)"
    rows = int(plotted.groupby("task")["cell"].nunique().sum()) if "task" in plotted else 1
    panels_px = 60 * (int(plotted["task"].nunique()) if "task" in plotted else 1)  # axis, gap
    step = max(6.0, min(20.0, (MAX_HEIGHT - panels_px) / max(rows, 1)))  # px per cell
    label_size = min(11.0, step)
    offset_step = step / max(1, int(plotted["device_label"].nunique()))  # a bar per device
    if chance:
        plotted = plotted.assign(chance=plotted["task"].astype(str).map(chance_accuracy))
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            **start,
            x=alt.X(f"{value}:Q", scale=scale, title=axis_title),
            y=alt.Y(
                "cell:N",
                title=None,
                sort=None,
                axis=alt.Axis(labelLimit=360, labelFontSize=label_size),
            ),
            yOffset=alt.YOffset("device_label:N"),
            color=alt.Color("device_label:N", title="device"),
            tooltip=_tooltip(plotted, [value]),
        )
    )
    data = _data(plotted, ["cell", value, *(["chance"] if chance else [])])
    if chance and plotted["chance"].notna().any():
        line = alt.Chart().mark_rule(strokeDash=[4, 3], color="black")
        line = line.encode(x=alt.X("mean(chance):Q"), tooltip=["mean(chance):Q"])
        drawn = alt.layer(bars, line, data=data)
    else:
        bars.data = data
        drawn = bars
    chart = (
        drawn.properties(width=420, height=alt.Step(offset_step))
        .facet(row=alt.Row("task:N", title=None))
        .resolve_scale(y="independent", x="independent")
    )
    return chart.properties(title=alt.Title(title, subtitle=subtitle))


def panels(chart: alt.TopLevelMixin, plotted: pd.DataFrame) -> alt.TopLevelMixin:
    """A panel per task and mode, wrapped in rows of two or three so that even the study-wide
    chart stays under about 2,000 px tall."""
    count = int(plotted["panel"].nunique())
    columns = 2 if count <= 4 else 3
    rows = -(-count // columns)
    height = int(max(120, min(220, MAX_HEIGHT / rows - 50)))
    chart = chart.properties(width=320 if columns == 3 else 360, height=height)
    wrapped = chart.facet(facet=alt.Facet("panel:N", title=None), columns=columns)
    return wrapped.resolve_scale(y="independent")


def _batch_axis(df: pd.DataFrame) -> alt.X:
    """Log batch-size axis ticked at the batch sizes actually run (log ticks overlap)."""
    sizes = sorted({int(b) for b in pd.to_numeric(df["batch_size"], errors="coerce").dropna()})
    axis = alt.Axis(values=sizes, format="d", labelOverlap=True)
    return alt.X("batch_size:Q", scale=alt.Scale(type="log"), axis=axis, title="batch size")


def _split(df: pd.DataFrame, value: str) -> tuple[pd.DataFrame, list[str]]:
    """Rows to plot (ok with a value) and subtitle lines naming every row left out."""
    if df.empty or "status" not in df:
        return df.iloc[0:0], []
    ok = df["status"].eq("ok").to_numpy()
    has = pd.to_numeric(df[value], errors="coerce").notna().to_numpy() if value in df else ~ok
    plotted = df[ok & has].copy()
    failed = df[~ok]
    lines: list[str] = []
    if len(failed):
        counts = failed["status"].astype(str).value_counts().sort_index()
        what = ", ".join(f"{n} {status}" for status, n in counts.items())
        lines.append(f"not drawn: {what} (see the not_ok table)")
    without = int((ok & ~has).sum())
    if without:
        why = " (base missing)" if value == "speedup" else ""
        lines.append(f"{without} ok cell{'s' if without > 1 else ''} without {value}{why}")
    return plotted, lines


def _title(text: str, plotted: pd.DataFrame) -> str:
    synthetic = plotted["synthetic"].map(_truthy).any() if "synthetic" in plotted else False
    return f"{text} — synthetic data" if synthetic else text


EMPTY = "no data: a placeholder"


def _empty(title: str, subtitle: list[str]) -> alt.Chart:
    """A placeholder chart that says there is nothing to plot, still naming the failures (the
    charts rule writes it so its outputs exist; the write-up leaves it out, see is_empty)."""
    return (
        alt.Chart(alt.Data(values=[{"text": "no ok cells"}]))
        .mark_text(fontSize=18)
        .encode(text="text:N")
        .properties(width=420, height=120, title=alt.Title(title, subtitle=subtitle))
        .properties(description=EMPTY)
    )


def is_empty(chart: alt.TopLevelMixin) -> bool:
    """True for a placeholder made by _empty: a chart with no data to draw."""
    return getattr(chart, "description", None) == EMPTY


def log_if_wide(values: pd.Series, **scale: Any) -> alt.Scale:
    """A log scale where the positive values span more than 10x, else a linear one."""
    positive = pd.to_numeric(values, errors="coerce")
    positive = positive[positive > 0]
    if len(positive) and positive.max() > 10 * positive.min():
        return alt.Scale(type="log", **scale)
    return alt.Scale(zero=True, **scale)


def _extra_axes(df: pd.DataFrame) -> list[str]:
    return [c for c in extra_axis_columns(df) if c not in HELPER_COLUMNS]


def _axis_cols(df: pd.DataFrame) -> list[str]:
    base = ["task", "model", "framework", "device_label", "precision", "batch_size", "mode"]
    return [c for c in base if c in df] + _extra_axes(df)


def _cell_label(df: pd.DataFrame, with_task: bool, with_device: bool) -> pd.Series:
    """A readable cell name, e.g. "mnist_mlp/mlp/torch/cpu:2t/fp32/b128/train"."""
    parts = []
    for col in _axis_cols(df):
        if col == "task" and not with_task:
            continue
        if col == "device_label" and not with_device:
            continue
        text = df[col].map(_text)
        if col == "batch_size":
            text = "b" + text
        elif col in _extra_axes(df):  # an extra axis only labels the rows that have it
            text = text.map(lambda v, c=col: "" if v == "-" else f"{c}={v}")
        parts.append(text)
    if not parts:
        return pd.Series(["cell"] * len(df), index=df.index)
    joined = pd.concat(parts, axis=1).agg(lambda r: "/".join(p for p in r if p), axis=1)
    return joined.astype(str)


SERIES_AXES = ("model", "framework", "precision")
MAX_SERIES = 8  # dashes a legend can name and a reader can tell apart


def _series_columns(df: pd.DataFrame) -> list[str]:
    """The non-device axes that vary within the chart, each line's identity beside the device."""
    cols = [c for c in [*SERIES_AXES, *_extra_axes(df)] if c in df]
    return [c for c in cols if df[c].map(_text).nunique() > 1]


def _series(df: pd.DataFrame) -> pd.Series:
    """One line per combination of the varying model/framework/precision/extra axes."""
    cols = _series_columns(df)
    if not cols:
        return pd.Series("-", index=df.index)
    return df[cols].map(_text).agg(" · ".join, axis=1)


def _series_title(df: pd.DataFrame) -> str:
    return " · ".join(_series_columns(df)) or "series"


def _series_dash(df: pd.DataFrame) -> dict[str, Any]:
    """Dash by series, with one legend naming the varying axes (a second encoding of the same
    field, e.g. shape, would draw a second legend of the same names)."""
    if not _series_columns(df) or _series(df).nunique() > MAX_SERIES:
        return {}  # too many to tell apart by dash: each line is still its own (detail)
    legend = alt.Legend(labelLimit=0, titleLimit=0, symbolType="stroke", symbolStrokeWidth=2)
    return {"strokeDash": alt.StrokeDash("series:N", title=_series_title(df), legend=legend)}


def _noisy_key() -> dict[str, Any]:
    """The noisy marker's legend: a cross means CoV above noise_cov."""
    return {
        "opacity": alt.Opacity(
            "noisy:O",
            title="CoV flag",
            scale=alt.Scale(domain=["noisy", "steady"], range=[1, 0]),
            legend=alt.Legend(symbolType="cross", values=["noisy"]),
        )
    }


def _tooltip(df: pd.DataFrame, values: list[str]) -> list[alt.Tooltip]:
    tips = [alt.Tooltip(f"{c}:N") for c in _axis_cols(df)]
    return tips + [alt.Tooltip(f"{v}:Q", format=".4g") for v in values if v in df]


def _data(df: pd.DataFrame, cols: list[str]) -> alt.Data:
    """Inline values as plain JSON (no dtype surprises from nullable pandas columns)."""
    keep = list(dict.fromkeys([*_axis_cols(df), *cols, "synthetic"]))
    keep = [c for c in keep if c in df]
    frame = df[keep].astype("object").where(df[keep].notna(), None)
    return alt.Data(values=json.loads(frame.to_json(orient="records")))


def _text(value: Any) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "-"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value) if value is not None and not pd.isna(value) else False
