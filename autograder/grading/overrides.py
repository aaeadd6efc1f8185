"""Points an instructor sets by hand: a regrade after an appeal, a written answer (a manually graded
cell), or a cell nbgrader could not score.

The overrides file (CSV, `--overrides FILE`; `overrides/<assignment>.csv` in the course root by
default, when there is one) has the
columns `student_id,cell,points,comment,grader`; `cell` is a column of grades.csv (`<grade id>`, or
`<notebook>:<grade id>` when the assignment has several notebooks). Overrides are read on every run
and applied after the cache and before the late penalty, so they survive every re-grade, `--force`
included, and a late student loses the same share of the corrected score. Every problem (an unknown
student or cell, points that are not a number or exceed the cell's, no grader, a cell twice) is
reported with its file and line, all at once, before anything is graded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder import csvfile
from autograder.errors import AutograderError
from autograder.grading.results import Row

COLUMNS = ("student_id", "cell", "points", "comment", "grader")


class OverrideError(AutograderError):
    """An overrides file that cannot be applied as it is: the message names the file and line."""


@dataclass(frozen=True)
class Override:
    student_id: str
    cell: str          # a grades.csv cell column
    points: float
    comment: str
    grader: str


def read(path: Path, cell_points: dict[str, float], students: set[str]) -> list[Override]:
    """The overrides of `path`, checked against the class's students and its cells' points."""
    found: dict[tuple[str, str], int] = {}

    def override(line: csvfile.Line) -> Override:
        student, cell = line["student_id"], line["cell"]
        if student not in students:
            raise csvfile.BadLine(f"student {student!r} has no submission in this class")
        if cell not in cell_points:
            raise csvfile.BadLine(f"unknown cell {cell!r} (the graded cells: {', '.join(cell_points)})")
        points = csvfile.number(line, "points")
        if not 0 <= points <= cell_points[cell]:
            raise csvfile.BadLine(f"{points:g} points for {cell}, which is worth {cell_points[cell]:g}")
        if not line["grader"]:
            raise csvfile.BadLine("no grader (who set these points?)")
        if (student, cell) in found:
            raise csvfile.BadLine(f"{student} {cell} was already overridden on line {found[student, cell]}")
        found[student, cell] = line.number
        return Override(student, cell, points, line["comment"], line["grader"])

    return csvfile.parse(path, COLUMNS, override, error=OverrideError)


def apply(row: Row, overrides: list[Override], notebook_cells: set[str]) -> None:
    """Set the points of `row`'s overridden cells (those among `notebook_cells`, its notebook's columns)."""
    for override in overrides:
        if override.student_id != row.student_id or override.cell not in notebook_cells:
            continue
        before = row.cells.get(override.cell)
        row.cells[override.cell] = override.points
        row.answers_to_grade.pop(override.cell, None)       # a written answer, graded by hand
        row.score += override.points - (before or 0.0)
        was = "unscored" if before is None else f"{before:g}"
        row.overrides.append(f"{override.cell}: {was} -> {override.points:g} by {override.grader}"
                             + (f" ({override.comment})" if override.comment else ""))
