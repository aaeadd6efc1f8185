"""One submission graded in its own process: `python -m autograder.worker JOB.json`, or `run_forked`
in a process forked from a warm forkserver that has imported this module once (so a notebook does
not pay nbgrader's 1-3 s of imports again).

The driver writes the job (workspace, student, notebook file, profile, cell timeout), runs it under
`autograder.bounds`, and reads `<job>.result.json`. A crash, a hang or a memory blow-up of the
student's kernel can only take this process down, never the class.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import shutil
import signal
import sys
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder.config import COURSE_ID
from autograder.workspace import Workspace

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


def grade(job: dict) -> dict:
    workspace = Workspace(Path(job["workspace"]), job["assignment"], profile=job["profile"],
                          cell_timeout=job["cell_timeout"], db=job.get("db_url"))
    student, notebook_name = job["student"], job["notebook_name"]
    target = workspace.submitted_dir(student)
    if target.exists():
        shutil.rmtree(target)
    for stale in (workspace.autograded_dir(student), workspace.feedback_dir(student)):
        if stale.exists():
            shutil.rmtree(stale)
    target.mkdir(parents=True)
    shutil.copyfile(job["notebook_file"], target / notebook_name)
    result = {"status": "graded", "reason": "", "score": 0.0, "max_score": 0.0, "cells": {}, "feedback": None}
    errors: list[str] = []
    try:
        with captured_errors(errors):
            workspace.autograde(student)
    except Exception as failure:  # nbgrader raises NbGraderException, and others for broken cells
        result["status"] = "error"
        result["reason"] = first_problem(errors) if errors else f"{type(failure).__name__}: {failure}"
    with Gradebook(workspace.db_url, COURSE_ID) as gradebook:
        if job.get("student_id"):  # nbgrader knows the student by safe id; its exports show the real one
            with contextlib.suppress(Exception):
                gradebook.update_or_create_student(student, lms_user_id=job["student_id"])
        try:
            submitted = gradebook.find_submission_notebook(Path(notebook_name).stem, workspace.assignment_id, student)
            result["score"] = float(submitted.score or 0.0)
            result["max_score"] = float(submitted.max_score or 0.0)
            result["cells"] = {grade.name: float(grade.score or 0.0) for grade in submitted.grades}
        except MissingEntry:
            pass
    cell = timed_out_cell(workspace.autograded_dir(student) / notebook_name)
    if result["status"] == "graded" and cell:
        result["status"], result["reason"] = "timeout", f"cell {cell} ran past the time limit"
    if result["status"] in ("graded", "timeout"):
        with contextlib.suppress(Exception):
            workspace.generate_feedback(student)
        produced = sorted(workspace.feedback_dir(student).glob("*.html"))
        result["feedback"] = str(produced[0]) if produced else None
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
    job = json.loads(job_path.read_text(encoding="utf-8"))
    result = grade(job)
    job_path.with_suffix(".result.json").write_text(json.dumps(result), encoding="utf-8")
    return 0


def run_forked(job_path: str, stderr_path: str, env: dict[str, str], cwd: str) -> None:
    """The forked process's target: set up what `python -m autograder.worker` would get (its own
    session, stdin/stdout on /dev/null, stderr into `stderr_path`, `env`, `cwd`), then `main`."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    log = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for source, target in ((null, 0), (null, 1), (log, 2)):
        os.dup2(source, target)
    os.close(null)
    os.close(log)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.exit(main([job_path]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
