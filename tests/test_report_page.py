"""The write-up built from the published H100 tables and a best.csv: verdict first, workloads
folded, setup at the end, no empty chart, no 'nan', and a buyer's prices change the verdict
through scripts/report.py --prices without any cell running again."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import yaml

from devicebench.aggregate.charts import EMPTY
from devicebench.report.verdict import BEST_COLUMNS, number

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "results" / "published" / "h100" / "tables"


def hand_made_best(cells: pd.DataFrame) -> pd.DataFrame:
    """best.csv rows in the aggregate's layout: each side's ok cell with most samples per US$
    (cheapest) and most samples/s (fastest), per task and mode."""
    rows = []
    ok = cells[cells["status"].eq("ok")]
    for (task, mode), group in ok.groupby(["task", "mode"]):
        for pick, key in (("cheapest", "samples_per_usd"), ("fastest", "samples_per_s")):
            row = dict(task=task, mode=mode, pick=pick, boot_id="b", code_version="v")
            for side, device in (("cpu", "cpu"), ("gpu", "cuda")):
                part = group[group["device"].eq(device)]
                if part.empty:
                    row["note"] = f"no ok {device} cell"
                    continue
                cell = part.loc[part[key].idxmax()]
                row[f"{side}_cell"] = cell["cell_id"]
                row[f"{side}_config"] = f"{cell['framework']}, batch {cell['batch_size']}"
                row[f"{side}_samples_per_s"] = cell["samples_per_s"]
                row[f"{side}_usd_per_million"] = 1e6 / cell["samples_per_usd"]
                if side == "gpu":
                    row["gpu_name"] = cell["gpu_name"]
            rows.append(row)
    return pd.DataFrame(rows).reindex(columns=BEST_COLUMNS)


def visible_text(page: str) -> str:
    body = page[page.index("<body>") :]
    body = re.sub(r"<script.*?</script>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def test_the_page_leads_with_the_verdict_at_the_prices_given(tmp_path):
    tables = tmp_path / "tables"
    shutil.copytree(PUBLISHED, tables)
    cells = pd.read_csv(tables / "cells.csv")
    hand_made_best(cells).to_csv(tables / "best.csv", index=False)
    prices = yaml.safe_load((REPO / "config" / "prices.yaml").read_text())
    prices["cuda"] = [{"match": "H100", "per_hour": 40.0, "instance": "1x H100"}]  # very dear
    (tmp_path / "prices.yaml").write_text(yaml.safe_dump(prices))
    spec = importlib.util.spec_from_file_location("report_cli", REPO / "scripts" / "report.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "report"
    argv = ["--tables", str(tables), "--out", str(out), "--config", str(REPO / "config/h100.yaml")]
    assert script.main([*argv, "--prices", str(tmp_path / "prices.yaml")]) == 0
    page = (out / "index.html").read_text()
    text = visible_text(page)
    assert not re.search(r"\bnan\b", text, re.I)
    verdict, first_details = page.index('<section id="verdict">'), page.index("<details")
    assert verdict < first_details < page.index('id="setup"') < page.index('id="definitions"')
    for task in cells["task"].unique():
        assert f'<details id="task-{task}">' in page
    assert "NVIDIA H100 80GB HBM3: US$40 per GPU-hour" in text
    # the GPU's cost per million samples is worked out at 40 $/h, not the aggregate's 4 $/h
    best = hand_made_best(cells).query("task == 'mnist_mlp' and pick == 'cheapest'")
    row = best[best["mode"].eq("train")].iloc[0]
    assert page.index('<header id="answer">') < verdict  # the answer's first screen
    table = page[page.index('<details id="all-rows">') : page.index('<h2 id="details">')]
    heads = re.findall(r"<th>([^<]*)</th>", table)
    shown = re.search(r"<tr>\s*(<td>mnist_mlp</td>\s*<td>train</td>.*?)</tr>", table, re.S)
    cost = re.findall(r"<td>([^<]*)</td>", shown.group(1))[heads.index("GPU US$ / M samples")]
    assert cost == number(40.0 / (row["gpu_samples_per_s"] * 3600) * 1e6)
    assert cost != number(row["gpu_usd_per_million"])
    assert "ray-serve" not in text and "no GPU timing to compare (status: ok)" not in text
    specs = re.search(r"const specs = (\[.*?\]);\n", page, re.S).group(1)
    assert EMPTY not in specs  # no placeholder chart is emitted
    manifest = json.loads((out / "charts.json").read_text())["charts"]
    assert manifest[0]["chart"] == "verdict_classes"  # the answer's chart, with its ranges
