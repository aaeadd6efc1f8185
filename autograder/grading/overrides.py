"""Points an instructor sets by hand: a regrade after an appeal, a written answer (a manually graded
cell), or a cell nbgrader could not score.

The overrides file (CSV, `--overrides FILE`; `overrides/<assignment>.csv` in the course root by
default, when there is one) has the
columns `student_id,cell,points,comment,grader`; `cell` is a column of grades.csv (`<grade id>`, or
`<notebook>:<grade id>` when the assignment has several notebooks). Overrides are read on every run
and applied after the cache and before the late penalty, so they survive every re-grade, `--force`
included, and a late student loses the same share of the corrected score. Every problem (an unknown
student or cell, points that are not a number or exceed the cell's, no grader, a cell twice) is
reported with its file and line before anything is graded.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.results import Row

COLUMNS = ("student_id", "cell", "points", "comment", "grader")


class OverrideError(ValueError):
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
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or not set(COLUMNS) <= {name.strip() for name in reader.fieldnames}:
                raise OverrideError(f"{path}: expected the columns {', '.join(COLUMNS)}, found {reader.fieldnames}")
            lines = [(number, {key.strip(): (value or "").strip() for key, value in row.items() if key})
                     for number, row in enumerate(reader, start=2)]
    except OSError as error:
        raise OverrideError(f"{path}: {error}") from None
    found: dict[tuple[str, str], int] = {}
    overrides = []
    for number, row in lines:
        where = f"{path} line {number}"
        student, cell = row["student_id"], row["cell"]
        if student not in students:
            raise OverrideError(f"{where}: student {student!r} has no submission in this class")
        if cell not in cell_points:
            raise OverrideError(f"{where}: unknown cell {cell!r} (the graded cells: {', '.join(cell_points)})")
        try:
            points = float(row["points"])
        except ValueError:
            raise OverrideError(f"{where}: points {row['points']!r} is not a number") from None
        if not 0 <= points <= cell_points[cell]:
            raise OverrideError(f"{where}: {points:g} points for {cell}, which is worth {cell_points[cell]:g}")
        if not row["grader"]:
            raise OverrideError(f"{where}: no grader (who set these points?)")
        if (student, cell) in found:
            raise OverrideError(f"{where}: {student} {cell} was already overridden on line {found[student, cell]}")
        found[student, cell] = number
        overrides.append(Override(student, cell, points, row["comment"], row["grader"]))
    return overrides


def apply(row: Row, overrides: list[Override], notebook_cells: set[str]) -> None:
    """Set the points of `row`'s overridden cells (those among `notebook_cells`, its notebook's columns)."""
    for override in overrides:
        if override.student_id != row.student_id or override.cell not in notebook_cells:
            continue
        before = row.cells.get(override.cell)
        row.cells[override.cell] = override.points
        row.pending.pop(override.cell, None)       # a written answer, graded by hand
        row.score += override.points - (before or 0.0)
        was = "unscored" if before is None else f"{before:g}"
        row.overrides.append(f"{override.cell}: {was} -> {override.points:g} by {override.grader}"
                             + (f" ({override.comment})" if override.comment else ""))
