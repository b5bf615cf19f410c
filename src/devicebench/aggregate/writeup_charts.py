"""Every chart of the write-up: the registry (CHART_NAMES, all_charts) that the charts rule and
the HTML report share, and the charts beyond charts.py's (throughput and cost vs batch, TFLOP/s per
cell, utilization timelines, top operators).

Each chart function takes the tables it needs and returns an Altair chart; `all_charts` builds
the whole set for a (possibly task-filtered) set of tables.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from devicebench.aggregate import charts as base
from devicebench.aggregate import generation_charts, serving_charts, serving_slo_charts
from devicebench.aggregate.charts import (
    _batch_axis,
    _data,
    _empty,
    _series,
    _series_dash,
    _split,
    _title,
    _tooltip,
    save_chart,
)
from devicebench.aggregate.generation import GENERATION_COLUMNS
from devicebench.aggregate.serving import SERVING_COLUMNS
from devicebench.aggregate.serving_slo import RUN_COLUMNS

CHART_NAMES = [
    "time_vs_batch",
    "throughput_vs_batch",
    "speedup_vs_batch",
    "cost_vs_batch",
    "throughput_per_cell",
    "accuracy_per_cell",
    "mfu_per_cell",
    "energy_per_sample",
    "utilization_timeline",
    "top_ops",
    "serve_throughput_vs_clients",
    "serve_latency_percentiles",
    "serve_replica_scaling",
    "serve_p99_vs_rate",
    "generate_tokens_vs_batch",
]


def _vs_batch(df: pd.DataFrame, value: str, y_title: str, title: str) -> alt.TopLevelMixin:
    """One line per device and series against a log batch axis, a panel per task and mode."""
    plotted, subtitle = _split(df, value)
    title = _title(title, plotted)
    if plotted.empty:
        return _empty(title, subtitle)
    plotted = plotted.assign(
        panel=plotted["task"].astype(str) + " · " + plotted["mode"].astype(str),
        series=_series(plotted),
    )
    extra = ["cov", "noisy", "mfu", "cost_usd", "price_per_hour", "relative_time", "relative_cost"]
    extra = [c for c in extra if c in plotted]
    data = _data(plotted, ["panel", "series", value, *extra])
    chart = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=_batch_axis(plotted),
            y=alt.Y(f"{value}:Q", scale=alt.Scale(type="log"), title=y_title),
            color=alt.Color("device_label:N", title="device"),
            detail="series:N",
            tooltip=_tooltip(plotted, [value, *[c for c in extra if c != "noisy"]]),
            **_series_dash(plotted),
        )
    )
    chart = base.panels(chart, plotted)
    return chart.properties(title=alt.Title(title, subtitle=subtitle))


def throughput_vs_batch(cells: pd.DataFrame) -> alt.TopLevelMixin:
    """Samples per second against batch size, per device."""
    return _vs_batch(cells, "samples_per_s", "samples/s", "Throughput vs batch size")


def cost_vs_batch(cells: pd.DataFrame) -> alt.TopLevelMixin:
    """Samples per dollar against batch size, per device (prices from config/prices.yaml)."""
    return _vs_batch(
        cells, "samples_per_usd", "samples per US$", "Samples per dollar vs batch size"
    )


def mfu_per_cell(cells: pd.DataFrame) -> alt.TopLevelMixin:
    """Achieved model TFLOP/s per cell; MFU (against the datasheet peak) in the tooltip."""
    plotted, subtitle = _split(cells, "achieved_tflops")
    title = _title("Achieved model TFLOP/s per cell (MFU where a datasheet peak exists)", plotted)
    return base._bars(plotted, "achieved_tflops", "TFLOP/s", title, subtitle, unit_range=False)


def energy_per_sample(cells: pd.DataFrame) -> alt.TopLevelMixin:
    """Measured joules per sample per cell (NVML GPU energy, RAPL CPU package and DRAM, over the
    timed window); ok cells with no readable counter are counted in the subtitle (their reason
    is `energy_reason` in cells.csv), never drawn as zero."""
    plotted, subtitle = _split(cells, "joules_per_sample")
    title = _title("Energy per sample (J, measured over the timed window)", plotted)
    return base._bars(plotted, "joules_per_sample", "J/sample", title, subtitle, unit_range=False)


def utilization_timeline(timeline: pd.DataFrame) -> alt.TopLevelMixin:
    """CPU (mean over cores) and GPU utilization over each cell's timed section."""
    title = "Utilization during the timed section (sampled at ~10 Hz)"
    if timeline.empty:
        return _empty(title, ["no utilization samples"])
    df = timeline.copy()
    if "cell" not in df:  # a table written before cells were named in full
        df["cell"] = df[["model", "framework", "device_label", "precision", "batch_size", "mode"]]
        df["cell"] = df["cell"].astype(str).agg("/".join, axis=1)
    long = df.melt(
        id_vars=[c for c in ("task", "cell", "device_label", "t") if c in df],
        value_vars=[c for c in ("cpu_percent_mean", "gpu_util") if df[c].notna().any()],
        var_name="metric",
        value_name="percent",
    ).dropna(subset=["percent"])
    long["metric"] = long["metric"].map({"cpu_percent_mean": "CPU %", "gpu_util": "GPU SM %"})
    if long.empty:
        return _empty(title, ["no utilization samples"])
    if long["task"].nunique() > 1:  # the study-wide chart names the task in each panel
        long["cell"] = long["task"].astype(str) + "/" + long["cell"].astype(str)
    long, subtitle = _some_panels(long)
    header = alt.Header(labelLimit=230, labelFontSize=10, labelAngle=0, labelAlign="left")
    chart = (
        alt.Chart(alt.Data(values=long.to_dict(orient="records")))
        .mark_line(point=alt.OverlayMarkDef(size=12))  # a window of one sample is still drawn
        .encode(
            x=alt.X("t:Q", title="s into timed section"),
            y=alt.Y("percent:Q", scale=alt.Scale(domain=[0, 100]), title="%"),
            color=alt.Color("metric:N", title="metric"),
            tooltip=["task:N", "cell:N", "metric:N", "t:Q", "percent:Q"],
        )
        .properties(width=230, height=80)
        .facet(facet=alt.Facet("cell:N", title=None, header=header), columns=3)
        .resolve_scale(x="independent")
    )
    return chart.properties(title=alt.Title(title, subtitle=subtitle))


MAX_PANELS = 18  # 6 rows of 3 panels: about 800 px


def _some_panels(long: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """At most MAX_PANELS cells, taken in turn from each device so that every device shows;
    the subtitle says how many were left out (all of them are in utilization.csv)."""
    cells = list(dict.fromkeys(long["cell"]))
    if len(cells) <= MAX_PANELS:
        return long, ["one panel per cell"]
    if "device_label" not in long:
        return long[long["cell"].isin(cells[:MAX_PANELS])], [f"{MAX_PANELS} of {len(cells)} cells"]
    device = long.drop_duplicates("cell").set_index("cell")["device_label"].astype(str)
    by_device = [[c for c in cells if device.get(c) == d] for d in dict.fromkeys(device.loc[cells])]
    chosen: list[str] = []
    while len(chosen) < MAX_PANELS:
        for group in by_device:
            if group and len(chosen) < MAX_PANELS:
                chosen.append(group.pop(0))
    kept = long[long["cell"].isin(chosen)]
    return kept, [
        f"one panel per cell: {MAX_PANELS} of {len(cells)} cells (all in utilization.csv)"
    ]


def top_ops(ops: pd.DataFrame) -> alt.TopLevelMixin:
    """Share of self time of the top operators, CPU (self CPU) and GPU (self CUDA) side by side."""
    title = "Top operators by self time (torch.profiler), CPU vs GPU"
    if ops.empty:
        return _empty(title, ["no profiled cells (config profile_cells)"])
    df = ops[ops["rank"] <= 10].copy()
    if "cell" not in df:  # a table written before cells were named in full
        df["cell"] = df[["model", "framework", "device_label", "precision", "batch_size", "mode"]]
        df["cell"] = df["cell"].astype(str).agg("/".join, axis=1)
    df["panel"] = (
        df["task"].astype(str) + " " + df["cell"].astype(str) + " (" + df["ranked_by"] + ")"
    )
    df["op"] = df["op"].astype(str).str.slice(0, 60)
    data = alt.Data(values=df[["panel", "op", "self_pct", "self_ms", "calls"]].to_dict("records"))
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("self_pct:Q", title="% of self time"),
            y=alt.Y("op:N", sort="-x", title=None, axis=alt.Axis(labelLimit=300)),
            tooltip=["op:N", "self_pct:Q", "self_ms:Q", "calls:Q"],
        )
        .properties(width=260, height=200)
        .facet(facet=alt.Facet("panel:N", title=None), columns=2)
        .resolve_scale(y="independent")
    )
    return chart.properties(title=title)


def drawn_charts(tables: dict[str, pd.DataFrame]) -> dict[str, alt.TopLevelMixin]:
    """The charts that have data to draw (the write-up emits no empty placeholder)."""
    return {name: chart for name, chart in all_charts(tables).items() if not base.is_empty(chart)}


def all_charts(tables: dict[str, pd.DataFrame]) -> dict[str, alt.TopLevelMixin]:
    """Every chart of the write-up, from the aggregate tables (cells, speedup, ...)."""
    cells, speedup = tables["cells"], tables["speedup"]
    serving = tables.get("serving", pd.DataFrame(columns=SERVING_COLUMNS))
    slo_runs = tables.get("serving_slo_runs", pd.DataFrame(columns=RUN_COLUMNS))
    return {
        "time_vs_batch": base.time_vs_batch(cells),
        "throughput_vs_batch": throughput_vs_batch(cells),
        "speedup_vs_batch": base.speedup_vs_batch(speedup),
        "cost_vs_batch": cost_vs_batch(cells),
        "throughput_per_cell": base.throughput_per_cell(cells),
        "accuracy_per_cell": base.accuracy_per_cell(cells),
        "mfu_per_cell": mfu_per_cell(cells),
        "energy_per_sample": energy_per_sample(cells),
        "utilization_timeline": utilization_timeline(tables["utilization"]),
        "top_ops": top_ops(tables["profile_ops"]),
        "serve_throughput_vs_clients": serving_charts.throughput_vs_clients(serving),
        "serve_latency_percentiles": serving_charts.latency_percentiles(serving),
        "serve_replica_scaling": serving_charts.replica_scaling(serving),
        "serve_p99_vs_rate": serving_slo_charts.p99_vs_rate(slo_runs),
        "generate_tokens_vs_batch": generation_charts.tokens_vs_batch(
            tables.get("generation", pd.DataFrame(columns=GENERATION_COLUMNS))
        ),
    }


def write_all_charts(
    tables: dict[str, pd.DataFrame], out_dir: Path, skip_empty: bool = False
) -> list[Path]:
    """Every chart as offline HTML and PNG under `out_dir`. With `skip_empty` (a published
    study) a chart with nothing to draw is not written, and an earlier file of it is removed;
    the workflow's rule keeps a placeholder, since it promises every chart file."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, chart in all_charts(tables).items():
        if skip_empty and base.is_empty(chart):
            for stale in (out_dir / f"{name}.html", out_dir / f"{name}.png"):
                stale.unlink(missing_ok=True)
            continue
        written.extend(save_chart(chart, out_dir / name))
    return written
