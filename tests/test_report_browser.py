"""The write-up in a real browser: Debian's chromium, headless, driven by Playwright, opens
results/report/index.html (and each published write-up) from disk; every chart must render,
with no console error, and the page must open on its verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from browser import ensure_browser, inspect_page, open_page

pytestmark = pytest.mark.workflow


def test_every_chart_renders_without_console_errors(finished_study, tmp_path):
    why = ensure_browser()
    if why:
        pytest.skip(f"no browser for the report test: {why}")
    workdir, _ = finished_study
    report = workdir / "results" / "report"
    expected = len(json.loads((report / "charts.json").read_text())["charts"])
    shot = tmp_path / "screenshot.png"
    seen = open_page(report / "index.html", shot, expected)
    assert seen["errors"] == []
    assert seen["requests"] == [], "the page must not touch the network"
    assert seen["rendered"] == expected
    assert seen["embeds"] == expected and seen["views"] == expected
    assert shot.read_bytes()[:4] == b"\x89PNG"
    shutil.copy(shot, report / "screenshot.png")  # for a person looking at the run


REPO = Path(__file__).resolve().parents[1]
PUBLISHED = sorted((REPO / "results" / "published").glob("*/report/index.html"))


def check_opens_on_the_verdict(page: Path, best_csv: Path, shots: Path) -> dict:
    """The reader's view: #verdict on the first screen with a row per workload and mode, no
    empty chart, the folded page under 15,000 px; screenshots saved under `shots`."""
    expected = len(json.loads((page.parent / "charts.json").read_text())["charts"])
    seen = inspect_page(page, shots, expected)
    assert seen["errors"] == []
    folded = seen["folded"]
    assert folded["verdict_top"] is not None and folded["verdict_top"] < 1000
    heads = folded["verdict_heads"]
    shown = {(r[heads.index("workload")], r[heads.index("mode")]) for r in folded["verdict_rows"]}
    best = pd.read_csv(best_csv)
    cheapest = best[best["pick"].eq("cheapest")]
    assert shown == set(zip(cheapest["task"], cheapest["mode"], strict=True))
    assert len(folded["verdict_rows"]) == len(cheapest)
    assert folded["height"] < 15_000, "the page with its details folded"
    assert seen["unfolded"]["empty_charts"] == [], "every chart draws marks"
    assert seen["unfolded"]["height"] > folded["height"]  # the details hold the rest
    for name in ("first_screen", "folded", "unfolded"):
        assert (shots / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    return seen


def test_the_quick_study_opens_on_the_verdict(finished_study):
    why = ensure_browser()
    if why:
        pytest.skip(f"no browser for the report test: {why}")
    workdir, _ = finished_study
    report = workdir / "results" / "report"
    best = workdir / "results" / "tables" / "best.csv"
    check_opens_on_the_verdict(report / "index.html", best, report / "screenshots")
    page = (report / "index.html").read_text()
    assert "No workload has both a CPU and a GPU cell" in page  # this machine has no GPU


@pytest.mark.parametrize("page", PUBLISHED, ids=[p.parts[-3] for p in PUBLISHED])
def test_published_write_ups_open_on_the_verdict(page, tmp_path):
    why = ensure_browser()
    if why:
        pytest.skip(f"no browser for the report test: {why}")
    best = page.parent.parent / "tables" / "best.csv"
    check_opens_on_the_verdict(page, best, tmp_path / "screenshots")
