"""One submission's grading job: the same on this machine and on a cluster worker.

    outcome = jobs.run(job, workspace_root, job_dir)

`run` writes the student's notebook and `job.json` into `job_dir`, runs `autograder.worker`
(nbgrader's autograde and feedback) in a bounded process of its own (`autograder.bounds`) against
the nbgrader course directory at `workspace_root`, and returns what happened as plain data (an `Outcome`, which pickles and travels
back from a Dask worker). It never raises for anything the student's notebook does.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder import bounds, warm_kernels, worker
from course import gpu

# grading processes fork from a server that has imported nbgrader once (saves seconds per notebook)
_FORKSERVER = multiprocessing.get_context("forkserver")
_FORKSERVER.set_forkserver_preload(["autograder.worker"])


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
    sandbox: str                 # the kernel sandbox mode the driver decided on (autograder.sandbox)
    db_url: str | None = None    # a shared gradebook (PostgreSQL); None: the workspace's own SQLite file


@dataclass(frozen=True)
class Outcome:
    seconds: float
    timed_out: bool = False
    memory_exceeded: bool = False
    crash: str = ""              # last line the worker wrote to stderr when it died without a result
    result: dict | None = None   # autograder.worker's result: status, reason, score, max_score, cells
    feedback_html: str | None = None
    host: str = ""               # where it ran: this machine's name, or the Dask worker's address


def environment(job: Job, gpu_devices: str | None = None) -> dict[str, str]:
    """The environment of the job's worker process, and so of its kernel: this process's, with the
    venv first on PATH, the sandbox mode, what the job's profile sets (`course.gpu.environment`) and,
    when given, the GPUs the kernel may use (`CUDA_VISIBLE_DEVICES`)."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               AUTOGRADER_SANDBOX=job.sandbox, **gpu.environment(job.profile))
    if gpu_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu_devices
    return env


def run(job: Job, workspace_root: Path, job_dir: Path, *, host: str = "",
        kernel_server: warm_kernels.KernelServer | None = None, gpu_devices: str | None = None) -> Outcome:
    """Grade `job` against the course directory at `workspace_root`, in `job_dir`. With a
    `kernel_server` (local workers), the notebook's kernel is a fork of that server's warm process;
    its processes count toward the job's memory bound and are killed with the job. `gpu_devices`
    (a Dask GPU worker's own GPUs) becomes the kernel's `CUDA_VISIBLE_DEVICES`."""
    if job_dir.exists():
        shutil.rmtree(job_dir)
    job_dir.mkdir(parents=True)
    notebook_file = job_dir / job.notebook_name
    notebook_file.write_bytes(job.notebook_bytes)
    job_path = job_dir / "job.json"
    job_path.write_text(json.dumps({
        "workspace": str(workspace_root), "assignment": job.assignment, "student": job.student,
        "student_id": job.student_id,
        "notebook_name": job.notebook_name, "notebook_file": str(notebook_file), "profile": job.profile,
        "cell_timeout": int(job.timeout), "db_url": job.db_url}), encoding="utf-8")
    env = environment(job, gpu_devices)
    log = str(job_dir / "worker.log")
    limits = {"timeout": job.timeout + 30, "memory_bytes": job.memory_bytes, "stderr_path": log}
    if kernel_server is not None:
        env[warm_kernels.ENV] = str(kernel_server.ensure().root)
        limits["also"] = kernel_server.kernel_processes
    if multiprocessing.current_process().daemon:  # e.g. a Dask worker under its nanny: no children
        bounded = bounds.run_bounded([sys.executable, "-m", "autograder.worker", str(job_path)], env=env,
                                     cwd=str(job_dir), **limits)
    else:
        forked = _FORKSERVER.Process(target=worker.run_forked, args=(str(job_path), log, env, str(job_dir)))
        bounded = bounds.call_bounded(forked, **limits)
    host = host or platform.node()
    seconds = round(bounded.seconds, 2)
    if bounded.memory_exceeded or bounded.timed_out:
        return Outcome(seconds, bounded.timed_out, bounded.memory_exceeded, host=host)
    result_path = job_path.with_suffix(".result.json")
    if not result_path.exists():
        last = bounded.stderr_tail.strip().splitlines()[-1:] or [f"exit code {bounded.returncode}"]
        return Outcome(seconds, crash=last[0][:300], host=host)
    result = json.loads(result_path.read_text(encoding="utf-8"))
    feedback = Path(result.pop("feedback")) if result.get("feedback") else None
    html = feedback.read_text(encoding="utf-8") if feedback and feedback.exists() else None
    return Outcome(seconds, result=result, feedback_html=html, host=host)
