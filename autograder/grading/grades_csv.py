"""Writes grades.csv (one row per student and notebook, the columns of `runfolder.GradesLine` first,
written by `runfolder.grades_cells` from the row's attributes of the same names, then one column per
graded cell; `lms_late` is `yes` or empty, `late_by` empty when the student has no due date)
and max_points.csv (what each of those columns is out of, so a spreadsheet can compute rates).
`autograder.runfolder.read_grades` reads grades.csv back."""

from __future__ import annotations

import csv
from pathlib import Path

from autograder.grading.results import ClassResult
from autograder.runfolder import GRADES_COLUMNS, MAX_POINTS_COLUMNS, MaxPointsLine, grades_cells, record_cells


def write_csv(result: ClassResult, path: Path | None = None) -> Path:
    path = path or result.run_folder.grades_csv
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*GRADES_COLUMNS, *result.grade_cells])
        for row in sorted(result.rows, key=lambda r: (r.student_id, r.notebook)):
            writer.writerow(grades_cells(row, result.grade_cells))
    return path


def write_max_points(result: ClassResult, path: Path | None = None) -> Path:
    """`column,max_points`: every notebook's `score` column, then every cell column, in grades.csv's order."""
    path = path or result.run_folder.max_points_csv
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(MAX_POINTS_COLUMNS)
        for notebook, points in result.notebooks.items():
            column = f"score ({notebook})" if len(result.notebooks) > 1 else "score"
            writer.writerow(record_cells(MaxPointsLine(column, float(points))))
        for cell in result.grade_cells:
            writer.writerow(record_cells(MaxPointsLine(cell, float(result.cell_points.get(cell, 0)))))
    return path
