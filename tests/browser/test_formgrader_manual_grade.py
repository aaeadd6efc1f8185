"""An instructor grades a written answer in nbgrader's formgrader: `autograder formgrade` prepares the
run's course directory, the formgrader's page for ann's notebook takes a score and a comment, and the
next `autograder grade --force` puts them in grades.csv as a hand grade by the formgrader. On the
shared PostgreSQL gradebook (`autograder formgrade --db`) the page saves there while another grader
grades another answer, and grading reads both back."""

from __future__ import annotations

import re
import shutil
import time

import pytest
from nbgrader.api import Gradebook
from playwright.sync_api import Page, expect

from autograder import cli
from autograder.grading import formgrade
from autograder.grading.cache import safe_id
from autograder.runfolder import RunFolder
from autograder.nbgrader_setup.config import COURSE_ID
from autograder.settings import GradingSettings
from tests import servers
from tests.browser import lab_ui
from tests.browser.server import LabServer
from tests.test_manual_grading import ASSIGNMENT, NBGRADER_AUTOFLUSH, build_class, grade_class, grades, run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    graded = build_class(tmp_path_factory.mktemp("formgrade-class"))
    assert graded["done"].returncode == 0, graded["done"].stderr[-2000:]
    done = run("formgrade", ASSIGNMENT, "--grades-dir", str(graded["out"]), "--prepare-only", cwd=graded["root"])
    assert done.returncode == 0, done.stderr
    with LabServer(RunFolder(graded["out"]).formgrade_dir, tmp_path_factory.mktemp("formgrade-jupyter")) as server:
        yield graded, server


@pytest.fixture(scope="module")
def on_postgres(prepared, tmp_path_factory):
    """The same class, its run folder copied without its SQLite formgrader and prepared by `autograder
    formgrade --db` on a throw-away PostgreSQL server, and a JupyterLab on that formgrade folder."""
    graded, _ = prepared
    with servers.postgres() as url:
        out = tmp_path_factory.mktemp("formgrade-postgres") / "out"
        shutil.copytree(graded["out"], out, ignore=shutil.ignore_patterns("formgrade"))
        with pytest.MonkeyPatch.context() as patch:   # the command, in this process
            patch.setenv("COURSE_ROOT", str(graded["root"]))
            assert cli.main(["formgrade", ASSIGNMENT, "--grades-dir", str(out), "--db", url, "--prepare-only"]) == 0
        with LabServer(RunFolder(out).formgrade_dir, tmp_path_factory.mktemp("formgrade-postgres-jupyter")) as server:
            yield out, url, server


def sqlite_gradebook(out) -> str:
    return f"sqlite:///{RunFolder(out).formgrade_dir / 'gradebook.db'}"


def manual_grade(url: str, student: str) -> tuple[float | None, str | None]:
    with Gradebook(url, COURSE_ID) as gradebook:
        grade = gradebook.find_grade("written_why", "ps1", ASSIGNMENT, safe_id(student))
        comment = gradebook.find_comment("written_why", "ps1", ASSIGNMENT, safe_id(student))
        return grade.manual_score, comment.manual_comment


def open_answer(page: Page, lab: LabServer, url: str, student: str):
    """The formgrader's page of `student`'s notebook, loaded; its written answer's score box."""
    with Gradebook(url, COURSE_ID) as gradebook:
        notebook_id = gradebook.find_submission_notebook("ps1", ASSIGNMENT, safe_id(student)).id
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")   # logs the browser in (the formgrader's API calls need the cookie)
    lab_ui.wait_visible(page, page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"), "the Nbgrader menu", 60)
    page.goto(f"{lab.url}/formgrader/submissions/{notebook_id}/")
    score = lab_ui.wait_visible(page, page.locator("input.score#written_why"), "the written answer's score box")
    # the tests' points load from the gradebook as the placeholder (a hand grade would be the value)
    expect(page.locator("input.score#test_scale")).to_have_attribute("placeholder", "3", timeout=60_000)
    return score


def grade_answer(page: Page, score, url: str, student: str, points: str, comment: str) -> None:
    """Type the score and the comment as a grader does, and wait until the gradebook holds both."""
    score.fill(points)
    score.press("Tab")
    box = page.locator("textarea#written_why-comment")
    # the formgrader binds the comment box once its comments are loaded (a request of their own, apart
    # from the grades'); it then gives the box its placeholder, and only then is a typed comment saved
    # (typed before, it is lost: nothing listens, and the first render empties the box)
    expect(box).to_have_attribute("placeholder", re.compile(".+"), timeout=60_000)
    box.fill(comment)
    box.press("Tab")
    deadline = time.monotonic() + lab_ui.SAVE_TIMEOUT
    while manual_grade(url, student) != (float(points), comment):
        if time.monotonic() > deadline:
            lab_ui.fail_with_page(page, f"the formgrader did not save the grade: {manual_grade(url, student)}")
        time.sleep(0.5)


def test_a_written_answer_graded_in_the_formgrader_reaches_grades_csv(prepared, page):
    graded, lab = prepared
    out = graded["out"]
    score = open_answer(page, lab, sqlite_gradebook(out), "ann")
    assert "It multiplies by" in lab_ui.visible_text(page), "the formgrader shows ann's answer"
    grade_answer(page, score, sqlite_gradebook(out), "ann", "1.5", "right, but why 2?")

    again = grade_class(graded["subs"], out, graded["root"], "--force")
    assert again.returncode == 0, again.stderr[-2000:]
    ann = grades(out)["ann"]
    assert (ann["status"], float(ann["score"]), ann["written_why"]) == ("graded", 5.5, "1.5")
    assert ann["overrides"] == "written_why: unscored -> 1.5 by formgrader (right, but why 2?)"


@pytest.mark.filterwarnings(NBGRADER_AUTOFLUSH)
def test_a_formgrader_on_the_shared_postgres_gradebook_grades_beside_another_grader(on_postgres, page):
    """Two graders at once on the gradebook of `--db`: this formgrader's page grades ann's answer while
    the other grader, in a gradebook session of their own, grades cy's; both grades are in the shared
    gradebook and grading reads both back (tests/test_manual_grading.py takes two such graders through
    a `--force` re-grade)."""
    out, url, lab = on_postgres
    score = open_answer(page, lab, url, "ann")
    assert "It multiplies by" in lab_ui.visible_text(page), "the formgrader shows ann's answer"
    with Gradebook(url, COURSE_ID) as other:   # the other grader saves while this page is open
        other.find_grade("written_why", "ps1", ASSIGNMENT, safe_id("cy")).manual_score = 1.0
        other.find_comment("written_why", "ps1", ASSIGNMENT, safe_id("cy")).manual_comment = "which factor?"
        other.db.commit()
    grade_answer(page, score, url, "ann", "1.5", "right, but why 2?")
    assert manual_grade(url, "cy") == (1.0, "which factor?"), "the other grader's grade stands"
    by_hand = {(override.student_id, override.cell): (override.points, override.comment, override.grader)
               for override in formgrade.hand_grades(RunFolder(out), ASSIGNMENT, GradingSettings(db_url=url))}
    assert by_hand == {("ann", "written_why"): (1.5, "right, but why 2?", "formgrader"),
                       ("cy", "written_why"): (1.0, "which factor?", "formgrader")}
