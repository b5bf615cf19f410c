"""The top of the write-up as HTML: the verdict sentences, the prices used, the verdict table."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from devicebench.aggregate.analysis import price_per_hour
from devicebench.report.verdict import (
    common_notes,
    compact,
    display_table,
    number,
    sentences,
    why_no_gpu,
)

HOW_TO_REPRICE = (
    "Prices are inputs: run <code>python scripts/report.py --tables TABLES --out OUT --prices "
    "FILE</code> (or set the config key <code>prices</code>) to redo this verdict at your own "
    "prices; no cell runs again."
)


def prices_html(prices: dict[str, Any], gpu_names: list[str]) -> str:
    """The hourly prices the verdict used, per device profile that appears in it."""
    per_vcpu = (prices.get("cpu") or {}).get("per_vcpu_hour")
    items = [f"CPU: US${number(per_vcpu)} per vCPU-hour" if per_vcpu is not None else ""]
    for name in gpu_names:
        price = price_per_hour("cuda", None, name, prices)
        items.append(f"{name}: US${number(price)} per GPU-hour")
    source = prices.get("source", "user prices")
    listed = "; ".join(i for i in items if i) or "no price for these devices"
    return (
        f'<p id="prices"><b>Prices used</b> ({html.escape(str(prices.get("currency", "USD")))}, '
        f"{html.escape(str(source))}): {html.escape(listed)}. {HOW_TO_REPRICE}</p>"
    )


def verdict_html(best: pd.DataFrame | None, cells: pd.DataFrame, prices: dict[str, Any]) -> str:
    """The verdict section's content (the page wraps it in section#verdict with its chart)."""
    head = "<h2>Verdict: CPU or GPU, per workload</h2>"
    if best is None:
        return (
            f"{head}<p class='flag'>This study's tables have no best.csv (they predate it), so "
            "there is no verdict table: run scripts/aggregate.py over the records to make it."
            "</p>"
        )
    said = "".join(f"<li>{html.escape(s)}</li>" for s in sentences(best, prices, why_no_gpu(cells)))
    names = sorted({str(n) for n in best["gpu_name"].dropna() if str(n)})
    table, empty = compact(display_table(best))
    body = table.to_html(index=False, escape=True, border=0, classes="verdict")
    note = (
        "<p class='note'>One row per workload and mode: each side's cheapest configuration "
        "(rows of tables/best.csv with pick = cheapest), paired only within one machine and "
        "one code version. Speedup: GPU samples/s over CPU samples/s of those two "
        "configurations. Break-even: the GPU hourly price at which both cost the same per "
        "sample.</p>"
    )
    common = "".join(f"; {c}" for c in common_notes(best))
    if empty:
        common += f"; left out, empty in every row: {', '.join(empty)}"
    if common:
        note = note.replace("</p>", f" Every row: {html.escape(common[2:])}.</p>")
    shown = f"{prices_html(prices, names)}<div class='scroll'>{body}</div>{note}"
    return f"{head}<ul>{said}</ul>{shown}"
