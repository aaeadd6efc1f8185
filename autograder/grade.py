"""Grade a class: intake, then nbgrader's autograde for each student in a bounded worker process.

    result = grade_class("00_gpu_setup", Path("source/00_gpu_setup"), Path("downloads"),
                         Path("build/grading/00_gpu_setup"), options=Options(workers=2))

Every student gets a row whatever they submitted. The run writes only under `out`:
- `course-<k>/`   one private nbgrader course directory per worker (source, gradebook, autograded)
- `jobs/`         each submission's notebook as the worker reads it, and the worker's result
- `rows/`         finished rows keyed by content hash: a re-run skips them unless `force`
- `feedback/`     one HTML per student, without hidden tests
Workers never share a gradebook, so a parallel run gives exactly the rows of a serial one.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import queue
import shutil
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from autograder import __version__, bounds, intake, tamper
from autograder.workspace import Workspace

@dataclass
class Options:
    profile: str = "grade"
    workers: int = 1
    timeout: float = 600.0          # seconds per notebook, wall clock
    memory_limit_gb: float = 6.0    # resident memory of the worker and its kernel
    force: bool = False             # re-grade submissions already graded with the same content


@dataclass
class Row:
    student_id: str
    assignment: str
    score: float = 0.0
    max_score: float = 0.0
    status: str = "graded"          # graded, timeout, error, invalid or flagged
    reason: str = ""
    seconds: float = 0.0
    cells: dict[str, float] = field(default_factory=dict)
    feedback: Path | None = None
    notes: list[str] = field(default_factory=list)
    reused: bool = False

    def as_json(self) -> dict:
        data = asdict(self)
        data["feedback"] = str(self.feedback) if self.feedback else None
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Row":
        data = dict(data)
        data["feedback"] = Path(data["feedback"]) if data.get("feedback") else None
        return cls(**data)


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


def grade_cell_ids(notebook) -> list[str]:
    return [cell.metadata["nbgrader"]["grade_id"] for cell in notebook.cells
            if cell.metadata.get("nbgrader", {}).get("grade")]


def safe_id(student_id: str) -> str:
    """The name a student has inside nbgrader's folders: ids may hold spaces, accents or glob characters."""
    return "s" + hashlib.sha256(student_id.encode("utf-8")).hexdigest()[:16]


class _Cache:
    """Finished rows under `out/rows/`, valid for one content hash of (submission, source, options)."""

    def __init__(self, folder: Path, source_bytes: bytes, options: Options):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.salt = hashlib.sha256(source_bytes + json.dumps(
            [__version__, options.profile, options.timeout, options.memory_limit_gb]).encode()).hexdigest()

    def key(self, submission: intake.Submission) -> str:
        return hashlib.sha256((self.salt + submission.content_hash).encode()).hexdigest()

    def get(self, submission: intake.Submission) -> Row | None:
        path = self.folder / f"{safe_id(submission.student_id)}.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != self.key(submission):
            return None
        row = Row.from_json(data["row"])
        if row.feedback and not row.feedback.exists():
            return None
        row.reused = True
        return row

    def put(self, submission: intake.Submission, row: Row) -> None:
        path = self.folder / f"{safe_id(submission.student_id)}.json"
        path.write_text(json.dumps({"key": self.key(submission), "row": row.as_json()}), encoding="utf-8")


def _workspaces(out: Path, assignment_id: str, source_dir: Path, options: Options) -> list[Workspace]:
    first = Workspace(out / "course-0", assignment_id, profile=options.profile, cell_timeout=int(options.timeout))
    if first.root.exists():
        shutil.rmtree(first.root)
    first.create(source_dir)
    spaces = [first]
    for number in range(1, options.workers):
        root = out / f"course-{number}"
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(first.root, root)
        spaces.append(Workspace(root, assignment_id, profile=options.profile, cell_timeout=int(options.timeout)))
    return spaces


def _run_worker(workspace: Workspace, submission: intake.Submission, notebook_name: str, jobs: Path,
                options: Options) -> Row:
    row = Row(submission.student_id, workspace.assignment_id)
    student = safe_id(submission.student_id)
    job_dir = jobs / student
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    notebook_file = job_dir / notebook_name
    notebook_file.write_bytes(submission.notebook_bytes)
    job = {"workspace": str(workspace.root), "assignment": workspace.assignment_id, "student": student,
           "notebook_name": notebook_name, "notebook_file": str(notebook_file), "profile": options.profile,
           "cell_timeout": int(options.timeout)}
    job_path = job_dir / "job.json"
    job_path.write_text(json.dumps(job), encoding="utf-8")
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    outcome = bounds.run_bounded([sys.executable, "-m", "autograder.worker", str(job_path)],
                                 timeout=options.timeout + 30, memory_bytes=int(options.memory_limit_gb * 2**30),
                                 env=env, cwd=str(job_dir), stderr_path=str(job_dir / "worker.log"))
    row.seconds = round(outcome.seconds, 2)
    result_path = job_path.with_suffix(".result.json")
    if outcome.memory_exceeded:
        row.status, row.reason = "error", (f"memory limit exceeded: more than {options.memory_limit_gb:g} GB "
                                           "resident in the notebook's kernel")
    elif outcome.timed_out:
        row.status, row.reason = "timeout", f"the notebook ran longer than {options.timeout:g} s"
    elif not result_path.exists():
        last = outcome.stderr_tail.strip().splitlines()[-1:] or [f"exit code {outcome.returncode}"]
        row.status, row.reason = "error", f"grading crashed: {last[0][:300]}"
    else:
        result = json.loads(result_path.read_text(encoding="utf-8"))
        row.status, row.reason = result["status"], result["reason"]
        row.score, row.max_score, row.cells = result["score"], result["max_score"], result["cells"]
        row.feedback = Path(result["feedback"]) if result["feedback"] else None
    if row.status in ("timeout", "error"):
        row.score, row.cells = 0.0, {}
    return row


def grade_class(assignment_id: str, source_dir: Path, submissions: Path, out: Path, *,
                options: Options | None = None, progress: Callable[[str], None] = print) -> ClassResult:
    options = options or Options()
    if options.workers < 1 or options.timeout <= 0 or options.memory_limit_gb <= 0:
        raise GradingError("workers, timeout and memory limit must be positive")
    notebook_path = source_notebook(assignment_id, source_dir)
    students = intake.read_class(submissions, notebook_path.name)
    out.mkdir(parents=True, exist_ok=True)
    source_nb = nbformat.read(notebook_path, as_version=4)
    cell_ids = grade_cell_ids(source_nb)
    max_score = sum(float(cell.metadata["nbgrader"].get("points", 0)) for cell in source_nb.cells
                    if cell.metadata.get("nbgrader", {}).get("grade"))
    spaces = _workspaces(out, assignment_id, source_dir, options)
    release_nb = nbformat.read(spaces[0].release_dir() / notebook_path.name, as_version=4)
    cache = _Cache(out / "rows", notebook_path.read_bytes(), options)
    feedback_out = out / "feedback"
    feedback_out.mkdir(exist_ok=True)
    free: queue.Queue[Workspace] = queue.Queue()
    for space in spaces:
        free.put(space)
    done_count, lock = [0], threading.Lock()

    def finish(row: Row) -> Row:
        row.max_score = row.max_score or max_score
        with lock:
            done_count[0] += 1
            progress(f"[{done_count[0]}/{len(students)}] {row.student_id}: {row.status} {row.score:g}/{row.max_score:g}"
                     + (" (unchanged, not re-graded)" if row.reused else f" in {row.seconds:g} s")
                     + (f" - {row.reason}" if row.reason else ""))
        return row

    def grade_submission(submission: intake.Submission) -> Row:
        if not submission.ok:
            return finish(Row(submission.student_id, assignment_id, max_score=max_score, status="invalid",
                              reason=submission.problem))
        cached = None if options.force else cache.get(submission)
        if cached:
            return finish(cached)
        findings = tamper.scan(intake.as_notebook(submission), release_nb)
        space = free.get()
        try:
            row = _run_worker(space, submission, notebook_path.name, out / "jobs", options)
        finally:
            free.put(space)
        row.notes = findings.notes
        if findings.flagged and row.status == "graded":
            row.status, row.reason = "flagged", findings.reason()
        if row.feedback and row.feedback.exists():
            copied = feedback_out / f"{submission.student_id}.html"
            shutil.copyfile(row.feedback, copied)
            row.feedback = copied
        cache.put(submission, row)
        return finish(row)

    with concurrent.futures.ThreadPoolExecutor(max_workers=options.workers) as pool:
        rows = list(pool.map(grade_submission, students))
    return ClassResult(assignment_id, sorted(rows, key=lambda row: row.student_id), cell_ids, max_score, out)
