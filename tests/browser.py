"""Open the write-up in a real headless Chromium (Debian's, driven by Playwright) and report what
rendered: the number of Vega views, console errors, and a screenshot.

Chromium and Playwright are installed when missing (apt-get and pip; never `playwright install`,
which downloads a browser from the network). `ensure_browser` returns why it cannot, if so.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
PLAYWRIGHT = "playwright==1.65.2"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RENDERED = ".vega-embed svg.marks, .vega-embed canvas.marks"
# Chromium cannot always raster a page taller than its texture limit in one shot (the h100
# write-up unfolded is ~126,000 px, 640 MB of pixels): "Unable to capture screenshot" on a busy
# host. A screenshot is for a person looking at the run, so it keeps the page's top 16,000 px.
SHOT_HEIGHT = 16_000


def _run(command: list[str]) -> bool:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    return done.returncode == 0


def ensure_browser() -> str | None:
    """Install chromium and playwright when missing; None when ready, else the reason not."""
    if not Path(CHROMIUM).exists():
        if shutil.which("apt-get") is None:
            return "no /usr/bin/chromium and no apt-get to install it"
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        _run([*sudo, "apt-get", "update", "-qq"])
        if not _run([*sudo, "apt-get", "install", "-y", "-qq", "chromium"]):
            return "apt-get install chromium failed"
    if importlib.util.find_spec("playwright") is None:
        if not _run([sys.executable, "-m", "pip", "install", "-q", PLAYWRIGHT]):
            return f"pip install {PLAYWRIGHT} failed"
        importlib.invalidate_caches()
    return None


@contextmanager
def loaded_page(page_path: Path, expected: int, errors: list[str], requests: list[str]):
    """Chromium with the page loaded from disk and `expected` charts rendered (or timed out);
    console errors and network requests are collected into the lists given."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(120_000)  # a long page's full screenshot on a busy host
            page.on(
                "console",
                lambda m: (
                    errors.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None
                ),
            )
            page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
            page.on(
                "request",
                lambda r: requests.append(r.url) if r.url.startswith(("http:", "https:")) else None,
            )
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            try:
                page.wait_for_function(
                    f"window.chartsRendered >= {expected}", timeout=180_000, polling=250
                )
            except Exception as error:  # noqa: BLE001 - reported through the counts below
                errors.append(f"timed out waiting for charts: {error}")
            yield page
        finally:
            browser.close()


def save_page(page: Any, path: Path) -> None:
    """A PNG of the whole page, or of its top SHOT_HEIGHT pixels where it is taller."""
    height = page.evaluate("document.documentElement.scrollHeight")
    width = page.evaluate("document.documentElement.scrollWidth")
    if height <= SHOT_HEIGHT:
        page.screenshot(path=str(path), full_page=True)
    else:
        clip = {"x": 0, "y": 0, "width": width, "height": SHOT_HEIGHT}
        page.screenshot(path=str(path), full_page=True, clip=clip)


def open_page(page_path: Path, screenshot: Path, expected: int) -> dict[str, Any]:
    """Load the page from disk; wait until `expected` charts rendered (or time out)."""
    errors: list[str] = []
    requests: list[str] = []
    with loaded_page(page_path, expected, errors, requests) as page:
        views = page.locator(RENDERED).count()
        embeds = page.locator(".vega-embed").count()
        rendered = page.evaluate("window.chartsRendered")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        save_page(page, screenshot)
    return {
        "views": views,
        "embeds": embeds,
        "rendered": rendered,
        "errors": errors,
        "requests": requests,
    }


GEOMETRY = """() => {
  const verdict = document.querySelector('#verdict');
  const rows = [...document.querySelectorAll('#verdict table.verdict tbody tr')].map(
    (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()));
  const heads = [...document.querySelectorAll('#verdict table.verdict thead th')].map(
    (th) => th.textContent.trim());
  const drawn = (el) => { const b = el.getBBox(); return b.width > 0 || b.height > 0; };
  const empty = [...document.querySelectorAll('div.chart')].filter(
    (div) => ![...div.querySelectorAll('svg.marks g.role-mark > *')].some(drawn)
  ).map((div) => div.id + ' ' + div.dataset.chart);
  const barless = [...document.querySelectorAll('div.chart')].filter((div) => {
    const bars = [...div.querySelectorAll('svg.marks g.mark-rect.role-mark > path')];
    const area = (el) => { const b = el.getBBox(); return b.width > 0 && b.height > 0; };
    return bars.length > 0 && !bars.some(area);
  }).map((div) => div.id + ' ' + div.dataset.chart);
  const answer = document.querySelector('#answer');
  const firstChart = document.querySelector('#answer div.chart svg');
  const tall = [...document.querySelectorAll('div.chart svg')].filter(
    (svg) => svg.getBoundingClientRect().height > 2000
  ).map((svg) => svg.closest('div.chart').dataset.chart + ' '
    + Math.round(svg.getBoundingClientRect().height));
  const wide = [...document.querySelectorAll('div.chart svg, table')].filter((el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && !el.closest('.scroll') && box.right > window.innerWidth;
  }).map((el) => (el.closest('div.chart') || el).id || el.className || el.tagName);
  const shown = (el) => el.getClientRects().length > 0;
  return {
    verdict_top: verdict ? verdict.getBoundingClientRect().top + window.scrollY : null,
    verdict_heads: heads, verdict_rows: rows, empty_charts: [...empty, ...barless],
    height: document.documentElement.scrollHeight,
    width: document.documentElement.scrollWidth,
    details: document.querySelectorAll('details').length,
    answer_bottom: answer ? answer.getBoundingClientRect().bottom + window.scrollY : null,
    answer_text: answer ? answer.innerText : '',
    answer_rows: [...document.querySelectorAll('#answer table.answer tbody tr')].map(
      (tr) => [...tr.children].map((td) => td.textContent.trim())),
    first_chart_bottom: firstChart
      ? firstChart.getBoundingClientRect().bottom + window.scrollY : null,
    tall_charts: tall, too_wide: wide,
    visible_text: [...document.querySelectorAll('body > *')].filter(shown).map(
      (el) => el.innerText || '').join(' '),
  };
}"""


def inspect_page(page_path: Path, shots: Path, expected: int) -> dict[str, Any]:
    """Load the page, wait for its charts, and measure what a reader sees: where #verdict
    starts, its rows, charts that drew no mark, the page height with details folded and open.
    Saves the first screen, the folded page and the unfolded page as PNGs under `shots`."""
    errors: list[str] = []
    shots.mkdir(parents=True, exist_ok=True)
    with loaded_page(page_path, expected, errors, []) as page:
        folded = page.evaluate(GEOMETRY)
        page.screenshot(path=str(shots / "first_screen.png"))
        save_page(page, shots / "folded.png")
        page.evaluate("document.querySelectorAll('details').forEach((d) => d.open = true)")
        page.wait_for_timeout(500)
        unfolded = page.evaluate(GEOMETRY)
        save_page(page, shots / "unfolded.png")
    return {"folded": folded, "unfolded": unfolded, "errors": errors}
