"""Grading beyond one machine: a real Dask scheduler and workers (separate processes) run the
notebooks, a real PostgreSQL server keeps the gradebook, and the grades are those of a local run."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder.authoring import demo
from autograder.grading import grades_csv
from autograder.nbgrader_setup.config import COURSE_ID
from autograder.grading.cache import safe_id
from autograder.errors import AutograderError
from autograder.grading.pipeline import grade_class
from autograder.settings import GradingSettings
from tests import notebooks, servers

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

ASSIGNMENT = "00_gpu_setup"
HONEST = ("ada", "bo", "chen", "dora")
TIMEOUT = 120.0

pytestmark = [pytest.mark.grading, pytest.mark.cluster]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The tiny assignment and a class: four honest students, a blank release and a broken file."""
    root = tmp_path_factory.mktemp("cluster-course")
    source, release = notebooks.tiny_course(root, ASSIGNMENT)
    submissions = root / "submissions"
    written = demo.write_class(source / f"{ASSIGNMENT}.ipynb", release, submissions)
    for student in HONEST:
        (submissions / student).mkdir()
        (submissions / student / f"{ASSIGNMENT}.ipynb").write_bytes(written["solution"].read_bytes())
    (submissions / "solution").rename(submissions / "eve")
    (submissions / "broken").mkdir()
    (submissions / "broken" / f"{ASSIGNMENT}.ipynb").write_text('{"cells": [', encoding="utf-8")
    pair = root / "pair"
    for student in HONEST[:2]:
        shutil.copytree(submissions / student, pair / student)
    return {"root": root, "source": source, "submissions": submissions, "pair": pair}


def grades_without_seconds(result) -> list[dict]:
    with grades_csv.write_csv(result).open(encoding="utf-8") as handle:
        return [{key: value for key, value in row.items() if key != "seconds"} for row in csv.DictReader(handle)]


@pytest.fixture(scope="module")
def local_run(course):
    return grade_class(ASSIGNMENT, course["source"], course["submissions"], course["root"] / "local",
                       settings=GradingSettings(timeout=TIMEOUT, workers=2))


@pytest.fixture(scope="module")
def gradebook_url():
    with servers.postgres() as url:
        yield url


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with servers.dask_cluster(tmp_path_factory.mktemp("dask"), {"gpu-node": {"GPU": 1}, "cpu-node": {}}) as running:
        yield running


def test_the_local_run_grades_the_class(local_run):
    statuses = {row.student_id: (row.status, row.score) for row in local_run.rows}
    assert statuses == {**{student: ("graded", 6.0) for student in (*HONEST, "eve")},
                        "blank": ("graded", 0.0), "broken": ("invalid", 0.0)}


def test_a_cluster_run_with_a_postgres_gradebook_gives_the_local_grades(course, local_run, cluster, gradebook_url):
    result = grade_class(ASSIGNMENT, course["source"], course["submissions"], course["root"] / "cluster",
                         settings=GradingSettings(timeout=TIMEOUT, scheduler=cluster.address, db_url=gradebook_url))
    assert grades_without_seconds(result) == grades_without_seconds(local_run)
    graded = [row for row in result.rows if row.status != "invalid"]
    assert {row.host for row in graded} <= set(cluster.addresses.values()), "every notebook ran on the cluster"
    assert sorted(path.name for path in (course["root"] / "cluster" / "feedback").iterdir()) == \
        sorted(path.name for path in (course["root"] / "local" / "feedback").iterdir())
    # the one shared gradebook holds every student's grades: no write was lost to a concurrent one
    from nbgrader.api import Gradebook

    with Gradebook(gradebook_url, COURSE_ID) as gradebook:
        for row in graded:
            submitted = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, safe_id(row.student_id))
            assert float(submitted.score) == row.score, row.student_id
            assert gradebook.find_student(safe_id(row.student_id)).lms_user_id == row.student_id


def test_the_gpu_profile_only_runs_on_workers_with_a_gpu_resource(course, cluster):
    result = grade_class(ASSIGNMENT, course["source"], course["pair"], course["root"] / "gpu",
                         settings=GradingSettings(profile="gpu", timeout=TIMEOUT, scheduler=cluster.address))
    assert [row.student_id for row in result.rows] == list(HONEST[:2])
    assert {row.host for row in result.rows} == {cluster.addresses["gpu-node"]}


def test_the_gpu_profile_is_refused_by_a_cluster_without_gpu_workers(course, tmp_path):
    with servers.dask_cluster(tmp_path / "dask", {"cpu-only": {}}) as cpu_only:
        with pytest.raises(AutograderError, match="GPU resource"):
            grade_class(ASSIGNMENT, course["source"], course["submissions"], tmp_path / "out",
                        settings=GradingSettings(profile="gpu", timeout=TIMEOUT, scheduler=cpu_only.address))


def test_an_unreachable_database_stops_grading_with_the_reason(course, tmp_path):
    url = f"postgresql+psycopg2://grader@127.0.0.1:{servers.free_port()}/gradebook"
    with pytest.raises(AutograderError, match="cannot connect to the gradebook database"):
        grade_class(ASSIGNMENT, course["source"], course["submissions"], tmp_path / "out",
                    settings=GradingSettings(timeout=TIMEOUT, db_url=url))


def test_a_worker_killed_mid_run_loses_no_submission(course, local_run, tmp_path):
    """The only worker dies in the middle of a notebook, holding the only copy of the course
    directory; a new worker joins. Every job, and the course directory, must be run again there."""
    with servers.dask_cluster(tmp_path / "dask", {"doomed": {}}, nanny=False) as cluster:
        from distributed import Client

        outcome = {}

        def grade() -> None:
            try:
                outcome["result"] = grade_class(ASSIGNMENT, course["source"], course["submissions"], tmp_path / "out",
                                                settings=GradingSettings(timeout=TIMEOUT, scheduler=cluster.address))
            except BaseException as error:  # surfaced below
                outcome["error"] = error

        grader = threading.Thread(target=grade)
        grader.start()
        doomed = cluster.addresses["doomed"]
        with Client(cluster.address) as client:
            deadline = time.monotonic() + 120
            while not any("grade-" in str(key) for key in client.processing().get(doomed, [])) \
                    and time.monotonic() < deadline:
                time.sleep(0.2)
            while not kernel_below(cluster.processes["doomed"].pid) and time.monotonic() < deadline:
                time.sleep(0.2)  # mid-notebook: the job's kernel has started under the doomed worker
            running = [str(key) for key in client.processing().get(doomed, []) if "grade-" in str(key)]
            assert running, "no job reached the doomed worker"
            cluster.kill("doomed")
        cluster.add_workers({"survivor": {}})
        # a bound on a hang, not on speed: alone this takes under a minute, but a fresh-clone make test
        # under heavy load once took over 600 s to re-run every job on the survivor
        grader.join(timeout=1800)
        assert not grader.is_alive(), "grading did not finish after a worker died"
        if "error" in outcome:
            raise outcome["error"]
        result = outcome["result"]
        assert grades_without_seconds(result) == grades_without_seconds(local_run)
        hosts = {safe_id(row.student_id): row.host for row in result.rows}
        interrupted = [student for student in hosts if any(f"-{student}-" in key for key in running)]
        assert interrupted, f"nothing was running on the doomed worker when it died: {running}"
        assert {hosts[student] for student in interrupted} == {cluster.addresses["survivor"]}, \
            "the job the doomed worker was running was run again on the survivor"


JOB_STARTED, JOB_MAY_END = threading.Event(), threading.Event()


def job_that_waits(packed_workspace: bytes, settings: GradingSettings, job) -> object:
    """Stands for `executors.run_on_worker` on an in-process Dask worker: ends when the test says."""
    from autograder.execution import jobs

    JOB_STARTED.set()
    assert JOB_MAY_END.wait(60), "the test never let the job end"
    return jobs.Outcome(0.5, host="in-process")


def test_the_dask_executor_sees_its_jobs_end_after_another_client_of_the_process_closes(monkeypatch, tmp_path):
    """A program (the test above, a notebook) that has a Dask client of its own, made after the
    grader's and closed while the jobs run: the grader still sees every job end. (Dask's
    as_completed tracked the futures on the newest default client's event loop, which that close
    stopped: the jobs finished on the cluster and the grader waited for them for ever.)"""
    from distributed import Client, LocalCluster

    from autograder.execution import executors, jobs
    from autograder.nbgrader_setup.workspace import Workspace

    monkeypatch.setattr(executors, "run_on_worker", job_that_waits)
    JOB_STARTED.clear()
    JOB_MAY_END.clear()
    (tmp_path / "course").mkdir()
    job = jobs.Job("ada", "ada", ASSIGNMENT, f"{ASSIGNMENT}.ipynb", b"{}")
    seen: list = []
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as local:
        executor = executors.DaskExecutor(local.scheduler_address, GradingSettings())
        try:
            own = Client(local.scheduler_address, timeout=30)
            grading = threading.Thread(target=lambda: seen.extend(
                executor.run_all([job], [Workspace(tmp_path / "course", ASSIGNMENT)])))
            grading.start()
            assert JOB_STARTED.wait(60), "the job did not start"
            own.close()
            JOB_MAY_END.set()
            grading.join(timeout=60)
            assert not grading.is_alive(), "the grader did not see its job end"
        finally:
            JOB_MAY_END.set()
            executor.close()
    assert [(done.safe_id, outcome.host) for done, outcome in seen] == [("ada", "in-process")]


LAST_JOB_STARTED = threading.Event()


def job_that_waits_unless_ada(packed_workspace: bytes, settings: GradingSettings, job) -> object:
    """Stands for `executors.run_on_worker`: ada's job ends at once, any other waits for the test."""
    from autograder.execution import jobs

    if job.safe_id != "ada":
        LAST_JOB_STARTED.set()
        assert JOB_MAY_END.wait(60), "the test never let the job end"
    return jobs.Outcome(0.5, host="in-process")


def test_the_dask_executor_gives_up_on_a_cluster_left_without_workers(monkeypatch, tmp_path):
    """The only worker is closed in the middle of a job and none joins: the run ends with a
    ClusterError naming the scheduler and the wait, once the cluster has had no worker for the
    (here shortened) bound; the job done before keeps its outcome, the one not done gets one saying why."""
    from distributed import LocalCluster

    from autograder.execution import executors, jobs
    from autograder.nbgrader_setup.workspace import Workspace

    monkeypatch.setattr(executors, "run_on_worker", job_that_waits_unless_ada)
    LAST_JOB_STARTED.clear()
    JOB_MAY_END.clear()
    (tmp_path / "course").mkdir()
    batch = [jobs.Job(student, student, ASSIGNMENT, f"{ASSIGNMENT}.ipynb", b"{}") for student in ("ada", "bo")]
    seen: list = []
    raised: list = []
    first_seen = threading.Event()

    def grade(executor) -> None:
        try:
            for job, outcome in executor.run_all(batch, [Workspace(tmp_path / "course", ASSIGNMENT)]):
                seen.append((job.safe_id, outcome))
                first_seen.set()
        except BaseException as error:  # surfaced below
            raised.append(error)

    # two threads on the one worker: ada's job ends while bo's is still running
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as local:
        executor = executors.DaskExecutor(local.scheduler_address, GradingSettings())
        executor.workerless_seconds, executor.look_seconds = 2.0, 0.2
        try:
            grading = threading.Thread(target=grade, args=(executor,))
            grading.start()
            assert LAST_JOB_STARTED.wait(60) and first_seen.wait(60), "the jobs did not start"
            (worker,) = local.workers.values()
            closed_at = time.monotonic()
            local.sync(worker.close, executor_wait=False)   # bo's job is still running on it
            # a bound on a hang, not on speed: the run must end a little after the 2 s bound
            grading.join(timeout=60)
            ended_after = time.monotonic() - closed_at
            assert not grading.is_alive(), "the grader did not give up on a cluster without workers"
        finally:
            JOB_MAY_END.set()
            executor.close()
    assert [type(error) for error in raised] == [executors.ClusterError], raised
    message = str(raised[0])
    waited = re.search(rf"the Dask scheduler at {re.escape(local.scheduler_address)} has had no worker for (\d+) s",
                       message)
    assert waited and int(waited.group(1)) >= 2, message
    assert ended_after >= executor.workerless_seconds, "it gave up before the cluster was without workers for the bound"
    assert [student for student, _ in seen] == ["ada", "bo"]
    assert seen[0][1].host == "in-process" and not seen[0][1].crash and not seen[0][1].not_run
    assert seen[1][1].result is None and waited.group(0) in seen[1][1].crash, seen[1][1]
    assert seen[1][1].not_run, "the job given up on is marked as never run (its row is not kept)"
    assert "--force" not in message and "grades just those" in message


def full_marks_outcome() -> object:
    from autograder.execution import jobs
    from autograder.execution.protocol import WorkerResult

    return jobs.Outcome(0.5, host="in-process", result=WorkerResult(score=6.0, max_score=6.0))


def job_that_waits_for_all_but_ada(packed_workspace: bytes, settings: GradingSettings, job) -> object:
    """Stands for `executors.run_on_worker`: ada's job ends at once with full marks, any other waits
    for the test."""
    if job.student_id != "ada":
        LAST_JOB_STARTED.set()
        assert JOB_MAY_END.wait(60), "the test never let the job end"
    return full_marks_outcome()


RAN: list[str] = []


def full_marks(packed_workspace: bytes, settings: GradingSettings, job) -> object:
    """Stands for `executors.run_on_worker`: the job ends at once with full marks; its student is in `RAN`."""
    RAN.append(job.student_id)
    return full_marks_outcome()


def test_a_class_whose_cluster_lost_its_workers_is_written_and_a_plain_rerun_grades_the_rest(monkeypatch, course,
                                                                                              tmp_path):
    """grade_class on a cluster whose only worker goes in the middle of the class: grades.csv still has
    every student (ada graded, the rest an error row that says the cluster could not run it) before the
    ClusterError reaches the caller; a plain re-run (no --force) on a live cluster grades exactly the
    students not run, and reuses ada's row."""
    from distributed import LocalCluster

    from autograder.execution import executors

    monkeypatch.setattr(executors, "run_on_worker", job_that_waits_for_all_but_ada)
    monkeypatch.setattr(executors, "WORKERLESS_SECONDS", 2.0)
    monkeypatch.setattr(executors, "LOOK_SECONDS", 0.2)
    LAST_JOB_STARTED.clear()
    JOB_MAY_END.clear()
    out = tmp_path / "out"
    readable = {*HONEST, "eve", "blank"}
    outcome: dict = {}
    ada_done = threading.Event()

    def grade(address: str) -> None:
        def progress(line: str) -> None:
            if line.split("] ")[-1].startswith("ada:"):
                ada_done.set()
        try:
            outcome["result"] = grade_class(ASSIGNMENT, course["source"], course["submissions"], out,
                                            settings=GradingSettings(timeout=TIMEOUT, scheduler=address),
                                            progress=progress)
        except BaseException as error:  # surfaced below
            outcome["error"] = error

    # a thread per job: every job starts at once, ada's ends, the others wait on the worker that goes
    with LocalCluster(n_workers=1, threads_per_worker=len(readable), processes=False, dashboard_address=":0") as local:
        try:
            grading = threading.Thread(target=grade, args=(local.scheduler_address,))
            grading.start()
            assert LAST_JOB_STARTED.wait(120) and ada_done.wait(120), "the jobs did not start"
            (worker,) = local.workers.values()
            local.sync(worker.close, executor_wait=False)
            grading.join(timeout=120)   # a bound on a hang: the run gives up 2 s after the worker went
            assert not grading.is_alive(), "the grader did not give up on a cluster without workers"
        finally:
            JOB_MAY_END.set()
    assert type(outcome.get("error")) is executors.ClusterError, outcome
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        written = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert {student: row["status"] for student, row in written.items()} == {
        "ada": "graded", "broken": "invalid", **{student: "error" for student in readable - {"ada"}}}
    for student in readable - {"ada"}:
        assert "the cluster could not run it: the Dask scheduler at" in written[student]["reason"], written[student]
    assert sorted(path.name for path in (out / "rows").iterdir()) == [f"{safe_id('ada')}.json"], \
        "only the row that ran is kept"

    monkeypatch.setattr(executors, "run_on_worker", full_marks)
    RAN.clear()
    outcome.clear()
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as local:
        grade(local.scheduler_address)
    assert "error" not in outcome, outcome
    assert sorted(RAN) == sorted(readable - {"ada"}), "a plain re-run grades exactly the students not run"
    rows = {row.student_id: row for row in outcome["result"].rows}
    assert rows["ada"].reused and {rows[student].status for student in readable} == {"graded"}


def kernel_below(pid: int) -> bool:
    """Whether a Jupyter kernel runs among the descendants of process `pid`."""
    import psutil

    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    for process in below:
        try:
            if any("ipykernel" in argument for argument in process.cmdline()):
                return True
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return False


def test_two_graders_share_one_new_postgres_gradebook_at_once(course, gradebook_url, tmp_path):
    """Two instructors grade halves of the class with `autograder grade` at the same moment, into
    one gradebook that neither has set up yet. They write the URL as docs/cluster.md and nbgrader's
    documentation do, `postgresql://` (SQLAlchemy alone would pick psycopg 3 for it, which the lock
    does not ship: the grader reads it as psycopg2's)."""
    url = servers.create_database(gradebook_url, "shared")
    as_documented = url.replace("postgresql+psycopg2://", "postgresql://")
    assert as_documented.startswith("postgresql://grader@")
    shutil.copyfile(ROOT / "nbgrader_config.py", course["root"] / "nbgrader_config.py")
    graders = {}
    for name, students in {"first": HONEST[:2], "second": HONEST[2:]}.items():
        for student in students:
            shutil.copytree(course["submissions"] / student, tmp_path / name / student)
        graders[name] = subprocess.Popen(
            [str(BIN / "autograder"), "grade", ASSIGNMENT, "--submissions", str(tmp_path / name),
             "--out", str(tmp_path / f"out-{name}"), "--workers", "2", "--timeout", str(TIMEOUT),
             "--db", as_documented],
            cwd=course["root"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={key: value for key, value in os.environ.items() if key != "COURSE_ROOT"})
    for name, grader in graders.items():
        output, _ = grader.communicate(timeout=600)
        assert grader.returncode == 0, output
    from nbgrader.api import Gradebook

    with Gradebook(url, COURSE_ID) as gradebook:
        for student in HONEST:
            assert gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, safe_id(student)).score == 6.0, student


def test_reading_hand_grades_waits_while_another_grader_records_the_assignment(gradebook_url, tmp_path):
    """The race the test above once lost: a grader reading the formgrader's hand grades opened nbgrader's
    Gradebook, which records the course, while the other grader was recording the assignment (and the
    course) in the new gradebook: a unique-key error. Reading now takes the shared side of the
    gradebook's lock, so it waits, seen as a shared advisory lock not granted, until the other is done."""
    from concurrent.futures import ThreadPoolExecutor

    import sqlalchemy

    from autograder.grading import formgrade
    from autograder.nbgrader_setup.gradebook import create_tables, gradebook_lock
    from autograder.runfolder import RunFolder

    url = servers.create_database(gradebook_url, "waiting")
    create_tables(url)   # the tables, and no course yet: the other grader is between the two
    engine = sqlalchemy.create_engine(url)

    def waiting() -> int:
        with engine.connect() as connection:
            return connection.execute(sqlalchemy.text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND mode = 'ShareLock' "
                "AND NOT granted")).scalar()

    def courses() -> int:
        with engine.connect() as connection:
            return connection.execute(sqlalchemy.text("SELECT count(*) FROM course")).scalar()

    try:
        with ThreadPoolExecutor(1) as reader:
            with gradebook_lock(url):   # the other grader records the assignment
                reading = reader.submit(formgrade.hand_grades, RunFolder(tmp_path / "out"), ASSIGNMENT,
                                        GradingSettings(db_url=url))
                deadline = time.monotonic() + 60
                while waiting() == 0 and not reading.done() and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert not reading.done() and waiting() == 1, "reading the hand grades did not wait for the lock"
                assert courses() == 0, "the course was recorded while another grader held the gradebook"
            assert reading.result(timeout=60) == []
        assert courses() == 1
    finally:
        engine.dispose()


def test_a_gpu_worker_gives_its_kernels_its_own_gpu_only(cluster):
    """The worker with the (fake) GPU resource hands CUDA_VISIBLE_DEVICES to its jobs; the other none."""
    from distributed import Client, get_worker

    from autograder.execution import executors

    def devices():
        return executors._gpu_devices_of(get_worker())

    with Client(cluster.address, timeout=30) as client:
        on_gpu = client.submit(devices, resources={"GPU": 1}, pure=False).result(timeout=60)
        on_cpu = client.submit(devices, workers=[cluster.addresses["cpu-node"]], pure=False).result(timeout=60)
    assert (on_gpu, on_cpu) == ("0", None)


def test_recording_an_assignment_waits_for_autogrades_in_flight(gradebook_url):
    """nbgrader's SaveCells removes and re-creates a notebook that has no submission yet; a grader's
    first submission written between that check and the delete broke the delete. So setting up an
    assignment takes the gradebook lock whole and every autograde its shared side: the setup waits
    for the autogrades in flight, and autogrades run beside each other."""
    import sqlalchemy

    from autograder.nbgrader_setup.gradebook import gradebook_lock

    url = servers.create_database(gradebook_url, "locks")
    events: list[str] = []
    setup_started, setup_done = threading.Event(), threading.Event()

    def setup() -> None:
        setup_started.set()
        with gradebook_lock(url):
            events.append("setup")
        setup_done.set()

    def setup_is_waiting() -> bool:
        engine = sqlalchemy.create_engine(url)
        try:
            with engine.connect() as connection:
                return bool(connection.execute(sqlalchemy.text(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).scalar())
        finally:
            engine.dispose()

    with gradebook_lock(url, shared=True), gradebook_lock(url, shared=True):   # two autogrades at once
        thread = threading.Thread(target=setup)
        thread.start()
        assert setup_started.wait(30)
        deadline = time.monotonic() + 60
        while not setup_is_waiting():   # the fact: PostgreSQL holds the setup's lock request back
            assert time.monotonic() < deadline and not setup_done.is_set(), "the setup did not wait"
            time.sleep(0.1)
        assert not setup_done.is_set()
        events.append("autogrades done")
    assert setup_done.wait(30)
    thread.join(30)
    assert events == ["autogrades done", "setup"]
