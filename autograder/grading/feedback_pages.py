"""Feedback pages made again with the hand grades on them.

The grading worker makes a student's page right after the autograde, from its workspace's own
gradebook, which holds no hand grade: a written answer is marked as waiting for one
(`MarkWaitingAnswers`) and a test cell shows the tests' points. Once `settle` has applied the hand
grades (the formgrader's and the overrides file's) to a row, `show_hand_grades` makes that row's page
again in the run's local workspace that holds the newest autograded copy of its notebook
(`formgrade.autograded`): it gives the hand-graded cells their `manual_score` and the comment as their
`manual_comment` in that workspace's SQLite gradebook (nbgrader's data model, as the formgrader saves a
grade), runs nbgrader's GenerateFeedback there (the course's feedback preprocessors, sanitising
included; it only renders, no student code runs), puts the gradebook's cells back as they were (a later
autograde there keeps a `manual_score`; the workers' gradebooks stay the autograde's) and copies the
page over the row's. nbgrader keeps a comment for answer cells only, so an override's comment on a test
cell is in grades.csv, not on the page. A page stays as it was, logged at DEBUG, when the run used a
shared gradebook (`db_url`: never written from here), ran on a cluster (its workers keep the autograded
notebooks), has no page, or when no local workspace holds the autograded notebook; one that cannot be
made again stays as it was with a warning (the grades are unaffected).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder.grading.cache import safe_id
from autograder.grading.formgrade import autograded
from autograder.grading.overrides import Override
from autograder.grading.results import Row
from autograder.nbgrader_setup.log_capture import errors_logged, errors_only, explain
from autograder.nbgrader_setup.workspace import Workspace
from autograder.runfolder import RunFolder
from autograder.settings import GradingSettings

log = logging.getLogger(__name__)

Grades = dict[str, tuple[float | None, str | None]]   # grade id -> (manual score, manual comment)


def show_hand_grades(run_folder: RunFolder, row: Row, by_hand: list[Override], grade_ids: dict[str, str],
                     settings: GradingSettings) -> None:
    """`row`'s feedback page made again with its hand grades among `by_hand` (the last for a cell
    wins, as `overrides.apply` applies them); `grade_ids` maps its notebook's columns to grade ids.
    A row without a hand grade keeps its page without a word."""
    given: Grades = {grade_ids[line.cell]: (line.points, line.comment or None) for line in by_hand
                     if line.student_id == row.student_id and line.cell in grade_ids}
    if not given:
        return
    safe, notebook = safe_id(row.student_id), Path(row.notebook)
    holder, kept = _where_made(run_folder, row, safe, settings)
    where = f"the feedback page of {row.student_id}" + (f" on {row.notebook}" if run_folder.several else "")
    if holder is None:
        log.debug("%s keeps the words it was made with: %s", where, kept)
        return
    assert row.feedback is not None, "_where_made gives a workspace only for a row with a page"
    errors: list[str] = []
    try:
        before = _give(holder, safe, notebook.stem, given)
        try:
            with errors_logged(errors), errors_only():
                holder.generate_feedback(safe)
        finally:
            _give(holder, safe, notebook.stem, before)
        shutil.copyfile(holder.feedback_dir(safe) / f"{notebook.stem}.html", row.feedback)
    except Exception as failure:  # nbgrader's NbGraderException, the gradebook, a page nbgrader did not write
        log.warning("%s is kept as it was made, without the hand grades (they are in grades.csv): %s", where,
                    explain(errors, failure))


def _where_made(run_folder: RunFolder, row: Row, safe: str,
                settings: GradingSettings) -> tuple[Workspace | None, str]:
    """The workspace to make `row`'s page again in, or None and why the page stays as it is."""
    if row.feedback is None or not row.feedback.exists():
        return None, "the run has no page for it"
    if settings.db_url:
        return None, "the run used a shared gradebook, which is not written from here"
    if settings.scheduler:
        return None, "it was graded on a cluster, whose workers keep the autograded notebooks"
    holder = autograded(run_folder, safe, row.assignment, Path(row.notebook).name, settings)
    return holder, "" if holder else "no local workspace holds its autograded notebook"


def _give(workspace: Workspace, safe: str, notebook: str, grades: Grades) -> Grades:
    """Set each cell's manual score and comment in `workspace`'s gradebook; what they were before. A
    test cell has no comment in nbgrader (only answer cells do), so its comment is not kept."""
    before: Grades = {}
    with Gradebook(workspace.db_url, workspace.course_id) as gradebook:
        for grade_id, (score, comment) in grades.items():
            grade = gradebook.find_grade(grade_id, notebook, workspace.assignment_id, safe)
            try:
                note = gradebook.find_comment(grade_id, notebook, workspace.assignment_id, safe)
            except MissingEntry:
                note = None
            before[grade_id] = (grade.manual_score, note.manual_comment if note else None)
            grade.manual_score = score
            if note is not None:
                note.manual_comment = comment
        gradebook.db.commit()
    return before
