"""report.html in a real browser: Debian's chromium, headless, driven by Playwright.

Playwright never downloads a browser here: it launches the system ``chromium``
(``apt-get install -y chromium``). Without it the test skips locally, but fails under
``CI=true`` so CI cannot pass by skipping.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.audit.conftest import docs_corpus  # noqa: F401 - fixtures reused from the audit tests
from tests.audit.test_report import inputs, run_audit  # noqa: F401

from tokenpact.audit.html import CHARTS

CHROMIUM = os.environ.get("TOKENPACT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def _require_browser() -> Any:
    if not Path(CHROMIUM).is_file():
        message = f"no chromium at {CHROMIUM}: apt-get install -y chromium"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("playwright is not installed (it is in the test extra)")
        pytest.skip("playwright is not installed (pip install -e .[test])")
    return sync_playwright


def test_report_renders_every_chart_with_data(inputs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    sync_playwright = _require_browser()
    from PIL import Image, ImageStat

    assert run_audit(inputs, tmp_path / "r").exit_code == 0
    page_path = tmp_path / "r" / "report.html"
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri())
            for chart in CHARTS:
                figure = page.locator(f'figure.chart[data-chart="{chart}"]')
                assert figure.count() == 1, chart
                marks = figure.locator(".mark")
                assert marks.count() > 0, f"{chart} has no data marks"
                values = [
                    float(v)
                    for v in figure.locator(".mark").evaluate_all(
                        "els => els.map(e => e.getAttribute('data-value'))"
                    )
                ]
                assert any(v > 0 for v in values), chart
                box = figure.locator("svg").first.bounding_box()
                assert box is not None and box["width"] > 100 and box["height"] > 100, chart
            # The exposure histogram is log-scaled: an ID class of 1 is still a visible bar.
            exposure = page.locator('figure.chart[data-chart="exposure"] .mark')
            heights = exposure.evaluate_all(
                "els => els.filter(e => Number(e.dataset.value) > 0)"
                ".map(e => Number(e.getAttribute('height')))"
            )
            assert heights and min(heights) >= 0.15 * max(heights), heights
            # Tables scroll inside the page instead of widening it.
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            decision = page.locator("#decision").inner_text()
            assert "Winner:" in decision and "Test split evaluated once" in decision
            assert page.locator("table.gates tbody tr").count() >= 2
            png = page.screenshot(full_page=True)
        finally:
            browser.close()
    assert all(url.startswith("file://") for url in requests), requests  # no network
    image = Image.open(io.BytesIO(png)).convert("L")
    assert image.size[0] >= 1000 and image.size[1] > 2000
    assert image.size[0] == 1100  # pixels: the full page is no wider than the viewport
    stat = ImageStat.Stat(image)
    assert stat.stddev[0] > 10, "the screenshot is blank"
    # Colored chart marks, not just black text on white.
    colors = Image.open(io.BytesIO(png)).convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colors) > 50
