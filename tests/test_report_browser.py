"""The write-up in a real browser: Debian's chromium, headless, driven by Playwright, opens
results/report/index.html (and each published write-up) from disk; every chart must render,
with no console error, and the page must open on its verdict."""

from __future__ import annotations

import json
import re
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


SCREEN = 800  # the first screen: 1280 x 800, no scrolling
CLASS_TITLES = [
    "Training transformers",
    "Training small models",
    "Batch inference",
    "Serving at a latency bound",
    "LLM generation",
]


def check_opens_on_the_verdict(page: Path, best_csv: Path, shots: Path) -> dict:
    """The reader's view at 1280x800: the first screen holds the question, the machines, the
    data kind, the prices and a line per workload class with the verdict chart; nothing is
    wider than the screen; no chart is empty or taller than about 2,000 px; no console error
    or Vega warning; the folded page under 8,000 px; screenshots saved under `shots`."""
    expected = len(json.loads((page.parent / "charts.json").read_text())["charts"])
    seen = inspect_page(page, shots, expected)
    assert seen["errors"] == []
    folded = seen["folded"]
    assert folded["answer_bottom"] is not None and folded["answer_bottom"] <= SCREEN
    first = folded["answer_text"]
    for fact in ("Machines", "Measured", "Data", "Priced", "synthetic"):
        assert fact in first, fact
    assert [r[0] for r in folded["answer_rows"]] == CLASS_TITLES
    cheapest = pd.read_csv(best_csv).query("pick == 'cheapest'")
    for row in folded["answer_rows"]:
        assert row[1].startswith("not measured: ") or re.match(r"(GPU|CPU|too close)", row[1])
    paired = cheapest[cheapest["cost_ratio"].notna()]
    measured = any(not r[1].startswith("not measured") for r in folded["answer_rows"])
    assert measured == (not paired.empty)
    if measured:  # the verdict chart, with its ranges, on the first screen too
        assert folded["first_chart_bottom"] is not None
        assert folded["first_chart_bottom"] <= SCREEN
    else:  # no chart without marks
        assert folded["first_chart_bottom"] is None
    for state in ("folded", "unfolded"):
        geometry = seen[state]
        assert geometry["width"] <= 1280, f"{state}: the page scrolls sideways"
        assert geometry["too_wide"] == [], f"{state}: wider than the screen"
        assert geometry["tall_charts"] == [], f"{state}: charts over 2,000 px"
        text = geometry["visible_text"]
        assert not re.search(r"\bnan\b", text, re.I), f"{state}: 'nan' shown"
        assert not re.search(r"US\$\s?[\d.]+e-\d", text), f"{state}: money in exponent form"
        assert " 1 threads" not in text
    assert folded["height"] < 8_000, "the page with its details folded"
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
    if "no GPU cell ran" in page:  # a machine without a GPU: no class can have a verdict
        assert page.count("not measured: ") >= len(CLASS_TITLES)


@pytest.mark.parametrize("page", PUBLISHED, ids=[p.parts[-3] for p in PUBLISHED])
def test_published_write_ups_open_on_the_verdict(page, tmp_path):
    why = ensure_browser()
    if why:
        pytest.skip(f"no browser for the report test: {why}")
    best = page.parent.parent / "tables" / "best.csv"
    check_opens_on_the_verdict(page, best, tmp_path / "screenshots")
