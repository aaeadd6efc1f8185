"""One submission's grading job: the same on this machine and on a cluster worker.

    outcome = jobs.run(job, workspace_root, job_dir)

`run` writes the student's notebook and `job.json` (a `protocol.WorkerJob`) into `job_dir`, runs
`python -m autograder.execution.worker job.json` (nbgrader's autograde and feedback) in a process
of its own, in a new session, under `autograder.execution.bounds`, against the nbgrader course
directory at `workspace_root`, and returns what happened as plain data (an `Outcome`, which pickles
and travels back from a Dask worker). It never raises for anything the student's notebook does.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.execution import bounds
from autograder.execution.protocol import WorkerJob, WorkerResult
from autograder.execution.sandbox import Limits
from course import gpu


@dataclass(frozen=True)
class Job:
    student: str                 # the student's safe id (the name inside nbgrader's folders)
    student_id: str              # the id as submitted (spaces, accents), kept in the gradebook as lms_user_id
    assignment: str
    notebook_name: str
    notebook_bytes: bytes
    profile: str
    timeout: float               # seconds per notebook, wall clock
    memory_bytes: int            # resident memory of the worker and its kernel
    sandbox: str                 # the kernel sandbox mode the driver decided on (autograder.execution.sandbox)
    limits: Limits = Limits()    # what the kernel's sandbox may use besides memory and time
    db_url: str | None = None    # a shared gradebook (PostgreSQL); None: the workspace's own SQLite file


@dataclass(frozen=True)
class Outcome:
    seconds: float
    timed_out: bool = False
    memory_exceeded: bool = False
    tasks_exceeded: bool = False  # more processes and threads than the job's limit
    crash: str = ""              # last line the worker wrote to stderr when it died without a result
    result: WorkerResult | None = None  # what autograder.execution.worker found (nbgrader's scores, failures)
    feedback_html: str | None = None
    host: str = ""               # where it ran: this machine's name, or the Dask worker's address


def environment(job: Job, gpu_devices: str | None = None) -> dict[str, str]:
    """The environment of the job's worker process, and so of its kernel: this process's, with the
    venv first on PATH, what the job's profile sets (`course.gpu.environment`) and, when given, the
    GPUs the kernel may use (`CUDA_VISIBLE_DEVICES`)."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               **gpu.environment(job.profile))
    if gpu_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu_devices
    return env


def run(job: Job, workspace_root: Path, job_dir: Path, *, host: str = "", gpu_devices: str | None = None) -> Outcome:
    """Grade `job` against the course directory at `workspace_root`, in `job_dir`. `gpu_devices` (a
    Dask GPU worker's own GPUs) becomes the kernel's `CUDA_VISIBLE_DEVICES`."""
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    notebook_file = job_dir / job.notebook_name
    notebook_file.write_bytes(job.notebook_bytes)
    job_path = job_dir / "job.json"
    WorkerJob(workspace=str(workspace_root), assignment=job.assignment, student=job.student,
              student_id=job.student_id, notebook_name=job.notebook_name, notebook_file=str(notebook_file),
              profile=job.profile, cell_timeout=int(job.timeout), sandbox=job.sandbox, limits=job.limits,
              db_url=job.db_url).write(job_path)
    bounded = bounds.run_bounded([sys.executable, "-m", "autograder.execution.worker", str(job_path)],
                                 env=environment(job, gpu_devices), cwd=str(job_dir), timeout=job.timeout + 30,
                                 memory_bytes=job.memory_bytes, tasks=job.limits.tasks,
                                 stderr_path=str(job_dir / "worker.log"))
    host = host or platform.node()
    seconds = round(bounded.seconds, 2)
    if bounded.memory_exceeded or bounded.timed_out or bounded.tasks_exceeded:
        return Outcome(seconds, bounded.timed_out, bounded.memory_exceeded, bounded.tasks_exceeded, host=host)
    result_path = job_path.with_suffix(".result.json")
    if not result_path.exists():
        last = bounded.stderr_tail.strip().splitlines()[-1:] or [f"exit code {bounded.returncode}"]
        return Outcome(seconds, crash=last[0][:300], host=host)
    result = WorkerResult.read(result_path)
    feedback = Path(result.feedback) if result.feedback else None
    html = feedback.read_text(encoding="utf-8") if feedback and feedback.exists() else None
    return Outcome(seconds, result=result, feedback_html=html, host=host)
