"""The class's JupyterHub started for a test module (tests/test_hub.py, tests/benchmarks/hub.py): the
hub as `make hub` starts it, its Unix users removed, the course's Python within other users' reach."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.lti_platform import Platform

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def remove_unix_users(names) -> None:
    """Every process of these Unix users killed (and waited for), then the users and their homes removed."""
    import psutil

    for name in names:
        try:
            uid = pwd.getpwnam(name).pw_uid
        except KeyError:
            continue
        owned = [process for process in psutil.process_iter(["uids"]) if process.info["uids"]
                 and uid in (process.info["uids"].real, process.info["uids"].effective)]
        for process in owned:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(process) for process in owned):
            time.sleep(0.1)  # a killed process whose parent is gone stays a zombie: that counts as gone
        removed = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)
        assert removed.returncode in (0, 12), f"userdel {name}: {removed.stderr}"  # 12: the home was already gone
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            raise AssertionError(f"the Unix user {name} is still there")


def alive(process) -> bool:
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextlib.contextmanager
def hub_folder():
    """A folder for a hub's state that the students' Unix users can enter (pytest's own tmp folders are
    mode 700, as a hub's state_dir must not be: hub/jupyterhub_config.py refuses one), removed after."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="course-hub-", dir="/tmp"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


OPENED = Path("/tmp/course-hub-opened-folders.json")  # which folders the running hubs opened, and who holds them
_DEPTH = 0  # this process's nested reachable_python() calls


@contextlib.contextmanager
def reachable_python():
    """The students' servers run this Python: where a folder on its way is closed to other users (a
    pyenv Python under /root, mode 700, as on the machines the tests run on), open it while a hub runs,
    search permission only (o+x: no listing), and close it again when the last hub of every test
    process is done (the holders' process ids in OPENED, under a lock: hub tests run in several xdist
    workers at once; a holder that died is dropped).
    The hub itself refuses to start with a closed folder (hub/jupyterhub_config.py)."""
    import fcntl
    import json

    import psutil

    sys.path.insert(0, str(ROOT / "hub"))
    import course_hub

    def change(joining: bool) -> None:
        with open(f"{OPENED}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads(OPENED.read_text()) if OPENED.exists() else {"holders": [], "modes": {}}
            holders = [pid for pid in state.get("holders") or [] if isinstance(pid, int)
                       and pid != os.getpid() and psutil.pid_exists(pid)] if isinstance(state.get("holders"), list) else []
            if joining:
                for folder in course_hub.closed_folders(Path(sys.executable)):  # (also after a crashed run)
                    state["modes"].setdefault(str(folder), folder.stat().st_mode & 0o7777)
                    folder.chmod(folder.stat().st_mode & 0o7777 | 0o001)
                holders.append(os.getpid())
            if holders:
                OPENED.write_text(json.dumps({"holders": holders, "modes": state["modes"]}))
            else:  # the last hub of every test process is done: close what was opened
                for folder, mode in state["modes"].items():
                    Path(folder).chmod(mode)
                OPENED.unlink(missing_ok=True)

    global _DEPTH
    if _DEPTH == 0:
        change(True)
    _DEPTH += 1
    try:
        yield
    finally:
        _DEPTH -= 1
        if _DEPTH == 0:
            change(False)


def as_user(name: str, command: list[str], cwd: Path, config: Path) -> subprocess.CompletedProcess:
    """`command` run as the Unix user `name`, as in their hub terminal: their home, the course's
    programs on PATH and the hub's Jupyter configuration (nbgrader's exchange)."""
    home = pwd.getpwnam(name).pw_dir
    return subprocess.run(["runuser", "-u", name, "--", "env", f"HOME={home}", f"PATH={BIN}:/usr/bin:/bin",
                           f"JUPYTER_CONFIG_PATH={config}", *command], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


class Hub:
    """The class's hub as `make hub` starts it, on free ports, for `course` with `instructors` as admins,
    its formgrader on `<folder>/course` (as the Unix user grader-<course>, which `remove_unix_users`
    must remove too: `grader_user`), plus an admin service token the tests ask the REST API with."""

    def __init__(self, folder: Path, platform: Platform | None, course: str, instructors: tuple[str, ...],
                 roster: list[str] | None = None, exchange: str = "folder"):
        """With `roster` (Unix user names) instead of an LTI `platform`: a class without an LMS (PAM);
        `exchange` as in the class's TOML ("folder" or "ngshare", on a free port)."""
        self.port, self.hub_port, self.token = free_port(), free_port(), secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}"
        self.state = folder / "state"
        self.grader_user = f"grader-{course}"
        settings = folder / "class.toml"
        settings.write_text(f"""
course_id = "{course}"
state_dir = "state"
ip = "127.0.0.1"
port = {self.port}
instructors = {list(instructors)!r}
gpu_memory_mb = 2048
course_dir = "course"
formgrader_port = {free_port()}
exchange = "{exchange}"
ngshare_port = {free_port()}
""" + (f"""
[lti]
issuer = "{platform.issuer}"
client_id = "{platform.client_id}"
authorize_url = "{platform.authorize_url}"
jwks_endpoint = "{platform.jwks_endpoint}"
username_key = "custom_canvas_user_id"
""" if roster is None else 'roster = "roster.txt"\n'), encoding="utf-8")
        if roster is not None:
            (folder / "roster.txt").write_text("".join(f"{name}\n" for name in roster), encoding="utf-8")
        config = folder / "test_config.py"
        config.write_text(f"""
c = get_config()
load_subconfig({str(ROOT / "hub" / "jupyterhub_config.py")!r})
c.JupyterHub.hub_port = {self.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
c.JupyterHub.services.append({{"name": "test-admin", "api_token": {self.token!r}}})
c.JupyterHub.load_roles.append({{"name": "test-admin", "services": ["test-admin"],
    "scopes": ["admin:users", "admin:servers", "access:servers", "groups", "read:users"]}})
""", encoding="utf-8")
        self.folder, self.config, self.settings, self.course = folder, config, settings, course
        self.log = folder / "hub.log"
        self.start()

    def start(self) -> None:
        environment = {**os.environ, "COURSE_HUB_SETTINGS": str(self.settings)}
        self.process = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(self.config)], cwd=self.folder,
                                        env=environment, stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.wait(lambda: requests.get(self.url + "/hub/api/", timeout=5).status_code == 200, "the hub to answer", 60)

    def wait(self, fact, what: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"the hub exited ({self.process.returncode}) while waiting for {what}:\n"
                                     + self.log.read_text(errors="replace")[-3000:])
            try:
                if fact():
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting for {what}:\n" + self.log.read_text(errors="replace")[-3000:])
            time.sleep(0.2)

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, self.url + "/hub/api" + path, timeout=30,
                                headers={"Authorization": f"token {self.token}"}, **kwargs)

    def user(self, name: str) -> dict | None:
        answer = self.api("GET", f"/users/{name}")
        return answer.json() if answer.status_code == 200 else None

    def spawn(self, name: str) -> None:
        """`name`'s server started (or already running) and ready."""
        if (self.user(name) or {}).get("servers", {}).get("", {}).get("ready"):
            return
        answer = self.api("POST", f"/users/{name}/server")
        assert answer.status_code in (201, 202), f"spawn {name}: {answer.status_code} {answer.text}"
        self.wait(lambda: (self.user(name) or {}).get("servers", {}).get("", {}).get("ready"), f"{name}'s server", 90)

    def server(self, name: str, method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, f"{self.url}/user/{name}{path}", timeout=30,
                                headers={"Authorization": f"token {self.token}"}, **kwargs)

    def stop(self) -> None:
        """The hub stopped (its servers and services with it), and any process that still talks to it
        (a service it could not stop) killed."""
        import psutil

        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        api = f"127.0.0.1:{self.hub_port}/hub/api"
        for process in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if api in process.environ().get("JUPYTERHUB_API_URL", ""):
                    process.kill()




@contextlib.contextmanager
def class_hub(course: str, instructors: tuple[str, ...], users: tuple[str, ...], exchange: str = "folder"):
    """A hub for `course` launched from a test LMS of its own (`hub.platform`), as a module's fixture
    holds it: `users` (every Unix user the module makes, its grader's too) removed before and after."""
    remove_unix_users(users)
    platform = Platform()
    with reachable_python(), hub_folder() as folder:
        running = Hub(folder, platform, course, instructors, exchange=exchange)
        platform.hub_url = running.url
        running.platform = platform
        try:
            yield running
        finally:
            running.stop()
            platform.close()
            remove_unix_users(users)


def course_directory(hub: Hub, course: str, assignment: str) -> Path:
    """The formgrader's course directory (made by the hub), with `assignment`'s source and its ci-profile
    release, as an instructor's checkout has them after `make release`, owned by the grader's user."""
    import shutil

    from tests.browser.courses import LAYOUT, student_copy

    folder = hub.folder / "course"
    shutil.copytree(LAYOUT.source / assignment, folder / "source" / assignment)
    student_copy(folder, [assignment])
    # the hub's course id (not the course's own, so that hub test modules can run at once)
    with (folder / "nbgrader_config.py").open("a", encoding="utf-8") as config:
        config.write(f"\nc.CourseDirectory.course_id = {course!r}\n")
    subprocess.run(["chown", "-R", f"grader-{course}:grader-{course}", str(folder)], check=True)
    return folder


def grade_collected(hub: Hub, course: Path, assignment: str) -> dict[str, dict]:
    """`autograder grade` on what the formgrader collected into `course/submitted`, then `autograder
    feedback --exchange` placing every page for release_feedback (owned by the grader's user, who
    releases them), as in the formgrader's terminal: the course's programs and the hub's Jupyter
    configuration (the exchange's). Returns grades.csv's rows by student id."""
    import csv

    out = hub.folder / "grading"
    environment = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}",
                       JUPYTER_CONFIG_PATH=str(hub.state / "jupyter-config"))
    graded = subprocess.run([str(BIN / "autograder"), "grade", assignment, "--submissions", str(course / "submitted"),
                             "--out", str(out), "--workers", "2"], cwd=course, capture_output=True, text=True,
                            timeout=600, env=environment)
    assert graded.returncode == 0, graded.stderr[-3000:]
    with (out / "grades.csv").open(newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    placed = subprocess.run([str(BIN / "autograder"), "feedback", assignment, "--grades-dir", str(out),
                             "--exchange", str(course)], cwd=course, capture_output=True, text=True, timeout=300,
                            env=environment)
    assert placed.returncode == 0 and f"{len(rows)} feedback pages" in placed.stdout, (placed.stdout,
                                                                                        placed.stderr[-2000:])
    grader = f"grader-{hub.course}"
    subprocess.run(["chown", "-R", f"{grader}:{grader}", str(course / "feedback")], check=True)
    return rows
