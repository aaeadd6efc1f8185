"""Real servers for the tests, started and stopped by them: a PostgreSQL server and a Dask cluster.

Both run as separate processes on 127.0.0.1, on free ports, with their files in a temporary folder.
PostgreSQL is Debian's `postgresql` package (installed by `scripts/system-packages`); Dask is the
`dask` command of this environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

POSTGRES_ROOTS = "/usr/lib/postgresql"
START_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(what: str, ready, seconds: float = START_SECONDS, log: Path | None = None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            value = ready()
            if value:
                return value
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
    pytest.fail(f"{what} did not start within {seconds:g} s\n{tail}")


def _stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def postgres_bin() -> Path:
    found = sorted(Path(POSTGRES_ROOTS).glob("*/bin/initdb"))
    if not found:
        pytest.fail("PostgreSQL is not installed (no initdb under /usr/lib/postgresql): run "
                    "scripts/system-packages, which `make test` runs, or `apt-get install postgresql`")
    return found[-1].parent


@contextlib.contextmanager
def postgres(database: str = "gradebook", password: str | None = None) -> Iterator[str]:
    """A throw-away PostgreSQL server; yields the SQLAlchemy URL of an empty database in it. With a
    `password`, connections over TCP must give it (scram-sha-256; the URL holds it), else none is asked.

    PostgreSQL refuses to run as root: as root, the server runs as Debian's `postgres` user."""
    import psycopg2

    bin_dir = postgres_bin()
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    folder = Path(tempfile.mkdtemp(prefix="pg-test-"))  # not under pytest's tmp: `postgres` must reach it
    data, log = folder / "data", folder / "server.log"
    if as_user:
        shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    server = None
    try:
        authentication = ["--auth=trust"]
        if password is not None:
            (folder / "password").write_text(password, encoding="utf-8")
            if as_user:
                shutil.chown(folder / "password", "postgres", "postgres")
            authentication = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={folder / 'password'}"]
        subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "grader", *authentication,
                        "-E", "UTF8", "--no-sync"], check=True, capture_output=True)
        with open(log, "wb") as handle:
            server = subprocess.Popen([*as_user, str(bin_dir / "postgres"), "-D", str(data), "-p", str(port),
                                       "-k", str(folder), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
                                      stdout=handle, stderr=subprocess.STDOUT)
        _wait("PostgreSQL", lambda: psycopg2.connect(host="127.0.0.1", port=port, user="grader", password=password,
                                                      dbname="postgres").close() or True, log=log)
        login = "grader" if password is None else f"grader:{password}"
        yield create_database(f"postgresql+psycopg2://{login}@127.0.0.1:{port}/postgres", database)
    finally:
        if server:
            # SIGINT is PostgreSQL's fast shutdown; sent to the postmaster itself, not to runuser
            with contextlib.suppress(OSError, ValueError):
                os.kill(int((data / "postmaster.pid").read_text().split()[0]), signal.SIGINT)
            _stop(server)
        shutil.rmtree(folder, ignore_errors=True)


def create_database(server_url: str, name: str) -> str:
    """Create the empty database `name` on the server of `server_url`; return its URL."""
    import psycopg2
    from sqlalchemy.engine import make_url

    url = make_url(server_url)
    admin = psycopg2.connect(host=url.host, port=url.port, user=url.username, password=url.password, dbname="postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()
    return url.set(database=name).render_as_string(hide_password=False)


class DaskCluster:
    """A `dask scheduler` and named `dask worker`s, each its own process. With `nanny` (dask's
    default) each worker runs as a daemon child of a nanny process; without it a killed worker stays
    dead, as when its machine goes away."""

    def __init__(self, folder: Path, nanny: bool = True):
        self.folder = folder
        self.nanny = nanny
        self.dask = str(Path(sys.executable).parent / "dask")
        self.processes: dict[str, subprocess.Popen] = {}
        self.address, self.addresses = "", {}

    def start(self, workers: dict[str, dict[str, float]]) -> None:
        scheduler_file = self.folder / "scheduler.json"
        self._start("scheduler", [self.dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(scheduler_file)])
        self.address = _wait("the Dask scheduler", lambda: json.loads(scheduler_file.read_text())["address"],
                             log=self.folder / "scheduler.log")
        self.add_workers(workers)

    def add_workers(self, workers: dict[str, dict[str, float]]) -> None:
        """Start more workers and wait until the scheduler knows them."""
        for name, resources in workers.items():
            command = [self.dask, "worker", self.address, "--name", name, "--nthreads", "1",
                       "--nanny" if self.nanny else "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--local-directory", str(self.folder / name)]
            if resources:
                command += ["--resources", " ".join(f"{key}={value:g}" for key, value in resources.items())]
            self._start(name, command)
        from distributed import Client

        with Client(self.address, timeout=START_SECONDS) as client:
            deadline = time.monotonic() + START_SECONDS
            while not set(workers) <= self._names(client) and time.monotonic() < deadline:
                time.sleep(0.2)
            if not set(workers) <= self._names(client):
                pytest.fail(f"Dask workers {sorted(set(workers) - self._names(client))} did not join\n"
                            + "\n".join(self.log(name)[-1500:] for name in workers))
            self.addresses.update({info["name"]: address
                                   for address, info in client.scheduler_info()["workers"].items()})

    @staticmethod
    def _names(client) -> set[str]:
        return {info["name"] for info in client.scheduler_info()["workers"].values()}

    def _start(self, name: str, command: list[str]) -> None:
        with open(self.folder / f"{name}.log", "wb") as log:
            self.processes[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                    stdin=subprocess.DEVNULL)

    def kill(self, name: str) -> None:
        """SIGKILL a worker: no goodbye to the scheduler, as when a node dies."""
        self.processes[name].kill()
        self.processes[name].wait()

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        """Workers first, killed (a worker's graceful close waits for its peers), then the scheduler."""
        for name, process in reversed(list(self.processes.items())):
            _stop(process, signal.SIGTERM if name == "scheduler" else signal.SIGKILL)


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: dict[str, dict[str, float]], nanny: bool = True) -> Iterator[DaskCluster]:
    folder.mkdir(parents=True, exist_ok=True)
    cluster = DaskCluster(folder, nanny)
    try:
        cluster.start(workers)
        yield cluster
    finally:
        cluster.stop()
