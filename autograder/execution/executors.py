"""Where grading jobs run: on this machine (the default) or on a `dask.distributed` cluster.

Both executors take the same `jobs.Job`s and yield the same `jobs.Outcome`s, as each finishes:

- `LocalExecutor`: one slot per local worker, each a long-lived worker process
  (`jobs.WorkerProcess`, nbgrader imported once) with its own copy of the nbgrader course directory,
  so no two jobs share a gradebook file; a thread per slot hands it one job after another;
- `DaskExecutor`: every job is a Dask task. The course directory travels once to the cluster as a
  tar archive, itself a task that every job depends on (so the scheduler can rebuild it when the
  workers that held it are gone); each task unpacks it into a fresh temporary folder on its worker
  and grades the job there with a worker process of its own, so a task is independent of every
  other (safe to run twice) and workers need the course's environment but no shared file system.
  The `gpu` profile asks for the `GPU` resource, so it only lands on workers started with
  `--resources GPU=1`, and a task on such a worker sees only that worker's GPU (`gpu_devices`). A worker that dies mid-job loses nothing: the scheduler runs its tasks again
  elsewhere (`distributed.scheduler.allowed-failures`), and a job is safe to run twice.
"""

from __future__ import annotations

import concurrent.futures
import io
import os
import queue
import tarfile
import tempfile
import uuid
from pathlib import Path
from typing import Callable, Iterable, Iterator

from autograder.errors import AutograderError
from autograder.execution import jobs
from autograder.nbgrader_setup.workspace import Workspace
from autograder.settings import GradingSettings

# what a task needs of the course directory: not the students' folders of an earlier run
TEMPLATE_SKIPS = ("submitted", "autograded", "feedback")
CONNECT_SECONDS = 30


class ClusterError(AutograderError):
    """The cluster cannot take the jobs: unreachable, no workers, or none with the needed resource."""


class LocalExecutor:
    """`size` long-lived worker processes, started at once (they import nbgrader while the driver reads
    the class); `run_all` pairs each with a course directory of its own. `job_dir(job)` is where a
    job's files go; worker k logs to `log_path(k)`."""

    def __init__(self, size: int, settings: GradingSettings, job_dir: Callable[[jobs.Job], Path],
                 log_path: Callable[[int], Path]):
        self.job_dir = job_dir
        self.size = size
        self.workers = [jobs.WorkerProcess(settings, log_path(number)) for number in range(size)]
        for worker in self.workers:
            worker.start()

    def run_all(self, batch: Iterable[jobs.Job], spaces: list[Workspace]) -> Iterator[tuple[jobs.Job, jobs.Outcome]]:
        """Every job of `batch`, each on a free worker and its course directory (one per worker)."""
        free: queue.Queue[tuple[Workspace, jobs.WorkerProcess]] = queue.Queue()
        for slot in zip(spaces, self.workers, strict=True):
            free.put(slot)

        def run(job: jobs.Job) -> jobs.Outcome:
            space, worker = free.get()
            try:
                return worker.run(job, space.root, self.job_dir(job))
            finally:
                free.put((space, worker))

        with concurrent.futures.ThreadPoolExecutor(max_workers=self.size) as pool:
            futures = {pool.submit(run, job): job for job in batch}
            for future in concurrent.futures.as_completed(futures):
                yield futures[future], future.result()

    def close(self) -> None:
        for worker in self.workers:   # all asked at once, so they exit side by side
            worker.stop()
        for worker in self.workers:
            worker.close()


def pack(workspace: Workspace) -> bytes:
    """The nbgrader course directory as a tar archive, without students' folders."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for child in sorted(workspace.root.iterdir()):
            if child.name not in TEMPLATE_SKIPS:
                archive.add(child, arcname=child.name)
    return buffer.getvalue()


def _course_directory(packed: bytes) -> bytes:
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


def run_on_worker(template: bytes, settings: GradingSettings, job: jobs.Job) -> jobs.Outcome:
    """The Dask task: unpack the course directory into a fresh folder and grade the job there."""
    from distributed import get_worker

    dask_worker = get_worker()
    with tempfile.TemporaryDirectory(prefix="autograder-task-") as scratch:
        root = Path(scratch) / "course"
        with tarfile.open(fileobj=io.BytesIO(template)) as archive:
            archive.extractall(root, filter="data")
        worker = jobs.WorkerProcess(settings, Path(scratch) / "worker.log", host=dask_worker.address,
                                    gpu_devices=_gpu_devices_of(dask_worker))
        try:
            return worker.run(job, root, Path(scratch) / "job")
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

    def workers_with(self, resource: str) -> list[str]:
        workers = self.client.scheduler_info()["workers"]
        return [address for address, info in workers.items() if info.get("resources", {}).get(resource)]

    def run_all(self, batch: Iterable[jobs.Job], spaces: list[Workspace]) -> Iterator[tuple[jobs.Job, jobs.Outcome]]:
        """Every job of `batch` as a task; the first of `spaces` is the course directory every task unpacks."""
        from distributed import as_completed

        run = uuid.uuid4().hex[:8]  # keys unique per run: two graders may share a cluster
        # a task, not scattered data: when the worker holding it dies, the scheduler recomputes it
        # from the graph (scattered data would be lost, and every job waiting on it cancelled)
        template = self.client.submit(_course_directory, pack(spaces[0]), pure=False, key=f"course-template-{run}")
        futures = {self.client.submit(run_on_worker, template, self.settings, job, pure=False,
                                      key=f"grade-{job.assignment}-{job.student}-{Path(job.notebook_name).stem}-{run}",
                                      resources=self.resources): job for job in batch}
        # as_completed tracks the futures on the event loop it is given, else on the loop of the
        # process's newest default client: another client made after this one (a test's own) and
        # closed while the jobs run would take the tracking with it, and the jobs' ends would never
        # be seen. This client's loop lives as long as the futures do.
        for future in as_completed(futures, loop=self.client.loop):
            try:
                outcome = future.result()
            except Exception as error:  # KilledWorker (it took down every worker it ran on), a lost task...
                outcome = jobs.Outcome(0.0, crash=f"the cluster could not run it: {type(error).__name__}: {error}"[:300])
            yield futures[future], outcome

    def close(self) -> None:
        self.client.close()
