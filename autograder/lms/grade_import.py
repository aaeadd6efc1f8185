"""A run's grades.csv as the file the LMS imports, matched against the roster it exported.

    autograder export 01_session_vs_eager --format canvas --roster gradebook_export.csv

It is given plain data: grades.csv's rows as `autograder.runfolder.read_grades` reads them.

- `canvas`: Canvas's gradebook import CSV, with the columns of its gradebook export: `Student`, `ID`,
  `SIS User ID`, `SIS Login ID`, `Section`, then the assignment's column, with a `Points Possible`
  row under the header. A column named after the assignment creates a new assignment on import; the
  export reuses the roster's column when one is named `<assignment> (<canvas id>)`, so the grades go
  to the assignment that already exists.
- `moodle`: Moodle's grade import CSV: the roster's user columns, then one grade column; Moodle's
  import preview maps the id column to a user field (e.g. Email address to useremail) and the grade
  column to a grade item.
- `moodle-worksheet`: the assignment's grading worksheet (Grading action "Download grading worksheet")
  given back with its `Grade` column filled, every other column as it was, for "Upload grading
  worksheet" (mod/assign/feedback/offline/importgradeslib.php finds the `Identifier`, `Grade` and
  `Last modified (grade)` columns by their names, in the site's language: English names here).
  Students are matched by participant id, the id Moodle's download of submissions gives.

A student's grade is the sum of `score` (after the late penalty) over the assignment's notebooks.
A roster student without a row gets 0, or an empty cell with `missing="blank"`. A row the roster
cannot place whose submission could not be read at all (status `invalid`: a stray file of an LMS download
that names no student) is left out and listed. Nothing is written when a graded student is not in the roster, or a row has status `error` (the grader failed, not the
student: re-grade it first); every such problem is listed at once.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from autograder.errors import AutograderError
from autograder.lms.roster import Roster
from autograder.runfolder import GradesLine, Status

FORMATS = ("canvas", "moodle", "moodle-worksheet")
MATCH = {"canvas": "ID", "moodle": "Email address", "moodle-worksheet": "Identifier"}  # a student id's column
WORKSHEET_COLUMNS = ("Identifier", "Grade", "Last modified (grade)")
CANVAS_USER_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_USER_COLUMNS = ("First name", "Last name", "ID number", "Institution", "Department", "Email address")


class ExportError(AutograderError):
    """The grades cannot go to the LMS as they are: the message lists every problem."""


@dataclass(frozen=True)
class Grade:
    score: float
    max_score: float
    unreadable: bool = False    # every notebook of the student was `invalid`: never run
    waiting: bool = False       # written answers still wait for a hand grade: the score is not final


def grades_of(lines: list[GradesLine]) -> tuple[dict[str, Grade], float]:
    """grades.csv's rows summed per student over notebooks, and the assignment's max score. A row the
    grader failed (status error) stops the import: every such row is named."""
    problems = [f"{line.student_id} has status error on {line.notebook} ({line.reason}): re-grade it first"
                for line in lines if line.status == Status.ERROR]
    if problems:
        raise ExportError("\n".join(problems))
    grades: dict[str, Grade] = {}
    notebooks: dict[str, float] = {}
    for line in lines:
        before = grades.get(line.student_id, Grade(0.0, 0.0, True))
        grades[line.student_id] = Grade(before.score + line.score, before.max_score + line.max_score,
                                        before.unreadable and line.status == Status.INVALID,
                                        before.waiting or line.status == Status.NEEDS_MANUAL_GRADE)
        notebooks[line.notebook] = line.max_score
    return grades, sum(notebooks.values())


def column_name(roster: Roster, assignment: str, fmt: str, given: str | None) -> str:
    """The assignment's column: `given`, else the roster's `<assignment> (<id>)` on Canvas, else the id."""
    if given:
        return given
    if fmt == "canvas":
        existing = [name for name in roster.columns if name.startswith(f"{assignment} (") and name.endswith(")")]
        if len(existing) == 1:
            return existing[0]
    return assignment


def left_out(roster: Roster, grades: dict[str, Grade]) -> list[str]:
    """Rows the roster cannot place and that never ran (a stray file's row): listed, not exported."""
    return sorted(student for student, grade in grades.items() if student not in roster.students and grade.unreadable)


def rows(roster: Roster, grades: dict[str, Grade], missing: str) -> list[tuple[dict[str, str], str]]:
    """Every roster student with the grade to import; raises when a graded student is not in the roster."""
    unknown = sorted(set(grades) - set(roster.students) - set(left_out(roster, grades)))
    if unknown:
        raise ExportError(f"{len(unknown)} graded student(s) not in {roster.path} (column {roster.match!r}): "
                          + ", ".join(unknown))
    out = []
    for student, row in roster.students.items():
        grade = grades.get(student)
        out.append((row, f"{grade.score:g}" if grade else ("0" if missing == "zero" else "")))
    return out


def write(roster: Roster, grades: dict[str, Grade], max_score: float, assignment: str, fmt: str, target: Path, *,
          missing: str = "zero", column: str | None = None) -> Path:
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    matched = rows(roster, grades, missing)
    if fmt == "moodle-worksheet":
        return _worksheet(roster, matched, target)
    name = column_name(roster, assignment, fmt, column)
    users = CANVAS_USER_COLUMNS if fmt == "canvas" else tuple(
        [column for column in MOODLE_USER_COLUMNS if column in roster.columns]
        + ([roster.match] if roster.match not in MOODLE_USER_COLUMNS else []))
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*users, name])
        if fmt == "canvas":
            writer.writerow(["Points Possible", *[""] * (len(users) - 1), f"{max_score:g}"])
        for row, value in matched:
            writer.writerow([*(row.get(user, "") for user in users), value])
    return target


def _worksheet(roster: Roster, matched: list[tuple[dict[str, str], str]], target: Path) -> Path:
    lacking = [name for name in WORKSHEET_COLUMNS if name not in roster.columns]
    if lacking:
        raise ExportError(f"{roster.path} is not a Moodle grading worksheet: no column {', '.join(lacking)}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, roster.columns)
        writer.writeheader()
        for row, value in matched:
            writer.writerow({**row, "Grade": value})
    return target
