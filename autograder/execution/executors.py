"""Where grading jobs run: on this machine (the default) or on a `dask.distributed` cluster.

An executor is what `Executor` says (how many workspaces it wants, `run_all`, `close`), made
by a factory `(settings, run folder) -> Executor` registered under the `autograder.executors` entry
point (as papermill finds its engines): `local` and `dask` here (pyproject.toml), chosen by the
`executor` setting (default: `dask` with a scheduler, else `local`). A Slurm or Kubernetes backend is
a module of its own with such a factory, registered by its package's entry point.

Both executors here take the same `jobs.Job`s and yield the same `jobs.Outcome`s, as each finishes:

- `LocalExecutor`: one slot per local worker, each a long-lived worker process
  (`jobs.WorkerProcess`, nbgrader imported once) with its own workspace (an nbgrader course
  directory), so no two jobs share a gradebook file; a thread per slot hands it one job after another;
- `DaskExecutor`: every job is a Dask task. The workspace travels once to the cluster as a
  tar archive, itself a task that every job depends on (so the scheduler can rebuild it when the
  workers that held it are gone); each task unpacks it into a fresh temporary folder on its worker
  and grades the job there with a worker process of its own, so a task is independent of every
  other (safe to run twice) and workers need the course's environment but no shared file system.
  The `gpu` profile asks for the `GPU` resource, so it only lands on workers started with
  `--resources GPU=1`, and a task on such a worker sees only that worker's GPU (`gpu_devices`). A worker that dies mid-job loses nothing: the scheduler runs its tasks again
  elsewhere (`distributed.scheduler.allowed-failures`), and a job is safe to run twice. A cluster
  left with no worker that can take the jobs for `WORKERLESS_SECONDS` is given up on: every job not
  yet done gets an outcome saying so (a row), then `run_all` raises `ClusterError`. A job the cluster
  could not run (a task it lost, a cluster given up on) gets an outcome marked `not_run` (by `not_run`):
  its row is not kept between runs, so the next run grades it.
"""

from __future__ import annotations

import concurrent.futures
import io
import os
import queue
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from importlib.metadata import entry_points
from typing import Callable, Iterable, Iterator, Protocol

from autograder.errors import AutograderError
from autograder.execution import jobs
from autograder.nbgrader_setup.workspace import Workspace
from autograder.runfolder import RunFolder
from autograder.settings import GradingSettings

# what a task needs of the workspace: not the students' folders of an earlier run
PACK_SKIPS = ("submitted", "autograded", "feedback")
CONNECT_SECONDS = 30
# a bound on a dead cluster, not on speed: how long a run waits, with jobs left, while the scheduler
# has no worker that can take them (all lost, none joined) before it gives up with a ClusterError.
# A slow job on a live worker never meets it. `DaskExecutor.workerless_seconds` (tests shorten it)
WORKERLESS_SECONDS = 120.0
# how often, while jobs are left, the scheduler is asked for its workers (and the longest one asking
# may take): `DaskExecutor.look_seconds`
LOOK_SECONDS = 2.0


ENTRY_POINTS = "autograder.executors"


class Executor(Protocol):
    """What grading asks of the place its jobs run."""

    workspaces: int   # how many workspaces `run_all` takes (one per slot, or one to ship)

    def run_all(self, batch: Iterable[jobs.Job], workspaces: list[Workspace]) -> Iterator[tuple[jobs.Job, jobs.Outcome]]:
        """Every job of `batch`, in the workspaces `workspaces`; each with its outcome as it finishes."""
        ...

    def close(self) -> None:
        """Stop what the executor started; safe after an error."""
        ...


class ExecutorError(AutograderError):
    """No executor of that name is registered."""


def open_executor(settings: GradingSettings, run_folder: RunFolder) -> Executor:
    """The executor the settings name (`executor`; default `dask` with a scheduler, else `local`), made
    by the factory registered under that name in the `autograder.executors` entry points."""
    name = settings.executor or ("dask" if settings.scheduler else "local")
    registered = {point.name: point for point in entry_points(group=ENTRY_POINTS)}
    if name not in registered:
        raise ExecutorError(f"no executor {name!r}: the registered ones are {', '.join(sorted(registered)) or 'none'} "
                            f"(entry point group {ENTRY_POINTS})")
    return registered[name].load()(settings, run_folder)


def local(settings: GradingSettings, run_folder: RunFolder) -> "LocalExecutor":
    """The `local` executor: a worker process per local worker, each job's files in the run folder."""
    return LocalExecutor(settings.local_workers, settings,
                         lambda job: run_folder.job_dir(job.safe_id, job.notebook_name), run_folder.worker_log)


def dask(settings: GradingSettings, run_folder: RunFolder) -> "DaskExecutor":
    """The `dask` executor: the cluster whose scheduler the settings name."""
    if not settings.scheduler:
        raise ClusterError("the dask executor needs the scheduler's address: --scheduler tcp://head-node:8786")
    return DaskExecutor(settings.scheduler, settings)


class ClusterError(AutograderError):
    """The cluster cannot take the jobs: unreachable, no workers, or none with the needed resource."""


class WorkerlessWatch:
    """How long a cluster has had no worker, from the worker counts it is shown and when (monotonic
    seconds): `saw` gives that time once it reaches `bound`, else None. A worker seen starts it again."""

    def __init__(self, bound: float):
        self.bound = bound
        self.since: float | None = None

    def saw(self, workers: int, now: float) -> float | None:
        if workers:
            self.since = None
            return None
        if self.since is None:
            self.since = now
        waited = now - self.since
        return waited if waited >= self.bound else None


class LocalExecutor:
    """`size` long-lived worker processes, started at once (they import nbgrader while the driver reads
    the class); `run_all` pairs each with a workspace of its own. `job_dir(job)` is where a
    job's files go; worker k logs to `log_path(k)`."""

    def __init__(self, size: int, settings: GradingSettings, job_dir: Callable[[jobs.Job], Path],
                 log_path: Callable[[int], Path]):
        self.job_dir = job_dir
        self.size = self.workspaces = size
        self.workers = [jobs.WorkerProcess(settings, log_path(number)) for number in range(size)]
        for worker in self.workers:
            worker.start()

    def run_all(self, batch: Iterable[jobs.Job], workspaces: list[Workspace]) -> Iterator[tuple[jobs.Job, jobs.Outcome]]:
        """Every job of `batch`, each on a free worker and its workspace (one per worker)."""
        free: queue.Queue[tuple[Workspace, jobs.WorkerProcess]] = queue.Queue()
        for slot in zip(workspaces, self.workers, strict=True):
            free.put(slot)

        def grade_one(job: jobs.Job) -> jobs.Outcome:
            workspace, worker = free.get()
            try:
                return worker.grade(job, workspace.root, self.job_dir(job))
            finally:
                free.put((workspace, worker))

        with concurrent.futures.ThreadPoolExecutor(max_workers=self.size) as pool:
            futures = {pool.submit(grade_one, job): job for job in batch}
            for future in concurrent.futures.as_completed(futures):
                yield futures[future], future.result()

    def close(self) -> None:
        for worker in self.workers:   # all asked at once, so they exit side by side
            worker.stop()
        for worker in self.workers:
            worker.close()


def pack(workspace: Workspace) -> bytes:
    """The workspace as a tar archive, without students' folders."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for child in sorted(workspace.root.iterdir()):
            if child.name not in PACK_SKIPS:
                archive.add(child, arcname=child.name)
    return buffer.getvalue()


def not_run(why: str) -> jobs.Outcome:
    """The outcome of a job the cluster did not run to the end (a task it lost, a cluster given up on):
    a crash that says why, marked `not_run` so that its row is not kept and the next run grades it."""
    return jobs.Outcome(0.0, crash=f"the cluster could not run it: {why}"[:300], not_run=True)


def _packed_workspace(packed: bytes) -> bytes:
    return packed


def gpu_devices(address: str, workers: dict[str, dict]) -> str | None:
    """The GPUs a Dask worker owns, as `CUDA_VISIBLE_DEVICES` says them, or None for a worker
    without the `GPU` resource.

    `workers` is `Client.scheduler_info()["workers"]`. The workers of one host that have the `GPU`
    resource share its GPUs out in the order of their names (then addresses): with three workers
    started with `--resources GPU=1`, the first gets "0", the second "1", the third "2"; a worker
    with `GPU=2` gets two. Without this every kernel of every worker would map every GPU of the node."""
    mine = workers.get(address)
    if not mine or not mine.get("resources", {}).get("GPU"):
        return None
    peers = sorted((address_ for address_, info in workers.items()
                    if info.get("host") == mine.get("host") and info.get("resources", {}).get("GPU")),
                   key=lambda peer: (str(workers[peer].get("name", "")), peer))
    first = sum(int(workers[peer]["resources"]["GPU"]) for peer in peers[:peers.index(address)])
    return ",".join(str(index) for index in range(first, first + int(mine["resources"]["GPU"])))


def _gpu_devices_of(worker) -> str | None:
    """This worker's GPUs: the CUDA_VISIBLE_DEVICES it was started with (the operator's choice), else
    its share of its host's GPUs (`gpu_devices`)."""
    from distributed import get_client

    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None or not worker.state.total_resources.get("GPU"):
        return None  # the kernel inherits the worker's own setting, or the worker has no GPU
    return gpu_devices(worker.address, get_client().scheduler_info()["workers"])


def run_on_worker(packed_workspace: bytes, settings: GradingSettings, job: jobs.Job) -> jobs.Outcome:
    """The Dask task: unpack the workspace into a fresh folder and grade the job there."""
    from distributed import get_worker

    dask_worker = get_worker()
    with tempfile.TemporaryDirectory(prefix="autograder-task-") as scratch:
        root = Path(scratch) / "course"
        with tarfile.open(fileobj=io.BytesIO(packed_workspace)) as archive:
            archive.extractall(root, filter="data")
        worker = jobs.WorkerProcess(settings, Path(scratch) / "worker.log", host=dask_worker.address,
                                    gpu_devices=_gpu_devices_of(dask_worker))
        try:
            return worker.grade(job, root, Path(scratch) / "job")
        finally:
            worker.close()


class DaskExecutor:
    def __init__(self, address: str, settings: GradingSettings):
        from distributed import Client

        try:
            # not the process's default client: a program that grades beside clients of its own (a
            # notebook, a test that watches the cluster) keeps its default, and `run_all` names this one
            self.client = Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {error}") from None
        self.address = address
        self.workerless_seconds = WORKERLESS_SECONDS
        self.look_seconds = LOOK_SECONDS
        try:
            self.client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except TimeoutError:
            self.close()
            raise ClusterError(f"the Dask scheduler at {address} has no workers") from None
        self.settings = settings
        gpu = settings.profile == "gpu"
        self.resources = {"GPU": 1} if gpu else None
        if gpu and not self.workers_with("GPU"):
            self.close()
            raise ClusterError("the gpu profile needs a worker with the GPU resource; none of the cluster's "
                               "workers has one (start them with `dask worker ... --resources GPU=1`)")
        self.size = len(self.client.scheduler_info()["workers"])
        self.workspaces = 1   # the workspace is shipped to every task

    def workers_with(self, resource: str) -> list[str]:
        workers = self.client.scheduler_info()["workers"]
        return [address for address, info in workers.items() if info.get("resources", {}).get(resource)]

    def run_all(self, batch: Iterable[jobs.Job], workspaces: list[Workspace]) -> Iterator[tuple[jobs.Job, jobs.Outcome]]:
        """Every job of `batch` as a task; the first of `workspaces` is the workspace every task unpacks."""
        run_key = uuid.uuid4().hex[:8]  # keys unique per run: two graders may share a cluster
        # a task, not scattered data: when the worker holding it dies, the scheduler recomputes it
        # from the graph (scattered data would be lost, and every job waiting on it cancelled)
        workspace = self.client.submit(_packed_workspace, pack(workspaces[0]), pure=False, key=f"workspace-{run_key}")
        futures = {self.client.submit(run_on_worker, workspace, self.settings, job, pure=False,
                                      key=f"grade-{job.assignment}-{job.safe_id}-{Path(job.notebook_name).stem}-{run_key}",
                                      resources=self.resources): job for job in batch}
        # Future.add_done_callback runs on the loop of the future's own client (this one): another
        # client of the process, made later and closed while the jobs run (a test's own), cannot take
        # the news of their ends with it, as it did with `as_completed`, which follows the newest
        # default client's loop
        finished: queue.Queue = queue.Queue()
        for future in futures:
            future.add_done_callback(finished.put)
        watch = WorkerlessWatch(self.workerless_seconds)
        next_look = time.monotonic() + self.look_seconds
        while futures:
            try:
                future = finished.get(timeout=max(0.0, next_look - time.monotonic()))
                if future in futures:
                    yield futures.pop(future), self._outcome(future)
                continue
            except queue.Empty:
                pass
            waited = watch.saw(self._able_workers(), time.monotonic())
            next_look = time.monotonic() + self.look_seconds
            if waited is not None:
                yield from self._give_up(futures, finished, waited)

    def _outcome(self, future) -> jobs.Outcome:
        try:
            return future.result()
        except Exception as error:  # KilledWorker (it took down every worker it ran on), a lost task...
            return not_run(f"{type(error).__name__}: {error}")

    def _able_workers(self) -> int:
        """How many workers the scheduler has that can take the jobs (with the GPU resource, for the
        gpu profile); 0 when it does not answer within `look_seconds`."""
        try:
            info = self.client.sync(self.client.scheduler.identity, n_workers=-1,
                                    callback_timeout=self.look_seconds)
        except (OSError, TimeoutError):   # a lost connection too (CommClosedError is an OSError)
            return 0
        workers = info.get("workers", {})
        if not self.resources:
            return len(workers)
        return sum(1 for worker in workers.values()
                   if all(worker.get("resources", {}).get(name, 0) >= amount for name, amount in self.resources.items()))

    def _give_up(self, futures: dict, finished: queue.Queue, waited: float) -> Iterator[tuple[jobs.Job, jobs.Outcome]]:
        """The cluster has had no worker for `waited` seconds: the jobs done meanwhile, then every job
        left with a `not_run` outcome that says why (a row, as for a task the cluster lost, that the next
        run grades), its task cancelled; then the ClusterError."""
        while not finished.empty():
            future = finished.get_nowait()
            if future in futures:
                yield futures.pop(future), self._outcome(future)
        able = " with the GPU resource" if self.resources else ""
        problem = (f"the Dask scheduler at {self.address} has had no worker{able} for {waited:.0f} s "
                   f"(the bound is {self.workerless_seconds:g} s)")
        left = dict(futures)
        futures.clear()
        try:
            self.client.cancel(list(left))
        except (OSError, TimeoutError):
            pass   # a scheduler that does not answer has nothing to cancel for us
        for job in left.values():
            yield job, not_run(problem)
        raise ClusterError(f"{problem}: gave up on {len(left)} submission(s) not yet graded, each with an error "
                           "row that says so; start workers and grade again: the next run grades just those")

    def close(self) -> None:
        self.client.close()
