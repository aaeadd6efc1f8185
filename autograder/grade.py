"""Grade a class: intake, then nbgrader's autograde for each student in a bounded worker process,
on this machine or on a Dask cluster (`autograder.executors`).

    result = grade_class("00_gpu_setup", Path("source/00_gpu_setup"), Path("downloads"),
                         Path("build/grading/00_gpu_setup"), options=Options(workers=2))

Every student gets a row whatever they submitted. The run writes only under `out`:
- `course-<k>/`   one private nbgrader course directory per local worker (source, gradebook,
                  autograded); on a cluster, `course-0/` is the template every task unpacks
- `jobs/`         each submission's notebook as a local worker reads it, the worker's result and
                  log, and the kernel servers' logs
- `rows/`         finished rows keyed by content hash: a re-run skips them unless `force`
- `feedback/`     one HTML per student, without hidden tests
Each local worker's kernels fork from a kernel server of its own (`autograder.warm_kernels`), started
before the workspaces are generated so that its imports overlap that work; `kernels="cold"`, the
gpu profile (unless `kernels="warm"`) and clusters start every kernel from scratch. Workers never
share a gradebook file, so a parallel run gives exactly the rows of a serial one; with `db_url` they
share one gradebook server (PostgreSQL), which takes concurrent writers.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from autograder import __version__, config, executors, intake, jobs, sandbox, tamper, warm_kernels
from autograder.gradebook import database_problem
from autograder.workspace import Workspace

@dataclass
class Options:
    profile: str = "grade"
    workers: int = 1
    timeout: float = 600.0          # seconds per notebook, wall clock
    memory_limit_gb: float = 6.0    # resident memory of the worker and its kernel
    force: bool = False             # re-grade submissions already graded with the same content
    scheduler: str | None = None    # a dask.distributed scheduler address: run the notebooks on its workers
    db_url: str | None = None       # an SQLAlchemy URL of a shared gradebook (PostgreSQL); None: SQLite per worker
    kernels: str = "auto"           # local workers: "warm" forks kernels from a server per worker
                                    # (autograder.warm_kernels), "cold" starts each from scratch,
                                    # "auto" is warm except under the gpu profile


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
    host: str = ""                  # where the notebook ran (a Dask worker's address on a cluster)

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


def _workspaces(out: Path, assignment_id: str, source_dir: Path, options: Options, count: int) -> list[Workspace]:
    def workspace(root: Path) -> Workspace:
        return Workspace(root, assignment_id, profile=options.profile, cell_timeout=int(options.timeout),
                         db=options.db_url)

    first = workspace(out / "course-0")
    if first.root.exists():
        shutil.rmtree(first.root)
    first.create(source_dir)
    spaces = [first]
    for number in range(1, count):
        root = out / f"course-{number}"
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(first.root, root)
        spaces.append(workspace(root))
    return spaces


KERNELS = ("auto", "warm", "cold")


def kernel_servers(options: Options, source_nb, sandbox_mode: str, out: Path, jobs_to_run: int,
                   progress: Callable[[str], None]) -> list[warm_kernels.KernelServer]:
    """The local workers' kernel servers (one per worker that will have a job), started now so their
    imports overlap the workspace's generation; none on a cluster, with cold kernels, or when the
    kernelspec cannot be forked (said so)."""
    if options.scheduler or options.kernels == "cold" or not jobs_to_run:
        return []
    if options.kernels == "auto" and options.profile == "gpu":
        # a CUDA context does not survive a fork: the server only imports, which initialises no
        # CUDA, but that has not been checked on a GPU machine, and a GPU notebook's minutes dwarf
        # an import's seconds
        progress("kernels: cold (the gpu profile; --kernels warm forks them anyway)")
        return []
    try:
        servers = warm_kernels.servers(min(options.workers, jobs_to_run), kernel_name=config.KERNEL_NAME,
                                       notebook=source_nb, sandbox_mode=sandbox_mode, log_dir=out / "jobs")
    except (warm_kernels.Unavailable, OSError) as why:
        progress(f"kernels: cold ({why})")
        return []
    progress(f"kernels: warm, forked from {len(servers)} server(s) that imported "
             f"{', '.join(servers[0].preload) or 'ipykernel only'} once")
    return servers


def _executor(spaces: list[Workspace], out: Path, options: Options, servers: list[warm_kernels.KernelServer]):
    if options.scheduler:
        try:
            return executors.DaskExecutor(options.scheduler, spaces[0], gpu=options.profile == "gpu")
        except executors.ClusterError as error:
            raise GradingError(str(error)) from None
    return executors.LocalExecutor(spaces, out / "jobs", servers)


def _row(submission: intake.Submission, assignment_id: str, outcome: jobs.Outcome, options: Options) -> Row:
    row = Row(submission.student_id, assignment_id, seconds=outcome.seconds, host=outcome.host)
    if outcome.memory_exceeded:
        row.status, row.reason = "error", (f"memory limit exceeded: more than {options.memory_limit_gb:g} GB "
                                           "resident in the notebook's kernel")
    elif outcome.timed_out:
        row.status, row.reason = "timeout", f"the notebook ran longer than {options.timeout:g} s"
    elif outcome.result is None:
        row.status, row.reason = "error", f"grading crashed: {outcome.crash}"
    else:
        result = outcome.result
        row.status, row.reason = result["status"], result["reason"]
        row.score, row.max_score, row.cells = result["score"], result["max_score"], result["cells"]
    if row.status in ("timeout", "error"):
        row.score, row.cells = 0.0, {}
    return row


def with_findings(row: Row, findings: tamper.Findings) -> Row:
    """The tamper scan's findings decide the status over the run's: a flagged submission stays
    flagged whatever its run did, and the reason keeps both (an instructor must not re-run a
    tampering submission that then hung as if the grader had failed)."""
    row.notes = findings.notes
    if findings.flagged:
        run = "" if row.status in ("graded", "flagged") else f"; then {row.status}: {row.reason}"
        row.status, row.reason = "flagged", findings.reason() + run
    return row


def grade_class(assignment_id: str, source_dir: Path, submissions: Path, out: Path, *,
                options: Options | None = None, progress: Callable[[str], None] = print) -> ClassResult:
    options = options or Options()
    if options.workers < 1 or options.timeout <= 0 or options.memory_limit_gb <= 0:
        raise GradingError("workers, timeout and memory limit must be positive")
    if options.kernels not in KERNELS:
        raise GradingError(f"kernels must be one of {', '.join(KERNELS)}, not {options.kernels!r}")
    if options.db_url and (problem := database_problem(options.db_url)):
        raise GradingError(problem)
    try:
        sandbox_mode = sandbox.mode()
    except sandbox.SandboxUnavailable as error:
        raise GradingError(str(error)) from None
    notebook_path = source_notebook(assignment_id, source_dir)
    students = intake.read_class(submissions, notebook_path.name)
    out.mkdir(parents=True, exist_ok=True)
    source_nb = nbformat.read(notebook_path, as_version=4)
    cell_ids = grade_cell_ids(source_nb)
    max_score = sum(float(cell.metadata["nbgrader"].get("points", 0)) for cell in source_nb.cells
                    if cell.metadata.get("nbgrader", {}).get("grade"))
    cache = _Cache(out / "rows", notebook_path.read_bytes(), options)
    reused = {} if options.force else {submission.student_id: row for submission in students
                                       if submission.ok and (row := cache.get(submission)) is not None}
    to_grade = sum(1 for submission in students if submission.ok and submission.student_id not in reused)
    feedback_out = out / "feedback"
    feedback_out.mkdir(exist_ok=True)
    rows: list[Row] = []

    def finish(row: Row) -> None:
        row.max_score = row.max_score or max_score
        rows.append(row)
        progress(f"[{len(rows)}/{len(students)}] {row.student_id}: {row.status} {row.score:g}/{row.max_score:g}"
                 + (" (unchanged, not re-graded)" if row.reused else f" in {row.seconds:g} s")
                 + (f" on {row.host}" if options.scheduler and not row.reused and row.host else "")
                 + (f" - {row.reason}" if row.reason else ""))

    servers = kernel_servers(options, source_nb, sandbox_mode, out, to_grade, progress)
    try:
        spaces = _workspaces(out, assignment_id, source_dir, options, 1 if options.scheduler else options.workers)
        release_nb = nbformat.read(spaces[0].release_dir() / notebook_path.name, as_version=4)
        pending: dict[str, tuple[intake.Submission, tamper.Findings]] = {}
        batch = []
        for submission in students:
            if not submission.ok:
                finish(Row(submission.student_id, assignment_id, max_score=max_score, status="invalid",
                           reason=submission.problem))
                continue
            if submission.student_id in reused:
                finish(reused[submission.student_id])
                continue
            student = safe_id(submission.student_id)
            pending[student] = (submission, tamper.scan(intake.as_notebook(submission), release_nb))
            batch.append(jobs.Job(student, submission.student_id, assignment_id, notebook_path.name,
                                  submission.notebook_bytes, options.profile, options.timeout,
                                  int(options.memory_limit_gb * 2**30), sandbox_mode, options.db_url))
        executor = _executor(spaces, out, options, servers)
        try:
            for job, outcome in executor.run_all(batch):
                submission, findings = pending[job.student]
                row = with_findings(_row(submission, assignment_id, outcome, options), findings)
                if outcome.feedback_html is not None:
                    row.feedback = feedback_out / f"{submission.student_id}.html"
                    row.feedback.write_text(outcome.feedback_html, encoding="utf-8")
                cache.put(submission, row)
                finish(row)
        finally:
            executor.close()
    finally:
        for server in servers:   # the executor closes them too; this is for when it never started
            server.close()
    return ClassResult(assignment_id, sorted(rows, key=lambda row: row.student_id), cell_ids, max_score, out)
