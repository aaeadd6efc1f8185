"""Grade a class: intake, nbgrader's autograde per student, grades and feedback, one row each.

    summary = grade.grade_class("00_gpu_setup", Path("submissions"), Path("build/grading/00_gpu_setup"))

Every student gets a row whatever they submitted. The run is one function of (assignment source,
submissions, options) and writes only under `out`.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder import intake
from autograder.workspace import Workspace

STATUSES = ("graded", "timeout", "error", "invalid", "flagged")
TIMEOUT_ERRORS = ("CellTimeoutError", "TimeoutError")


@dataclass
class Row:
    student_id: str
    assignment: str
    score: float = 0.0
    max_score: float = 0.0
    status: str = "graded"
    reason: str = ""
    seconds: float = 0.0
    cells: dict[str, float] = field(default_factory=dict)
    feedback: Path | None = None


@dataclass
class ClassResult:
    assignment: str
    rows: list[Row]
    grade_cells: list[str]
    max_score: float
    out: Path

    @property
    def csv_path(self) -> Path:
        return self.out / "grades.csv"


class GradingError(RuntimeError):
    """Grading could not run at all (as opposed to a student's notebook failing)."""


def grade_cell_ids(notebook) -> list[str]:
    return [cell.metadata["nbgrader"]["grade_id"] for cell in notebook.cells
            if cell.metadata.get("nbgrader", {}).get("grade")]


@contextlib.contextmanager
def captured_errors(records: list[str]):
    """Collect the ERROR lines nbgrader logs while grading one student."""
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


def _first_problem(records: list[str]) -> str:
    for record in records:
        text = record.strip()
        if text and "Please see the error log" not in text and "There was an error processing" not in text:
            return text.splitlines()[-1][:300]
    return records[0].strip().splitlines()[-1][:300] if records else "nbgrader failed without a message"


def _timed_out(autograded: Path) -> bool:
    if not autograded.exists():
        return False
    notebook = nbformat.read(autograded, as_version=4)
    return any(output.get("output_type") == "error" and output.get("ename") in TIMEOUT_ERRORS
               for cell in notebook.cells for output in cell.get("outputs", []))


def grade_one(workspace: Workspace, submission: intake.Submission, notebook_name: str) -> Row:
    row = Row(submission.student_id, workspace.assignment_id)
    if not submission.ok:
        row.status, row.reason = "invalid", submission.problem
        return row
    start = time.perf_counter()
    target = workspace.submitted_dir(submission.student_id)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / notebook_name).write_bytes(submission.notebook_bytes)
    errors: list[str] = []
    try:
        with captured_errors(errors):
            workspace.autograde(submission.student_id)
    except Exception as failure:  # nbgrader raises NbGraderException and, for broken cells, others
        row.status = "error"
        row.reason = _first_problem(errors) if errors else f"{type(failure).__name__}: {failure}"
    row.seconds = round(time.perf_counter() - start, 2)
    _read_scores(workspace, Path(notebook_name).stem, row)
    if row.status == "graded" and _timed_out(workspace.autograded_dir(row.student_id) / notebook_name):
        row.status, row.reason = "timeout", "a cell ran longer than the time limit"
    if row.status in ("graded", "timeout"):
        row.feedback = _feedback(workspace, row.student_id)
    return row


def _read_scores(workspace: Workspace, notebook_id: str, row: Row) -> None:
    with Gradebook(workspace.db_url) as gradebook:
        try:
            notebook = gradebook.find_submission_notebook(notebook_id, workspace.assignment_id, row.student_id)
        except MissingEntry:
            return
        row.score = float(notebook.score or 0.0)
        row.max_score = float(notebook.max_score or 0.0)
        row.cells = {grade.name: float(grade.score or 0.0) for grade in notebook.grades}


def _feedback(workspace: Workspace, student_id: str) -> Path | None:
    try:
        workspace.generate_feedback(student_id)
    except Exception:
        return None
    produced = sorted(workspace.feedback_dir(student_id).glob("*.html"))
    return produced[0] if produced else None


def source_notebook(assignment_id: str, source_dir: Path) -> Path:
    """`<assignment>.ipynb` as the course names it, or the assignment's only notebook."""
    named = source_dir / f"{assignment_id}.ipynb"
    if named.exists():
        return named
    found = sorted(source_dir.glob("*.ipynb")) if source_dir.is_dir() else []
    if len(found) != 1:
        raise GradingError(f"no source notebook {named}" if not found else
                           f"{source_dir} holds several notebooks: {', '.join(p.name for p in found)}")
    return found[0]


def grade_class(assignment_id: str, source_dir: Path, submissions: Path, out: Path, *,
                profile: str = "grade", cell_timeout: int = 600) -> ClassResult:
    notebook_path = source_notebook(assignment_id, source_dir)
    students = intake.read_class(submissions, notebook_path.name)
    out.mkdir(parents=True, exist_ok=True)
    workspace = Workspace(out / "course", assignment_id, profile=profile, cell_timeout=cell_timeout)
    workspace.create(source_dir)
    source = nbformat.read(notebook_path, as_version=4)
    cell_ids = grade_cell_ids(source)
    max_score = sum(float(cell.metadata["nbgrader"].get("points", 0)) for cell in source.cells
                    if cell.metadata.get("nbgrader", {}).get("grade"))
    rows = []
    feedback_out = out / "feedback"
    feedback_out.mkdir(exist_ok=True)
    for number, submission in enumerate(students, start=1):
        row = grade_one(workspace, submission, notebook_path.name)
        row.max_score = row.max_score or max_score
        if row.feedback:
            copied = feedback_out / f"{row.student_id}.html"
            shutil.copyfile(row.feedback, copied)
            row.feedback = copied
        rows.append(row)
        print(f"[{number}/{len(students)}] {row.student_id}: {row.status} {row.score:g}/{row.max_score:g}"
              + (f" ({row.reason})" if row.reason else ""), flush=True)
    return ClassResult(assignment_id, rows, cell_ids, max_score, out)
