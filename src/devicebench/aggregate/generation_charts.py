"""The generation chart: output tokens/s against batch, a line per model, device, generator and
format, with each line's memory-bandwidth bound drawn dashed beside it."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from devicebench.aggregate.charts import _empty, log_if_wide

# every line named: Vega drops a legend's entries past its symbol limit (with a warning), and a
# study of two models' engines, formats and works draws more lines than that
LEGEND = alt.Legend(labelLimit=0, titleLimit=0, symbolLimit=0)
SERIES = ["model", "device_label", "generator", "precision", "prompt_len", "output_len"]


def tokens_vs_batch(generation: pd.DataFrame) -> alt.TopLevelMixin:
    """Decode tokens/s against batch; dashed: the bandwidth bound at that batch."""
    title = "LLM decode tokens/s vs batch (dashed: the memory-bandwidth bound)"
    ok = generation[generation["status"].astype(str).eq("ok")] if not generation.empty else None
    if ok is None or ok.empty:
        return _empty(title, ["no ok generate cells"])
    df = ok.copy()
    df["series"] = df[SERIES].astype(str).agg(" · ".join, axis=1)
    measured = df.assign(kind="measured", tokens_per_s=df["decode_tokens_per_s"])
    bound = df.assign(kind="bound", tokens_per_s=df["bandwidth_bound_tokens_per_s"])
    both = pd.concat([measured, bound])[["series", "batch_size", "kind", "tokens_per_s"]]
    both = both[both["tokens_per_s"].notna()]
    data = alt.Data(values=json.loads(both.to_json(orient="records")))
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "batch_size:Q", title="batch (concurrent requests)", scale=alt.Scale(type="log")
            ),
            y=alt.Y(
                "tokens_per_s:Q", title="decode tokens/s", scale=log_if_wide(both["tokens_per_s"])
            ),
            color=alt.Color(
                "series:N",
                title=" · ".join(SERIES),
                legend=LEGEND,
                scale=alt.Scale(scheme="category20"),  # 20 colours before one repeats, not 10
            ),
            strokeDash=alt.StrokeDash(
                "kind:N",
                title="line",
                legend=alt.Legend(symbolType="stroke", symbolStrokeColor="gray"),
                scale=alt.Scale(domain=["measured", "bound"], range=[[1, 0], [6, 4]]),
            ),
            tooltip=[
                "series:N",
                "batch_size:Q",
                "kind:N",
                alt.Tooltip("tokens_per_s:Q", format=",.1f"),
            ],
        )  # fmt: skip
        .properties(width=520, height=320, title=title)
    )
