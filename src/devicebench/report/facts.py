"""What a reader must know before the answer: the machines, the date, what the data and models
were, and what each device was priced as, all read from the cells and the prices file."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from devicebench.aggregate.analysis import price_per_hour
from devicebench.report.words import integer, missing, money
from devicebench.scenarios import modes


def _distinct(cells: pd.DataFrame, column: str) -> list[str]:
    if column not in cells:
        return []
    return sorted({str(v) for v in cells[column] if not missing(v)})


def cpu_name(model: str) -> str:
    """'Intel(R) Xeon(R) Processor' as 'Intel Xeon Processor'."""
    return re.sub(r"\s+", " ", re.sub(r"\((R|TM|tm|r)\)", "", model)).strip()


def _ok_on(cells: pd.DataFrame, device: str) -> pd.DataFrame:
    if "device" not in cells:
        return cells.iloc[0:0]
    mine = cells[cells["device"].astype(str).eq(device)]
    return mine[mine["status"].astype(str).eq("ok")] if "status" in mine else mine


def machines(cells: pd.DataFrame) -> str:
    """'GPU: NVIDIA H100 80GB HBM3; CPU: Intel Xeon Processor with 16 vCPUs (the GPU's host)'."""
    cpu_cells, gpu_cells = _ok_on(cells, "cpu"), _ok_on(cells, "cuda")
    cpus = [cpu_name(m) for m in _distinct(cpu_cells, "cpu_model")] or ["an unnamed CPU"]
    cores = [integer(c) for c in _distinct(cpu_cells, "cpu_cores")]
    vcpus = "/".join(str(c) for c in sorted({c for c in cores if c}))
    cpu = " / ".join(cpus) + (f" with {vcpus} vCPUs" if vcpus else "")
    gpus = " / ".join(_distinct(gpu_cells, "gpu_name"))
    if cpu_cells.empty:
        return f"GPU: {gpus}; no CPU cell ran" if gpus else "no cell ran ok"
    if not gpus:
        return f"CPU: {cpu}; no GPU cell ran"
    shared = set(_distinct(cpu_cells, "boot_id")) & set(_distinct(gpu_cells, "boot_id"))
    return f"GPU: {gpus}; CPU: {cpu}" + (" (the GPU machine's own CPU)" if shared else "")


def dates(cells: pd.DataFrame) -> str:
    """The measurement dates, from the records' creation times."""
    days = sorted({str(v)[:10] for v in _distinct(cells, "created")})
    if not days:
        return "date not recorded"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def data_kind(cells: pd.DataFrame) -> str:
    """Whether the data was synthetic and the models untrained: what the figures can mean."""
    n = len(cells)
    synthetic = int(cells["synthetic"].eq(True).sum()) if "synthetic" in cells else 0
    weights = _distinct(cells, "weights")
    if synthetic == n:
        data = "synthetic data at the real data sets' shapes"
    elif synthetic:
        real = cells[~cells["synthetic"].eq(True)]
        names = ", ".join(_distinct(real, "dataset")) or "real"
        data = f"synthetic data in {synthetic:,} of {n:,} cells (the rest on {names} files)"
    else:
        data = "real data"
    if weights and set(weights) != {"random"}:
        return f"{data}; pretrained weights in some cells"
    trained = ""
    if set(_distinct(cells, "mode")) & set(modes(to_target=True)):
        trained = "; converge cells train to a target accuracy"
    return (
        f"{data}; untrained models (random weights, a few steps): speed and cost, not "
        f"accuracy{trained}"
    )


def priced_as(cells: pd.DataFrame, prices: dict[str, Any]) -> str:
    """What the CPU and the GPU were priced as, per hour."""
    parts = []
    per_vcpu = (prices.get("cpu") or {}).get("per_vcpu_hour")
    if per_vcpu is not None:
        cores = [integer(c) for c in _distinct(cells, "cpu_cores") if integer(c)]
        whole = f" ({money(per_vcpu * max(cores))}/h for all {max(cores)})" if cores else ""
        parts.append(f"the CPU at {money(per_vcpu)} per vCPU-hour{whole}")
    gpu_cells = cells[cells["device"].astype(str).eq("cuda")] if "device" in cells else cells
    for name in _distinct(gpu_cells, "gpu_name"):
        parts.append(f"the {name} at {money(price_per_hour('cuda', None, name, prices))}/h")
    source = prices.get("source")
    said = ", ".join(parts) or "no prices"
    return f"{said} ({source})" if source else said


def study_facts(cells: pd.DataFrame, prices: dict[str, Any]) -> dict[str, str]:
    """The facts shown above the answer, in order."""
    return {
        "machines": machines(cells),
        "measured": dates(cells),
        "data": data_kind(cells),
        "priced": priced_as(cells, prices),
    }
