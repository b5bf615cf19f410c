"""The answer by workload class: per class a verdict, its range and its main caveat, computed
from the verdict rows (tables/best.csv, pick = cheapest) and the cells they name.

The five classes are what a buyer asks about. A class with no measurement says so ("not
measured: ...") rather than borrowing a figure from another class: closed-loop serving is not
serving at a latency bound, and no LLM figure is made up before a generate cell has run.

Columns that newer aggregates add are read when present and ignored when absent:
`cost_ratio_low`/`cost_ratio_high` (the ratio over the repetitions' spread), `confidence`, a
latency bound on serve rows, and quality notes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from devicebench.aggregate.serving_best import PREDATES_NOTE
from devicebench.report.verdict import too_close, verdict_rows
from devicebench.report.words import integer, missing, plural, span
from devicebench.scenarios import modes

BOUND_COLUMNS = ("p99_bound_ms", "latency_bound_ms", "slo_p99_ms", "bound_ms")
BOUND_WORDS = re.compile(r"(^|_)(slo|bound_ms|p99_bound|max_valid_qps)")
BUSY = 50.0  # a GPU pick under this mean utilisation (%) left most of the GPU idle


def is_transformer(task: str) -> bool:
    """Whether a workload's models are the transformer-scale ones (built by the transformers
    backend, loadable pretrained), by its registry entry; an unknown name is not."""
    from devicebench import workloads

    try:
        return workloads.get(task).pretrained_class is not None
    except KeyError:
        return False


def has_bound(row: pd.Series) -> bool:
    """Whether a serve row was judged at a latency bound: a bound or a highest valid rate
    under one, in any column the serving aggregate names so (best.csv: p99_bound_ms)."""
    columns = [c for c in row.index if c in BOUND_COLUMNS or BOUND_WORDS.search(str(c))]
    return any(not missing(row.get(c)) for c in columns)


def _mode(row: pd.Series) -> str:
    return str(row["mode"])


@dataclass(frozen=True)
class WorkloadClass:
    """One line of the answer: which verdict rows it holds and what it says without any."""

    key: str
    title: str
    holds: Callable[[pd.Series], bool]
    unmeasured: str  # why there is no row, when there is none and nothing more specific


CLASSES = (
    WorkloadClass(
        "train_transformers",
        "Training transformers",
        lambda r: _mode(r) in modes(trains=True) and is_transformer(str(r["task"])),
        "no transformer training cell in this study",
    ),
    WorkloadClass(
        "train_small",
        "Training small models",
        lambda r: _mode(r) in modes(trains=True) and not is_transformer(str(r["task"])),
        "no small-model training cell in this study",
    ),
    WorkloadClass(
        "batch_inference",
        "Batch inference",
        lambda r: _mode(r) in modes(scores=True, serves=False),
        "no inference cell in this study",
    ),
    WorkloadClass(
        "serving_bound",
        "Serving at a latency bound",
        lambda r: _mode(r) in modes(serves=True) and has_bound(r),
        "no serve cell in this study",
    ),
    WorkloadClass(
        "llm_generation",
        "LLM generation",
        lambda r: _mode(r) in modes(generates=True) or "llm" in str(r["task"]),
        "no language-model generation cell has run yet",
    ),
)


@dataclass
class ClassAnswer:
    """A class's line: verdict, range and caveats (the first is the main one)."""

    key: str
    title: str
    rows: pd.DataFrame
    verdict: str
    range: str
    caveats: list[str] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return not self.verdict.startswith("not measured")

    @property
    def caveat(self) -> str:
        return self.caveats[0] if self.caveats else "—"


def call(row: pd.Series) -> str:
    """'gpu', 'cpu' or 'close' for one paired verdict row, by the one rule every view uses
    (noise.confidence via verdict.too_close: a range crossing even, or a ratio within the
    lease-to-lease variance, is too close to call)."""
    if too_close(row):
        return "close"
    return "gpu" if float(row["cost_ratio"]) > 1 else "cpu"


def ratio_span(rows: pd.DataFrame) -> tuple[float, float]:
    """The lowest and highest CPU-over-GPU cost ratio of `rows`, over each row's repetition
    range where the aggregate gives one."""
    low = rows["cost_ratio"].astype(float)
    high = low
    if "cost_ratio_low" in rows:
        low = pd.to_numeric(rows["cost_ratio_low"]).fillna(low)
    if "cost_ratio_high" in rows:
        high = pd.to_numeric(rows["cost_ratio_high"]).fillna(high)
    return float(low.min()), float(high.max())


def verdict_words(rows: pd.DataFrame) -> str:
    """'GPU cheaper in all 10', 'GPU cheaper in 15 of 18, CPU in 2 (a, b), 1 too close to call
    (c)': the minority calls name their rows."""
    called = rows.apply(call, axis=1)
    calls = called.value_counts()
    n, gpu, cpu = len(rows), int(calls.get("gpu", 0)), int(calls.get("cpu", 0))
    labels = rows["label"] if "label" in rows else rows["task"].astype(str)

    def named(which: str) -> str:  # the rows a minority call holds, so each row can be found
        return f" ({listed(labels[called.eq(which)])})"

    close = int(calls.get("close", 0))
    for side, count in (("GPU", gpu), ("CPU", cpu)):
        if count == n:
            return f"{side} cheaper" + (f" in all {n}" if n > 1 else "")
    if close == n:
        return "too close to call" + (f" in all {n}" if n > 1 else "")
    lead_side, lead_n, other, other_n = (
        ("GPU", gpu, "CPU", cpu) if gpu >= cpu else ("CPU", cpu, "GPU", gpu)
    )
    parts = [f"{lead_side} cheaper in {lead_n} of {n}"]
    if other_n:
        parts.append(f"{other} in {other_n}{named(other.lower())}")
    if close:
        parts.append(f"{close} too close to call{named('close')}")
    return ", ".join(parts)


def range_words(rows: pd.DataFrame) -> str:
    """'GPU 5.4x to 87x cheaper', 'CPU 1.7x to GPU 17x cheaper', 'GPU 2.2x cheaper'."""
    return f"{span(*ratio_span(rows))} cheaper"


def _cell(cells: dict[str, dict[str, Any]], cell_id: Any) -> dict[str, Any]:
    return cells.get(str(cell_id), {}) if not missing(cell_id) else {}


def caveats(rows: pd.DataFrame, cells: dict[str, dict[str, Any]]) -> list[str]:
    """What a reader should know before trusting the class's verdict, most important first;
    each computed from the rows and their cells."""
    out: list[str] = []
    n = len(rows)
    quality = [c for c in rows.columns if "quality" in c]
    notes = [str(v) for c in quality for v in rows[c] if not missing(v)]
    if notes:
        common = pd.Series(notes).value_counts()
        out.append(f"{common.index[0]} ({common.iloc[0]} of {n})")
    wins = rows[rows.apply(call, axis=1).eq("cpu")]
    few = []
    for _, row in wins.iterrows():
        cpu = _cell(cells, row["cpu_cell"])
        threads, cores = integer(cpu.get("threads")), integer(cpu.get("cpu_cores"))
        if threads and cores and threads < cores:
            few.append((str(row["label"]), threads, cores))
    if few:
        labels = ", ".join(label for label, _, _ in few)
        threads, cores = few[0][1], few[0][2]
        out.append(
            f"the CPU's cheapest pick ({labels}) ran {plural(threads, 'thread')} of a "
            f"{cores}-core host, so its price rests on how the host's cores are shared"
        )
    util = [_cell(cells, c).get("gpu_util_mean") for c in rows["gpu_cell"]]
    idle = [u for u in util if not missing(u) and float(u) < BUSY]
    if idle:
        out.append(f"the GPU pick ran under {BUSY:.0f} % busy in {len(idle)} of {n}")
    noisy = sum(
        bool(_cell(cells, row[f"{side}_cell"]).get("noisy") is True)
        for _, row in rows.iterrows()
        for side in ("cpu", "gpu")
    )
    if noisy:
        out.append(f"{noisy} of the {2 * n} picked cells are noisy (repetitions vary)")
    batches = {
        side: sorted(
            {b for c in rows[f"{side}_cell"] if (b := integer(_cell(cells, c).get("batch_size")))}
        )
        for side in ("cpu", "gpu")
    }
    if batches["cpu"] and batches["gpu"] and max(batches["cpu"]) < min(batches["gpu"]):
        cpu_b = "/".join(str(b) for b in batches["cpu"])
        gpu_b = "/".join(str(b) for b in batches["gpu"])
        out.append(f"CPU picks ran at batch {cpu_b} only, GPU picks at {gpu_b}")
    if wins.empty:  # the GPU leads: what favours it comes first, an idle GPU last
        out.sort(key=lambda c: c.startswith("the GPU pick ran under"))
    return out


def one_side(rows: pd.DataFrame) -> str:
    """Why rows without a pair are no verdict: which device had no ok cell, or, where both
    served at a latency bound and neither rate was confirmed, the rows' own account of it."""
    has = {s: rows[f"{s}_samples_per_s"].notna().any() for s in ("cpu", "gpu")}
    ran = [s.upper() for s, yes in has.items() if yes]
    notes = rows.get("note", pd.Series(dtype=object)).dropna().astype(str)
    judged = [note for note in dict.fromkeys(notes) if note.startswith("judged at")]
    if not ran and judged:
        return f"not measured: {'; '.join(judged)}"
    what = f"only the {ran[0]} ran" if len(ran) == 1 else "no workload ran on both devices"
    return f"not measured: {what} ({listed(rows['label'])})"


def _unsearched(rows: pd.DataFrame) -> str:
    """Why serve rows whose cells never ran the latency-bound search are no verdict ("" else)."""
    notes = rows.get("note", pd.Series(dtype=object)).astype(str)
    if rows.empty or not notes.eq(PREDATES_NOTE).all():
        return ""
    models = rows.drop_duplicates("label")["label"]
    return (
        f"not measured: no serve cell ran the latency-bound search ({listed(models)} ran a "
        "closed-loop client only)"
    )


def listed(labels: pd.Series, most: int = 3) -> str:
    """'a, b, c and 4 more': a list short enough for one line of the answer."""
    names = [str(n) for n in labels]
    shown = ", ".join(names[:most])
    return f"{shown} and {len(names) - most} more" if len(names) > most else shown


def _closed_loop(rows: pd.DataFrame, serving: pd.DataFrame) -> str:
    """Why closed-loop serve rows are not an answer for serving at a bound, with their p99."""
    text = f"not measured: the {plural(len(rows), 'serve comparison')} ran a closed-loop client"
    picked = {str(c) for side in ("cpu", "gpu") for c in rows[f"{side}_cell"].dropna()}
    if not serving.empty and "cell_id" in serving:
        mine = serving[serving["cell_id"].astype(str).isin(picked)]
        p99 = pd.to_numeric(mine.get("p99_ms", pd.Series(dtype=float))).dropna()
        if not p99.empty:
            return f"{text} pool (p99 {p99.min():,.0f}-{p99.max():,.0f} ms) with no latency bound"
    return f"{text} pool with no latency bound"


def answer(
    best: pd.DataFrame | None, cells: pd.DataFrame, serving: pd.DataFrame | None = None
) -> list[ClassAnswer]:
    """The five lines of the answer, in CLASSES order."""
    if best is None:  # tables from before best.csv: nothing is paired, whatever ran
        why = "not measured: these tables have no verdict table (tables/best.csv)"
        return [ClassAnswer(k.key, k.title, pd.DataFrame(), why, "—") for k in CLASSES]
    rows = verdict_rows(best)
    by_id = {str(c["cell_id"]): c for c in cells.to_dict("records")} if "cell_id" in cells else {}
    serving = serving if serving is not None else pd.DataFrame()
    out = []
    for kind in CLASSES:
        mine = rows[rows.apply(kind.holds, axis=1)] if not rows.empty else rows
        paired = mine[mine["cost_ratio"].notna()] if not mine.empty else mine
        if paired.empty:
            why = kind.unmeasured
            if not mine.empty:
                why = _unsearched(mine) or one_side(mine)
            elif kind.key == "serving_bound" and not rows.empty:
                serve = rows[rows["mode"].astype(str).isin(modes(serves=True))]
                paired_serve = serve[serve["cost_ratio"].notna()]
                if not paired_serve.empty:
                    why = _closed_loop(paired_serve, serving)
                elif not serve.empty:
                    why = _unsearched(serve) or one_side(serve)
            verdict = why if why.startswith("not measured") else f"not measured: {why}"
            out.append(ClassAnswer(kind.key, kind.title, mine, verdict, "—"))
            continue
        unpaired = mine[mine["cost_ratio"].isna()]
        notes = caveats(paired, by_id)
        if not unpaired.empty:  # the main caveat: the verdict counts the paired rows alone
            notes.insert(0, f"no pair for {', '.join(_unpaired_names(unpaired, paired))}")
        out.append(
            ClassAnswer(
                kind.key,
                kind.title,
                paired,
                verdict_words(paired),
                range_words(paired),
                notes,
            )
        )
    return out


def row_ranges(rows: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Each verdict row's cost-ratio range: the aggregate's (repetitions' min to max) where
    best.csv has it, else from each side's interquartile spread of repetition times (a cost is
    proportional to the time of equal work), else the point itself. Adds `low`, `high` and
    `spread` (what the range is)."""
    out = rows.copy()
    ratio_ = out["cost_ratio"].astype(float)
    if {"cost_ratio_low", "cost_ratio_high"} <= set(out.columns):
        out["low"] = pd.to_numeric(out["cost_ratio_low"]).fillna(ratio_)
        out["high"] = pd.to_numeric(out["cost_ratio_high"]).fillna(ratio_)
        out["spread"] = "repetitions' min to max"
        return out
    spread = {}
    if {"cell_id", "iqr_s", "median_s"} <= set(cells.columns):
        rel = pd.to_numeric(cells["iqr_s"]) / pd.to_numeric(cells["median_s"])
        spread = dict(zip(cells["cell_id"].astype(str), rel.fillna(0.0), strict=True))
    cpu = out["cpu_cell"].astype(str).map(spread).astype(float).fillna(0.0) / 2
    gpu = out["gpu_cell"].astype(str).map(spread).astype(float).fillna(0.0) / 2
    out["low"] = ratio_ * (1 - cpu) / (1 + gpu)
    out["high"] = ratio_ * (1 + cpu) / (1 - gpu).clip(lower=0.05)
    out["spread"] = "repetitions' interquartile range"
    return out


def _unpaired_names(unpaired: pd.DataFrame, paired: pd.DataFrame) -> list[str]:
    """The unpaired rows' labels, each workload once: its machine and code (the label's
    "[code boot]") only where the same workload also has a pair, which the reader must tell
    apart from it."""
    judged = set(paired["workload"])
    pairs = zip(unpaired["label"], unpaired["workload"], strict=True)
    return list(dict.fromkeys(label if name in judged else name for label, name in pairs))
