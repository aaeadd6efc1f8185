"""What a user does in JupyterLab, as Playwright steps: menus, the toolbar, the keyboard.

Every wait that can time out fails the test with the text the page shows, so a failure says what
was on the screen instead of which selector was missing.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

KERNEL_TIMEOUT = 120.0
CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell"


def visible_text(page: Page) -> str:
    """The text of the page and of each frame in it (the formgrader lives in an iframe)."""
    texts = [page.inner_text("body")[:3000]]
    for frame in page.frames[1:]:
        try:
            texts.append(f"--- frame {frame.url}:\n{frame.inner_text('body')[:3000]}")
        except PlaywrightError:  # a frame that went away while we read
            continue
    return "\n".join(texts)


def fail_with_page(page: Page, what: str) -> None:
    pytest.fail(f"{what}; the page shows:\n{visible_text(page)}", pytrace=False)


def wait_visible(page: Page, locator: Locator, what: str, timeout: float = 30.0) -> Locator:
    try:
        locator.first.wait_for(state="visible", timeout=timeout * 1000)
        return locator
    except PlaywrightTimeout:
        pass
    fail_with_page(page, f"{what} did not appear within {timeout:.0f} s")


def open_notebook(page: Page, url: str) -> None:
    """Open a notebook URL and wait until its cells are shown and its kernel is idle."""
    page.goto(url)
    wait_visible(page, page.locator(CELLS), "the notebook's cells", timeout=60)
    wait_kernel_idle(page)


def wait_kernel_idle(page: Page, timeout: float = KERNEL_TIMEOUT) -> None:
    """Until the kernel indicator says idle and no cell waits to run, for a second and a half in a row."""
    indicator = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator")
    queued = page.locator(f"{CELLS} .jp-InputPrompt", has_text="[*]")
    deadline = time.monotonic() + timeout
    calm_since = None
    while time.monotonic() < deadline:
        idle = indicator.count() and indicator.first.get_attribute("data-status") == "idle" and queued.count() == 0
        if not idle:
            calm_since = None
        elif calm_since is None:
            calm_since = time.monotonic()
        elif time.monotonic() - calm_since >= 1.5:
            return
        time.sleep(0.25)
    fail_with_page(page, f"the kernel was not idle within {timeout:.0f} s")


def menu(page: Page, top: str, item: str) -> None:
    """Click a menu bar entry, then one of its items (exact labels, as a user reads them)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click()
    entry = page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text(item, exact=True)
    wait_visible(page, entry, f"the menu item {top} > {item}").first.click()


def select_cell(page: Page, index: int) -> None:
    """Select the cell at `index` by clicking its prompt area (command mode, as a user would)."""
    cell = page.locator(CELLS).nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()


def save_and_read(page: Page, path: Path) -> nbformat.NotebookNode:
    """Save the open notebook with Ctrl+S and read the file JupyterLab wrote."""
    page.keyboard.press("Control+s")
    dirty = page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
    try:
        dirty.wait_for(state="detached", timeout=30_000)
        return nbformat.read(path, as_version=4)
    except PlaywrightTimeout:
        pass
    fail_with_page(page, "the notebook was still unsaved 30 s after Ctrl+S")


def error_text(cell) -> str:
    """The error outputs of a code cell as one string ('' when it raised nothing)."""
    return "\n".join(f"{output.ename}: {output.evalue}" for output in cell.get("outputs", [])
                     if output.output_type == "error")
