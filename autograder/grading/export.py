"""grades.csv: one row per student, fixed columns first, then one column per graded cell."""

from __future__ import annotations

import csv
from pathlib import Path

from autograder.grading.results import ClassResult

COLUMNS = ("student_id", "assignment", "score", "max_score", "status", "reason", "seconds")


def write_csv(result: ClassResult, path: Path | None = None) -> Path:
    path = path or result.csv_path
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*COLUMNS, *result.grade_cells])
        for row in sorted(result.rows, key=lambda r: r.student_id):
            writer.writerow([row.student_id, row.assignment, f"{row.score:g}", f"{row.max_score:g}",
                             row.status, row.reason, f"{row.seconds:g}",
                             *(f"{row.cells[cell]:g}" if cell in row.cells else "" for cell in result.grade_cells)])
    return path

