"""The generation tables: one row per generate cell, and the best rows per model and device.

A row holds the token clock (TTFT, TPOT and ITL percentiles), tokens/s (prefill, decode,
output), the memory-bandwidth bound measured in the cell and the share of it reached, cost per
million output tokens (hourly price of the cell's device / 3,600 / output tokens/s x 10^6), per
million prompt tokens (the same at the prefill's tokens/s) and energy per million output
tokens; where the cell served the model (generation.serving), its goodput (the highest Poisson
rate meeting the p99 TTFT and TPOT bounds), the output tokens/s and cost per million tokens at
that rate, or the search's status and why without a rate. Quality is the real model's (greedy
agreement, perplexity, and why a format was left out); random-weight rows say "n/a: random
weights".

Best rows, per model, prompt/output lengths and device, among ok rows not flagged for quality:
the fastest batch-1 decode (a user waiting for one answer), the same in bf16 (where an integer
weight format won on one side, the pair of one format), and the cheapest million output tokens
(any batch), each with its share of the bandwidth bound; and, among cells that served their model,
the highest goodput (its tokens/s and cost per million tokens at that rate). A prefill-only pair
(one output token: 2048/1) has no decode to speak of: its rows are the fastest time to first
token at batch 1 and the cheapest million prompt tokens (priced at the prefill's own rate).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from devicebench.aggregate.analysis import price_per_hour
from devicebench.aggregate.collect import device_label
from devicebench.aggregate.pairing import record_pairing
from devicebench.aggregate.records import read_record
from devicebench.scenarios import modes

CLOCK = [
    "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "itl_p50_s", "itl_p99_s",
    "prefill_tokens_per_s", "decode_tokens_per_s", "output_tokens_per_s",
    "prompt_tokens", "output_tokens",
]  # fmt: skip
BOUND = [
    "memory_bandwidth_gbs", "bandwidth_method", "bandwidth_bound_tokens_per_s",
    "bandwidth_fraction", "weight_bytes", "kv_cache_bytes",
]  # fmt: skip
GOODPUT = [
    "serving_status", "serving_message", "no_rate_down_to_qps",
    "no_rate_least_cost_per_million_tokens_usd", "goodput_qps",
    "goodput_ttft_p99_s", "goodput_tpot_p99_s",
    "goodput_tokens_per_s", "goodput_cost_per_million_tokens_usd", "goodput_queries",
    "goodput_early_stopping_met",
]  # fmt: skip
GENERATION_COLUMNS = [
    "task", "model", "device_label", "generator", "engine", "precision", "batch_size", "prompt_len",
    "output_len", "status", "message", *CLOCK, *BOUND, "peak_host_mb", "peak_device_mb",
    "joules_per_output_token", "kwh_per_million_tokens", "price_per_hour",
    "cost_per_million_tokens_usd", "cost_per_million_prompt_tokens_usd", *GOODPUT, "quality",
    "greedy_agreement", "perplexity", "perplexity_fp32", "quality_flag", "weights", "cell_id",
    "boot_id", "code_version",
]  # fmt: skip
KEYS = ["model", "prompt_len", "output_len", "device_label"]
BEST_COLUMNS = [
    "criterion", *KEYS, "generator", "precision", "batch_size", "decode_tokens_per_s",
    "output_tokens_per_s", "ttft_p50_s", "ttft_p99_s", "tpot_p99_s", "bandwidth_fraction",
    "cost_per_million_tokens_usd", "prefill_tokens_per_s", "cost_per_million_prompt_tokens_usd",
    "kwh_per_million_tokens", "goodput_qps",
    "goodput_tokens_per_s", "goodput_cost_per_million_tokens_usd", "quality", "cell_id",
]  # fmt: skip
JOULES_PER_KWH = 3.6e6


def _unverified_or_ok(quality: dict[str, Any]) -> str:
    return f"quality unverified: {quality['unverified']}" if quality.get("unverified") else "ok"


def _quality(quality: dict[str, Any]) -> dict[str, Any]:
    if "status" in quality:  # random weights: no figure means anything
        return {"quality": quality["status"]}
    return {
        "quality": "flagged" if quality.get("flagged") else _unverified_or_ok(quality),
        "greedy_agreement": quality.get("greedy_agreement"),
        "perplexity": quality.get("perplexity"),
        "perplexity_fp32": quality.get("perplexity_fp32"),
        "quality_flag": quality.get("flagged"),
    }


def _row(record: dict[str, Any], prices: dict[str, Any]) -> dict[str, Any]:
    axes = record.get("axes") or {}
    gen = record.get("generation") or {}
    memory = record.get("memory") or {}
    env = record.get("environment") or {}
    price = price_per_hour(axes.get("device"), axes.get("threads"), env.get("gpu_name"), prices)
    row = {key: axes.get(key) for key in GENERATION_COLUMNS if key in axes}
    row |= {key: gen.get(key) for key in (*CLOCK, *BOUND, "engine", "joules_per_output_token")}
    row |= {
        "device_label": device_label(axes.get("device"), axes.get("threads")),
        "status": record.get("status"),
        "message": record.get("message"),
        "peak_host_mb": memory.get("peak_host_mb"),
        "peak_device_mb": memory.get("peak_device_mb"),
        "price_per_hour": price,
        "weights": (record.get("model") or {}).get("weights"),
        "cell_id": record.get("cell_id"),
        **_quality(record.get("quality") or {}),
        **record_pairing(record),
    }
    rate, joules = gen.get("output_tokens_per_s"), gen.get("joules_per_output_token")
    if rate and not math.isnan(price):
        row["cost_per_million_tokens_usd"] = price / 3600 / rate * 1e6
    prefill = gen.get("prefill_tokens_per_s")
    if prefill and not math.isnan(price):
        row["cost_per_million_prompt_tokens_usd"] = price / 3600 / prefill * 1e6
    if joules:
        row["kwh_per_million_tokens"] = joules * 1e6 / JOULES_PER_KWH
    return row | _goodput(gen.get("serving"), price, axes.get("output_len"))


def one_line(message: str | None) -> str | None:
    """A table cell's message: a server's failure carries its log's last lines (kept whole in the
    record), of which the first line and the last, the error, say what happened."""
    lines = [line.strip() for line in (message or "").splitlines() if line.strip()]
    if len(lines) <= 2:
        return " ".join(lines) if lines else message
    return f"{lines[0]} ... {lines[-1]}"


def _goodput(serving: dict[str, Any] | None, price: float, tokens: Any) -> dict[str, Any]:
    """The goodput columns of a cell that served its model (none: the cell did not)."""
    if not serving:
        return {}
    rate = serving.get("output_tokens_per_s") if serving.get("goodput_qps") else None
    # no_rate: every rate tried failed, the lowest this one (the search's floor, not zero); a
    # rate that meets the bounds lies under it, so its million tokens cost more than `least`
    floor = _lowest_tried(serving) if serving.get("status") == "no_rate" else None
    least = None
    if floor and tokens and not math.isnan(price):
        least = price / 3600 / (floor * float(tokens)) * 1e6
    return {
        "serving_status": serving.get("status"),
        "serving_message": one_line(serving.get("message")),
        "no_rate_down_to_qps": floor,
        "no_rate_least_cost_per_million_tokens_usd": least,
        "goodput_qps": serving.get("goodput_qps"),
        "goodput_ttft_p99_s": serving.get("ttft_p99_s"),
        "goodput_tpot_p99_s": serving.get("tpot_p99_s"),
        "goodput_tokens_per_s": rate,
        "goodput_cost_per_million_tokens_usd": price / 3600 / rate * 1e6
        if rate and not math.isnan(price)
        else None,
        # the confirming runs' fewest queries: under 459, LoadGen's early-stopping estimate was
        # not met and the rate rests on the p99 of those queries alone (no rate: none)
        "goodput_queries": min(confirmed) if (confirmed := _confirmed_queries(serving)) else None,
        "goodput_early_stopping_met": serving.get("early_stopping_met") if confirmed else None,
    }


def _lowest_tried(serving: dict[str, Any]) -> float | None:
    """The lowest rate the search's probes and confirming runs offered."""
    runs = [*(serving.get("probes") or []), *(serving.get("confirms") or [])]
    return min((run["target_qps"] for run in runs if run.get("target_qps")), default=None)


def _confirmed_queries(serving: dict[str, Any]) -> list[int]:
    """The queries of the runs that confirmed the goodput (none without a goodput)."""
    return [q for q in serving.get("queries") or [] if q] if serving.get("goodput_qps") else []


def generation_table(paths: list[Path], prices: dict[str, Any]) -> pd.DataFrame:
    """One row per generate record (ok or not) among `paths`."""
    rows = []
    for path in paths:
        record, wrong = read_record(path)
        if wrong:
            continue  # the cells table (not_ok) reports it, with the reason
        if (record.get("axes") or {}).get("mode") in modes(generates=True):
            rows.append(_row(record, prices))
    df = pd.DataFrame(rows, columns=GENERATION_COLUMNS)
    order = [*KEYS, "generator", "precision", "batch_size"]
    return df.sort_values(order, kind="stable").reset_index(drop=True)


# The best rows of a group: (criterion, column, highest wins, batch 1 only, precision only)
DECODE_BEST = (
    ("fastest batch-1 decode", "decode_tokens_per_s", True, True, None),
    # the same format on both devices: an integer-weight pick above has no twin on the other side
    ("fastest batch-1 decode in bf16", "decode_tokens_per_s", True, True, "bf16"),
    ("cheapest per million output tokens", "cost_per_million_tokens_usd", False, False, None),
    ("highest goodput at the token bounds", "goodput_qps", True, False, None),  # cells that served
)
PREFILL_BEST = (  # one output token: no decode to speak of
    ("fastest time to first token", "ttft_p50_s", False, True, None),
    (
        "cheapest per million prompt tokens",
        "cost_per_million_prompt_tokens_usd",
        False,
        False,
        None,
    ),
)
PREFILL_CRITERIA = tuple(criterion for criterion, *_ in PREFILL_BEST)


def generation_best(table: pd.DataFrame) -> pd.DataFrame:
    """The fastest batch-1 decode and the cheapest million output tokens per model, lengths and
    device, among ok rows whose quality is not flagged (a prefill-only pair: the fastest first
    token and the cheapest million prompt tokens)."""
    ok = table[table["status"].eq("ok") & ~table["quality"].eq("flagged")]
    rows = []
    for _, group in ok.groupby(KEYS, dropna=False, sort=True):
        prefill = pd.to_numeric(group["output_len"], errors="coerce").eq(1).all()
        for criterion, column, highest, batch_one, precision in (
            PREFILL_BEST if prefill else DECODE_BEST
        ):
            values = pd.to_numeric(group[column], errors="coerce")
            values = values[group["batch_size"].eq(1)] if batch_one else values
            values = values[group["precision"].eq(precision)] if precision else values
            values = values.dropna()
            if not values.empty:
                best = group.loc[values.idxmax() if highest else values.idxmin()]
                rows.append({"criterion": criterion, **best.to_dict()})
    return pd.DataFrame(rows, columns=BEST_COLUMNS)
