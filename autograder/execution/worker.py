"""A grading worker: a long-lived process that grades one submission after another.

    python -m autograder.execution.worker

The driver (`autograder.execution.jobs.WorkerProcess`) starts one per slot, writes each job (a
`protocol.WorkerJob`) to a job.json, and sends its path as a line on the worker's standard input; the
worker runs nbgrader's autograde and feedback for it and answers with the path of the
`<job>.result.json` it wrote (a `protocol.WorkerResult`: facts, never a status) on its standard output.
It imports nbgrader once and serves jobs until its standard input closes. It never runs a student's
code itself: nbgrader starts every submission's kernel, and the grading kernel spec's provisioner
gives each its own sandbox (`autograder.execution.provisioner`). The driver watches the worker and its
kernel under `autograder.execution.bounds`; a kernel's crash, hang or memory blow-up takes down at
most this worker (the driver starts another), never the class.

Nothing is swallowed here: a failure of nbgrader's autograde, of the gradebook or of the feedback page
is written into the result with its reason, and becomes the row's reason.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder.execution import provisioner
from autograder.execution.protocol import WorkerJob, WorkerResult
from autograder.nbgrader_setup import kernelspec
from autograder.nbgrader_setup.log_capture import errors_logged, explain
from autograder.nbgrader_setup.workspace import Workspace

TIMEOUT_ERRORS = ("CellTimeoutError", "TimeoutError")
PR_SET_PDEATHSIG = 1
MAX_ANSWER_CHARS = 20000
REASON_CHARS = 300


@contextlib.contextmanager
def kernel_lifetimes(seconds: list[float]):
    """Append the lifetime of every kernel that ends inside the block to `seconds` (the provisioner
    logs it when it cleans the kernel up)."""
    handler = logging.Handler(level=logging.DEBUG)
    handler.emit = lambda record: seconds.append(getattr(record, "kernel_seconds", 0.0))  # type: ignore[method-assign]
    logger = provisioner.LIFETIME_LOG
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def timed_out_cell(autograded) -> str | None:
    """The id of the first cell of the autograded notebook (None: there is none) that nbgrader's cell
    timeout interrupted."""
    for cell in autograded.cells if autograded else []:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and output.get("ename") in TIMEOUT_ERRORS:
                return cell.get("id", "?")
    return None


def answers(autograded, grade_ids: set[str]) -> dict[str, str]:
    """The student's text in each of `grade_ids`' cells of the autograded notebook, for grading by hand."""
    found = {grade_id: "" for grade_id in grade_ids}
    for cell in autograded.cells if found and autograded else []:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in found:
            found[grade_id] = cell.source[:MAX_ANSWER_CHARS]
    return found


def _fresh_submission(workspace: Workspace, job: WorkerJob) -> None:
    """The job's notebook as the only submission of its student, without an earlier run's results."""
    target = workspace.submitted_dir(job.safe_id)
    for stale in (target, workspace.autograded_dir(job.safe_id), workspace.feedback_dir(job.safe_id)):
        if stale.exists():
            shutil.rmtree(stale)
    target.mkdir(parents=True)
    shutil.copyfile(job.notebook_file, target / job.notebook_name)


def _autograde(workspace: Workspace, job: WorkerJob, result: WorkerResult) -> None:
    errors: list[str] = []
    try:
        with errors_logged(errors):
            workspace.autograde(job.safe_id)
    except Exception as failure:  # nbgrader raises NbGraderException, and others for broken cells
        result.nbgrader_failure = explain(errors, failure, REASON_CHARS)


def _read_gradebook(workspace: Workspace, job: WorkerJob, result: WorkerResult) -> set[str]:
    """The scores nbgrader's autograde saved, into `result`; the written answers waiting for a hand
    grade. Records the student's id as submitted (nbgrader knows the student by safe id; its exports
    show the real one). A hand grade in a shared gradebook (the formgrader's `manual_score`, which
    autograde keeps) is not read here: the row is the autograde's, and the driver applies hand grades
    after grading (`autograder.grading.formgrade.hand_grades`), as for a gradebook of its own."""
    unscored: set[str] = set()
    try:
        with Gradebook(workspace.db_url, workspace.course_id) as gradebook:
            if job.student_id:
                gradebook.update_or_create_student(job.safe_id, lms_user_id=job.student_id)
            try:
                submitted = gradebook.find_submission_notebook(Path(job.notebook_name).stem, job.assignment,
                                                               job.safe_id)
            except MissingEntry:  # autograde failed before it saved anything: nbgrader_failure says why
                return unscored
            result.max_score = float(submitted.max_score or 0.0)
            # a manually graded answer cell (grade and solution) the student answered waits for a hand
            # grade (nbgrader's SaveAutoGrades: determine_grade gives no score for a changed solution
            # cell, 0 for one left as released); a test cell deleted from the notebook, which nbgrader
            # also marks for manual grading, scores 0 here as before
            answer_cells = {cell.name for cell in submitted.notebook.solution_cells}
            unscored = {grade.name for grade in submitted.grades
                        if grade.name in answer_cells and grade.auto_score is None}
            result.cells = {grade.name: float(grade.auto_score or 0.0) for grade in submitted.grades
                            if grade.name not in unscored}
            result.score = sum(result.cells.values())
    except Exception as failure:  # the database went away, a constraint, a schema nbgrader does not know
        result.gradebook_failure = f"the gradebook failed: {type(failure).__name__}: {failure}"[:REASON_CHARS]
    return unscored


def _feedback(workspace: Workspace, job: WorkerJob, result: WorkerResult) -> None:
    errors: list[str] = []
    try:
        with errors_logged(errors):
            workspace.generate_feedback(job.safe_id)
    except Exception as failure:  # nbconvert's exporters, nbgrader's NbGraderException
        result.feedback_failure = explain(errors, failure, REASON_CHARS)
        return
    produced = workspace.feedback_dir(job.safe_id) / f"{Path(job.notebook_name).stem}.html"
    if produced.exists():
        result.feedback = str(produced)
    else:
        result.feedback_failure = explain(errors) if errors else f"nbgrader wrote no {produced.name}"


def grade(job: WorkerJob) -> WorkerResult:
    """Autograde one submission and write its feedback; report what nbgrader left, as facts."""
    start = time.monotonic()
    workspace = Workspace(Path(job.workspace), job.assignment, job.settings)
    _fresh_submission(workspace, job)
    result = WorkerResult()
    kernels: list[float] = []
    with kernel_lifetimes(kernels):
        _autograde(workspace, job, result)
    result.autograde_seconds = round(time.monotonic() - start, 3)
    unscored = _read_gradebook(workspace, job, result)
    path = workspace.autograded_dir(job.safe_id) / job.notebook_name
    autograded = nbformat.read(path, as_version=4) if path.exists() else None
    result.answers_to_grade = answers(autograded, unscored)
    result.timed_out_cell = timed_out_cell(autograded)
    if result.nbgrader_failure is None and result.gradebook_failure is None:
        feedback_start = time.monotonic()
        _feedback(workspace, job, result)
        result.feedback_seconds = round(time.monotonic() - feedback_start, 3)
    result.kernel_seconds = round(sum(kernels), 3)
    result.worker_seconds = round(time.monotonic() - start, 3)
    return result


def die_with_parent() -> None:
    """Linux: get SIGKILLed when the process that started this one dies (the driver, a Dask worker
    killed mid-job), so no grading outlives it; the kernels die with this process (bwrap's
    --die-with-parent)."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):  # not Linux: no such call, and no need for it
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        sys.exit(1)


def serve(requests, replies) -> None:
    """Grade the job of every path read from `requests`, and write its result's path to `replies`."""
    kernelspec.install()
    for line in requests:
        job_path = Path(line.strip())
        if not line.strip():
            continue
        result_path = job_path.with_suffix(".result.json")
        grade(WorkerJob.read(job_path)).write(result_path)
        replies.write(f"{result_path}\n")
        replies.flush()


def main(argv: list[str]) -> int:
    die_with_parent()
    # the replies get the standard output; anything else printed here (or by a kernel this process
    # starts) goes to the standard error, the worker's log
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(sys.stdin, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
