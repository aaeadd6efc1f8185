"""Grade a class: intake, then nbgrader's autograde for each student in a bounded worker process
with a kernel sandbox of its own, on this machine or on a Dask cluster (`autograder.execution.executors`).

    result = grade_class("00_gpu_setup", Path("source/00_gpu_setup"), Path("downloads"),
                         Path("build/grading/00_gpu_setup"), options=Options(workers=2))

Every student gets a row whatever they submitted. The run writes only under `out`:
- `course-<k>/`   one private nbgrader course directory per local worker (source, gradebook,
                  autograded), generated once per assignment source and kept for the next run;
                  on a cluster, `course-0/` is the template every task unpacks
- `jobs/`         each submission's notebook as a local worker reads it, the worker's result and log
- `rows/`         finished rows keyed by content hash: a re-run skips them unless `force`
- `feedback/`     one HTML per student, without hidden tests
- `formgrade/`    a course directory for nbgrader's formgrader (`autograder formgrade`): the hand
                  grades given there are read back on every run
- `intake.csv`    what intake read: each student's origin in the download, the LMS's name, late marker
                  and re-upload name, and every rejection with its reason
- `similarity.csv` pairs of students whose own code in the solution regions looks alike, computed after
                  grading (`autograder.grading.similarity`); it flags, it changes no row
Workers never share a gradebook file, so a parallel run gives exactly the rows of a serial one; with
`db_url` they share one gradebook server (PostgreSQL), which takes concurrent writers.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import nbformat

from autograder import __version__
from autograder.execution import executors, jobs, sandbox
from autograder.execution.sandbox import Limits
from autograder.grading import formgrade, intake, lateness, overrides, similarity, tamper
from autograder.grading.cache import Cache, safe_id
from autograder.grading.results import ClassResult, Row
from autograder.grading.status import Status, decide, settle
from autograder.nbgrader_setup.gradebook import database_problem
from autograder.nbgrader_setup.workspace import Workspace


@dataclass
class Options:
    profile: str = "grade"
    workers: int = 1
    timeout: float = 600.0          # seconds per notebook, wall clock
    memory_limit_gb: float = 6.0    # resident memory of the worker and its kernel
    force: bool = False             # re-grade submissions already graded with the same content
    scheduler: str | None = None    # a dask.distributed scheduler address: run the notebooks on its workers
    db_url: str | None = None       # an SQLAlchemy URL of a shared gradebook (PostgreSQL); None: SQLite per worker
    sandbox: str = "auto"           # the kernels' sandbox: auto, bwrap or none (autograder.execution.sandbox)
    limits: Limits = Limits()       # what each kernel's sandbox may use besides memory and time
    term: Path | None = None        # due dates and the late policy (autograder.grading.lateness)
    extensions: Path | None = None  # per-student due dates: student_id,assignment,due
    submitted_at: Path | None = None  # submission times: student_id,submitted_at
    overrides: Path | None = None   # points set by hand (autograder.grading.overrides)


class GradingError(RuntimeError):
    """Grading could not run at all (as opposed to a student's notebook failing)."""


def source_notebooks(assignment_id: str, source_dir: Path) -> list[Path]:
    """The notebooks of an assignment's source folder, `<assignment>.ipynb` first when there is one."""
    if not source_dir.is_dir():
        raise GradingError(f"no source folder {source_dir} for assignment {assignment_id!r}")
    found = sorted(source_dir.glob("*.ipynb"), key=lambda path: (path.stem != assignment_id, path.name))
    if not found:
        raise GradingError(f"{source_dir} holds no notebook")
    return found


STAMP = ".generated-from"


def source_hash(source_dir: Path) -> str:
    """What a generated workspace depends on: the assignment's files, and the versions that generate it."""
    import nbgrader

    digest = hashlib.sha256(f"{__version__} {nbgrader.__version__}".encode())
    for path in sorted(source_dir.rglob("*")):
        if path.is_file() and ".ipynb_checkpoints" not in path.parts and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(source_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _workspaces(out: Path, assignment_id: str, source_dir: Path, options: Options, sandbox_mode: str,
                count: int) -> list[Workspace]:
    """One nbgrader course directory per worker. nbgrader generates the first from the source, and only
    when the source changed since the last run (a stamp holds the hash); the others are copies. A
    shared gradebook (`db_url`) is generated into every time: it is not in the folder."""
    def workspace(root: Path) -> Workspace:
        return Workspace(root, assignment_id, profile=options.profile, cell_timeout=int(options.timeout),
                         db=options.db_url, sandbox=sandbox_mode, limits=options.limits)

    wanted = source_hash(source_dir)
    first = workspace(out / "course-0")
    stamp = first.root / STAMP
    if options.db_url or not stamp.exists() or stamp.read_text(encoding="utf-8") != wanted:
        if first.root.exists():
            shutil.rmtree(first.root)
        first.create(source_dir)
        stamp.write_text(wanted, encoding="utf-8")
    spaces = [first]
    for number in range(1, count):
        root = out / f"course-{number}"
        copy_stamp = root / STAMP
        if options.db_url or not copy_stamp.exists() or copy_stamp.read_text(encoding="utf-8") != wanted:
            if root.exists():
                shutil.rmtree(root)
            shutil.copytree(first.root, root)
        spaces.append(workspace(root))
    return spaces


def _executor(spaces: list[Workspace], out: Path, options: Options):
    if options.scheduler:
        try:
            return executors.DaskExecutor(options.scheduler, spaces[0], gpu=options.profile == "gpu")
        except executors.ClusterError as error:
            raise GradingError(str(error)) from None
    return executors.LocalExecutor(spaces, out / "jobs")


def _row(submission: intake.Submission, assignment_id: str, notebook: str, outcome: jobs.Outcome,
         findings: tamper.Findings, options: Options, column) -> Row:
    decision = decide(outcome, findings, options.timeout, options.memory_limit_gb, options.limits.tasks)
    row = Row(submission.student_id, assignment_id, notebook=notebook, seconds=outcome.seconds, host=outcome.host,
              status=decision.status, reason=decision.reason, notes=findings.notes)
    if outcome.result is not None:
        row.max_score = outcome.result.max_score
        if decision.keeps_points:
            row.score = outcome.result.score
            row.cells = {column(cell): points for cell, points in outcome.result.cells.items()}
            row.pending = {column(cell): answer for cell, answer in outcome.result.pending.items()}
    return row


@dataclass
class _Notebook:
    """One notebook of the assignment, as the run grades it."""
    points: dict[str, float]       # its graded cells' ids and points, in notebook order
    students: list[intake.Submission]
    cache: Cache

    @property
    def max_score(self) -> float:
        return sum(self.points.values())


def cell_points(notebook) -> dict[str, float]:
    """The graded cells of a (source) notebook: grade id -> points, in notebook order."""
    return {cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"].get("points", 0))
            for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")}


def grade_class(assignment_id: str, source_dir: Path, submissions: Path, out: Path, *,
                options: Options | None = None, progress: Callable[[str], None] = print) -> ClassResult:
    """Grade every notebook of the assignment for every student: one row per student and notebook."""
    options = options or Options()
    if options.workers < 1 or options.timeout <= 0 or options.memory_limit_gb <= 0:
        raise GradingError("workers, timeout and memory limit must be positive")
    if min(options.limits.disk_bytes, options.limits.tasks) <= 0 or options.limits.cpu_seconds < 0:
        raise GradingError("the disk and task limits must be positive, the CPU limit positive or 0 (none)")
    if options.db_url and (problem := database_problem(options.db_url)):
        raise GradingError(problem)
    try:
        sandbox_mode = sandbox.mode(options.sandbox)
    except sandbox.SandboxUnavailable as error:
        raise GradingError(str(error)) from None
    paths = source_notebooks(assignment_id, source_dir)
    several = len(paths) > 1
    out.mkdir(parents=True, exist_ok=True)
    settings = [options.profile, options.timeout, options.memory_limit_gb, sandbox_mode, asdict(options.limits)]
    notebooks: dict[str, _Notebook] = {}
    for path in paths:
        notebooks[path.name] = _Notebook(
            cell_points(nbformat.read(path, as_version=4)), intake.read_class(submissions, path.name),
            Cache(out / "rows" / path.stem if several else out / "rows", path.read_bytes(), settings))

    def column(name: str, cell: str) -> str:
        """A graded cell's column in grades.csv: its id, after the notebook's name when there are several."""
        return f"{Path(name).stem}:{cell}" if several else cell

    points = {column(name, cell): value for name, notebook in notebooks.items() for cell, value in notebook.points.items()}
    students = {submission.student_id for notebook in notebooks.values() for submission in notebook.students}
    _write_intake(out / "intake.csv", notebooks)
    try:
        term = _term(options, assignment_id, students)
        term.marked_late = {submission.student_id for notebook in notebooks.values()
                            for submission in notebook.students if submission.late_marked}
        by_hand = (formgrade.hand_grades(out, assignment_id, several)   # the formgrader's first, the file's last
                   + (overrides.read(options.overrides, points, students) if options.overrides else []))
    except (lateness.TermError, overrides.OverrideError) as error:
        raise GradingError(str(error)) from None

    feedback_out = out / "feedback"
    feedback_out.mkdir(exist_ok=True)
    total = sum(len(notebook.students) for notebook in notebooks.values())
    rows: list[Row] = []

    def finish(row: Row) -> None:
        row.max_score = row.max_score or notebooks[row.notebook].max_score
        rows.append(row)
        progress(f"[{len(rows)}/{total}] {row.student_id}" + (f" {row.notebook}" if several else "")
                 + f": {row.status} {row.score:g}/{row.max_score:g}"
                 + (" (unchanged, not re-graded)" if row.reused else f" in {row.seconds:g} s")
                 + (f" on {row.host}" if options.scheduler and not row.reused and row.host else "")
                 + (f" - {row.reason}" if row.reason else ""))

    def feedback_path(student_id: str, name: str) -> Path:
        return feedback_out / student_id / f"{Path(name).stem}.html" if several else feedback_out / f"{student_id}.html"

    spaces = _workspaces(out, assignment_id, source_dir, options, sandbox_mode,
                         1 if options.scheduler else options.workers)
    pending: dict[tuple[str, str], tuple[intake.Submission, tamper.Findings]] = {}
    batch = []
    releases = {}
    for name, notebook in notebooks.items():
        release_nb = releases[name] = nbformat.read(spaces[0].release_dir() / name, as_version=4)
        for submission in notebook.students:
            if not submission.ok:
                finish(Row(submission.student_id, assignment_id, notebook=name, max_score=notebook.max_score,
                           status=Status.INVALID, reason=submission.problem))
                continue
            if not options.force and (row := notebook.cache.get(submission)) is not None:
                finish(row)
                continue
            student = safe_id(submission.student_id)
            pending[student, name] = (submission, tamper.scan(intake.as_notebook(submission), release_nb))
            batch.append(jobs.Job(student, submission.student_id, assignment_id, name,
                                  submission.notebook_bytes, options.profile, options.timeout,
                                  int(options.memory_limit_gb * 2**30), sandbox_mode, options.limits,
                                  options.db_url))
    executor = _executor(spaces, out, options)
    try:
        for job, outcome in executor.run_all(batch):
            submission, findings = pending[job.student, job.notebook_name]
            row = _row(submission, assignment_id, job.notebook_name, outcome, findings, options,
                       lambda cell: column(job.notebook_name, cell))
            if outcome.feedback_html is not None:
                row.feedback = feedback_path(submission.student_id, job.notebook_name)
                row.feedback.parent.mkdir(parents=True, exist_ok=True)
                row.feedback.write_text(outcome.feedback_html, encoding="utf-8")
            notebooks[job.notebook_name].cache.put(submission, row)
            finish(row)
    finally:
        executor.close()
    for row in rows:   # after the cache took the rows: a new override, due date or policy needs no re-grade
        overrides.apply(row, by_hand, {column(row.notebook, cell) for cell in notebooks[row.notebook].points})
        row.status, row.reason = settle(row.status, row.reason, row.pending)
        _apply_lateness(row, term)
    similar = _similar(notebooks, releases, {path.name: path for path in paths}, progress)
    similarity.write_csv(out / "similarity.csv", similar)
    return ClassResult(assignment_id, sorted(rows, key=lambda row: (row.student_id, row.notebook)), list(points),
                       sum(notebook.max_score for notebook in notebooks.values()), out,
                       notebooks={name: notebook.max_score for name, notebook in notebooks.items()},
                       cell_points=points, similarity=similar)


def _similar(notebooks: dict[str, "_Notebook"], releases: dict, sources: dict[str, Path],
             progress: Callable[[str], None]) -> list[similarity.Comparison]:
    """After grading, per notebook: the pairs of readable submissions whose own code looks alike. It reads
    the submissions only; a failure here is reported and leaves the grades as they are."""
    found = []
    for name, notebook in notebooks.items():
        readable = [submission for submission in notebook.students if submission.ok]
        try:
            comparison = similarity.compare_class(
                name, {submission.student_id: intake.as_notebook(submission) for submission in readable},
                releases[name], nbformat.read(sources[name], as_version=4))
        except Exception as error:  # a flag that could not be computed must not stop a graded class
            comparison = similarity.Comparison(name, len(readable), problem=f"{type(error).__name__}: {error}")
        found.append(comparison)
        progress(f"similarity{' of ' + name if len(notebooks) > 1 else ''}: "
                 + (f"not computed ({comparison.problem})" if comparison.problem else
                    f"{len(comparison.pairs)} similar pairs among {comparison.students} readable submissions"))
    return found


def _term(options: Options, assignment_id: str, students: set[str]) -> lateness.Term:
    term = lateness.read_term(options.term)
    if options.extensions:
        lateness.add_extensions(term, options.extensions, assignment_id, students)
    if options.submitted_at:
        lateness.add_times(term, options.submitted_at, students)
    return term


def _apply_lateness(row: Row, term: lateness.Term) -> None:
    row.raw_score = row.score
    at = term.submitted.get(row.student_id)
    row.submitted_at = at.isoformat() if at else ""
    row.late_by = term.late_seconds(row.student_id, row.assignment)
    by_marker = term.charged_by_marker(row.student_id)
    row.penalty = term.policy.penalty(row.score, 1 if by_marker else row.late_by) if row.status.scored else 0.0
    if by_marker:   # one second late: one started day
        row.reason = "; ".join(filter(None, [row.reason, "the LMS marked it late and no submission time was given "
                                             "(--submitted-at): charged as late by one started day"]))
    row.score = max(0.0, row.raw_score - row.penalty)


INTAKE_COLUMNS = ("student_id", "notebook", "lms", "name", "late_marked", "origin", "reupload", "problem")


def _write_intake(path: Path, notebooks: dict[str, "_Notebook"]) -> None:
    """What intake read, one line per student and notebook: where each came from in the download, the
    LMS's name and late marker, and the name a feedback file goes back under (autograder feedback)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(INTAKE_COLUMNS)
        for name, notebook in notebooks.items():
            for s in notebook.students:
                writer.writerow([s.student_id, name, s.lms, s.name, "yes" if s.late_marked else "", s.origin,
                                 s.reupload, s.problem])
