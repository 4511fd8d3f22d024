"""Open a page in the system's headless Chromium (Debian's package) and record what went wrong.

Tests that need it skip, with the reason, where Chromium or Playwright is missing; `scripts/test`
installs Chromium, and the dev extra Playwright. The page must work offline: any request leaving
the file is recorded as an error.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL = ("file:", "data:", "blob:", "about:")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Page:
    page: Any
    errors: list[str] = field(default_factory=list)

    def texts(self, selector: str) -> list[str]:
        return [t.strip() for t in self.page.locator(selector).all_inner_texts()]

    def text(self, selector: str) -> str:
        return str(self.page.locator(selector).inner_text())

    def count(self, selector: str) -> int:
        return int(self.page.locator(selector).count())


@contextlib.contextmanager
def open_page(path: Path, screenshot: Path | None = None, width: int = 1200) -> Iterator[Page]:
    executable = chromium()
    if executable is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; scripts/test does)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra has it)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": width, "height": 900})
            page = Page(tab)
            tab.on("console", lambda m: m.type == "error" and page.errors.append(f"console.error: {m.text}"))
            tab.on("pageerror", lambda e: page.errors.append(f"uncaught: {e}"))
            tab.on("request", lambda r: None if r.url.startswith(LOCAL) else page.errors.append(f"network: {r.url}"))
            tab.goto(path.resolve().as_uri(), wait_until="load")
            tab.wait_for_function("document.querySelectorAll('.js-plotly-plot').length > 0 || !window.Plotly")
            if screenshot is not None:
                tab.screenshot(path=str(screenshot), full_page=True)
            yield page
        finally:
            browser.close()
