"""The folder one grading run writes, and the build folder it lives in: every path and file name of a
run is a property here, so a rename is one line.

    run = BuildFolder(layout.build).grading("01_session_vs_eager")     # build/grading/01_session_vs_eager
    run.grades_csv, run.feedback_page("jane", "01_session_vs_eager.ipynb"), run.column(notebook, "test_1")

A run folder holds:
- `grades.csv`      one row per student and notebook: `GradesLine`'s columns, then one column per graded cell
                    (`column`: the cell's grade id, `<notebook>:<grade id>` when the assignment has
                    several notebooks); read back into typed rows by `read_grades`
- `max_points.csv`  what the score and every cell column are out of (`MaxPointsLine`), read by `read_max_points`
- `intake.csv`      what intake read (`IntakeLine`): each student's origin in the download, LMS names and
                    markers (a group's submission once per member, under the member's id and upload name)
- `similarity.csv`  pairs of students whose own code looks alike
- `report.html`     the class report
- `feedback/`       `<student>.html`, or `<student>/<notebook>.html` with several notebooks
- `feedback.zip`    the feedback handed back through the LMS (`autograder feedback`)
- `solutions/`      `<student>/<notebook>.ipynb`: the reference solution of each student past the due date
- `solutions.zip`   the same, handed back through the LMS (`autograder solutions`)
- `<format>-import.csv`  the LMS's grade import file (`autograder export`)
- `rows/`           finished rows kept for the next run (`rows/<notebook>/` with several notebooks)
- `jobs/`           each submission's notebook as a worker reads it, what the worker left, and each
                    local worker's log
- `course-<k>/`     the workspace (an nbgrader course directory) of local worker k (k = 0: the one the others copy)
- `formgrade/`      the course directory of nbgrader's formgrader (`autograder formgrade`)

`Status` is the vocabulary of grades.csv's status column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path

from autograder import csvfile


class Status(StrEnum):
    GRADED = "graded"      # scored
    FLAGGED = "flagged"    # scored (or not, when its run failed too), and the tamper scan found something
    TIMEOUT = "timeout"    # the notebook or one of its cells ran past its time limit: 0
    ERROR = "error"        # the run failed (memory, processes, a crash, nbgrader could not grade it): 0
    INVALID = "invalid"    # the submission could not be read: 0, never run
    NEEDS_MANUAL_GRADE = "needs_manual_grade"  # scored by the tests; written answers wait for a hand grade

    @property
    def scored(self) -> bool:
        """The row's points stand (and a late penalty applies to them)."""
        return self in (Status.GRADED, Status.FLAGGED, Status.NEEDS_MANUAL_GRADE)


def stem(notebook: str) -> str:
    """A notebook's name without its folder and suffix: `01_session_vs_eager.ipynb` -> `01_session_vs_eager`."""
    return Path(notebook).stem


@dataclass(frozen=True)
class RunFolder:
    root: Path
    several: bool = False        # the assignment has several notebooks: names per notebook

    @classmethod
    def open(cls, root: Path) -> "RunFolder":
        """The run folder a grading run left at `root`, named per notebook as that run named it: its
        manifest (run.json) says how many notebooks it graded; a run without one (an older version's)
        by the notebooks its grades.csv lists."""
        manifest = cls(root).manifest
        if manifest.is_file():
            notebooks = json.loads(manifest.read_text(encoding="utf-8"))["notebooks"]
        elif cls(root).grades_csv.is_file():
            notebooks = {line.notebook for line in read_grades(cls(root).grades_csv)}
        else:   # nothing graded there yet: the command that reads it says so
            notebooks = {}
        return cls(root, several=len(notebooks) > 1)

    def column(self, notebook: str, cell: str) -> str:
        """A graded cell's column in grades.csv: its grade id, after the notebook's name when there are several."""
        return f"{stem(notebook)}:{cell}" if self.several else cell

    def cell_of(self, column: str, notebook: str) -> str | None:
        """The grade id of `column` when it is a column of `notebook`, else None (`column`'s inverse)."""
        if not self.several:
            return column
        prefix = f"{stem(notebook)}:"
        return column.removeprefix(prefix) if column.startswith(prefix) else None

    @property
    def grades_csv(self) -> Path:
        return self.root / "grades.csv"

    @property
    def max_points_csv(self) -> Path:
        return self.root / "max_points.csv"

    @property
    def intake_csv(self) -> Path:
        return self.root / "intake.csv"

    @property
    def similarity_csv(self) -> Path:
        return self.root / "similarity.csv"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def manifest(self) -> Path:
        """run.json: what the last run was (`autograder.grading.pipeline.write`): its assignment and
        notebooks, the kernel sandbox it ran in, the settings' key and the hash of what it was generated from."""
        return self.root / "run.json"

    @property
    def feedback_dir(self) -> Path:
        return self.root / "feedback"

    def feedback_page(self, student_id: str, notebook: str) -> Path:
        """Where a student's feedback page on a notebook is (nbgrader's, hidden tests removed)."""
        if self.several:
            return self.feedback_dir / student_id / f"{stem(notebook)}.html"
        return self.feedback_dir / f"{student_id}.html"

    @property
    def feedback_zip(self) -> Path:
        return self.root / "feedback.zip"

    @property
    def solutions_dir(self) -> Path:
        return self.root / "solutions"

    def solution(self, student_id: str, notebook: str) -> Path:
        """Where a student's copy of a notebook's reference solution is (hidden tests removed)."""
        return self.solutions_dir / student_id / f"{stem(notebook)}.ipynb"

    @property
    def solutions_zip(self) -> Path:
        return self.root / "solutions.zip"

    def lms_import(self, fmt: str) -> Path:
        return self.root / f"{fmt}-import.csv"

    @property
    def rows_dir(self) -> Path:
        return self.root / "rows"

    def rows_of(self, notebook: str) -> Path:
        return self.rows_dir / stem(notebook) if self.several else self.rows_dir

    @property
    def jobs_dir(self) -> Path:
        return self.root / "jobs"

    def job_dir(self, safe_id: str, notebook: str) -> Path:
        """A job's folder, under the student's name inside nbgrader's folders (`cache.safe_id`)."""
        return self.jobs_dir / safe_id / stem(notebook)

    def worker_log(self, number: int) -> Path:
        """What local worker `number` wrote to its standard error (nbgrader's log, a crash)."""
        return self.jobs_dir / f"worker-{number}.log"

    def workspace(self, number: int) -> Path:
        """The workspace (an nbgrader course directory) of local worker `number` (0: the one the others copy)."""
        return self.root / f"course-{number}"

    def workspaces(self) -> list[Path]:
        return sorted(self.root.glob("course-*"))

    @property
    def formgrade_dir(self) -> Path:
        return self.root / "formgrade"


@dataclass(frozen=True)
class BuildFolder:
    """`build/`: generated, git-ignored."""
    root: Path

    def grading(self, assignment: str) -> RunFolder:
        return RunFolder(self.root / "grading" / assignment)

    def demo(self, assignment: str) -> Path:
        """The demo class of `make run`: `submissions/`, its run folder `grading/` and `grade.log`."""
        return self.root / "demo" / assignment

    def demo_submissions(self, assignment: str) -> Path:
        return self.demo(assignment) / "submissions"

    def demo_grading(self, assignment: str) -> RunFolder:
        return RunFolder(self.demo(assignment) / "grading")

    def demo_log(self, assignment: str) -> Path:
        return self.demo(assignment) / "grade.log"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def student_bundle(self) -> Path:
        return self.root / "student-bundle.zip"


ADDED = {"added": True}   # a column a grades.csv of an older version lacks: read as empty


@dataclass(frozen=True)
class GradesLine:
    """One row of grades.csv, typed: its fields, in order, are the columns before the cells' (a new
    column is a new field here, and an attribute of the same name on the rows that grading writes:
    `grades_cells` writes it, `read_grades` reads it, both from this record's fields and types)."""
    student_id: str
    name: str = field(metadata=ADDED)        # empty when intake knew none
    group: str = field(metadata=ADDED)       # the group whose submission it is; empty for an individual
    assignment: str = ""
    notebook: str = ""
    submitted_at: str = ""
    lms_late: bool = field(default=False, metadata=ADDED)   # the LMS's download marked it late: "yes" or empty
    late_by: float | None = None       # seconds late; None (empty): the student has no due date
    raw_score: float = 0.0
    penalty: float = 0.0
    score: float = 0.0
    max_score: float = 0.0
    status: Status = Status.GRADED
    reason: str = ""
    overrides: str = ""                # points set by hand, "; " between them
    seconds: float = 0.0
    cells: dict[str, float | None] = field(default_factory=dict)   # cell column -> points; None: not scored


_COLUMN_FIELDS = [column for column in fields(GradesLine) if column.name != "cells"]
GRADES_COLUMNS = tuple(column.name for column in _COLUMN_FIELDS)
ADDED_GRADES_COLUMNS = tuple(column.name for column in _COLUMN_FIELDS if column.metadata.get("added"))


def _text(value) -> str:
    """A value as grades.csv writes it."""
    if value is None or value is False:
        return ""
    if value is True:
        return "yes"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "; ".join(value)
    return str(value)


def grades_cells(row, cell_columns: list[str]) -> list[str]:
    """One line of grades.csv for `row` (anything with GradesLine's column names as attributes, and
    `cells`: column -> points), its cell columns in `cell_columns`' order."""
    return (record_cells(row, GRADES_COLUMNS)
            + [_text(float(row.cells[cell])) if cell in row.cells and row.cells[cell] is not None else ""
               for cell in cell_columns])


def _value(line: csvfile.Line, name: str, kind: str):
    """Column `name` of `line` as GradesLine's field type `kind` says (its annotation's text)."""
    text = line[name]
    if kind == "bool":
        if text not in ("yes", ""):
            raise csvfile.BadLine(f"{name} {text!r} is neither 'yes' nor empty")
        return text == "yes"
    if kind == "float | None":
        return csvfile.number(line, name) if text else None
    if kind == "float":
        return csvfile.number(line, name)
    if kind == "Status":
        try:
            return Status(text)
        except ValueError:
            raise csvfile.BadLine(f"{name} {text!r} is not one of {', '.join(Status)}") from None
    return text


def _typed(line: csvfile.Line, record: type, columns: tuple[str, ...]) -> dict:
    """The columns `columns` of `line`, each read as `record`'s field of that name says (`_value`)."""
    return {column.name: _value(line, column.name, str(column.type)) for column in fields(record)
            if column.name in columns}


def _grades_line(line: csvfile.Line) -> GradesLine:
    cells = {column: csvfile.number(line, column) if value else None
             for column, value in line.values.items() if column not in GRADES_COLUMNS}
    return GradesLine(**_typed(line, GradesLine, GRADES_COLUMNS), cells=cells)


def read_grades(path: Path) -> list[GradesLine]:
    """grades.csv as typed rows; every malformed line is named with its file and number. A grades.csv
    of an older version, without the `ADDED_GRADES_COLUMNS`, reads as if they were empty."""
    required = tuple(column for column in GRADES_COLUMNS if column not in ADDED_GRADES_COLUMNS)
    return csvfile.parse(path, required, _grades_line, hint=" (run `autograder grade` first)")


@dataclass(frozen=True)
class MaxPointsLine:
    """One line of max_points.csv: a column of grades.csv (a notebook's `score`, or a cell's) and what
    it is out of (`grading.grades_csv.write_max_points` writes it with `record_cells`, `read_max_points`
    reads it, both from these fields)."""
    column: str
    max_points: float


MAX_POINTS_COLUMNS = tuple(column.name for column in fields(MaxPointsLine))


def read_max_points(path: Path) -> dict[str, float]:
    """max_points.csv: column -> what it is out of."""
    lines = csvfile.parse(path, MAX_POINTS_COLUMNS,
                          lambda line: MaxPointsLine(**_typed(line, MaxPointsLine, MAX_POINTS_COLUMNS)),
                          hint=" (run `autograder grade` first)")
    return {line.column: line.max_points for line in lines}


@dataclass(frozen=True)
class IntakeLine:
    """One line of intake.csv, typed: its fields, in order, are the columns (written by `record_cells`,
    read by `read_intake`, both from these fields and types)."""
    student_id: str
    notebook: str
    lms: str = ""              # the LMS whose download it came from; empty for a folder of students
    name: str = ""             # the LMS's name for the student (a group's member: the member's)
    late_marked: bool = False  # the LMS's download marked it late: "yes" or empty
    origin: str = ""           # where in the download it came from
    reupload: str = ""         # the name a feedback file goes back under (autograder feedback)
    problem: str = ""          # why it cannot be graded, if it cannot


INTAKE_COLUMNS = tuple(column.name for column in fields(IntakeLine))


def record_cells(record, columns: tuple[str, ...] = ()) -> list[str]:
    """A record's fields (or its attributes `columns`) as one CSV line, written as `_text` writes values."""
    return [_text(getattr(record, name)) for name in columns or [column.name for column in fields(record)]]


def read_intake(path: Path) -> list[IntakeLine]:
    """intake.csv as typed lines; every malformed line is named with its file and number."""
    return csvfile.parse(path, INTAKE_COLUMNS, lambda line: IntakeLine(**_typed(line, IntakeLine, INTAKE_COLUMNS)),
                         hint=" (run `autograder grade` first)")
