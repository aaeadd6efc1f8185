"""One submission graded in its own process: `python -m autograder.execution.worker JOB.json`.

The driver (`autograder.execution.jobs`) writes the job (a `protocol.WorkerJob`), runs this under
`autograder.execution.bounds`, and reads `<job>.result.json` (a `protocol.WorkerResult`: facts,
never a status). A crash, a hang or a memory blow-up of the student's kernel can only take this
process down, never the class.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import sys
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder.nbgrader_setup.config import COURSE_ID
from autograder.execution.protocol import WorkerJob, WorkerResult
from autograder.nbgrader_setup import kernelspec
from autograder.nbgrader_setup.workspace import Workspace

TIMEOUT_ERRORS = ("CellTimeoutError", "TimeoutError")
PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def captured_errors(records: list[str]):
    """Collect the ERROR lines nbgrader logs while grading."""
    handler = logging.Handler(level=logging.ERROR)
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    loggers = [logging.getLogger(name) for name in ("traitlets", "nbgrader")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def first_problem(records: list[str]) -> str:
    for record in records:
        text = record.strip()
        if text and "Please see the error log" not in text and "There was an error processing" not in text:
            return text.splitlines()[-1][:300]
    return records[0].strip().splitlines()[-1][:300] if records else "nbgrader failed without a message"


def timed_out_cell(autograded: Path) -> str | None:
    if not autograded.exists():
        return None
    notebook = nbformat.read(autograded, as_version=4)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and output.get("ename") in TIMEOUT_ERRORS:
                return cell.get("id", "?")
    return None


MAX_ANSWER_CHARS = 20000


def answers(autograded: Path, grade_ids: set[str]) -> dict[str, str]:
    """The student's text in each of `grade_ids`' cells, for grading by hand."""
    found = {grade_id: "" for grade_id in grade_ids}
    if found and autograded.exists():
        for cell in nbformat.read(autograded, as_version=4).cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in found:
                found[grade_id] = cell.source[:MAX_ANSWER_CHARS]
    return found


def grade(job: WorkerJob) -> WorkerResult:
    """Autograde one submission and write its feedback; report what nbgrader left, as facts."""
    workspace = Workspace(Path(job.workspace), job.assignment, profile=job.profile,
                          cell_timeout=job.cell_timeout, db=job.db_url, sandbox=job.sandbox, limits=job.limits)
    kernelspec.install()
    target = workspace.submitted_dir(job.student)
    if target.exists():
        shutil.rmtree(target)
    for stale in (workspace.autograded_dir(job.student), workspace.feedback_dir(job.student)):
        if stale.exists():
            shutil.rmtree(stale)
    target.mkdir(parents=True)
    shutil.copyfile(job.notebook_file, target / job.notebook_name)
    result = WorkerResult()
    errors: list[str] = []
    try:
        with captured_errors(errors):
            workspace.autograde(job.student)
    except Exception as failure:  # nbgrader raises NbGraderException, and others for broken cells
        result.nbgrader_failure = first_problem(errors) if errors else f"{type(failure).__name__}: {failure}"
    with Gradebook(workspace.db_url, COURSE_ID) as gradebook:
        if job.student_id:  # nbgrader knows the student by safe id; its exports show the real one
            with contextlib.suppress(Exception):
                gradebook.update_or_create_student(job.student, lms_user_id=job.student_id)
        try:
            submitted = gradebook.find_submission_notebook(Path(job.notebook_name).stem, workspace.assignment_id,
                                                           job.student)
            result.score = float(submitted.score or 0.0)
            result.max_score = float(submitted.max_score or 0.0)
            # a manually graded answer cell (grade and solution) the student answered waits for a hand
            # grade (nbgrader's SaveAutoGrades: determine_grade gives no score for a changed solution
            # cell, 0 for one left as released); a test cell deleted from the notebook, which nbgrader
            # also marks for manual grading, scores 0 here as before
            answer_cells = {cell.name for cell in submitted.notebook.solution_cells}
            unscored = {grade.name for grade in submitted.grades
                        if grade.name in answer_cells and grade.needs_manual_grade and grade.manual_score is None}
            result.cells = {grade.name: float(grade.score or 0.0) for grade in submitted.grades
                            if grade.name not in unscored}
        except MissingEntry:
            unscored = set()
    autograded = workspace.autograded_dir(job.student) / job.notebook_name
    result.pending = answers(autograded, unscored)
    result.timed_out_cell = timed_out_cell(autograded)
    if result.nbgrader_failure is None:
        with contextlib.suppress(Exception):
            workspace.generate_feedback(job.student)
        produced = workspace.feedback_dir(job.student) / f"{Path(job.notebook_name).stem}.html"
        result.feedback = str(produced) if produced.exists() else None
    return result


def die_with_parent() -> None:
    """Linux: get SIGKILLed when the process that started this one dies (a Dask worker killed mid-job),
    so no grading outlives its job; the kernel dies with this process (bwrap's --die-with-parent)."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        sys.exit(1)


def main(argv: list[str]) -> int:
    die_with_parent()
    job_path = Path(argv[0])
    grade(WorkerJob.read(job_path)).write(job_path.with_suffix(".result.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
