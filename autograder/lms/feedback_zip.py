"""The class's feedback as one zip to hand back through the LMS, after `autograder grade`.

    autograder feedback 01_session_vs_eager [--test-results]

Every student gets a folder `<student_id>/` with nbgrader's feedback page of each notebook
(`<notebook>.html`, hidden tests removed). With `test_results`, each folder also gets
`<notebook>-test-results.html`: every graded test cell by name with its points and passed or not,
hidden tests included (their names and results, never their code). Test results go only to the
students whose due date (the term file's, or their extension, given as plain data) has passed; the
others are listed.

A student whose notebook came from an LMS download gets the files under the names that LMS takes back
(autograder.lms.downloads, from the run's intake.csv): Canvas `doejane_12345_678_<notebook>-feedback.html`
for the gradebook's "Upload Submissions", Moodle `Jane Doe_1001_assignsubmission_file/<notebook>-feedback.html`
for "Upload multiple feedback files in a zip".
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from autograder import pages
from autograder.errors import AutograderError
from autograder.runfolder import GradesLine, RunFolder, read_grades, read_intake, read_max_points, stem


class FeedbackError(AutograderError):
    """The feedback cannot be released as asked: the message says why."""


@dataclass
class Released:
    students: int = 0
    pages: int = 0
    with_results: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)      # test results not yet due: student (due date)
    without_page: list[str] = field(default_factory=list)  # student notebook: status and reason


def students(out: Path) -> set[str]:
    """The students of a run's grades.csv."""
    return {line.student_id for line in read_grades(RunFolder(out).grades_csv)}


def test_results(line: GradesLine, maxima: dict[str, float], run_folder: RunFolder) -> list[dict]:
    """The graded cells of `line`'s notebook: name, points, out of, passed (full points)."""
    found = []
    for column, points in line.cells.items():
        cell = run_folder.cell_of(column, line.notebook)
        if cell is not None and column in maxima:
            found.append({"name": cell, "points": f"{points or 0:g}", "of": f"{maxima[column]:g}",
                          "passed": points is not None and points >= maxima[column]})
    return found


def reupload_names(run_folder: RunFolder) -> dict[tuple[str, str], str]:
    """(student, notebook) -> what a feedback file's name starts with, for students of an LMS download."""
    if not run_folder.intake_csv.exists():
        return {}
    return {(line.student_id, line.notebook): line.reupload
            for line in read_intake(run_folder.intake_csv) if line.reupload}


def archive_name(reupload: str | None, student: str, notebook: str, kind: str, suffix: str = ".html") -> str:
    """`<student>/<stem>.html` (or `-<kind>.html`, e.g. `-test-results.html`); under the LMS's re-upload
    name when it has one (`<reupload><stem>-<kind><suffix>`). Every zip handed back through the LMS
    (feedback, solutions) names its files here."""
    if reupload:
        return f"{reupload}{stem(notebook)}-{kind}{suffix}"
    return f"{student}/{stem(notebook)}{suffix}" if kind == "feedback" else f"{student}/{stem(notebook)}-{kind}{suffix}"


def build(out: Path, assignment: str, target: Path, *, due: dict[str, datetime] | None, include_results: bool,
          now: datetime) -> Released:
    """The zip of `out`'s feedback pages at `target`. `due` is each student's due date (None: the
    assignment has none), which releases the test results (`include_results`) of those past it at `now`."""
    run_folder = RunFolder.open(out)
    lines = read_grades(run_folder.grades_csv)
    reupload = reupload_names(run_folder)
    maxima = read_max_points(run_folder.max_points_csv)
    if include_results and due is None:
        raise FeedbackError(f"no due date for {assignment} in the term file: hidden-test results are released "
                            "only after it")
    released = Released(students=len({line.student_id for line in lines}))
    withheld: set[str] = set()
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for line in sorted(lines, key=lambda line: (line.student_id, line.notebook)):
            student, notebook = line.student_id, line.notebook
            start = reupload.get((student, notebook))
            page = run_folder.feedback_page(student, notebook)
            if page.exists():
                archive.write(page, archive_name(start, student, notebook, "feedback"))
                released.pages += 1
            else:
                released.without_page.append(f"{student} {notebook}: {line.status}"
                                             + (f" ({line.reason})" if line.reason else ""))
            if not include_results:
                continue
            assert due is not None, "include_results without due dates raised above"
            if due[student] > now:
                if student not in withheld:
                    withheld.add(student)
                    released.withheld.append(f"{student} (due {due[student].isoformat()})")
                continue
            archive.writestr(archive_name(start, student, notebook, "test-results"), pages.render(
                "test_results.html", assignment=assignment, student=student, notebook=notebook, row=line,
                results=test_results(line, maxima, run_folder)))
            if student not in released.with_results:
                released.with_results.append(student)
    return released
