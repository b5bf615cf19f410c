"""The per-workload finding, in words, from one best.csv row: the write-up and the README reuse
these sentences, so the table, the page and the README say the same thing.

A sentence names the cheaper device and by how much (with the range over the repetitions), or
"too close to call"; the best-against-best speedup; the CPU instance shape priced; a GPU pick
under 50 % utilisation; "quality unverified"; and two machines where the row crosses them.
"""

from __future__ import annotations

import math
from typing import Any

from devicebench.aggregate import noise

# What a mode's cost ratio is per, and what its range spans (other modes: per sample, over
# the repetitions).
MODE_WORDS = {
    "converge": ("to the target", "its runs"),
    "serve": ("per request", "confirming runs"),
    "generate": ("per request", "repetitions"),  # one request: its prompt and output tokens
}
OUTRANKED = "not each device at its best"  # a pair whose device ran a lesser pick


def label(row: dict[str, Any]) -> str:
    """'task mode' and the model and work where the row names them: 'textgen_llm generate
    (llama-1b, prompt_len 1024, output_len 128)'."""
    named = ", ".join(part for part in (_text(row.get("model")), _text(row.get("work"))) if part)
    return f"{row.get('task')} {row.get('mode')}" + (f" ({named})" if named else "")


def times(value: Any) -> str:
    """A ratio to three significant digits: '9.31x', '54.8x', '448x'."""
    number = _float(value)
    if math.isnan(number):
        return "—"
    return f"{number:.3g}x" if number < 1000 else f"{number:,.0f}x"


def lead(row: dict[str, Any]) -> str:
    """Which device is cheaper and by how much, or 'too close to call', with the range."""
    ratio = _float(row.get("cost_ratio"))
    if math.isnan(ratio):
        return "no verdict"
    per, over = MODE_WORDS.get(str(row.get("mode")), ("per sample", "repetitions"))
    low, high = _float(row.get("cost_ratio_low")), _float(row.get("cost_ratio_high"))
    if ratio >= 1:
        side, by, span = "GPU", ratio, (low, high)
    else:
        side, by, span = "CPU", 1 / ratio, (1 / high, 1 / low)
    shown = "" if math.isnan(span[0]) else f", {times(span[0])}-{times(span[1])} over {over}"
    if row.get("confidence") == noise.TOO_CLOSE:
        return f"too close to call ({side} {times(by)} cheaper {per}{shown})"
    return f"the {side} is {times(by)} cheaper {per}{shown}"


def finding(row: dict[str, Any]) -> str:
    """One sentence for one verdict row (see the module docstring for what it says)."""
    head = f"{label(row)}: {lead(row)}"
    if math.isnan(_float(row.get("cost_ratio"))):
        note = _text(row.get("note"))
        return f"{head}" + (f" ({note})." if note else ".")
    parts = [head]
    speedup = _float(row.get("speedup"))
    if not math.isnan(speedup):
        faster = (
            f"the GPU {times(speedup)} faster"
            if speedup >= 1
            else (f"the CPU {times(1 / speedup)} faster")
        )
        parts.append(f"{faster}, fastest against fastest")
    shape = _text(row.get("cpu_priced_as"))
    if shape:
        parts.append(f"CPU priced as {shape}")
    util = noise.utilisation_note(row.get("gpu_util_mean"))
    if util:
        parts.append(util)
    if _text(row.get("quality")):
        parts.append(_text(row.get("quality")))
    if row.get("outranked") is True:  # aggregate.outranked's note says where the better pick ran
        note = _text(row.get("note"))
        parts.append(note[note.find(OUTRANKED) :] if OUTRANKED in note else OUTRANKED)
    if row.get("crosses_machines") is True:
        parts.append(
            f"crosses machines (CPU on {row.get('cpu_machine')}, GPU on {row.get('gpu_machine')})"
        )
    return "; ".join(parts) + "."


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return "" if str(value) in ("nan", "<NA>") else str(value)


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
