"""`autograder feedback`: the class's feedback pages as one zip, and test results (hidden tests' names and
results, never their code) only for students past their due date. Fast: a run folder is written here."""

from __future__ import annotations

import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from autograder.errors import AutograderError
from autograder.grading import grades_csv, lateness
from autograder.grading.lateness import Term, parse_time
from autograder.grading.results import ClassResult, Row
from autograder.grading.status import Status
from autograder.lms import feedback_zip
from autograder.runfolder import RunFolder

NOW = datetime(2027, 2, 1, tzinfo=timezone.utc)
PAST, FUTURE = parse_time("2027-01-15T23:59:00+01:00", "t"), parse_time("2027-03-01T23:59:00+01:00", "t")


def run_folder(out: Path, notebooks: list[str]) -> Path:
    """What `autograder grade` leaves: grades.csv, max_points.csv, feedback pages; ann full marks, bob
    fails the hidden-test cell `test_hidden`, cy's submission could not be read."""
    several = len(notebooks) > 1

    def col(notebook: str, cell: str) -> str:
        return f"{Path(notebook).stem}:{cell}" if several else cell

    rows, points = [], {}
    for notebook in notebooks:
        points |= {col(notebook, "test_visible"): 2.0, col(notebook, "test_hidden"): 3.0}
        for student, hidden in (("ann", 3.0), ("bob", 0.0)):
            rows.append(Row(student, "ps1", notebook=notebook, score=2 + hidden, max_score=5, status=Status.GRADED,
                            cells={col(notebook, "test_visible"): 2.0, col(notebook, "test_hidden"): hidden}))
            page = RunFolder(out, several).feedback_page(student, notebook)
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text(f"<html>feedback of {student} on {notebook}</html>")
        rows.append(Row("cy", "ps1", notebook=notebook, max_score=5, status=Status.INVALID, reason="not a notebook"))
    result = ClassResult("ps1", rows, list(points), 5.0 * len(notebooks), out,
                         notebooks={notebook: 5.0 for notebook in notebooks}, cell_points=points)
    grades_csv.write_csv(result)
    grades_csv.write_max_points(result)
    return out


def build(out: Path, term: Term, results: bool = True) -> tuple[feedback_zip.Released, zipfile.ZipFile]:
    due = lateness.due_dates(term, "ps1", {"ann", "bob", "cy"})
    released = feedback_zip.build(out, "ps1", out / "feedback.zip", due=due, include_results=results, now=NOW)
    return released, zipfile.ZipFile(out / "feedback.zip")


def test_every_page_goes_in_a_folder_per_student_and_no_results_unless_asked(tmp_path):
    released, archive = build(run_folder(tmp_path, ["ps1.ipynb"]), Term(), results=False)
    assert sorted(archive.namelist()) == ["ann/ps1.html", "bob/ps1.html"]
    assert archive.read("bob/ps1.html") == b"<html>feedback of bob on ps1.ipynb</html>"
    assert released.without_page == ["cy ps1.ipynb: invalid (not a notebook)"]


def test_after_the_due_date_every_test_is_named_with_its_result(tmp_path):
    released, archive = build(run_folder(tmp_path, ["ps1.ipynb"]), Term(due={"ps1": PAST}))
    page = archive.read("bob/ps1-test-results.html").decode()
    assert "<td>test_visible</td><td>2</td><td>2</td><td>passed</td>" in page
    assert "<td>test_hidden</td><td>0</td><td>3</td><td>not passed</td>" in page
    assert "<td>test_hidden</td><td>3</td><td>3</td><td>passed</td>" in archive.read("ann/ps1-test-results.html").decode()
    assert released.with_results == ["ann", "bob", "cy"] and released.withheld == []


def test_a_student_whose_extension_runs_on_gets_no_results_yet(tmp_path):
    term = Term(due={"ps1": PAST}, extensions={("bob", "ps1"): FUTURE})
    released, archive = build(run_folder(tmp_path, ["ps1.ipynb"]), term)
    assert "bob/ps1-test-results.html" not in archive.namelist() and "ann/ps1-test-results.html" in archive.namelist()
    assert released.withheld == [f"bob (due {FUTURE.isoformat()})"]


def test_before_the_due_date_nobody_gets_results(tmp_path):
    released, archive = build(run_folder(tmp_path, ["ps1.ipynb"]), Term(due={"ps1": FUTURE}))
    assert not [name for name in archive.namelist() if "test-results" in name]
    assert len(released.withheld) == 3


def test_results_without_a_due_date_are_refused(tmp_path):
    with pytest.raises(feedback_zip.FeedbackError, match="no due date for ps1"):
        build(run_folder(tmp_path, ["ps1.ipynb"]), Term())


def test_with_several_notebooks_each_results_page_holds_its_own_notebooks_tests(tmp_path):
    _, archive = build(run_folder(tmp_path, ["part1.ipynb", "part2.ipynb"]), Term(due={"ps1": PAST}))
    assert {"ann/part1.html", "ann/part2.html", "bob/part2-test-results.html"} <= set(archive.namelist())
    page = archive.read("bob/part2-test-results.html").decode()
    assert page.count("<td>test_") == 2 and "part1" not in page


def test_a_run_folder_without_grades_says_to_grade_first(tmp_path):
    with pytest.raises(AutograderError, match="run `autograder grade` first"):
        build(tmp_path, Term())


def test_students_of_an_lms_download_get_the_names_the_lms_takes_back(tmp_path):
    out = run_folder(tmp_path, ["ps1.ipynb"])
    (out / "intake.csv").write_text(
        "student_id,notebook,lms,name,late_marked,origin,reupload,problem\n"
        "ann,ps1.ipynb,canvas,annlee,yes,annlee_LATE_ann_9_ps1.ipynb,annlee_LATE_12345_678_,\n"
        "bob,ps1.ipynb,moodle,Bob Ray,,x,Bob Ray_1002_assignsubmission_file/,\n"
        "cy,ps1.ipynb,moodle,,,x,,not a notebook\n")
    released, archive = build(out, Term(due={"ps1": PAST}))
    assert sorted(archive.namelist()) == [
        "Bob Ray_1002_assignsubmission_file/ps1-feedback.html", "Bob Ray_1002_assignsubmission_file/ps1-test-results.html",
        "annlee_LATE_12345_678_ps1-feedback.html", "annlee_LATE_12345_678_ps1-test-results.html",
        "cy/ps1-test-results.html"]     # no re-upload name: cy's file named no student the LMS knows
    # Canvas's re-upload reads the user and attachment ids as the first two all-digit parts of the name
    digits = [part for part in "annlee_LATE_12345_678_ps1-feedback.html".split("_") if part.isdigit()][:2]
    assert digits == ["12345", "678"]
