"""The README's answer block, made from the published studies' tables (never typed by hand).

The study with the most CPU/GPU pairs answers: what it measured on (machines, date, data,
prices), then one line per workload class (verdict, range, main caveat) and the verdict chart.
Every other published study gets one line saying what it holds. The same-configuration,
serving and scaling tables stay in each study's tables and write-up, linked from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.analysis import load_prices
from devicebench.aggregate.collect import read_table
from devicebench.aggregate.quality_gate import unchecked_format
from devicebench.report.answer import answer, one_side
from devicebench.report.facts import study_facts
from devicebench.report.verdict import load_best, reprice, verdict_rows

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def markdown(df: pd.DataFrame) -> str:
    """A Markdown table of already formatted text."""
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    rows = ["| " + " | ".join(str(v).replace("|", "/") for v in r) + " |" for r in df.values]
    return head + "\n".join(rows) + "\n"


def answer_study(repo: Path) -> Path | None:
    """The published study that answers: the one with most paired verdict rows (then by name)."""
    scored = []
    for folder in sorted((repo / "results" / "published").iterdir()):
        tables = folder / "tables"
        best = load_best(tables) if (tables / "cells.csv").exists() else None
        if best is not None:
            paired = int(verdict_rows(best)["cost_ratio"].notna().sum())
            scored.append((paired, folder))
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: s[0])[1] if scored else None


def class_answers(repo: Path, folder: Path, prices: dict[str, Any]) -> list:
    """A published study's answers, one per workload class (`report.answer`)."""
    tables = repo / folder / "tables"
    cells = read_table(tables / "cells.csv")
    best = reprice(load_best(tables), cells, prices)
    serving = read_table(tables / "serving.csv") if (tables / "serving.csv").exists() else None
    return answer(best, cells, serving)


def measured_elsewhere(repo: Path, folders: list[Path], prices: dict[str, Any]) -> dict:
    """Per workload class, the first of `folders` (relative to `repo`) that measured it, and its
    answer: what fills a class the answer study did not measure."""
    found: dict[str, tuple[Path, Any]] = {}
    for folder in folders:
        if load_best(repo / folder / "tables") is None:
            continue
        for said in class_answers(repo, folder, prices):
            if said.measured and said.title not in found:
                found[said.title] = (folder, said)
    return found


def study_answer(
    repo: Path, folder: Path, prices: dict[str, Any], elsewhere: dict | None = None
) -> tuple[list[str], list]:
    """The answer's lines for one study (`folder` relative to `repo`) and its class answers; a
    class it did not measure takes the answer of the study `elsewhere` names for it, marked
    with that study's name."""
    tables = repo / folder / "tables"
    cells = read_table(tables / "cells.csv")
    answers = class_answers(repo, folder, prices)
    facts = study_facts(cells, prices)
    base = folder.as_posix()
    shown, names = list(answers), {}  # names: the study each borrowed row comes from
    for i, said in enumerate(answers):
        if not said.measured and said.title in (elsewhere or {}):
            names[i], shown[i] = elsewhere[said.title]
    lines = [
        f"- **Measured** {facts['measured']}: [`{base}`]({base}/README.md), {len(cells):,} cells.",
        f"- **Machines** {facts['machines']}.",
        f"- **Data** {facts['data']}.",
        f"- **Priced** {facts['priced']}.",
        "",
    ]
    table = pd.DataFrame(
        {
            "workload class": [a.title for a in shown],
            "verdict (cost per sample)": [
                f"[`{names[i].name}`]({names[i].as_posix()}/README.md): {a.verdict}"
                if i in names
                else a.verdict
                for i, a in enumerate(shown)
            ],
            "range": [a.range for a in shown],
            "main caveat": [a.caveat for a in shown],
        }
    )
    lines += [markdown(table)]
    if names:
        lines += [
            "A verdict that names a study comes from that study, its machines, dates and GPU "
            "price (below): this one did not measure the class.",
            "",
        ]
    lines.append(
        f"![The verdict by workload class: a dot per workload, its range as a line]"
        f"({base}/report/verdict.png)"
    )
    lines += [
        "",
        "Each workload and mode with both devices' cheapest configurations, the other "
        f"caveats and every chart: [the write-up]({base}/report/index.html) "
        f"(open it from a clone) and [`tables/best.md`]({base}/tables/best.md).",
        "",
    ]
    return lines, answers


def study_line(repo: Path, folder: Path, prices: dict[str, Any]) -> str:
    """One line for a published study that is not the answer: what it holds."""
    tables = repo / folder / "tables"
    cells = read_table(tables / "cells.csv")
    facts = study_facts(cells, prices)
    best = load_best(tables)
    base = folder.as_posix()
    said, served = "no verdict table", []
    if best is not None:
        rows = verdict_rows(reprice(best, cells, prices))
        paired = int(rows["cost_ratio"].notna().sum())
        why = one_side(rows).removeprefix("not measured: ")
        pairs = f"{paired} CPU/GPU pair{'s' if paired != 1 else ''}"
        said = pairs if paired else f"no CPU/GPU verdict: {why}"
        served = serving_lines(rows)
    extra = ", data-parallel scaling in `scaling/`" if (repo / folder / "scaling").exists() else ""
    line = (
        f"- [`{folder.name}`]({base}/README.md): {len(cells):,} cells, {facts['measured']}; "
        f"{facts['machines']}; {said}{extra}."
    )
    return "\n".join([line, *served, *generation_lines(tables)])


def serving_lines(rows: pd.DataFrame) -> list[str]:
    """Sub-items for a study's serving verdicts at a p99 bound: each side's confirmed rate and
    the finding, with the cost ratio's range over the confirming runs (best.csv's serve rows)."""
    serve = rows[rows["mode"].astype(str).eq("serve") & rows["cost_ratio"].notna()]
    lines = []
    for _, row in serve.iterrows():
        bound = pd.to_numeric(row.get("p99_bound_ms"), errors="coerce")
        if pd.isna(bound):  # a closed-loop comparison: no confirmed rate to list
            continue
        lines.append(
            f"  - Serving {row['model']}, judged at p99 <= {bound:g} ms: CPU "
            f"{row['cpu_samples_per_s']:,.1f} and GPU {row['gpu_samples_per_s']:,.1f} requests/s "
            f"confirmed. {row['finding']}"
        )
    return lines


def _generation_cell(row: pd.Series) -> str:
    share = row.get("bandwidth_fraction")
    bound = f", {share:.0%} of its bandwidth bound" if pd.notna(share) else ""
    quality = str(row.get("quality", ""))
    # an integer format of random weights, or an engine whose answers cannot be scored
    unchecked = unchecked_format(str(row["precision"]), quality) or quality.startswith(
        "quality unverified"
    )
    return (
        f"{row['decode_tokens_per_s']:,.1f} tokens/s at batch {int(row['batch_size'])} "
        f"({row['generator']}, {row['precision']}{bound}; "
        f"${row['cost_per_million_tokens_usd']:,.3g} per million output tokens"
        f"{'; quality unverified' if unchecked else ''})"
    )


def _prefill_cell(row: pd.Series) -> str:
    """A prefill-only cell (one output token): its first token and its prompt tokens' price."""
    return (
        f"TTFT {row['ttft_p50_s'] * 1000:,.1f} ms at batch {int(row['batch_size'])} "
        f"({row['generator']}, {row['precision']}; {row['prefill_tokens_per_s']:,.0f} prompt "
        f"tokens/s, ${row['cost_per_million_prompt_tokens_usd']:,.3g} per million prompt tokens)"
    )


def _goodput_cell(row: pd.Series) -> str:
    """A served cell's goodput: its rate at the token bounds and the tokens' price there."""
    return (
        f"{row['goodput_qps']:,.3g} requests/s at the token bounds ({row['generator']}, "
        f"{row['goodput_tokens_per_s']:,.0f} output tokens/s, "
        f"${row['goodput_cost_per_million_tokens_usd']:,.3g} per million output tokens)"
    )


# (criterion in generation_best.csv, the README's words, how one device's cell reads)
GENERATION_PARTS = (
    ("fastest batch-1 decode", "batch 1", _generation_cell),
    ("fastest batch-1 decode in bf16", "batch 1 in bf16", _generation_cell),
    ("cheapest per million output tokens", "cheapest", _generation_cell),
    ("fastest time to first token", "first token", _prefill_cell),
    ("cheapest per million prompt tokens", "cheapest prompt", _prefill_cell),
    ("highest goodput at the token bounds", "goodput", _goodput_cell),
)
# parts whose figure is another measurement of a cell (its served rate): never "the same cell"
OWN_FIGURE = frozenset({"goodput"})


def generation_lines(tables: Path) -> list[str]:
    """Sub-items for a study with LLM generation cells: per model and prompt/output pair, each
    device's fastest batch-1 decode and cheapest cell, or for a prefill-only pair its fastest
    first token and cheapest prompt tokens (tables/generation_best.csv), and the goodput search
    where it found no rate (tables/generation.csv)."""
    path = tables / "generation_best.csv"
    if not path.exists():
        return []
    best = read_table(path)
    served = _served(tables)
    lines = []
    for (model, prompt, output), group in best.groupby(
        ["model", "prompt_len", "output_len"], sort=True
    ):
        parts, shown = [], set()
        for criterion, label, said_of in GENERATION_PARTS:
            rows = group[group["criterion"].astype(str).eq(criterion)]
            cells = set(rows["cell_id"].dropna().astype(str)) if "cell_id" in rows else set()
            repeats = label not in OWN_FIGURE
            if repeats and cells and cells <= shown:  # the cheapest is the fastest: said once
                parts.append(f"{label}: the same cells")
                continue
            said = "; ".join(
                f"{r['device_label']} "
                + ("the same cell" if repeats and str(r.get("cell_id")) in shown else said_of(r))
                for _, r in rows.iterrows()
            )
            shown |= cells if repeats else set()
            if said:
                parts.append(f"{label}: {said}")
        unserved = _unserved(served, model, prompt, output)
        lines.append(
            f"  - LLM {model}, prompt {int(prompt)} / output {int(output)}: "
            + "; ".join([*parts, *unserved])
        )
    return lines


def _served(tables: Path) -> pd.DataFrame:
    """The generation table's cells that served their model (tables/generation.csv)."""
    path = tables / "generation.csv"
    table = read_table(path) if path.exists() else pd.DataFrame()
    return table[table["serving_status"].notna()] if "serving_status" in table else table.iloc[:0]


def _unserved(served: pd.DataFrame, model: str, prompt: float, output: float) -> list[str]:
    """The pair's served cells that found no rate at the token bounds, with their searches'
    status: 'goodput at the token bounds: none (cpu:16t no_rate, cuda over_budget ...)', or
    'no goodput: cpu:16t no_rate ...' beside another cell's goodput; nothing where all found one
    or none served."""
    if served.empty:
        return []
    mine = served[
        served["model"].eq(model)
        & served["prompt_len"].eq(prompt)
        & served["output_len"].eq(output)
    ]
    found = pd.to_numeric(mine["goodput_qps"], errors="coerce").notna()
    if found.all():
        return []
    engines = mine["device_label"].duplicated().any()  # a device served by several engines
    said = ", ".join(_search_status(r, engines) for _, r in mine[~found].iterrows())
    why = "tables/generation.md says why"
    if found.any():
        return [f"no goodput: {said}{_at_least(mine[found], mine[~found])} ({why})"]
    return [f"goodput at the token bounds: none ({said}; {why})"]


def _at_least(found: pd.DataFrame, none: pd.DataFrame) -> str:
    """', so cuda at least 2.38x cheaper per output token at the bounds': a goodput's cost
    against the least a no_rate search's million tokens could cost under its lowest rate."""
    cost = pd.to_numeric(found["goodput_cost_per_million_tokens_usd"], errors="coerce")
    column = "no_rate_least_cost_per_million_tokens_usd"
    least = pd.to_numeric(none.get(column, pd.Series(dtype=float)), errors="coerce").dropna()
    if len(found) != 1 or len(least) != len(none) or not cost.iloc[0] > 0:
        return ""
    ratio = least.min() / cost.iloc[0]
    return (
        f", so {found['device_label'].iloc[0]} at least {ratio:,.3g}x cheaper per output token "
        "at the bounds"
    )


def _search_status(row: pd.Series, engine: bool = False) -> str:
    """'cpu:16t no_rate down to 1.62 requests/s': a search's status, and for no_rate its floor;
    with `engine`, the device's engine after it ('cuda torch_static not_confirmed')."""
    floor = pd.to_numeric(row.get("no_rate_down_to_qps"), errors="coerce")
    down_to = f" down to {floor:,.3g} requests/s" if pd.notna(floor) else ""
    who = f"{row['device_label']} {row['generator']}" if engine else row["device_label"]
    return f"{who} {row['serving_status']}{down_to}"


def results_block(repo: Path) -> tuple[str, list[tuple[Path, Path]]]:
    """The block's Markdown and the verdict chart to draw (the answer study's tables, PNG)."""
    prices = load_prices(repo / "config" / "prices.yaml")
    lines = [
        BEGIN,
        "<!-- made by scripts/readme_results.py from results/published/*/tables; "
        "edit the script, not this block -->",
    ]
    charts = []
    chosen = answer_study(repo)
    if chosen is None:
        lines += ["No published study has a CPU/GPU pair yet: there is no answer to show.", ""]
    others = [
        f
        for f in sorted((repo / "results" / "published").iterdir())
        if (f / "tables" / "cells.csv").exists() and f != chosen
    ]
    if chosen is not None:
        elsewhere = measured_elsewhere(repo, [f.relative_to(repo) for f in others], prices)
        part, _ = study_answer(repo, chosen.relative_to(repo), prices, elsewhere)
        lines += part
        charts.append((chosen / "tables", chosen / "report" / "verdict.png"))
    if others:
        lines += ["Other published studies:", ""]
        lines += [study_line(repo, f.relative_to(repo), prices) for f in others]
        lines.append("")
    lines.append(END)
    return "\n".join(lines), charts


def replace_block(readme: str, block: str) -> str:
    """The README with its results block replaced (markers included)."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README has no {BEGIN} ... {END} block")
    head, rest = readme.split(BEGIN, 1)
    return head + block + rest.split(END, 1)[1]
