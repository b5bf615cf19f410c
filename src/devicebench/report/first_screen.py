"""The write-up's first screen and its sections by workload class.

At 1280x800 the reader sees, without scrolling: the question, the machines, the date, what the
data and models were, what each device was priced as, one line per workload class (verdict,
range, main caveat) and the verdict chart with each row's range. Below it, one short section per
class: a table of at most eight named columns and a chart of that class's rows.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import pandas as pd

from devicebench.report.answer import ClassAnswer, call
from devicebench.report.decision import CALL_WORDS, class_chart, rows_chart
from devicebench.report.verdict import number
from devicebench.report.words import lead, missing, span

QUESTION = "CPU or GPU: which is cheaper per sample, by workload, and by how much?"
FACT_NAMES = {"machines": "Machines", "measured": "Measured", "data": "Data", "priced": "Priced"}
SECTION_COLUMNS = [
    "workload",
    "cheaper, by",
    "range",
    "CPU: cheapest configuration",
    "GPU: cheapest configuration",
    "CPU US$ per M samples",
    "GPU US$ per M samples",
    "GPU busy",
]
ChartDiv = Callable[[Any, str, str], str]  # (chart, task, name) -> the div it renders into


def _e(text: Any) -> str:
    return html.escape(str(text))


def answer_table(answers: list[ClassAnswer]) -> str:
    """The five lines: class, verdict, range, main caveat."""
    rows = "".join(
        f"<tr class='{'measured' if a.measured else 'unmeasured'}'><th><a href='#class-{a.key}'>"
        f"{_e(a.title)}</a></th><td>{_e(a.verdict)}</td><td>{_e(a.range)}</td>"
        f"<td>{_e(a.caveat)}</td></tr>"
        for a in answers
    )
    head = "<tr><th>workload class</th><th>verdict (cost per sample)</th><th>range</th>"
    head += "<th>main caveat</th></tr>"
    return f"<table class='answer'><thead>{head}</thead><tbody>{rows}</tbody></table>"


def answer_html(
    answers: list[ClassAnswer], facts: dict[str, str], ranged: pd.DataFrame, chart_div: ChartDiv
) -> str:
    """The first screen: question, facts, the five lines and the verdict chart."""
    said = "".join(
        f"<span><b>{_e(FACT_NAMES.get(k, k))}</b> {_e(v)}.</span> " for k, v in facts.items()
    )
    chart = class_chart(answers, ranged, width=620)
    drawn = chart_div(chart, "", "verdict_classes") if chart is not None else ""
    return (
        f"<h1>{_e(QUESTION)}</h1><p class='facts'>{said}</p>{answer_table(answers)}"
        f"<div class='first-chart'>{drawn}</div>"
    )


def _cell_value(cells: dict[str, dict], cell_id: Any, key: str) -> Any:
    return cells.get(str(cell_id), {}).get(key) if not missing(cell_id) else None


def section_table(rows: pd.DataFrame, configs: dict[str, str], cells: dict[str, dict]) -> str:
    """A class's rows in at most eight columns that fit the page."""

    def config(side: str, r: pd.Series) -> str:
        return configs.get(str(r[f"{side}_cell"]), str(r[f"{side}_config"]))

    def busy(r: pd.Series) -> str:
        util = _cell_value(cells, r["gpu_cell"], "gpu_util_mean")
        return "—" if missing(util) else f"{float(util):.0f} %"

    def spread(r: pd.Series) -> str:
        if r["low"] == r["high"]:
            return "—"
        return span(r["low"], r["high"])

    body = pd.DataFrame(
        {
            "workload": rows["label"].astype(str),
            "cheaper, by": [
                "too close to call" if call(r) == "close" else lead(r["cost_ratio"])
                for _, r in rows.iterrows()
            ],
            "range": [spread(r) for _, r in rows.iterrows()],
            "CPU: cheapest configuration": [config("cpu", r) for _, r in rows.iterrows()],
            "GPU: cheapest configuration": [config("gpu", r) for _, r in rows.iterrows()],
            "CPU US$ per M samples": rows["cpu_usd_per_million"].map(number),
            "GPU US$ per M samples": rows["gpu_usd_per_million"].map(number),
            "GPU busy": [busy(r) for _, r in rows.iterrows()],
        },
        columns=SECTION_COLUMNS,
    )
    table = body.to_html(index=False, escape=True, border=0, classes="section")
    return f"<div class='fit'>{table}</div>"


def class_sections(
    answers: list[ClassAnswer],
    ranged: pd.DataFrame,
    configs: dict[str, str],
    cells: pd.DataFrame,
    chart_div: ChartDiv,
) -> str:
    """One short section per workload class, in the answer's order."""
    by_id = {str(c["cell_id"]): c for c in cells.to_dict("records")} if "cell_id" in cells else {}
    out = []
    for a in answers:
        head = f"<h2 id='class-{a.key}'>{_e(a.title)}</h2>"
        if not a.measured:
            out.append(f"{head}<p class='note'>{_e(a.verdict)}.</p>")
            continue
        mine = ranged[ranged["label"].isin(a.rows["label"])]
        spread = str(mine["spread"].iloc[0]) if not mine.empty else ""
        lines = [f"<p><b>{_e(a.verdict)}</b>: {_e(a.range)}. Ranges: {_e(spread)}.</p>"]
        if a.caveats:
            items = "".join(f"<li>{_e(c)}</li>" for c in a.caveats)
            lines.append(f"<p class='note'>Caveats:</p><ul class='note'>{items}</ul>")
        lines.append(section_table(mine, configs, by_id))
        chart = rows_chart(mine)
        if chart is not None:
            lines.append(chart_div(chart, "", f"verdict_{a.key}"))
        out.append(head + "".join(lines))
    legend = ", ".join(f"{w}" for w in CALL_WORDS.values())
    note = (
        "<p class='note'>Each row: a workload and mode, each device at its cheapest measured "
        "configuration, paired as tables/best.csv pairs them; cheaper, by = the dearer cost per "
        f"sample over the cheaper ({legend}).</p>"
    )
    return (note if any(a.measured for a in answers) else "") + "\n".join(out)
