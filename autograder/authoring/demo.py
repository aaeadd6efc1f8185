"""A demo class built from the course itself: proof that grading works end to end.

- `solution`: the release with each solution cell's answer typed in, as a student would (the
  source's solution code without nbgrader's BEGIN/END SOLUTION marker lines);
- `blank`: the release exactly as a student receives it.

The solution must get full marks and the blank release zero.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def type_in_solutions(release_nb, source_nb):
    """A copy of `release_nb` whose solution cells hold the source's answers, markers removed."""
    answers = {}
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            answers[meta["grade_id"]] = "\n".join(
                line for line in cell.source.splitlines() if line.strip() not in MARKERS)
    typed = nbformat.from_dict(release_nb)
    for cell in typed.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
    return typed


def write_class(source_notebook: Path, release_notebook: Path, out: Path) -> dict[str, Path]:
    """Write `out/solution/<nb>` and `out/blank/<nb>`; return the two paths by student id."""
    source_nb = nbformat.read(source_notebook, as_version=4)
    release_nb = nbformat.read(release_notebook, as_version=4)
    students = {"solution": type_in_solutions(release_nb, source_nb), "blank": release_nb}
    paths = {}
    for student_id, notebook in students.items():
        path = out / student_id / release_notebook.name
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
        paths[student_id] = path
    return paths
