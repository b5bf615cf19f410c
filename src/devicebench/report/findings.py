"""Findings computed from the aggregate tables: every sentence of the write-up's findings comes
from the data of the run, never from hand-written text, so a new run rewrites them."""

from __future__ import annotations

import pandas as pd

from devicebench.aggregate.collect import extra_axis_columns, format_value
from devicebench.engines import is_in_process
from devicebench.report.words import configuration, money
from devicebench.scenarios import modes
from devicebench.workloads.base import BATCH_WAIT_MS

SERIES = ["model", "framework", "precision"]


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"].eq("ok")] if "status" in df else df


def _extra(row: pd.Series) -> str:
    """The row's extra axes (lstm_kernel=cudnn, ...), where it has them."""
    names = extra_axis_columns(row.to_frame().T)
    values = [(n, row[n]) for n in names if pd.notna(row[n]) and str(row[n]) not in ("", "-")]
    return "".join(f", {n}={format_value(v)}" for n, v in values)


def _cell(row: pd.Series) -> str:
    """The cell in words: model, device and its configuration as a person writes it."""
    device = "GPU" if str(row.get("device_label", "")).startswith("cuda") else "CPU"
    if str(row.get("device", "")) not in ("", "nan", "cpu", "cuda"):
        device = str(row.get("device_label"))
    return f"{row.get('model')} on the {device} ({configuration(row.to_dict())}), {row['mode']}"


def gpu_crossover(speedup: pd.DataFrame, task: str) -> list[str]:
    """Per mode: the batch size from which the GPU beats the base (CPU) at every larger size."""
    rows = speedup[speedup["task"].eq(task)]
    gpu = rows[rows["device_label"].astype(str).str.startswith(("cuda", "mps"))]
    if gpu.empty:
        return []
    out = []
    series = [c for c in [*SERIES, *extra_axis_columns(gpu)] if c in gpu]
    for keys, part in gpu.groupby(["mode", "device_label", *series], sort=True, dropna=False):
        mode, label = keys[0], " ".join(str(k) for k in (keys[1], *keys[2:]) if pd.notna(k))
        done = part[part["speedup"].notna()].sort_values("batch_size")
        if done.empty:
            out.append(f"{label} {mode}: {_why_no_speedup(part)}.")
            continue
        base = str(done["base_label"].iloc[0])
        wins = done["speedup"].to_numpy() > 1.0
        sizes = done["batch_size"].astype(int).to_list()
        best = done.loc[done["speedup"].idxmax()]
        if wins.all():
            what = f"faster than {base} at every batch size measured ({sizes[0]}–{sizes[-1]})"
        elif not wins.any():
            what = f"slower than {base} at every batch size measured ({sizes[0]}–{sizes[-1]})"
        else:
            losing = [i for i, w in enumerate(wins) if not w]
            start = losing[-1] + 1
            what = (
                f"faster than {base} from batch size {sizes[start]} on"
                if start < len(sizes)
                else f"faster than {base} only at some batch sizes, not from one size on"
            )
        out.append(
            f"{label} {mode}: {what}; largest speedup {best['speedup']:.2f}× at batch "
            f"{int(best['batch_size'])}."
        )
    return out


def _why_no_speedup(part: pd.DataFrame) -> str:
    """Why a GPU series has no speedup: its own cells failed, or no base cell ran ok."""
    if not part["status"].astype(str).eq("ok").any():
        statuses = ", ".join(sorted(set(part["status"].astype(str))))
        return f"no GPU timing to compare (status: {statuses})"
    base = sorted({str(b) for b in part.get("base_label", pd.Series()).dropna()})
    named = f" ({', '.join(base)})" if base else ""
    statuses = sorted({str(b) for b in part.get("base_status", pd.Series()).dropna()})
    how = f"; base status: {', '.join(statuses)}" if statuses else ""
    return f"no CPU baseline{named} ran ok with the same configuration{how}"


def cheapest(cells: pd.DataFrame, task: str) -> list[str]:
    """Per mode: the configuration with the most samples per dollar, and cost to target."""
    rows = _ok(cells[cells["task"].eq(task)])
    out = []
    for mode, part in rows.groupby("mode", sort=True):
        priced = part[part["samples_per_usd"].notna()]
        if priced.empty:
            out.append(f"{mode}: no priced cell (see config/prices.yaml).")
            continue
        best = priced.loc[priced["samples_per_usd"].idxmax()]
        fastest = part.loc[part["samples_per_s"].idxmax()]
        per_million = money(1e6 / float(best["samples_per_usd"]))
        out.append(
            f"{mode}: cheapest is {_cell(best)} at {per_million} per million samples; fastest "
            f"is {_cell(fastest)} at {fastest['samples_per_s']:,.0f} samples/s."
        )
    train = rows[rows["mode"].isin(modes(trains=True, to_target=False))]
    if not train.empty and train["target_accuracy"].notna().any():
        target = float(train["target_accuracy"].dropna().iloc[0])
        reached = train[train["cost_to_target_usd"].notna()]
        if reached.empty:
            out.append(f"No training cell reached the target accuracy {target:.3g}.")
        else:
            best = reached.loc[reached["cost_to_target_usd"].idxmin()]
            out.append(
                f"{len(reached)} of {len(train)} training cells reached accuracy {target:.3g}; "
                f"cheapest to target: {_cell(best)} at {money(best['cost_to_target_usd'])}."
            )
    return out


def efficiency(cells: pd.DataFrame, task: str) -> list[str]:
    """Highest achieved TFLOP/s (with MFU where a peak is known) and mean utilization."""
    rows = _ok(cells[cells["task"].eq(task)])
    out = []
    flops = rows[rows["achieved_tflops"].notna()]
    if not flops.empty:
        best = flops.loc[flops["achieved_tflops"].idxmax()]
        mfu = (
            f", MFU {best['mfu']:.1%} of the {best['peak_tflops']:g} TFLOP/s datasheet peak"
            if pd.notna(best["mfu"])
            else " (no datasheet peak for this device, so no MFU)"
        )
        out.append(
            f"Highest achieved model throughput: {best['achieved_tflops']:.3g} TFLOP/s "
            f"({_cell(best)}){mfu}."
        )
    for label, part in rows.groupby("device_label", sort=True):
        cpu, gpu = part["cpu_util_mean"].mean(), part["gpu_util_mean"].mean()
        parts = [f"CPU {cpu:.0f} %" if pd.notna(cpu) else ""]
        parts.append(f"GPU SM {gpu:.0f} %" if pd.notna(gpu) else "")
        text = ", ".join(p for p in parts if p)
        if text:
            out.append(f"{label}: mean utilization during timed sections {text}.")
    return out


def noise_and_agreement(cells: pd.DataFrame, quality: pd.DataFrame, task: str) -> list[str]:
    """Noisy cells (CoV above the threshold) and accuracy disagreements across devices."""
    rows = _ok(cells[cells["task"].eq(task)])
    timed = rows[rows["cov"].notna()] if "cov" in rows else rows
    out = []
    noisy = rows[rows["noisy"].fillna(False).astype(bool)]
    if noisy.empty and not timed.empty:
        out.append(
            f"No noisy cell: every CoV is at most the threshold ({len(timed)} ok cells with "
            "repeated timings)."
        )
    elif not noisy.empty:
        listed = "; ".join(f"{_cell(r)} (CoV {r['cov']:.0%})" for _, r in noisy.iterrows())
        out.append(f"{len(noisy)} noisy cell(s), CoV above the threshold: {listed}.")
    q = quality[quality["task"].eq(task)]
    bad = q[q["accuracy_agrees"].eq(False)] if "accuracy_agrees" in q else q.iloc[0:0]
    if bad.empty:
        compared = q["accuracy_spread"].notna().sum() if "accuracy_spread" in q else 0
        ran = q[q["status"].eq("ok")] if "status" in q else q
        devices = ran["device_label"].nunique() if "device_label" in ran else 0
        trained = "mode" not in rows or rows["mode"].isin(modes(trains=True)).any()
        if trained and devices > 1 and compared == 0:
            out.append(
                "Accuracy agreement not checked: it compares converge cells that reached their "
                "target, and none did on more than one device."
            )
        elif trained and devices > 1:
            out.append(f"Accuracy agrees across devices for all {compared} compared cells.")
        elif trained:  # a task without training cells has nothing to agree on
            out.append("Accuracy agreement not checked: only one device ran training cells ok.")
    else:
        tol = float(bad["accuracy_tolerance"].iloc[0])
        listed = "; ".join(
            f"batch {format_value(r['batch_size'])}: spread {r['accuracy_spread']:.3f}"
            for _, r in bad.drop_duplicates(["batch_size", "precision"]).iterrows()
        )
        out.append(f"Accuracy DISAGREES across devices (tolerance {tol:g}): {listed}.")
    return out


def _true(value: object) -> bool:
    return bool(pd.notna(value) and value)


def entity_scores(cells: pd.DataFrame, task: str) -> list[str]:
    """Entity-level F1 of NER training cells (exact spans, seqeval), best and worst if many."""
    if "precision_micro" not in cells:
        return []
    fixed = cells["mode"].isin(modes(trains=True, to_target=False))
    rows = _ok(cells[cells["task"].eq(task) & fixed])
    rows = rows[rows["precision_micro"].notna() & rows["f1_micro"].notna()]
    if rows.empty:
        return []
    rows = rows.sort_values("f1_micro", ascending=False, kind="stable")
    if len(rows) > 4:
        rows = rows.iloc[[0, -1]]
        lead = "Best and worst entity-level F1"
    else:
        lead = "Entity-level F1"
    return [
        f"{lead} (exact spans, seqeval) of {_cell(r)}: micro {r['f1_micro']:.3f} (precision "
        f"{r['precision_micro']:.3f}, recall {r['recall_micro']:.3f}), macro over entity types "
        f"{r['f1_macro']:.3f}; token accuracy {r['accuracy']:.3f}"
        f"{' (SYNTHETIC data)' if _true(r.get('synthetic')) else ''}."
        for _, r in rows.iterrows()
    ]


def top_operator(ops: pd.DataFrame, task: str) -> list[str]:
    """The operator each profiled device spends most of its self time in."""
    rows = ops[ops["task"].eq(task) & ops["rank"].eq(1)] if not ops.empty else ops
    return [
        f"{r['device_label']} (batch {format_value(r['batch_size'])}, {r['mode']}): top operator "
        f"{r['op']} with {r['self_pct']:.0f} % of {r['ranked_by'].replace('_', ' ')} time."
        for _, r in rows.iterrows()
    ]


def task_findings(tables: dict[str, pd.DataFrame], task: str, noise_cov: float = 0.1) -> list[str]:
    """Every finding for one task, in reading order."""
    cells = tables["cells"]
    return [
        *gpu_crossover(tables["speedup"], task),
        *cheapest(cells, task),
        *efficiency(cells, task),
        *noise_and_agreement(cells, tables["quality"], task),
        *entity_scores(cells, task),
        *top_operator(tables["profile_ops"], task),
        *serving(tables.get("serving"), task, noise_cov),
    ]


def study_findings(tables: dict[str, pd.DataFrame]) -> list[str]:
    """Headline counts for the whole run."""
    cells = tables["cells"]
    counts = cells["status"].value_counts().to_dict()
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    out = [f"{len(cells)} cells: {statuses}."]
    skipped = cells[cells["status"].eq("skipped")]
    if not skipped.empty:
        reasons = sorted(set(skipped["message"].astype(str)))
        out.append(f"Skipped cells ({len(skipped)}): {'; '.join(reasons)}.")
    return out


SERVE_IDENTITY = [
    "framework", "engine", "precision", "batch_size", "server", "replicas", "batch_wait_ms",
    "seq_len",
]  # fmt: skip


def _serve_cell(row: pd.Series) -> str:
    """A serve cell's configuration beside model and device: engine, server, replicas, ..."""
    parts = [str(row["framework"])]
    if pd.notna(row.get("engine")) and not is_in_process(row.get("engine")):
        parts.append(f"on {row['engine']}")
    parts.append(str(row.get("precision")))
    parts.append(f"batch {format_value(row.get('batch_size'))}")
    parts += [f"{row['server']} server" if pd.notna(row.get("server")) else ""]
    if pd.notna(row.get("replicas")):
        parts.append(f"{format_value(row['replicas'])} replica(s)")
    wait = row.get("batch_wait_ms")
    if pd.notna(wait) and float(wait) != BATCH_WAIT_MS:  # a window other than the default
        parts.append(f"{float(wait):g} ms batch window")
    if pd.notna(row.get("seq_len")):
        parts.append(f"seq {format_value(row['seq_len'])}")
    return ", ".join(p for p in parts if p and p != "nan")


def serving(table: pd.DataFrame, task: str, noise_cov: float = 0.1) -> list[str]:
    """What the serve cells found: peak throughput, tail latency under load, price per request."""
    if table is None or table.empty or "task" not in table:
        return []
    done = table[table["task"].astype(str).eq(task) & table["status"].astype(str).eq("ok")]
    out = []
    for (model, device), rows in done.groupby(["model", "device_label"], sort=True):
        best = rows.loc[rows["requests_per_s"].idxmax()]
        line = (
            f"{model} on {device}: at most {best['requests_per_s']:.4g} requests/s "
            f"({_serve_cell(best)}, {format_value(best['clients'])} clients, p99 "
            f"{best['p99_ms']:.4g} ms, {int(best['errors'])} errors)"
        )
        if pd.notna(best.get("cost_per_1k_requests_usd")):
            line += f"; {money(best['cost_per_1k_requests_usd'])} per 1,000 requests"
        if pd.notna(best.get("server_highest_valid_qps")):
            line += f"; LoadGen Server VALID up to {best['server_highest_valid_qps']:.4g} QPS"
        elif pd.notna(best.get("server_lowest_qps_tried")):
            line += (
                "; LoadGen Server INVALID at every QPS tried, down to "
                f"{best['server_lowest_qps_tried']:.4g}"
            )
            if isinstance(best.get("server_search_stopped"), str):
                line += f" (lower {best['server_search_stopped']})"
            if pd.notna(best.get("server_p99_met_up_to_qps")):
                line += (
                    f", though the measured p99 was under the bound up to "
                    f"{best['server_p99_met_up_to_qps']:.4g} QPS: LoadGen's early-stopping "
                    "estimate could not confirm it from that run's queries"
                )
        out.append(line + ".")
    out += client_scaling(done)
    per_dollar = done.groupby(["model", "device_label"])["requests_per_usd"].max().unstack()
    gpus = [c for c in per_dollar.columns if not str(c).startswith("cpu")]
    cpus = [c for c in per_dollar.columns if str(c).startswith("cpu")]
    for model, row in per_dollar.iterrows():
        if gpus and cpus and row[gpus].notna().any() and row[cpus].notna().any():
            ratio = row[gpus].max() / row[cpus].max()
            out.append(
                f"{model}: the best GPU serve cell serves {ratio:.3g}x the requests per dollar of "
                "the best CPU serve cell (the cloud study found the GPU 1.9x to 8x ahead per "
                "dollar)."
            )
    if not done.empty and not (gpus and cpus):
        out.append("No serve cell pair of CPU and GPU yet: requests per dollar compare no devices.")
    return out + replica_scaling(done) + serving_noise(done, noise_cov)


def _identity(done: pd.DataFrame) -> list[str]:
    return ["model", "device_label", *[c for c in SERVE_IDENTITY if c in done]]


def client_scaling(done: pd.DataFrame) -> list[str]:
    """Tail latency from the fewest to the most clients, only between cells that differ in
    their client count alone."""
    out = []
    for _, rows in done.groupby(_identity(done), sort=True, dropna=False):
        if rows["clients"].nunique() < 2:
            continue
        low, high = rows.loc[rows["clients"].idxmin()], rows.loc[rows["clients"].idxmax()]
        out.append(
            f"{low['model']} on {low['device_label']} ({_serve_cell(low)}): from "
            f"{format_value(low['clients'])} to {format_value(high['clients'])} clients p99 goes "
            f"{low['p99_ms']:.4g} -> {high['p99_ms']:.4g} ms and requests/s "
            f"{low['requests_per_s']:.4g} -> {high['requests_per_s']:.4g}."
        )
    return out


def replica_scaling(done: pd.DataFrame) -> list[str]:
    """How close a server's replicas come to linear scaling, per model, device and server."""
    if "replica_scaling_efficiency" not in done:
        return []
    scaled = done[done["replicas"].gt(1) & done["replica_scaling_efficiency"].notna()]
    out = []
    keys = ["model", "device_label", "server"]
    for (model, device, server), rows in scaled.groupby(keys, sort=True):
        means = rows.groupby("replicas")["replica_scaling_efficiency"].mean()
        parts = ", ".join(f"{value:.2f} at {int(n)} replicas" for n, value in means.items())
        out.append(
            f"{model} on {device}, {server} server: replica scaling efficiency {parts} "
            "(requests/s at N replicas / (N x at 1 replica), mean over the client counts; 1.00 "
            "is linear)."
        )
    return out


def serving_noise(done: pd.DataFrame, noise_cov: float) -> list[str]:
    """Serve cells whose throughput was not steady: CoV of requests/s over the window's slices."""
    if "stability_cov" not in done or done.empty:
        return []
    measured = done[done["stability_cov"].notna()]
    noisy = measured[measured["stability_cov"].gt(noise_cov)]
    if measured.empty:
        return ["No serve cell measured its throughput stability (stability_cov empty)."]
    if noisy.empty:
        return [
            f"Serving throughput steady in all {len(measured)} serve cells that measured it "
            f"(stability CoV at most {noise_cov:g})."
        ]
    listed = "; ".join(
        f"{r['model']} on {r['device_label']} ({_serve_cell(r)}, {format_value(r['clients'])} "
        f"clients): {r['stability_cov']:.2f}"
        for _, r in noisy.sort_values("stability_cov", ascending=False).iterrows()
    )
    return [
        f"{len(noisy)} of {len(measured)} serve cells are noisy, throughput stability CoV above "
        f"{noise_cov:g}: {listed}."
    ]
