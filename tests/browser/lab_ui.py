"""What a user does in JupyterLab, as Playwright steps: menus, the toolbar, the keyboard.

Every wait that can time out fails the test with the text the page shows, so a failure says what
was on the screen instead of which selector was missing.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

KERNEL_TIMEOUT = 120.0
SAVE_TIMEOUT = 60.0
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


def wait_visible(page: Page, locator: Locator, what: str, timeout: float = 60.0) -> Locator:
    try:
        locator.first.wait_for(state="visible", timeout=timeout * 1000)
        return locator
    except PlaywrightTimeout:
        pass
    fail_with_page(page, f"{what} did not appear within {timeout:.0f} s")


def open_notebook(page: Page, url: str) -> None:
    """Open a notebook URL and wait until its cells are shown and its kernel is connected and idle."""
    page.goto(url)
    wait_visible(page, page.locator(CELLS), "the notebook's cells", timeout=60)
    _wait_for(page, lambda state: state["kernel"] == "Idle" and state["status"] == "idle",
              "the notebook's kernel to start and be idle", KERNEL_TIMEOUT)


# One read of the open notebook:
# - kernel: the status bar's kernel status ('Python 3 (TF course) | Idle'), 'Idle' only once a kernel
#   is connected and idle (JupyterLab's sessionContext.kernelDisplayStatus; before that
#   'Initializing', and a run asked for then is refused with a notification or a Select Kernel dialog);
# - status: the execution indicator's data-status, which reads 'idle' from the start, kernel or not,
#   so it only counts together with `kernel`;
# - prompts: each cell's input prompt ('[3]:' ran, '[*]:' running or queued, '[ ]:' never ran or
#   aborted; None for a markdown cell).
_STATE = """cells => {
    const panel = '.jp-NotebookPanel:not(.lm-mod-hidden) ';
    const kernel = document.querySelector('.jp-StatusBar-TextItem[title^="Change kernel for"]')?.textContent ?? '';
    return {
        kernel: kernel.includes(' | ') ? kernel.split(' | ').pop().trim() : null,
        status: document.querySelector(panel + '.jp-Notebook-ExecutionIndicator')?.getAttribute('data-status') ?? null,
        dialog: document.querySelector('.jp-Dialog-header')?.textContent ?? null,
        prompts: cells.map(cell => cell.classList.contains('jp-CodeCell')
                ? (cell.querySelector('.jp-InputPrompt')?.textContent ?? '').trim() : null),
    };
}"""
RAN = re.compile(r"^\[\d+\]:?$")


def notebook_state(page: Page) -> dict:
    """The notebook's kernel, execution indicator, open dialog and prompts, read at once (see _STATE)."""
    return page.locator(CELLS).evaluate_all(_STATE)


def ran(state: dict) -> list[int]:
    """The cells whose prompt shows an execution count in `state`."""
    return [index for index, prompt in enumerate(state["prompts"]) if prompt and RAN.match(prompt)]


def _wait_for(page: Page, done, what: str, timeout: float) -> dict:
    """Poll the notebook's state until `done(state)`; fail with the page's text after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        state = notebook_state(page)
        if done(state):
            return state
        if time.monotonic() > deadline:
            fail_with_page(page, f"waited {timeout:.0f} s for {what}; last state {state}")
        page.wait_for_timeout(100)  # the page's own event loop runs on; this is a poll interval, not a wait for time


def wait_run_finished(page: Page, first: int, timeout: float = KERNEL_TIMEOUT) -> dict:
    """After a run was asked for from cell `first` (Run All: 0; Shift+Enter on cell i: i), wait until
    that run is over, from facts about that run: the first code cell at or below `first` shows an
    execution count (JupyterLab sets it from the kernel's reply, after the cell's outputs arrived),
    no code cell is running or queued (`[*]`; a cell aborted after an error goes back to `[ ]`), and
    the kernel reports idle. Returns the last state read."""
    def finished(state: dict) -> bool:
        if state["dialog"]:
            fail_with_page(page, f"a dialog {state['dialog']!r} interrupted the run from cell {first}")
        prompts = state["prompts"]
        code = [index for index in range(first, len(prompts)) if prompts[index] is not None]
        return (bool(code) and bool(RAN.match(prompts[code[0]]))
                and not any(prompt and prompt.startswith("[*]") for prompt in prompts)
                and state["kernel"] == "Idle" and state["status"] == "idle")

    return _wait_for(page, finished, f"the run from cell {first} to finish", timeout)


def menu(page: Page, top: str, item: str) -> None:
    """Click a menu bar entry, then one of its items (exact labels, as a user reads them)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click()
    entry = page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text(item, exact=True)
    wait_visible(page, entry, f"the menu item {top} > {item}").first.click()


def type_into_cell(page: Page, index: int, text: str) -> None:
    """Replace what the cell at `index` holds with `text`, typed into its editor (select all, then the text)."""
    editor = page.locator(CELLS).nth(index).locator(".cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def select_cell(page: Page, index: int) -> None:
    """Select the cell at `index` by clicking its prompt area (command mode, as a user would)."""
    cell = page.locator(CELLS).nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()


def save_and_read(page: Page, path: Path, ran: list[int] = ()) -> nbformat.NotebookNode:
    """Save the open notebook with Ctrl+S; return the file JupyterLab wrote for this save.

    The save is done when the tab is no longer marked unsaved *and* the file on disk changed since
    the key press, and the file holds an execution count in every cell of `ran` (what the page
    showed before the save): a file read before it was written fails none of these by luck."""
    before = path.stat().st_mtime_ns if path.exists() else None
    page.keyboard.press("Control+s")
    dirty = page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
    deadline = time.monotonic() + SAVE_TIMEOUT
    notebook = None
    while time.monotonic() < deadline:
        if dirty.count() == 0 and path.exists() and path.stat().st_mtime_ns != before:
            try:
                notebook = nbformat.read(path, as_version=4)
            except Exception:  # caught mid-write: read the finished file on the next poll
                notebook = None
            if notebook is not None and all(notebook.cells[index].get("execution_count") for index in ran):
                return notebook
        page.wait_for_timeout(100)
    fail_with_page(page, f"the notebook was not saved {SAVE_TIMEOUT:.0f} s after Ctrl+S (file changed: "
                         f"{path.exists() and path.stat().st_mtime_ns != before}, cells {list(ran)} with an "
                         f"execution count in it: {notebook is not None})")


def error_text(cell) -> str:
    """The error outputs of a code cell as one string ('' when it raised nothing)."""
    return "\n".join(f"{output.ename}: {output.evalue}" for output in cell.get("outputs", [])
                     if output.output_type == "error")
