"""A student's term on the class's hub in Chromium: launched from the LMS (the test LTI platform's pages
post the login initiation and the signed id_token, as Canvas or Moodle do), in their own JupyterLab:
the Assignments panel lists the released assignment, Fetch, the notebook answered and validated with
nbgrader's Validate button, Submit; the instructor collects, grades and releases the feedback from a
terminal of their server (as their Unix user); the panel's Fetch Feedback brings the student's page. A
notebook of another student, opened by its URL, is refused. Root only, like tests/test_hub.py."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from tests.browser import lab_ui
from tests.hub_server import BIN, ROOT, Hub, as_user, hub_folder, reachable_python, remove_unix_users
from tests.lti_platform import Launch, Platform
from tests.test_any_assignment import part

pytestmark = [pytest.mark.hub, pytest.mark.browser,
              pytest.mark.skipif(os.geteuid() != 0, reason="the hub makes Unix users and runs servers as them: needs root")]

COURSE, ASSIGNMENT = "tf-internals", "ps1"
INSTRUCTOR, ANN, BEN = "7340001", "7340003", "7340004"
USERS = (INSTRUCTOR, ANN, BEN, f"grader-{COURSE}-lab")
ANSWER = "def scale(value):\n    return 2 * value"


@pytest.fixture(scope="module")
def hub():
    remove_unix_users(USERS)
    platform = Platform()
    with reachable_python(), hub_folder() as folder:
        running = Hub(folder, platform, f"{COURSE}-lab", (INSTRUCTOR,))
        platform.hub_url = running.url
        running.platform = platform
        try:
            yield running
        finally:
            running.stop()
            platform.close()
            remove_unix_users(USERS)


def instructor(hub: Hub, *arguments: str, cwd: Path) -> None:
    done = as_user(INSTRUCTOR, [str(BIN / "nbgrader"), *arguments], cwd, hub.state / "jupyter-config")
    assert done.returncode == 0, f"nbgrader {' '.join(arguments)}:\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def released(hub):
    """The instructor launched, their course directory made and ps1 released from a terminal."""
    assert Launch(hub.platform, hub.url, INSTRUCTOR, ["Instructor"]).run().status_code == 302
    assert Launch(hub.platform, hub.url, BEN, ["Learner"]).run().status_code == 302
    hub.spawn(INSTRUCTOR)
    hub.spawn(BEN)
    course = Path(pwd.getpwnam(INSTRUCTOR).pw_dir) / "course"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    # the hub's course id: the course directory's own configuration says the same
    (course / "nbgrader_config.py").write_text((course / "nbgrader_config.py").read_text()
                                               + f"\nc.CourseDirectory.course_id = {COURSE + '-lab'!r}\n")
    nbformat.write(part(2), course / "source" / ASSIGNMENT / "ps1.ipynb")
    subprocess.run(["chown", "-R", f"{INSTRUCTOR}:{INSTRUCTOR}", str(course)], check=True)
    instructor(hub, "generate_assignment", ASSIGNMENT, cwd=course)
    instructor(hub, "release_assignment", ASSIGNMENT, cwd=course)
    return course


def test_a_student_launches_fetches_validates_submits_and_reads_feedback_in_jupyterlab(hub, released, page):
    page.goto(hub.platform.launch_url(ANN, ["Learner"]))
    page.wait_for_url(re.compile(rf"/user/{ANN}/lab"), timeout=120_000)
    lab_ui.wait_visible(page, page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"), "JupyterLab's menu bar")

    lab_ui.menu(page, "Nbgrader", "Assignment List")
    row = page.locator("#released_assignments_list .list_item", has_text=ASSIGNMENT)
    lab_ui.wait_visible(page, row, "the released assignment in the Assignments panel")
    row.first.get_by_role("button", name="Fetch").click()
    fetched = page.locator("#fetched_assignments_list .list_item", has_text=ASSIGNMENT)
    lab_ui.wait_visible(page, fetched, "the fetched assignment")
    notebook = Path(pwd.getpwnam(ANN).pw_dir) / ASSIGNMENT / "ps1.ipynb"
    assert notebook.stat().st_uid == pwd.getpwnam(ANN).pw_uid

    lab_ui.open_notebook(page, f"{hub.url}/user/{ANN}/lab/tree/{ASSIGNMENT}/ps1.ipynb")
    cells = nbformat.read(notebook, as_version=4).cells
    index = next(i for i, cell in enumerate(cells) if cell.metadata.get("nbgrader", {}).get("solution"))
    editor = page.locator(lab_ui.CELLS).nth(index).locator(".cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(ANSWER)
    saved = lab_ui.save_and_read(page, notebook).cells[index]
    assert saved.source == ANSWER
    page.locator(".jp-NotebookPanel-toolbar .jp-ToolbarButton", has_text="Validate").first.click()
    dialog = lab_ui.wait_visible(page, page.locator(".jp-Dialog-content", has_text="Validation"),
                                 "nbgrader's validation dialog", timeout=lab_ui.KERNEL_TIMEOUT)
    assert "Success! Your notebook passes all the tests." in dialog.first.inner_text(), dialog.first.inner_text()
    page.keyboard.press("Escape")

    page.keyboard.press("Escape")  # the dialog closed (it may already be)
    lab_ui.menu(page, "Nbgrader", "Assignment List")  # the notebook's URL opened a new JupyterLab page
    lab_ui.wait_visible(page, fetched, "the fetched assignment, with its Submit button")
    fetched.first.get_by_role("button", name="Submit").click()
    submitted = page.locator("#submitted_assignments_list .list_item", has_text=ASSIGNMENT)
    lab_ui.wait_visible(page, submitted, "the submission in the Assignments panel")

    # the instructor collects, grades, and releases the feedback
    instructor(hub, "collect", ASSIGNMENT, cwd=released)
    out = hub.folder / "grading"
    graded = subprocess.run([str(BIN / "autograder"), "grade", ASSIGNMENT, "--submissions", str(released / "submitted"),
                             "--out", str(out), "--timeout", "120"], cwd=released, capture_output=True, text=True,
                            timeout=600, env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"))
    assert graded.returncode == 0, graded.stderr[-3000:]
    placed = subprocess.run([str(BIN / "autograder"), "feedback", ASSIGNMENT, "--grades-dir", str(out),
                             "--exchange", str(released)], cwd=released, capture_output=True, text=True, timeout=300)
    assert placed.returncode == 0, placed.stderr[-2000:]
    subprocess.run(["chown", "-R", f"{INSTRUCTOR}:{INSTRUCTOR}", str(released / "feedback")], check=True)
    instructor(hub, "release_feedback", ASSIGNMENT, cwd=released)

    page.reload()
    lab_ui.wait_visible(page, page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"), "JupyterLab's menu bar")
    lab_ui.menu(page, "Nbgrader", "Assignment List")
    submitted = page.locator("#submitted_assignments_list .list_item", has_text=ASSIGNMENT)
    lab_ui.wait_visible(page, submitted, "the submission after the feedback was released")
    submitted.first.get_by_role("button", name="Fetch Feedback").click()
    pages = Path(pwd.getpwnam(ANN).pw_dir) / ASSIGNMENT / "feedback"
    lab_ui.wait_visible(page, page.get_by_text("view feedback"), "the fetched feedback's link")
    fetched_pages = list(pages.glob("*/ps1.html"))
    assert len(fetched_pages) == 1 and "4.0" in fetched_pages[0].read_text(encoding="utf-8")

    # another student's notebook, by its URL, is refused
    answer = page.goto(f"{hub.url}/user/{BEN}/lab/tree/{ASSIGNMENT}/ps1.ipynb")
    assert answer.status == 403 or "403" in page.inner_text("body"), page.inner_text("body")[:500]
