"""Fixtures of the browser tests: Debian's Chromium driven by Playwright, and a screenshot per test.

The browser is never downloaded: Playwright launches the system Chromium. Without it the tests
fail and say how to install it (`make test` does); COURSE_SKIP_BROWSER=1 skips them instead.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.browser.courses import LAYOUT

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = LAYOUT.build / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session", autouse=True)
def require_chromium() -> None:
    """Before any server starts: skip on COURSE_SKIP_BROWSER=1, fail when Chromium is missing."""
    if os.environ.get("COURSE_SKIP_BROWSER") == "1":
        pytest.skip("COURSE_SKIP_BROWSER=1: browser tests skipped")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/system-packages (it installs Debian's chromium), "
                    "or set COURSE_SKIP_BROWSER=1 to skip the browser tests", pytrace=False)


@pytest.fixture(scope="module")
def browser_context():
    """A headless Chromium with a fresh profile, shared by the tests of one module."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1400, "height": 1000})
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        yield context
        context.close()


@pytest.fixture
def page(browser_context, request):
    """A new tab; at the end of the test its screenshot is build/screenshots/<test name>.png."""
    tab = browser_context.new_page()
    tab.set_default_timeout(60_000)  # a busy 2-core machine renders slowly; every wait is on a fact
    yield tab
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"))
    tab.close()
