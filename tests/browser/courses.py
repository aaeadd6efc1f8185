"""Throwaway copies of the course that a browser test serves.

- `student_copy`: what a student has, `release/`, with every notebook's parameters set to the `ci`
  profile the way the course sets them (papermill's injected cell, `course.runner.prepare`), so a
  Run All takes seconds. No nbgrader_config.py: nbgrader's Validate runs with its defaults, as it
  does on a student's machine.
- `instructor_copy`: the nbgrader course directory, `source/` and `nbgrader_config.py` (which
  imports `autograder.nbgrader_setup.config`, installed in the venv).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from course import runner, syllabus
from course.layout import Layout

LAYOUT = Layout(Path(__file__).resolve().parents[2])
IGNORE = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")


def student_copy(dest: Path, assignment_ids: list[str] | None = None) -> Path:
    """`dest/release/<id>/<id>.ipynb` under the ci profile, for the given (default: every) assignment."""
    for assignment_id in assignment_ids or syllabus.ids():
        notebook = LAYOUT.release_notebook(assignment_id)
        target = dest / "release" / assignment_id
        shutil.copytree(notebook.parent, target, dirs_exist_ok=True, ignore=IGNORE)
        runner.prepare(notebook, target / notebook.name, "ci", assignment_id)
    return dest


def instructor_copy(dest: Path) -> Path:
    """`dest/source/` and `dest/nbgrader_config.py`: a course directory nbgrader's formgrader can open."""
    shutil.copytree(LAYOUT.source, dest / "source", ignore=IGNORE)
    shutil.copy2(LAYOUT.root / "nbgrader_config.py", dest / "nbgrader_config.py")
    return dest
