"""The class's feedback as one zip to hand back through the LMS, after `autograder grade`.

    autograder feedback 01_session_vs_eager [--test-results]

Every student gets a folder `<student_id>/` with nbgrader's feedback page of each notebook
(`<notebook>.html`, hidden tests removed). With `test_results`, each folder also gets
`<notebook>-test-results.html`: every graded test cell by name with its points and passed or not,
hidden tests included (their names and results, never their code). Test results go only to the
students whose due date (the term file's, or their extension) has passed; the others are listed.

A student whose notebook came from an LMS download gets the files under the names that LMS takes back
(autograder.lms.downloads, from the run's intake.csv): Canvas `doejane_12345_678_<notebook>-feedback.html`
for the gradebook's "Upload Submissions", Moodle `Jane Doe_1001_assignsubmission_file/<notebook>-feedback.html`
for "Upload multiple feedback files in a zip".
"""

from __future__ import annotations

import csv
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from autograder.grading import pages
from autograder.grading.export import COLUMNS
from autograder.grading.lateness import Term


class FeedbackError(ValueError):
    """The feedback cannot be released as asked: the message says why."""


@dataclass
class Released:
    students: int = 0
    pages: int = 0
    with_results: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)      # test results not yet due: student (due date)
    without_page: list[str] = field(default_factory=list)  # student notebook: status and reason


def _read(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except OSError as error:
        raise FeedbackError(f"{path}: {error} (run `autograder grade` first)") from None


def students(out: Path) -> set[str]:
    """The students of a run's grades.csv."""
    return {row["student_id"] for row in _read(out / "grades.csv")}


def feedback_page(out: Path, student: str, notebook: str, several: bool) -> Path:
    """Where `autograder grade` wrote a student's feedback on a notebook (autograder.grading.pipeline)."""
    return out / "feedback" / student / f"{Path(notebook).stem}.html" if several else out / "feedback" / f"{student}.html"


def test_results(row: dict[str, str], maxima: dict[str, str], notebook: str, several: bool) -> list[dict]:
    """The graded cells of `row`'s notebook: name, points, out of, passed (full points)."""
    prefix = f"{Path(notebook).stem}:" if several else ""
    cells = [column for column in row if column not in COLUMNS and column.startswith(prefix) and column in maxima]
    return [{"name": column.removeprefix(prefix), "points": row[column] or "0", "of": maxima[column],
             "passed": bool(row[column]) and float(row[column]) >= float(maxima[column])} for column in cells]


def names(out: Path) -> dict[tuple[str, str], str]:
    """(student, notebook) -> what a feedback file's name starts with, for students of an LMS download."""
    path = out / "intake.csv"
    if not path.exists():
        return {}
    return {(line["student_id"], line["notebook"]): line["reupload"] for line in _read(path) if line["reupload"]}


def _archive_name(reupload: str | None, student: str, stem: str, kind: str) -> str:
    """`<student>/<stem>.html` (or `-test-results.html`); under the LMS's re-upload name when it has one."""
    if reupload:
        return f"{reupload}{stem}-{kind}.html"
    return f"{student}/{stem}.html" if kind == "feedback" else f"{student}/{stem}-{kind}.html"


def build(out: Path, assignment: str, target: Path, *, term: Term, include_results: bool, now: datetime) -> Released:
    rows = _read(out / "grades.csv")
    reupload = names(out)
    maxima = {line["column"]: line["max_points"] for line in _read(out / "max_points.csv")}
    notebooks = {row["notebook"] for row in rows}
    several = len(notebooks) > 1
    if include_results and assignment not in term.due:
        raise FeedbackError(f"no due date for {assignment} in the term file: hidden-test results are released "
                            "only after it")
    released = Released(students=len({row["student_id"] for row in rows}))
    withheld: set[str] = set()
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for row in sorted(rows, key=lambda line: (line["student_id"], line["notebook"])):
            student, notebook = row["student_id"], row["notebook"]
            stem = Path(notebook).stem
            start = reupload.get((student, notebook))
            page = feedback_page(out, student, notebook, several)
            if page.exists():
                archive.write(page, _archive_name(start, student, stem, "feedback"))
                released.pages += 1
            else:
                released.without_page.append(f"{student} {notebook}: {row['status']}"
                                             + (f" ({row['reason']})" if row["reason"] else ""))
            if not include_results:
                continue
            due = term.due_for(student, assignment)
            if due > now:
                if student not in withheld:
                    withheld.add(student)
                    released.withheld.append(f"{student} (due {due.isoformat()})")
                continue
            archive.writestr(_archive_name(start, student, stem, "test-results"), pages.render(
                "test_results.html", assignment=assignment, student=student, notebook=notebook, row=row,
                results=test_results(row, maxima, notebook, several)))
            if student not in released.with_results:
                released.with_results.append(student)
    return released
