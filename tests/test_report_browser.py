"""The write-up in a real browser: Debian's chromium, headless, driven by Playwright, opens
results/report/index.html from disk; every chart must render, with no console error."""

from __future__ import annotations

import json
import shutil

import pytest
from browser import ensure_browser, open_page

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
