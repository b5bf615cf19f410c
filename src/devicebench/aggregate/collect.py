"""Collect cell records into one tidy table: one row per record, failures kept.

Every later table and chart starts from this frame, so it is the one place that knows the
record layout (see `devicebench.record`). Missing keys become NaN rather than errors: a failed
cell writes a sparse record, and its row must still appear.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from devicebench.aggregate import energy
from devicebench.aggregate.records import duplicates, read_record
from devicebench.aggregate.serving_best import SLO_CELL_COLUMNS, slo_columns
from devicebench.aggregate.values import format_value, number_or_none
from devicebench.aggregate.values import is_missing as _missing
from devicebench.measure.flop_formulas import needs_recount
from devicebench.record import code_version_of
from devicebench.scenarios import modes

AXES = ("task", "model", "framework", "device", "threads", "precision", "batch_size", "mode")
# Column groups, in the order cells.csv shows them (extra axes go after device_label).
LEAD_COLUMNS = [*AXES, *"status message median_s samples_per_s accuracy f1_macro f1_micro".split()]
TAIL_COLUMNS = """
    iqr_s cov noisy first_call_s n_repetitions passes window_s p50_ms p90_ms p99_ms loss
    peak_host_mb peak_device_mb synthetic dataset source cpu_model gpu_name torch_version hostname
    slurm_job_id boot_id seed config_hash code_version timed_start timed_end cell_id
""".split()
# Utilization (sampled during the timed section) and model FLOPs, from the record.
USAGE_COLUMNS = """
    cpu_util_mean cpu_util_peak gpu_util_mean gpu_util_peak gpu_mem_peak_mb gpu_power_mean_w
    flops_per_sample
""".split()
# Useful context beyond the required columns; kept at the very end.
CONTEXT_COLUMNS = """
    train_samples test_samples cpu_cores gpu_driver cuda cudnn python created record_path
    perplexity precision_micro recall_micro threads_requested precision_math
    agreement_fp32 quality_below_reference agreement_note model_weights min_s max_s train_steps
    quality_not_measured quality_unverified
""".split()
CONTEXT_COLUMNS += SLO_CELL_COLUMNS  # serve cells' verdict at the p99 bound (serving_best)
# Columns the derived tables add; known so they are never mistaken for extra axes.
DERIVED_COLUMNS = """
    base_label base_status base_median_s base_samples_per_s base_cell_id speedup note
    accuracy_spread quality_na quality_check
""".split()
# Columns the analysis stage adds (cost from prices, FLOP/s against peaks, agreement).
ANALYSIS_COLUMNS = """
    price_per_hour cost_usd samples_per_usd relative_time relative_cost target_accuracy
    cost_to_target_usd achieved_tflops peak_tflops mfu peak_source base_cost_usd
    accuracy_agrees accuracy_tolerance priced_as machine
""".split()
KNOWN_COLUMNS = frozenset(
    [
        *LEAD_COLUMNS,
        "device_label",
        *TAIL_COLUMNS,
        *USAGE_COLUMNS,
        *energy.ENERGY_COLUMNS,
        *CONTEXT_COLUMNS,
        *DERIVED_COLUMNS,
        *ANALYSIS_COLUMNS,
    ]
)
# Measured numbers are meaningless for a cell that did not finish, so they are blanked there.
MEASURED_COLUMNS = tuple(
    """
    median_s samples_per_s accuracy f1_macro f1_micro iqr_s cov noisy n_repetitions passes
    window_s p50_ms p90_ms p99_ms loss perplexity precision_micro recall_micro
    cpu_util_mean cpu_util_peak gpu_util_mean gpu_util_peak gpu_mem_peak_mb gpu_power_mean_w
    """.split()
)
NOT_FLOAT = "peak_source accuracy_agrees priced_as machine".split()
INT_COLUMNS = tuple(
    "threads batch_size n_repetitions passes seed train_samples test_samples cpu_cores".split()
    + ["train_steps"]
    + list(energy.INTS)
)
FLOAT_COLUMNS = (
    *(c for c in MEASURED_COLUMNS if c not in ("noisy", "n_repetitions", "passes")),
    *"first_call_s peak_host_mb peak_device_mb timed_start timed_end min_s max_s".split(),
    *"base_median_s base_samples_per_s speedup accuracy_spread flops_per_sample".split(),
    *(c for c in ANALYSIS_COLUMNS if c not in NOT_FLOAT),
    *energy.FLOATS,
)
BOOL_COLUMNS = ("noisy", "synthetic", "accuracy_agrees", "converged", "quality_below_reference")
STR_COLUMNS = tuple(
    """
    task model framework device precision mode status message device_label dataset source
    cpu_model gpu_name torch_version hostname slurm_job_id boot_id config_hash code_version cell_id
    base_label base_status base_cell_id note peak_source precision_math priced_as quality_na
    quality_check agreement_note model_weights machine quality_not_measured
    """.split()
    + list(energy.STRINGS)
)


def device_label(device: Any, threads: Any) -> str:
    """Name a device so CPU thread counts stay apart: "cpu:16t", but plain "cuda"."""
    name = "" if _missing(device) else str(device)
    if name == "cpu" and not _missing(threads):
        count = number_or_none(threads)  # None: an unresolved count ("all"), said as it is
        return f"cpu:{threads}" if count is None else f"cpu:{int(count)}t"
    return name


def extra_axis_columns(df: pd.DataFrame) -> list[str]:
    """The config's extra axes (e.g. lstm_kernel): every column this module does not define."""
    return [c for c in df.columns if c not in KNOWN_COLUMNS and not c.startswith("_")]


def collect_records(paths: Iterable[Path]) -> pd.DataFrame:
    """Read every record into one tidy frame; unreadable files become `error` rows."""
    rows = [_row(Path(p)) for p in paths]
    for index, why in duplicates(rows).items():  # two records of one cell: neither is its number
        rows[index].update({key: np.nan for key in MEASURED_COLUMNS}, status="error", message=why)
    extras = sorted({k for row in rows for k in row if k not in KNOWN_COLUMNS})
    columns = [
        *LEAD_COLUMNS,
        "device_label",
        *extras,
        *TAIL_COLUMNS,
        *USAGE_COLUMNS,
        *energy.ENERGY_COLUMNS,
        *CONTEXT_COLUMNS,
    ]
    df = pd.DataFrame(rows, columns=columns)
    df = _coerce(df)
    if not df.empty:
        df = df.sort_values([*AXES, *extras, "cell_id"], na_position="last", kind="stable")
    return df.reset_index(drop=True)


def read_table(path: Path) -> pd.DataFrame:
    """Read a cells/speedup CSV back with the dtypes `collect_records` gave it."""
    header = pd.read_csv(path, nrows=0).columns
    dtypes = {c: "str" for c in STR_COLUMNS if c in header}
    df = pd.read_csv(path, dtype=dtypes)
    return _coerce(df)


def write_table(df: pd.DataFrame, stem: Path) -> list[Path]:
    """Write `stem.csv` (exact values) and `stem.md` (readable, 4 significant digits)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv_path = stem.with_name(stem.name + ".csv")
    md_path = stem.with_name(stem.name + ".md")
    df.to_csv(csv_path, index=False)
    md_path.write_text(markdown_table(df))
    return [csv_path, md_path]


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table; no tabulate dependency."""
    header = [_md_escape(str(c)) for c in df.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in df.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(_md_escape(format_value(v)) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _row(path: Path) -> dict[str, Any]:
    """Flatten one record into a row; a record that cannot be read is reported, not dropped."""
    record, wrong = read_record(path)
    if wrong:
        record = {
            "cell_id": str(path.with_suffix("")),
            "axes": _axes_from_path(path),
            "status": "error",
            "message": wrong,
        }
    axes = _section(record, "axes")
    timings = _section(record, "timings")
    latency = timings.get("latency_ms") if isinstance(timings.get("latency_ms"), Mapping) else {}
    data = _section(record, "data")
    env = _section(record, "environment")
    libraries = env.get("libraries") if isinstance(env.get("libraries"), Mapping) else {}
    provenance = _section(record, "provenance")
    repetitions = timings.get("repetitions_s")
    row: dict[str, Any] = {axis: _get(axes, axis) for axis in AXES}
    row.update({k: _get(axes, k) for k in axes if k not in AXES})
    status = _get(record, "status")
    row.update(
        status=status,
        message=_get(record, "message"),
        median_s=_get(timings, "median_s"),
        samples_per_s=_get(_section(record, "throughput"), "samples_per_s"),
        device_label=device_label(row["device"], row["threads"]),
        iqr_s=_get(timings, "iqr_s"),
        cov=_get(timings, "cov"),
        noisy=_get(timings, "noisy"),
        first_call_s=_get(timings, "first_call_s"),
        n_repetitions=len(repetitions) if isinstance(repetitions, list) else np.nan,
        passes=_median(timings.get("passes")),
        window_s=_median(timings.get("window_s")),
        p50_ms=_get(latency, "p50"),
        p90_ms=_get(latency, "p90"),
        p99_ms=_get(latency, "p99"),
        timed_start=_get(timings, "timed_start"),
        timed_end=_get(timings, "timed_end"),
        synthetic=_synthetic(data),
        torch_version=_get(libraries, "torch"),
        python=_get(env, "python"),
        cell_id=_get(record, "cell_id"),
        record_path=str(path),
    )
    if isinstance(row["threads"], str) and not row["threads"].isdigit():
        row["threads"] = np.nan  # unresolved ("all"): its label says so; no count to price
    for key in (
        *("accuracy", "f1_macro", "f1_micro", "loss", "perplexity"),
        *("precision_micro", "recall_micro"),  # entity-level (NER); absent elsewhere
        *("agreement_fp32", "quality_below_reference", "agreement_note"),  # reduced formats
    ):
        row[key] = _get(_section(record, "quality"), key)
    row["quality_not_measured"] = _get(_section(record, "quality"), "not_measured")  # speed only
    row.update(_generate_quality(_section(record, "quality")))
    for key in ("peak_host_mb", "peak_device_mb"):
        row[key] = _get(_section(record, "memory"), key)
    for key in ("dataset", "source", "train_samples", "test_samples"):
        row[key] = _get(data, key)
    for key in ("cpu_model", "gpu_name", "hostname", "slurm_job_id", "boot_id", "cpu_cores"):
        row[key] = _get(env, key)
    for key in ("gpu_driver", "cuda", "cudnn"):
        row[key] = _get(env, key)
    for key in ("seed", "config_hash", "created"):
        row[key] = _get(provenance, key)
    version = code_version_of(provenance)
    row["code_version"] = np.nan if version is None else version
    row["precision_math"] = _get(_section(record, "model"), "precision_math")
    row["model_weights"] = _get(_section(record, "model"), "weights")
    row.update(_spread_and_steps(timings, _section(provenance, "settings")))
    row.update(_usage(record, row))
    row.update(slo_columns(record))  # serve cells: the latency-bound verdict (serving_best)
    row.update(energy.energy_columns(record))
    if status != "ok":
        row.update({key: np.nan for key in MEASURED_COLUMNS})
    return row


def _spread_and_steps(timings: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The fastest and slowest repetition (a ratio's range comes from them) and the training
    steps a train cell took (accuracy is compared only between cells of equal steps)."""
    reps = timings.get("repetitions_s")
    reps = [float(r) for r in reps if _number(r)] if isinstance(reps, list) else []
    low = _get(timings, "min_s") if _number(timings.get("min_s")) else min(reps, default=np.nan)
    high = _get(timings, "max_s") if _number(timings.get("max_s")) else max(reps, default=np.nan)
    steps, epochs = settings.get("steps_per_epoch"), settings.get("epochs")
    total = steps * epochs if _number(steps) and _number(epochs) else np.nan
    return {"min_s": low, "max_s": high, "train_steps": total}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _generate_quality(quality: dict[str, Any]) -> dict[str, Any]:
    """A generate cell's greedy-token agreement with fp32 as the reduced-format check: below 99 %
    (or its perplexity up more than 2 %: `flagged`), it is never a device's best. A cell whose
    engine cannot score the chapter stays unchecked, and says why (`quality_unverified`)."""
    if quality.get("greedy_agreement") is None or "agreement_fp32" in quality:
        return {"quality_unverified": quality["unverified"]} if quality.get("unverified") else {}
    return {
        "agreement_fp32": quality["greedy_agreement"],
        "quality_below_reference": bool(quality.get("flagged")),
    }


def _median(values: Any) -> float:
    """The median of a record's per-repetition list (passes, windows); NaN when absent."""
    if isinstance(values, list) and values:
        return float(np.median(values))
    return np.nan


def _usage(record: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """Utilization summary and FLOPs per sample (counted now on the torch twin if absent, or if
    counted before the grouped-convolution fix and inflated by it: flop_formulas.needs_recount)."""
    utilization = _section(record, "utilization")
    summary = _section(utilization, "summary")
    out = {key: _get(summary, key) for key in USAGE_COLUMNS if key != "flops_per_sample"}
    mode = "train" if row.get("mode") in modes(trains=True) else "infer"  # the FLOPs counted
    model = _section(record, "model")
    flops = _get(model, f"flops_per_sample_{mode}")
    if (_missing(flops) or needs_recount(dict(model))) and record.get("status") == "ok":
        from devicebench.workloads import model_flops

        counted = model_flops(str(row.get("task")), str(row.get("model")), dict(row))
        flops = _get(counted, f"flops_per_sample_{mode}")
    out["flops_per_sample"] = flops
    return out


def _coerce(df: pd.DataFrame) -> pd.DataFrame:
    """Give columns stable dtypes: nullable ints, nullable bools, floats for measurements."""
    df = df.copy()
    for col in df.columns:
        if col in INT_COLUMNS:
            df[col] = pd.to_numeric(df[col], errors="coerce").round().astype("Int64")
        elif col in BOOL_COLUMNS:
            df[col] = df[col].map(_to_bool).astype("boolean")
        elif col in STR_COLUMNS:
            df[col] = df[col].map(lambda v: np.nan if _missing(v) else str(v)).astype("str")
        elif col in FLOAT_COLUMNS:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    return df


def _synthetic(data: Mapping[str, Any]) -> bool:
    """Synthetic if the record says so, or if its data source is the synthetic generator."""
    flag = _to_bool(data.get("synthetic"))
    if not _missing(flag):
        return bool(flag)
    return str(data.get("source", "")).lower() == "synthetic"


def _to_bool(value: Any) -> Any:
    if _missing(value):
        return np.nan
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no", ""):
            return False
        return np.nan
    return bool(value)


def _axes_from_path(path: Path) -> dict[str, Any]:
    """Recover axes from a path like task~x/.../mode~train.json when the record is unreadable."""
    axes: dict[str, Any] = {}
    for part in path.with_suffix("").parts:
        if "~" in part:
            key, _, value = part.partition("~")
            axes[key] = int(value) if value.isdigit() else value
    return axes


def _section(record: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = record.get(key)
    return value if isinstance(value, Mapping) else {}


def _get(mapping: Mapping[str, Any], key: str) -> Any:
    value = mapping.get(key)
    return np.nan if value is None else value


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
