"""The README's Results block, made from the published studies' tables (never typed by hand).

Each study under results/published/ gives: where its cells ran (from its records), its verdict
(tables/best.csv, where the study has one), its same-configuration speedups, serving and scaling
tables where it has them, and links to a few of its charts. Side benchmarks (benchmarks/) are
listed apart, as benchmarks, with their commands; their figures stay in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.analysis import load_prices
from devicebench.aggregate.collect import read_table
from devicebench.report.verdict import (
    common_notes,
    compact,
    display_table,
    load_best,
    number,
    reprice,
    sentences,
    times,
    why_no_gpu,
)

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
HEADLINE_CHARTS = ("speedup_vs_batch", "throughput_per_cell", "serve_throughput_vs_clients")


def markdown(df: pd.DataFrame) -> str:
    """A Markdown table of already formatted text."""
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    rows = ["| " + " | ".join(str(v).replace("|", "/") for v in r) + " |" for r in df.values]
    return head + "\n".join(rows) + "\n"


def _distinct(cells: pd.DataFrame, column: str) -> str:
    if column not in cells:
        return "—"
    values = sorted({str(v) for v in cells[column].dropna() if str(v) not in ("", "nan")})
    return ", ".join(values) or "—"


def where(cells: pd.DataFrame, folder: Path) -> str:
    """Where the cells ran and what they hold, from the records' own columns."""
    counts = cells["status"].value_counts().sort_index()
    statuses = ", ".join(f"{n} {s}" for s, n in counts.items())
    synthetic = "synthetic data" if cells.get("synthetic", pd.Series()).eq(True).any() else "data"
    return (
        f"Cells: {len(cells)} ({statuses}) in [`{folder.as_posix()}/`]({folder.as_posix()}/), on "
        f"{synthetic}. GPU: {_distinct(cells, 'gpu_name')}. CPU (as the records name it): "
        f"{_distinct(cells, 'cpu_model')}, {_distinct(cells, 'cpu_cores')} logical cores. "
        f"Code version: {_distinct(cells, 'code_version')}."
    )


def speedup_table(speedup: pd.DataFrame) -> pd.DataFrame:
    """GPU over the base device, same configuration, per task, model, framework and batch."""
    other = speedup["device_label"].astype(str).ne(speedup["base_label"].astype(str))
    done = speedup[speedup["speedup"].notna() & other].copy()
    if done.empty:
        return done
    done["precision"] = done["precision"].astype(str)
    keys = ["task", "model", "framework", "precision", "batch_size"]
    wide = done.pivot_table(index=keys, columns="mode", values="speedup", aggfunc="max")
    wide = wide.reset_index()
    out = pd.DataFrame({k: wide[k].astype(str) for k in keys})
    out["batch_size"] = wide["batch_size"].astype(int).astype(str)
    for mode in [c for c in ("train", "infer") if c in wide]:
        out[f"{mode} speedup"] = wide[mode].map(times)
    return out.rename(columns={"batch_size": "batch"})


def serving_table(serving: pd.DataFrame) -> pd.DataFrame:
    """The serve cells that finished ok: throughput, tail latency, price per 1,000 requests."""
    ok = serving[serving["status"].astype(str).eq("ok")]
    cols = ["model", "framework", "engine", "device_label", "precision", "server", "replicas"]
    cols = [c for c in [*cols, "clients"] if c in ok]  # older tables lack replicas and engine
    counts = ("replicas", "clients")
    out = pd.DataFrame({c: ok[c].map(number if c in counts else str) for c in cols})
    out["requests/s"] = ok["requests_per_s"].map(number)
    out["p99 ms"] = ok["p99_ms"].map(number)
    out["stability CoV"] = ok["stability_cov"].map(number)
    out["US$ / 1k requests"] = ok["cost_per_1k_requests_usd"].map(number)
    return out.sort_values(["model", "device_label", "framework"]).rename(
        columns={"device_label": "device"}
    )


def scaling_table(scaling: pd.DataFrame) -> pd.DataFrame:
    """Data-parallel scaling: samples/s at 1 and N GPUs, speedup and efficiency."""
    ok = scaling[scaling["status"].astype(str).eq("ok")]
    return pd.DataFrame(
        {
            "task": ok["task"].astype(str),
            "model": ok["model"].astype(str),
            "precision": ok["precision"].astype(str),
            "per-GPU batch": ok["batch_size"].map(number),
            "GPUs": ok["gpus"].map(number),
            "samples/s": ok["samples_per_s"].map(number),
            "speedup": ok["speedup"].map(times),
            "efficiency": ok["efficiency"].map(number),
        }
    )


def verdict_part(
    tables: Path, cells: pd.DataFrame, prices: dict[str, Any], chart: Path
) -> list[str]:
    """The study's verdict from best.csv, or a sentence saying it has none."""
    best = load_best(tables)
    if best is None:
        return [
            "No verdict table: this study's tables predate `tables/best.csv` (the best CPU "
            "against the best GPU configuration, paired on one machine); the tables below "
            "compare cells of the same configuration."
        ]
    best = reprice(best, cells, prices)
    lines = [f"- {s}" for s in sentences(best, prices, why_no_gpu(cells))]
    table, empty = compact(display_table(best))
    lines += ["", markdown(table)]
    common = common_notes(best)
    if empty:
        common.append(f"left out, empty in every row: {', '.join(empty)}")
    if common:
        lines += [f"Every row: {'; '.join(common)}.", ""]
    lines.append(f"![cost per million samples, CPU vs GPU]({chart.as_posix()})")
    return lines


def study_block(repo: Path, folder: Path, prices: dict[str, Any]) -> tuple[list[str], Path | None]:
    """One published study's part of the block (`folder` relative to `repo`), and the decision
    chart it needs (if any)."""
    tables = repo / folder / "tables"
    cells = read_table(tables / "cells.csv")
    lines = [f"### `{folder.name}`", "", where(cells, folder), ""]
    chart = folder / "report" / "verdict.png"
    has_best = (tables / "best.csv").exists()
    lines += ["**Verdict** (`tables/best.csv`, pick = cheapest, at `config/prices.yaml`):", ""]
    lines += [*verdict_part(tables, cells, prices, chart), ""]
    speedup = speedup_table(read_table(tables / "speedup.csv"))
    if not speedup.empty:
        lines += ["**GPU over the CPU, same configuration** (`tables/speedup.csv`):", ""]
        lines += [markdown(speedup), ""]
    has_serving = False
    if (tables / "serving.csv").exists():
        serving = serving_table(read_table(tables / "serving.csv"))
        has_serving = not serving.empty
        if has_serving:
            lines += ["**Serving** (`tables/serving.csv`, closed-loop client pool):", ""]
            lines += [markdown(serving), ""]
    scaling = repo / folder / "scaling" / "scaling.csv"
    if scaling.exists():
        lines += ["**Data-parallel scaling** (`scaling/scaling.csv`):", ""]
        lines += [markdown(scaling_table(pd.read_csv(scaling))), ""]
    for aside in sorted((repo / folder / "superseded").glob("*/README.md")):
        first = aside.read_text().strip().splitlines()[0].lstrip("# ")
        path = aside.parent.relative_to(repo).as_posix()
        lines += [f"Records set aside, not in these tables: [`{path}/`]({path}/): {first}.", ""]
    shown = {"speedup_vs_batch": not speedup.empty, "serve_throughput_vs_clients": has_serving}
    charts = [
        n
        for n in HEADLINE_CHARTS
        if shown.get(n, True) and (repo / folder / "charts" / f"{n}.png").exists()
    ]
    links = ", ".join(f"[{n}]({(folder / 'charts' / n).as_posix()}.png)" for n in charts)
    if links:
        page = f"{folder.as_posix()}/report/index.html"
        lines += [f"Charts (from these tables): {links}; the write-up: [`{page}`]({page})."]
        lines.append("")
    return lines, chart if has_best else None


def benchmark_commands(results_md: Path) -> list[str]:
    """Each benchmark section of benchmarks/RESULTS.md with the first command it ran."""
    text = results_md.read_text()
    out = []
    for match in re.finditer(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, re.S | re.M):
        command = re.search(r"```(?:bash)?\n(.+?)\n", match.group(2))
        first = command.group(1).rstrip(" \\") if command else ""
        shown = f": `{first}`" if first else ""
        out.append(f"- {match.group(1).strip()}{shown}")
    return out


def results_block(repo: Path) -> tuple[str, list[tuple[Path, Path]]]:
    """The block's Markdown and the decision charts to draw (study tables, PNG path)."""
    prices = load_prices(repo / "config" / "prices.yaml")
    lines = [
        BEGIN,
        "<!-- made by scripts/readme_results.py from results/published/*/tables; "
        "edit the script, not this block -->",
        "Every figure in this block is generated from the published studies' tables "
        "(`python scripts/readme_results.py`); prices are the example prices of "
        "`config/prices.yaml`.",
        "",
    ]
    charts = []
    for folder in sorted((repo / "results" / "published").iterdir()):
        if (folder / "tables" / "cells.csv").exists():
            part, chart = study_block(repo, folder.relative_to(repo), prices)
            lines += part
            if chart is not None:
                charts.append((folder / "tables", repo / chart))
    results_md = repo / "benchmarks" / "RESULTS.md"
    if results_md.exists():
        lines += [
            "### Benchmarks (side measurements outside the workflow)",
            "",
            "Their figures are in [`benchmarks/RESULTS.md`](benchmarks/RESULTS.md), each with "
            "its command, machine and date; they are benchmarks, not cells of a study, and "
            "appear in none of the tables above. Sections and the first command of each:",
            "",
            *benchmark_commands(results_md),
            "",
        ]
    lines.append(END)
    return "\n".join(lines), charts


def replace_block(readme: str, block: str) -> str:
    """The README with its results block replaced (markers included)."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README has no {BEGIN} ... {END} block")
    head, rest = readme.split(BEGIN, 1)
    return head + block + rest.split(END, 1)[1]
