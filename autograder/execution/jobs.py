"""One submission's grading job, run by a long-lived worker process: the same on this machine and
on a cluster worker.

    worker = WorkerProcess(settings, log_path)
    outcome = worker.grade(job, workspace_root, job_dir)     # as many jobs as there are, one at a time
    worker.close()

`WorkerProcess.grade` writes the student's notebook and `job.json` (a `protocol.WorkerJob`) into
`job_dir` and hands the job to its worker (`python -m autograder.execution.worker`, nbgrader's
autograde and feedback), which it starts on the first job in a new session, with nbgrader imported
once for all the jobs that follow. While the job runs, `autograder.execution.bounds` watches the worker
and everything it started (the student's sandboxed kernel): past the wall clock, the memory or the task
bound the whole tree is killed, and the next job gets a fresh worker; after a job, whatever the job
left running is killed and the worker waits for the next one. The worker never runs a student's code
itself; every kernel has a sandbox of its own (`autograder.execution.provisioner`). `grade` returns what
happened as plain data (an `Outcome`, which pickles and travels back from a Dask worker) and never
raises for anything the student's notebook does.
"""

from __future__ import annotations

import os
import platform
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil

from autograder.execution import bounds
from autograder.execution.protocol import WorkerJob, WorkerResult
from autograder.settings import GradingSettings
from course import gpu

# the wall clock of a job is the notebook's timeout and this: the worker's own part of a job
# (nbgrader's bookkeeping, the feedback page) and room for nbgrader's cell timeout to say which cell
WALL_CLOCK_GRACE = 30
CLOSE_SECONDS = 10


@dataclass(frozen=True)
class Job:
    """What to grade: one student's notebook."""
    safe_id: str                 # the student's name inside nbgrader's folders (cache.safe_id)
    student_id: str              # the id as submitted (spaces, accents), kept in the gradebook as lms_user_id
    assignment: str
    notebook_name: str
    notebook_bytes: bytes


@dataclass(frozen=True)
class Outcome:
    seconds: float
    timed_out: bool = False
    memory_exceeded: bool = False
    tasks_exceeded: bool = False  # more processes and threads than the job's limit
    crash: str = ""              # last line the worker wrote to its log when it died without a result
    result: WorkerResult | None = None  # what autograder.execution.worker found (nbgrader's scores, failures)
    feedback_html: str | None = None
    host: str = ""               # where it ran: this machine's name, or the Dask worker's address
    not_run: bool = False        # the cluster did not run it to the end (`executors.not_run`): its row is not kept


def environment(profile: str, gpu_devices: str | None = None) -> dict[str, str]:
    """The environment of a worker process, and so of its kernels: this process's, with the venv first
    on PATH, what the profile sets (`course.gpu.environment`) and, when given, the GPUs the kernels may
    use (`CUDA_VISIBLE_DEVICES`)."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
               **gpu.environment(profile))
    if gpu_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu_devices
    return env


def _pipes(process: subprocess.Popen) -> tuple[IO[bytes], IO[bytes]]:
    """A worker's stdin and stdout (`WorkerProcess.start` opens both as pipes)."""
    assert process.stdin is not None and process.stdout is not None, "WorkerProcess.start opens both as pipes"
    return process.stdin, process.stdout


class WorkerProcess:
    """One slot's worker: started on its first job, and again after a job it did not survive. Not
    thread-safe: one thread hands it one job at a time (`executors.LocalExecutor`); `stop` then `close`
    end it."""

    def __init__(self, settings: GradingSettings, log_path: Path, *, gpu_devices: str | None = None,
                 host: str = ""):
        self.settings = settings
        self.log_path = log_path
        self.gpu_devices = gpu_devices
        self.host = host or platform.node()
        self.process: subprocess.Popen | None = None
        self.jobs = 0                # jobs handed to the current process

    def start(self) -> subprocess.Popen:
        """The worker process, started now unless it runs (it imports nbgrader while the driver plans)."""
        if self.process is None or self.process.poll() is not None:
            self.jobs = 0
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "autograder.execution.worker"], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=log, cwd=str(self.log_path.parent), start_new_session=True,
                    env=environment(self.settings.profile, self.gpu_devices))
        return self.process

    def _replied(self, process: subprocess.Popen, seconds: float) -> str | None:
        """The worker's reply if one comes within `seconds`; "" when the worker exited without one."""
        _, stdout = _pipes(process)
        ready, _, _ = select.select([stdout], [], [], seconds)
        if not ready:
            return None if process.poll() is None else ""
        return stdout.readline().decode("utf-8").strip()

    def grade(self, job: Job, workspace_root: Path, job_dir: Path) -> Outcome:
        """Grade `job` against the workspace at `workspace_root`, in `job_dir`.

        Returns the job's outcome: a student's notebook failing, a crash, a timeout or a limit passed
        is an outcome, never an exception. Writes `job_dir` (made anew: the notebook, job.json, what the
        worker leaves); starts the worker process when none runs, and forgets one it killed or that
        died (the next job starts another); changes `self.jobs`."""
        if job_dir.exists():
            shutil.rmtree(job_dir)
        job_dir.mkdir(parents=True)
        notebook_file = job_dir / job.notebook_name
        notebook_file.write_bytes(job.notebook_bytes)
        job_path = job_dir / "job.json"
        WorkerJob(workspace=str(workspace_root), assignment=job.assignment, safe_id=job.safe_id,
                  student_id=job.student_id, notebook_name=job.notebook_name, notebook_file=str(notebook_file),
                  settings=self.settings).write(job_path)
        start = time.monotonic()
        process = self.start()
        self.jobs += 1
        replies: list[str] = []

        def finished(seconds: float) -> bool:
            reply = self._replied(process, seconds)
            if reply is not None:
                replies.append(reply)
            return reply is not None

        stdin, _ = _pipes(process)
        try:
            stdin.write(f"{job_path}\n".encode("utf-8"))
            stdin.flush()
        except BrokenPipeError:  # it died between two jobs: its log says why, finished() sees it gone
            pass
        watched = bounds.watch(psutil.Process(process.pid), finished, start=start,
                               wall_seconds=self.settings.timeout + WALL_CLOCK_GRACE,
                               memory_bytes=self.settings.memory_bytes, tasks=self.settings.task_limit)
        seconds = round(time.monotonic() - start, 2)
        if watched.killed:
            self._reap()
            return Outcome(seconds, watched.timed_out, watched.memory_exceeded, watched.tasks_exceeded,
                           host=self.host)
        if not replies or not replies[0]:
            self._reap()
            return Outcome(seconds, crash=self._last_words(process), host=self.host)
        result = WorkerResult.read(Path(replies[0]))
        feedback = Path(result.feedback) if result.feedback else None
        html = feedback.read_text(encoding="utf-8") if feedback and feedback.exists() else None
        return Outcome(seconds, result=result, feedback_html=html, host=self.host)

    def _reap(self) -> None:
        """Forget a worker that was killed or died (the next job starts another)."""
        if self.process is not None:
            process, self.process = self.process, None
            bounds.kill_tree([psutil.Process(process.pid)] if process.poll() is None else [])
            process.wait()
            for pipe in _pipes(process):
                pipe.close()

    def _last_words(self, process: subprocess.Popen) -> str:
        """The last line the worker wrote to its log, or its exit code."""
        with self.log_path.open("rb") as log:
            log.seek(max(0, self.log_path.stat().st_size - 4000))
            lines = log.read().decode("utf-8", "replace").strip().splitlines()
        return (lines[-1] if lines else f"the worker exited with code {process.returncode}")[:300]

    def stop(self) -> None:
        """Ask the worker to end: its input closes, it finishes and exits (`close` waits for it)."""
        if self.process is None:
            return
        stdin, _ = _pipes(self.process)
        if not stdin.closed:
            try:
                stdin.close()
            except BrokenPipeError:
                pass

    def close(self) -> None:
        """End the worker (`stop`) and wait for it; kill it if it does not exit, or at once when it was
        never given a job."""
        if self.process is None:
            return
        self.stop()
        process, self.process = self.process, None
        try:
            process.wait(timeout=CLOSE_SECONDS if self.jobs else 0)
        except subprocess.TimeoutExpired:
            bounds.kill_tree([psutil.Process(process.pid)] if process.poll() is None else [])
            process.wait()
        _, stdout = _pipes(process)
        stdout.close()
