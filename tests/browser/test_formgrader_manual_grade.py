"""An instructor grades a written answer in nbgrader's formgrader: `autograder formgrade` prepares the
run's course directory, the formgrader's page for ann's notebook takes a score and a comment, and the
next `autograder grade --force` puts them in grades.csv as a hand grade by the formgrader."""

from __future__ import annotations

import time

import pytest
from nbgrader.api import Gradebook
from playwright.sync_api import expect

from autograder.grading.cache import safe_id
from autograder.runfolder import RunFolder
from autograder.nbgrader_setup.config import COURSE_ID
from tests.browser import lab_ui
from tests.browser.server import LabServer
from tests.test_manual_grading import ASSIGNMENT, build_class, grade_class, grades, run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    graded = build_class(tmp_path_factory.mktemp("formgrade-class"))
    assert graded["done"].returncode == 0, graded["done"].stderr[-2000:]
    done = run("formgrade", ASSIGNMENT, "--grades-dir", str(graded["out"]), "--prepare-only", cwd=graded["root"])
    assert done.returncode == 0, done.stderr
    with LabServer(RunFolder(graded["out"]).formgrade_dir, tmp_path_factory.mktemp("formgrade-jupyter")) as server:
        yield graded, server


def manual_grade(out, student: str) -> tuple[float | None, str | None]:
    with Gradebook(f"sqlite:///{RunFolder(out).formgrade_dir / 'gradebook.db'}", COURSE_ID) as gradebook:
        grade = gradebook.find_grade("written_why", "ps1", ASSIGNMENT, safe_id(student))
        comment = gradebook.find_comment("written_why", "ps1", ASSIGNMENT, safe_id(student))
        return grade.manual_score, comment.manual_comment


def test_a_written_answer_graded_in_the_formgrader_reaches_grades_csv(prepared, page):
    graded, lab = prepared
    out = graded["out"]
    with Gradebook(f"sqlite:///{RunFolder(out).formgrade_dir / 'gradebook.db'}", COURSE_ID) as gradebook:
        notebook_id = gradebook.find_submission_notebook("ps1", ASSIGNMENT, safe_id("ann")).id
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")   # logs the browser in (the formgrader's API calls need the cookie)
    lab_ui.wait_visible(page, page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"), "the Nbgrader menu", 60)
    page.goto(f"{lab.url}/formgrader/submissions/{notebook_id}/")
    score = lab_ui.wait_visible(page, page.locator("input.score#written_why"), "the written answer's score box")
    # the tests' points load from the gradebook as the placeholder (a hand grade would be the value)
    expect(page.locator("input.score#test_scale")).to_have_attribute("placeholder", "3", timeout=60_000)
    assert "It multiplies by" in lab_ui.visible_text(page), "the formgrader shows ann's answer"
    score.fill("1.5")
    score.press("Tab")
    comment = page.locator("textarea#written_why-comment")
    comment.fill("right, but why 2?")
    comment.press("Tab")
    deadline = time.monotonic() + lab_ui.SAVE_TIMEOUT
    while manual_grade(out, "ann") != (1.5, "right, but why 2?"):
        if time.monotonic() > deadline:
            lab_ui.fail_with_page(page, f"the formgrader did not save the grade: {manual_grade(out, 'ann')}")
        time.sleep(0.5)

    again = grade_class(graded["subs"], out, graded["root"], "--force")
    assert again.returncode == 0, again.stderr[-2000:]
    ann = grades(out)["ann"]
    assert (ann["status"], float(ann["score"]), ann["written_why"]) == ("graded", 5.5, "1.5")
    assert ann["overrides"] == "written_why: unscored -> 1.5 by formgrader (right, but why 2?)"
