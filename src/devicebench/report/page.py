"""The write-up as one self-contained HTML page: it opens from disk with no network.

Vega, Vega-Lite and vega-embed are inlined once (vl-convert's bundle, the same one Altair inlines
into a single chart), and every chart's spec carries its data inline. A charts manifest next to the
page lists the charts drawn, so a browser test can check that each one rendered.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.pairing import span_sentence
from devicebench.aggregate.reproducibility import reproducibility_findings
from devicebench.aggregate.writeup_charts import drawn_charts
from devicebench.report import findings
from devicebench.report.answer import answer, row_ranges
from devicebench.report.facts import study_facts
from devicebench.report.first_screen import answer_html, class_sections
from devicebench.report.verdict import lead, number, reprice, verdict_rows
from devicebench.report.verdict_section import verdict_html
from devicebench.report.words import applicable, column_name, configurations, missing, money

REMOTE = re.compile(r"<(?:script|link|img|iframe)[^>]+(?:src|href)\s*=\s*[\"']?https?:", re.I)
QUESTION = (
    "When does a GPU beat a CPU for deep-learning training and inference, by how much, at what "
    "cost, and how well does each use its hardware? Each cell of the grid (task × model × "
    "framework × device × threads × precision × batch size × mode) ran in a fresh process; this "
    "page is generated from that run's records."
)
DEFINITIONS = [
    "Time: median of the timed repetitions (warm-up excluded); IQR and CoV over repetitions; "
    "a cell whose CoV exceeds noise_cov is flagged noisy (⚠ in tables, a cross in charts).",
    "Cost of a cell (cost_usd): the hourly price of what it occupies (prices file) × its median "
    "repetition time; samples per US$: throughput × 3600 / hourly price; relative time and cost "
    "divide by the base configuration's. Cost to target: the training run's cost when its "
    "final held-out accuracy reaches the task's target accuracy.",
    "Achieved TFLOP/s: model FLOPs per sample (counted by torch.utils.flop_counter on the torch "
    "model: forward + backward for training, forward for inference) × samples/s. MFU: achieved "
    "/ the device's datasheet dense peak at the cell's precision; empty where no datasheet peak "
    "exists (CPUs).",
    "Utilization: CPU per core (psutil) and GPU SM utilization, memory and power (NVML), "
    "sampled at ~10 Hz by a separate process during the timed section only.",
    "Agreement: training cells that differ only in device must reach accuracies within the "
    "tolerance; a larger spread is flagged, not hidden.",
]
TABLES_SHOWN = {
    "timing": "Timing and noise",
    "cost": "Cost",
    "quality": "Accuracy and agreement",
    "efficiency": "Utilization, achieved FLOP/s and MFU",
    "top_ops": "Top operators by self time (CPU vs GPU, side by side)",
    "not_ok": "Cells not ok (skipped or failed; never drawn in the charts)",
    "serving": "Serving: throughput, latency under load, LoadGen, cost per 1,000 requests",
    "serving_slo": "Serving verdict: the highest rate at the p99 bound (LoadGen Server), its cost "
    "per 1,000 requests, and the server against its device in-process",
    "generation": "LLM generation: TTFT, TPOT, tokens/s, share of the memory-bandwidth bound, "
    "cost per million output tokens",
}
STYLE = """
body{font-family:system-ui,sans-serif;margin:.6em auto;max-width:1200px;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:12px;margin:.4em 0 1.2em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.flag{color:#b00;font-weight:bold}
.chart{margin:.6em 0}.scroll{overflow-x:auto;max-width:100%}nav a{margin-right:1em}
li{margin:.2em 0}.note{color:#555;font-size:13px}h1{font-size:1.35em;margin:.2em 0 .3em}
.facts{font-size:13px;margin:.2em 0 .4em;line-height:1.35}.facts span{margin-right:.6em}
table.answer{font-size:13px;margin:.3em 0}table.answer td,table.answer th{text-align:left}
table.answer tr.unmeasured td{color:#666;font-style:italic}
.first-chart .chart{margin:.2em 0}
table.section td:nth-child(-n+5),table.section th{text-align:left}.fit{max-width:100%}
#verdict h2{margin:.8em 0 .2em}#verdict p{margin:.3em 0}
details{border-top:1px solid #ddd}summary{cursor:pointer}summary h2{display:inline;font-size:1.15em}
table.verdict td,table.verdict th{font-size:12px}table.verdict td:nth-child(-n+4){text-align:left}
"""


def javascript_bundle() -> str:
    """vega + vega-lite + vega-embed, as Altair inlines them, for the Vega-Lite Altair targets."""
    import vl_convert
    from altair.utils._importers import vl_version_for_vl_convert

    return vl_convert.javascript_bundle(vl_version=vl_version_for_vl_convert())


def for_task(tables: dict[str, pd.DataFrame], task: str) -> dict[str, pd.DataFrame]:
    """The tables restricted to one task."""
    return {
        name: df[df["task"].astype(str).eq(task)] if "task" in df else df
        for name, df in tables.items()
    }


MONEY = ("cost_to_target_usd", "cost_per_1k_requests_usd", "price_per_hour")
DROPPED = ("synthetic", "message", "cost_usd", "base_cost_usd", "record_path", "cell_id")


def shown_value(value: Any) -> str:
    """A table value as a reader reads it: integers as integers, no exponents, empty if none."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if missing(value):
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return number(value, 4)
    return str(value)


def table_html(df: pd.DataFrame, flags: dict[str, str] | None = None) -> str:
    """A table with human column names, no column that is empty in every row, money in US$
    (a cell's cost per million samples, not per repetition); truthy `flags` columns get a ⚠."""
    if df.empty:
        return '<p class="note">(no rows)</p>'
    shown = applicable(df.drop(columns=[c for c in DROPPED if c in df]))
    if "samples_per_usd" in shown:
        per_million = 1e6 / pd.to_numeric(shown["samples_per_usd"])
        shown = shown.drop(columns="samples_per_usd").assign(usd_per_million=per_million)
    shown = shown[[c for c in shown if shown[c].map(lambda v: not missing(v)).any()]]
    text = shown.astype("object").map(shown_value)
    for column in [c for c in MONEY + ("usd_per_million",) if c in shown]:
        text[column] = shown[column].map(money)
    for column, label in (flags or {}).items():
        if column in df:
            marks = df[column].map(lambda v, lab=label: f"⚠ {lab}" if v is True else "")
            text.insert(0, "flag", marks.to_numpy())
    names = {c: column_name(c) for c in text.columns}
    names["usd_per_million"] = "US$ per M samples"
    body = text.rename(columns=names).to_html(index=False, escape=True, border=0)
    body = body.replace("<td>⚠", '<td class="flag">⚠')
    return f'<div class="scroll">{body}</div>'


def noisy_count(cells: pd.DataFrame) -> str:
    """'N of M ok cells noisy': how many timings the reader should trust less."""
    ok = cells[cells["status"].eq("ok")] if "status" in cells else cells.iloc[0:0]
    noisy = int(ok["noisy"].fillna(False).astype(bool).sum()) if "noisy" in ok else 0
    return f"{noisy} of {len(ok)} ok cells noisy"


def setup_html(cells: pd.DataFrame, study: dict[str, Any], prices: dict[str, Any]) -> str:
    """Machines, versions and what was synthetic, from the records' environment columns."""

    def distinct(column: str) -> str:
        if column not in cells:
            return "—"
        values = sorted({str(v) for v in cells[column].dropna() if str(v) not in ("", "nan")})
        return ", ".join(values) or "—"

    data = cells.drop_duplicates(["dataset", "source"]) if "dataset" in cells else cells.iloc[0:0]
    datasets = "; ".join(
        f"{r['dataset']} ({r['source']}{', SYNTHETIC' if r['synthetic'] is True else ''}: "
        f"{shown_value(r.get('train_samples'))} train / {shown_value(r.get('test_samples'))} "
        "test samples)"
        for _, r in data.iterrows()
    )
    items = {
        "study": study.get("study", "—"),
        "host names": distinct("hostname"),
        "CPU": f"{distinct('cpu_model')} ({distinct('cpu_cores')} logical cores)",
        "GPU": f"{distinct('gpu_name')} (driver {distinct('gpu_driver')}, CUDA {distinct('cuda')})",
        "software": f"torch {distinct('torch_version')}, Python {distinct('python')}",
        "code version": distinct("code_version"),
        "records span": span_sentence(cells),
        "data": datasets or "—",
        "measurement": (
            f"{study.get('repetitions')} timed repetitions of at least "
            f"{study.get('min_repetition_s')} s each (a pass repeated to fill the window) after "
            f"{study.get('warmup_steps')} warm-up steps; noisy above CoV "
            f"{study.get('noise_cov')} ({noisy_count(cells)}); speedup base "
            f"{study.get('speedup_base')}; accuracy tolerance {study.get('accuracy_tolerance')}"
        ),
        "prices": f"{prices.get('source', 'user prices')} ({prices.get('currency', 'USD')})",
    }
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td style='text-align:left'>{html.escape(str(v))}</td></tr>"
        for k, v in items.items()
    )
    synthetic = bool(cells.get("synthetic", pd.Series(dtype=bool)).eq(True).any())
    note = (
        "<p class='flag'>Data in this run is SYNTHETIC (deterministic, learnable, real shapes): "
        "speed is meaningful, accuracy only shows that training works.</p>"
        if synthetic
        else ""
    )
    return f"<table>{rows}</table>{note}"


def chart_div(specs: list, manifest: list, chart: Any, task: str, name: str) -> str:
    """Register one chart for embedding; return the element it renders into."""
    chart_id = f"chart-{len(specs)}"
    specs.append(chart.to_dict())
    manifest.append({"id": chart_id, "task": task, "chart": name})
    return f'<div class="chart" id="{chart_id}" data-chart="{name}"></div>'


def task_summary(best: pd.DataFrame | None, task: str) -> str:
    """The one line a folded workload shows: which device is cheaper per mode, and by how much."""
    if best is None:
        return ""
    rows = verdict_rows(best)
    rows = rows[rows["task"].astype(str).eq(task) & rows["cost_ratio"].notna()]
    parts = []
    for _, row in rows.iterrows():
        what = str(row["label"]).removeprefix(f"{task} ")
        parts.append(f"{what}: {lead(row, won='{side} {by} cheaper')}")
    return f" — {'; '.join(parts)}" if parts else ""


def verdict_findings(best: pd.DataFrame | None, task: str) -> list[str]:
    """The workload's verdict rows in words: best.csv's `finding` sentences (as repriced), so
    the page says what the table and the README say."""
    if best is None:
        return []
    rows = verdict_rows(best)
    rows = rows[rows["task"].astype(str).eq(task)]
    return [str(f) for f in rows["finding"] if isinstance(f, str) and f]


def task_section(
    part: dict[str, pd.DataFrame],
    task: str,
    study: dict[str, Any],
    specs: list,
    manifest: list,
    verdict: list[str] | None = None,
) -> str:
    """One workload's findings (its verdict rows' first), tables and charts (the page folds it
    in a <details>)."""
    noise_cov = float(study.get("noise_cov") or 0.1)
    said = [*(verdict or []), *findings.task_findings(part, task, noise_cov)]
    blocks = [f"<h3>Findings</h3><ul>{''.join(f'<li>{html.escape(f)}</li>' for f in said)}</ul>"]
    flags = {"timing": {"noisy": "noisy"}, "quality": {"accuracy_agrees": "disagrees"}}
    for name, title in TABLES_SHOWN.items():
        df = part.get(name, pd.DataFrame())
        if df.empty and name in ("serving", "serving_slo", "generation", "not_ok", "top_ops"):
            continue  # nothing to show: a task without serve cells, failures or profiles
        if name == "quality" and "accuracy_agrees" in df:
            df = df.assign(accuracy_agrees=df["accuracy_agrees"].map(lambda v: v is False))
        blocks.append(f"<h3>{html.escape(title)}</h3>{table_html(df, flags.get(name))}")
    engines = part.get("engines", pd.DataFrame())
    if not engines.empty:
        title = "Inference engines against the same model in-process"
        blocks.append(f"<h3>{title}</h3>{table_html(engines)}")
    charts = drawn_charts(part)
    if part.get("serving", pd.DataFrame()).empty:  # serving charts only with serve cells
        charts = {n: c for n, c in charts.items() if not n.startswith("serve_")}
    if charts:
        blocks.append("<h3>Charts</h3>")
    blocks += [chart_div(specs, manifest, chart, task, name) for name, chart in charts.items()]
    return "\n".join(blocks)


def build_page(
    tables: dict[str, pd.DataFrame], study: dict[str, Any], prices: dict[str, Any]
) -> tuple[str, list[dict[str, str]]]:
    """The page's HTML and its charts manifest (one entry per embedded chart): the verdict
    first, each workload's details folded below it, setup and definitions at the end."""
    cells = tables["cells"]
    tasks = list(dict.fromkeys(cells["task"].dropna().astype(str)))
    specs: list[dict[str, Any]] = []
    manifest: list[dict[str, str]] = []
    best = tables.get("best")
    best = reprice(best, cells, prices) if best is not None else None

    def draw(chart: Any, task: str, name: str) -> str:
        return chart_div(specs, manifest, chart, task, name)

    answers = answer(best, cells, tables.get("serving"))
    paired = verdict_rows(best) if best is not None else pd.DataFrame()
    paired = paired[paired["cost_ratio"].notna()] if not paired.empty else paired
    ranged = row_ranges(paired, cells) if not paired.empty else paired
    configs = configurations(cells)
    first = answer_html(answers, study_facts(cells, prices), ranged, draw)
    worded = best
    if best is not None:  # configurations in words, where the cell is in these tables
        worded = best.assign(
            **{
                f"{s}_config": best[f"{s}_cell"]
                .astype(str)
                .map(configs)
                .fillna(best[f"{s}_config"])
                for s in ("cpu", "gpu")
            }
        )
    every_row = verdict_html(worded, cells, prices)
    verdict = (
        class_sections(answers, ranged, configs, cells, draw)
        + '<details id="all-rows"><summary><h2>Every verdict row, in one table, with the '
        f"prices used</h2></summary>{every_row}</details>"
    )
    sections = []
    for task in tasks:
        said = verdict_findings(best, task)
        body = task_section(for_task(tables, task), task, study, specs, manifest, said)
        summary = f"Workload {html.escape(task)}{html.escape(task_summary(best, task))}"
        sections.append(
            f'<details id="task-{task}"><summary><h2>{summary}</h2></summary>{body}</details>'
        )
    nav = " ".join(f'<a href="#task-{t}">{html.escape(t)}</a>' for t in tasks)
    study_bullets = "".join(f"<li>{html.escape(f)}</li>" for f in findings.study_findings(tables))
    definitions = "".join(f"<li>{html.escape(d)}</li>" for d in DEFINITIONS)
    rerun = tables.get("reproducibility", pd.DataFrame())
    reproducibility = ""
    if not rerun.empty:
        checks = "".join(f"<li>{html.escape(f)}</li>" for f in reproducibility_findings(rerun))
        outside = [str(v) != "True" for v in rerun["within_cov"]]
        flag = {"outside_cov": "outside CoV"}
        reproducibility = (
            '<h2 id="reproducibility">Reproducibility: published cells run again</h2>'
            f"<ul>{checks}</ul>{table_html(rerun.assign(outside_cov=outside), flag)}"
        )
    embed = (
        "const specs = " + json.dumps(specs).replace("</", "<\\/") + ";\n"
        "const ids = " + json.dumps([m["id"] for m in manifest]) + ";\n"
        "window.chartsRendered = 0;\n"
        "ids.forEach((id, i) => vegaEmbed('#' + id, specs[i], "
        "{mode: 'vega-lite', renderer: 'svg', actions: false})"
        ".then(() => { window.chartsRendered += 1; })"
        ".catch((e) => console.error('chart ' + id + ': ' + e)));\n"
    )
    title = f"devicebench write-up: {study.get('study', 'study')}"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{STYLE}</style>
<script type="text/javascript">{javascript_bundle()}</script></head>
<body><header id="answer">{first}</header>
<section id="verdict">{verdict}</section>
<h2 id="details">Details per workload</h2>
<p class="note">{html.escape(QUESTION)} Open a workload for its findings, tables and charts:
{nav}</p>
{"".join(sections)}
{reproducibility}
<h2 id="run">The run</h2><ul>{study_bullets}</ul>
<h2 id="setup">Setup</h2>{setup_html(cells, study, prices)}
<h2 id="definitions">Definitions</h2><ul class="note">{definitions}</ul>
<script type="text/javascript">{embed}</script>
</body></html>
"""
    if REMOTE.search(page):
        raise RuntimeError("the write-up references the network; it must be self-contained")
    return page, manifest


def write_report(
    tables: dict[str, pd.DataFrame], study: dict[str, Any], prices: dict[str, Any], out: Path
) -> Path:
    """Write index.html and charts.json into `out`; return the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    page, manifest = build_page(tables, study, prices)
    (out / "index.html").write_text(page)
    (out / "charts.json").write_text(json.dumps({"charts": manifest}, indent=1) + "\n")
    return out / "index.html"
