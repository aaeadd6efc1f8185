"""Grading by hand in nbgrader's formgrader: its course directory for a run, and its hand grades read back.

    autograder formgrade 01_session_vs_eager            # prepare <out>/formgrade/ and open JupyterLab on it
    autograder formgrade 01_session_vs_eager --db URL   # the same, on the shared gradebook grading used

`prepare` makes `<out>/formgrade/` an nbgrader course directory (the assignment generated from its
source, with the course's nbgrader_config.py and the other course files nbgrader reads) and puts every graded student's autograded notebook in
`autograded/`, with the gradebook rows the formgrader shows: the tests' points, and the written
answers marked as needing a manual grade. The gradebook is the folder's own SQLite file, or with
the settings' `db_url` the shared one (PostgreSQL) that `autograder grade --db` graded into: the
folder's nbgrader_config.py then sends nbgrader there, so several graders, each with a formgrader
of their own, grade the class at once. It never changes a grade an instructor gave there
(`manual_score`), so it can be run again after every grading run.

`hand_grades` reads those manual grades back as overrides (grader "formgrader", the formgrader's
comment as the comment); `autograder grade` applies them after grading on every run, so they
survive every re-grade, `--force` included. (A forced autograde into a shared gradebook keeps
them too: nbgrader's SaveAutoGrades sets `auto_score` and leaves `manual_score` and the comments.)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from autograder.grading.cache import safe_id
from autograder.grading.overrides import Override
from autograder.grading.results import Row
from autograder.nbgrader_setup.config import CONFIG_FILE
from autograder.nbgrader_setup.gradebook import gradebook_lock, has_tables
from autograder.nbgrader_setup.workspace import Workspace
from autograder.runfolder import RunFolder
from autograder.settings import GradingSettings

GRADER = "formgrader"


@dataclass
class Prepared:
    root: Path
    students: list[str] = field(default_factory=list)
    answers_to_grade: int = 0                           # how many answers wait for a hand grade
    missing: list[str] = field(default_factory=list)    # rows without an autograded notebook here


def autograded(run_folder: RunFolder, safe: str, assignment_id: str, notebook: str,
               settings: GradingSettings | None = None) -> Workspace | None:
    """The run's local workspace that holds the newest autograded copy of `notebook` of the student
    whose id inside nbgrader's folders is `safe` (`cache.safe_id`); None when none does (a cluster's copies stay on its workers)."""
    found = [Workspace(root.resolve(), assignment_id, settings or GradingSettings())
             for root in run_folder.workspaces()]
    found = [workspace for workspace in found if (workspace.autograded_dir(safe) / notebook).exists()]
    return max(found, key=lambda workspace: (workspace.autograded_dir(safe) / notebook).stat().st_mtime, default=None)


def _gradebook_setting(root: Path, course_root: Path, db_url: str | None) -> None:
    """The folder's nbgrader_config.py: the course's, and with a shared gradebook a last line that
    sends nbgrader there (the formgrader reads this file); without one nbgrader keeps its default,
    the folder's gradebook.db."""
    text = (course_root / CONFIG_FILE).read_text(encoding="utf-8") if (course_root / CONFIG_FILE).is_file() else ""
    if db_url:
        text += f"\n# autograder formgrade --db: the shared gradebook\n" \
                f"get_config().CourseDirectory.db_url = {db_url!r}\n"
    if text:
        (root / CONFIG_FILE).write_text(text, encoding="utf-8")
    else:
        (root / CONFIG_FILE).unlink(missing_ok=True)


def prepare(run_folder: RunFolder, assignment_id: str, source_dir: Path, rows: list[Row], course_root: Path,
            settings: GradingSettings | None = None) -> Prepared:
    """`rows` as grading left them before any hand grade (the run's rows/ cache). A shared gradebook
    (`settings.db_url`) gets the assignment generated into it every time, as a grading run does."""
    settings = settings or GradingSettings()
    root = run_folder.formgrade_dir
    workspace = Workspace(root, assignment_id, settings)
    if settings.db_url or not (root / "gradebook.db").exists():
        workspace.create(source_dir, course_root)
    _gradebook_setting(root, course_root, settings.db_url)
    prepared = Prepared(root)
    with Gradebook(workspace.db_url, workspace.course_id) as gradebook:
        for row in rows:
            if not row.status.scored:
                continue
            safe = safe_id(row.student_id)
            notebook = Path(row.notebook)
            holder = autograded(run_folder, safe, assignment_id, notebook.name)
            if holder is None:
                prepared.missing.append(f"{row.student_id} {row.notebook}")
                continue
            source = holder.autograded_dir(safe) / notebook.name
            target = workspace.autograded_dir(safe) / notebook.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            gradebook.update_or_create_student(safe, lms_user_id=row.student_id, last_name=row.student_id)
            try:
                gradebook.find_submission(assignment_id, safe)
            except MissingEntry:
                gradebook.add_submission(assignment_id, safe)
            submitted = gradebook.find_submission_notebook(notebook.stem, assignment_id, safe)
            for grade in submitted.grades:
                if grade.manual_score is not None:
                    continue
                column = run_folder.column(notebook.name, grade.name)
                grade.needs_manual_grade = column in row.answers_to_grade
                grade.auto_score = None if grade.needs_manual_grade else row.cells.get(column, 0.0)
                prepared.answers_to_grade += grade.needs_manual_grade
            gradebook.db.commit()
            if row.student_id not in prepared.students:
                prepared.students.append(row.student_id)
    return prepared


def hand_grades(run_folder: RunFolder, assignment_id: str, settings: GradingSettings | None = None) -> list[Override]:
    """Every grade given in the formgrader of `run` (with `settings.db_url`: in the shared gradebook,
    the whole class's), as an override of its grades.csv cell."""
    settings = settings or GradingSettings()
    workspace = Workspace(run_folder.formgrade_dir, assignment_id, settings)
    if not (has_tables(settings.db_url) if settings.db_url else (run_folder.formgrade_dir / "gradebook.db").exists()):
        return []   # nothing graded by hand yet (and no gradebook made here: that is the grading run's)
    found = []
    # the shared side of the gradebook's lock: opening nbgrader's Gradebook records the course when it
    # is not there yet, which must not happen while another grader records the assignment (it records
    # the course too: two records of one course, a unique-key error that stopped that grader)
    with gradebook_lock(workspace.db_url, shared=True), Gradebook(workspace.db_url, workspace.course_id) as gradebook:
        try:
            assignment = gradebook.find_assignment(assignment_id)
        except MissingEntry:
            return []
        for submission in assignment.submissions:
            student_id = submission.student.lms_user_id or submission.student.id
            for notebook in submission.notebooks:
                comments = {comment.name: comment.manual_comment for comment in notebook.comments}
                for grade in notebook.grades:
                    if grade.manual_score is None:
                        continue
                    column = run_folder.column(notebook.name, grade.name)
                    found.append(Override(student_id, column, float(grade.manual_score),
                                          (comments.get(grade.name) or "").strip(), GRADER))
    return found
