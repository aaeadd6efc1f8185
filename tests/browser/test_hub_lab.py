"""A term of assignment 01 on the class's hub, in Chromium: an instructor and two students, each in a
browser of their own, launched from the test LMS's pages (the login initiation and the signed id_token
posted by auto-submitting forms, as Canvas or Moodle do; the real LTI13Authenticator checks them).

- The instructor opens the formgrader (the hub service) and releases 01 with its Release button.
- Each student opens Nbgrader > Assignment List in their own JupyterLab (whose Nbgrader menu has no
  Formgrader: the instructor's tools are the service's), fetches 01, answers the
  `make_standardize` exercise in the notebook (ann correctly, ben with `reduce_retracing=True`, which
  traces twice), presses Validate and submits, one after the other (nbgrader's Validate runs the
  notebook inside the server's request: on a busy machine two at once made one server look gone).
- The instructor collects with the formgrader's Collect button; `autograder grade` grades what was
  collected, `autograder feedback --exchange` places the pages, `nbgrader release_feedback` releases
  them (as the formgrader's Unix user, as in its terminal).
- Each student presses Fetch Feedback and reads their score on their own page.
- Ben is refused ann's notebook by its URL, through the contents API, and from a terminal of his own.

The release is the repository's 01 under the `ci` profile (as in the other browser tests), so Validate
runs the notebook in seconds. Root only, like tests/test_hub.py: the test makes its Unix users and
removes them.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from autograder.authoring.demo import type_in_solutions
from tests.browser import lab_ui
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS
from tests.browser.courses import LAYOUT
from tests.hub_server import BIN, Hub, as_user, class_hub, course_directory, grade_collected

pytestmark = [pytest.mark.hub, pytest.mark.browser,
              pytest.mark.skipif(os.geteuid() != 0, reason="the hub makes Unix users and runs servers as them: needs root")]

COURSE, ASSIGNMENT = "tf-internals-lab", "01_session_vs_eager"
NOTEBOOK = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
EXERCISE = "make_standardize"  # its test cell, test_make_standardize, is worth 2 points
INSTRUCTOR, ANN, BEN = "7340001", "7340003", "7340004"
GRADER = f"grader-{COURSE}"  # the formgrader's Unix user, owner of the course directory
USERS = (INSTRUCTOR, ANN, BEN, GRADER)
WRONG = '''def make_standardize(features):
    @tf.function(reduce_retracing=True)
    def standardize(batch):
        mean, variance = tf.nn.moments(batch, axes=[0])
        return (batch - mean) / tf.sqrt(variance + EPSILON)
    return standardize'''


@pytest.fixture(scope="module")
def hub():
    with class_hub(COURSE, (INSTRUCTOR,), USERS) as running:
        yield running


@pytest.fixture(scope="module")
def course(hub) -> Path:
    return course_directory(hub, COURSE, ASSIGNMENT)


@pytest.fixture(scope="module")
def browsers():
    """One Chromium, and a browser of its own (cookies, storage) for each user; their last screens are
    saved as build/screenshots/hub-<user>.png."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        pages = {}
        for user in (INSTRUCTOR, ANN, BEN):
            page = chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(60_000)
            pages[user] = page
        try:
            yield pages
        finally:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            for user, page in pages.items():
                page.screenshot(path=str(SCREENSHOTS / f"hub-{user}.png"))
            chromium.close()


def launch(hub: Hub, page, user: str, roles: list[str], *, shown: bool = True) -> None:
    """`user` launched from the LMS's page into their JupyterLab, its menu bar shown (`shown`: else
    only as far as the JupyterLab URL, for a user who goes elsewhere next)."""
    page.goto(hub.platform.launch_url(user, roles))
    page.wait_for_url(re.compile(rf"/user/{user}/lab"), timeout=120_000)
    if shown:
        lab_ui.wait_visible(page, page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"),
                            "JupyterLab's menu bar")


def formgrader_button(hub: Hub, page, column: str, done: str) -> None:
    """On the formgrader's Manage Assignments page, the button in 01's row and `column` pressed, and the
    dialog that says `done` closed."""
    page.goto(f"{hub.url}/services/{COURSE}/formgrader/manage_assignments")
    row = page.locator("tr", has=page.locator("td", has_text=ASSIGNMENT))
    button = row.locator(f"td.{column} a")
    lab_ui.wait_visible(page, button, f"the {column} button of {ASSIGNMENT} in the formgrader",
                        timeout=lab_ui.KERNEL_TIMEOUT).first.click()
    dialog = page.locator(".modal-dialog", has_text=done)
    lab_ui.wait_visible(page, dialog, f"the formgrader's {done!r}", timeout=lab_ui.KERNEL_TIMEOUT)


def assignment_list(page) -> None:
    page.keyboard.press("Escape")  # a dialog left open (it may be closed already)
    lab_ui.menu(page, "Nbgrader", "Assignment List")


def panel_action(page, listed: str, button: str, lands: str) -> None:
    """In the Assignments panel, 01's `button` pressed in the list `listed` (released, fetched,
    submitted), and 01 waited for in the list `lands`."""
    assignment_list(page)
    row = page.locator(f"#{listed}_assignments_list .list_item", has_text=ASSIGNMENT)
    lab_ui.wait_visible(page, row, f"the {listed} assignment, with its {button} button")
    row.first.get_by_role("button", name=button).click()
    after = page.locator(f"#{lands}_assignments_list .list_item", has_text=ASSIGNMENT)
    lab_ui.wait_visible(page, after, f"the assignment in the {lands} list after {button}")


def answer_and_validate(page, hub: Hub, student: str, answer: str) -> Path:
    """Fetch 01 in the Assignments panel, open it, type `answer` into the exercise's cell, save, press
    Validate. Returns the student's notebook."""
    panel_action(page, "released", "Fetch", "fetched")
    notebook = Path(pwd.getpwnam(student).pw_dir) / NOTEBOOK
    assert notebook.stat().st_uid == pwd.getpwnam(student).pw_uid, "the fetch did not run as the student"

    lab_ui.open_notebook(page, f"{hub.url}/user/{student}/lab/tree/{NOTEBOOK}")
    cells = nbformat.read(notebook, as_version=4).cells
    index = next(i for i, cell in enumerate(cells) if cell.metadata.get("nbgrader", {}).get("grade_id") == EXERCISE)
    lab_ui.type_into_cell(page, index, answer)
    assert lab_ui.save_and_read(page, notebook).cells[index].source == answer
    page.locator(".jp-NotebookPanel-toolbar .jp-ToolbarButton", has_text="Validate").first.click()
    return notebook


def validation(page, hub: Hub) -> str:
    """The text of nbgrader's validation dialog, once the server's validate call answered. (nbgrader's
    validate handler runs the notebook inside the request, so the student's server answers nothing else
    meanwhile.) A failure says what the servers logged."""
    dialog = page.locator(".jp-Dialog-content", has_text="Validation")
    try:
        dialog.first.wait_for(state="visible", timeout=2 * lab_ui.KERNEL_TIMEOUT * 1000)
    except PlaywrightTimeout:
        lab_ui.fail_with_page(page, "nbgrader's validation dialog did not appear within "
                                    f"{2 * lab_ui.KERNEL_TIMEOUT:.0f} s; the hub's and servers' log ends:\n"
                                    + hub.log.read_text(errors="replace")[-4000:])
    return dialog.first.inner_text()


def fetch_feedback(page, hub: Hub, student: str) -> str:
    """Fetch Feedback pressed in the panel; the fetched page opened in the browser; returns its text."""
    page.reload()
    lab_ui.wait_visible(page, page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"), "JupyterLab's menu bar")
    assignment_list(page)
    submitted = page.locator("#submitted_assignments_list .list_item", has_text=ASSIGNMENT)
    lab_ui.wait_visible(page, submitted, "the submission after the feedback was released")
    submitted.first.get_by_role("button", name="Fetch Feedback").click()
    lab_ui.wait_visible(page, page.get_by_text("view feedback"), "the fetched feedback's link")
    home = Path(pwd.getpwnam(student).pw_dir)
    fetched = list((home / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert len(fetched) == 1, f"{student}'s fetched feedback: {fetched}"
    assert fetched[0].stat().st_uid == pwd.getpwnam(student).pw_uid
    page.goto(f"{hub.url}/user/{student}/files/{fetched[0].relative_to(home).as_posix()}")
    return page.inner_text("body")


def score(text: str) -> tuple[float, float]:
    found = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", text)
    assert found, f"no 'Score: x / y' on the feedback page:\n{text[:1500]}"
    return float(found[1]), float(found[2])


def in_terminal(page, command: str) -> None:
    """A new terminal opened from File > New > Terminal, and `command` typed into it."""
    page.locator(".lm-MenuBar-itemLabel", has_text="File").first.click()
    page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text("New", exact=True).first.click()
    entry = page.locator(".lm-Menu-content .lm-Menu-itemLabel").get_by_text("Terminal", exact=True)
    lab_ui.wait_visible(page, entry, "File > New > Terminal").first.click()
    terminal = page.locator(".jp-Terminal:not(.lm-mod-hidden) .xterm-helper-textarea")
    lab_ui.wait_visible(page, page.locator(".jp-Terminal:not(.lm-mod-hidden) .xterm-screen"), "the terminal")
    terminal.first.focus()
    page.keyboard.type(command)
    page.keyboard.press("Enter")


def test_a_class_releases_answers_validates_submits_is_graded_and_reads_feedback_on_the_hub(hub, course, browsers):
    teacher, ann, ben = browsers[INSTRUCTOR], browsers[ANN], browsers[BEN]

    # the instructor launches from the LMS and releases 01 from the formgrader
    launch(hub, teacher, INSTRUCTOR, ["Instructor"], shown=False)
    formgrader_button(hub, teacher, "release", f"Successfully released '{ASSIGNMENT}'")

    # each student launches, fetches, answers, presses Validate and submits, one after the other
    source = nbformat.read(LAYOUT.source_notebook(ASSIGNMENT), as_version=4)
    right = next(cell.source for cell in type_in_solutions(nbformat.read(course / "release" / NOTEBOOK, as_version=4),
                                                              source).cells
                 if cell.metadata.get("nbgrader", {}).get("grade_id") == EXERCISE)
    launch(hub, ann, ANN, ["Learner"])
    launch(hub, ben, BEN, ["Learner"])
    # a student's Nbgrader menu has the Assignments panel, not the instructor's tools (the service has them)
    ann.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").first.click()
    items = ann.locator(".lm-Menu-content .lm-Menu-itemLabel")
    lab_ui.wait_visible(ann, items.get_by_text("Assignment List", exact=True), "Nbgrader > Assignment List")
    assert items.get_by_text("Formgrader", exact=True).count() == 0, items.all_inner_texts()
    ann.keyboard.press("Escape")
    for page, student, answer, passes in ((ann, ANN, right, True), (ben, BEN, WRONG, False)):
        answer_and_validate(page, hub, student, answer)
        text = validation(page, hub)
        assert text.startswith("Validation Results"), text[:3000]
        # the dialog shows each failing test cell's source: the exercise's test calls _check_standardize
        assert ("_check_standardize(" not in text) == passes, text[:3000]
        assert "The following cell failed" in text, "the blank exercises were reported as passing"
        panel_action(page, "fetched", "Submit", "submitted")

    # ben cannot read ann's notebook from a terminal of his own JupyterLab
    theirs, out_file = Path(pwd.getpwnam(ANN).pw_dir) / NOTEBOOK, Path(pwd.getpwnam(BEN).pw_dir) / "tried.txt"
    in_terminal(ben, f"cat {theirs} > ~/tried.part 2>&1; echo status=$? >> ~/tried.part; mv ~/tried.part ~/tried.txt")
    deadline = time.monotonic() + 60
    while not out_file.exists() and time.monotonic() < deadline:
        ben.wait_for_timeout(200)
    if not out_file.exists():
        lab_ui.fail_with_page(ben, "the command typed into ben's terminal wrote nothing in 60 s")
    tried = out_file.read_text(encoding="utf-8")
    assert out_file.stat().st_uid == pwd.getpwnam(BEN).pw_uid, "ben's terminal did not run as ben"
    assert "Permission denied" in tried and "status=1" in tried and "make_standardize" not in tried, tried

    # ben cannot find ann's submission in the exchange: the inbound folder cannot be listed
    inbound = hub.state / "exchange" / COURSE / "inbound"
    listing = subprocess.run(["runuser", "-u", BEN, "--", "ls", str(inbound)], capture_output=True, text=True)
    assert listing.returncode != 0 and "Permission denied" in listing.stderr, (listing.returncode, listing.stdout)

    # the instructor collects from the formgrader; the class is graded from what was collected
    formgrader_button(hub, teacher, "collect", f"Successfully collected submissions of '{ASSIGNMENT}'")
    for student in (ANN, BEN):
        assert (course / "submitted" / student / ASSIGNMENT / "timestamp.txt").is_file()
    rows = grade_collected(hub, course, ASSIGNMENT)
    assert sorted(rows) == [ANN, BEN]
    assert (float(rows[ANN]["score"]), float(rows[BEN]["score"])) == (2.0, 0.0), rows
    for student in (ANN, BEN):
        assert rows[student]["submitted_at"].startswith(("20", "21")), rows[student]  # nbgrader's timestamp
    released = as_user(GRADER, [str(BIN / "nbgrader"), "release_feedback", ASSIGNMENT], course,
                       hub.state / "jupyter-config")
    assert released.returncode == 0, released.stderr[-3000:]

    # each student fetches their feedback and reads their own score on it
    maximum = float(rows[ANN]["max_score"])
    assert score(fetch_feedback(ann, hub, ANN)) == (2.0, maximum)
    assert score(fetch_feedback(ben, hub, BEN)) == (0.0, maximum)

    # ben is refused ann's notebook by its URL and through the contents API
    by_url = ben.goto(f"{hub.url}/user/{ANN}/lab/tree/{NOTEBOOK}")
    assert by_url.status == 403, (by_url.status, ben.inner_text("body")[:500])
    by_api = ben.request.get(f"{hub.url}/user/{ANN}/api/contents/{NOTEBOOK}")
    assert by_api.status in (403, 404) and "make_standardize" not in by_api.text(), (by_api.status, by_api.text()[:300])
