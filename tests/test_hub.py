"""The class's JupyterHub (hub/): LTI 1.3 login from an LMS, nbgrader's groups from the LMS roles, a Unix
user per student, and launches the hub must refuse.

The hub runs for real (`jupyterhub -f hub/jupyterhub_config.py`, the configuration `make hub` starts,
through a test configuration that loads it and adds an admin service token to ask the hub's REST API);
the test LTI platform (tests/lti_platform.py) signs its own id_tokens and serves its own JWKS, and the
real LTI13Authenticator checks them. The hub runs as root and makes Unix users: without root the tests
skip and say why. Every Unix user the test makes is removed at the end.
"""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.lti_platform import Launch, Platform, new_key

pytestmark = [pytest.mark.hub,
              pytest.mark.skipif(os.geteuid() != 0, reason="the hub makes Unix users and runs servers as them: needs root")]

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
COURSE = "tf-hubtest"
# LMS user ids (Canvas's numeric ids, as the LMS sends them): the hub's user names and Unix users
INSTRUCTOR, ASSISTANT, ANN, BEN = "7310001", "7310002", "7310003", "7310004"
USERS = (INSTRUCTOR, ASSISTANT, ANN, BEN)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def remove_unix_users() -> None:
    for name in USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        subprocess.run(["pkill", "-KILL", "-u", name], check=False)
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)


class Hub:
    def __init__(self, folder: Path, platform: Platform):
        self.port, self.token = free_port(), secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}"
        self.state = folder / "state"
        settings = folder / "class.toml"
        settings.write_text(f"""
course_id = "{COURSE}"
state_dir = "state"
ip = "127.0.0.1"
port = {self.port}
instructors = ["{INSTRUCTOR}"]
gpu_memory_mb = 2048
[lti]
issuer = "{platform.issuer}"
client_id = "{platform.client_id}"
authorize_url = "{platform.authorize_url}"
jwks_endpoint = "{platform.jwks_endpoint}"
username_key = "custom_canvas_user_id"
""", encoding="utf-8")
        config = folder / "test_config.py"
        config.write_text(f"""
c = get_config()
load_subconfig({str(ROOT / "hub" / "jupyterhub_config.py")!r})
c.JupyterHub.hub_port = {free_port()}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
c.JupyterHub.services.append({{"name": "test-admin", "api_token": {self.token!r}}})
c.JupyterHub.load_roles.append({{"name": "test-admin", "services": ["test-admin"],
    "scopes": ["admin:users", "admin:servers", "access:servers", "groups", "read:users"]}})
""", encoding="utf-8")
        self.folder, self.config, self.settings = folder, config, settings
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
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()


@pytest.fixture(scope="module")
def platform():
    lms = Platform()
    yield lms
    lms.close()


@pytest.fixture(scope="module")
def reachable_python():
    """The students' servers run this Python: where a folder on its way is closed to other users (a
    pyenv Python under /root, mode 700, as on the machines the tests run on), open it for the module's
    duration, search permission only (o+x: no listing), and close it again. The hub itself refuses to
    start with a closed folder (hub/jupyterhub_config.py), which the last test checks."""
    sys.path.insert(0, str(ROOT / "hub"))
    import course_hub

    closed = course_hub.closed_folders(Path(sys.executable))
    modes = {folder: folder.stat().st_mode & 0o7777 for folder in closed}
    for folder, mode in modes.items():
        folder.chmod(mode | 0o001)
    yield closed
    for folder, mode in modes.items():
        folder.chmod(mode)


@pytest.fixture(scope="module")
def hub(platform, tmp_path_factory, reachable_python):
    remove_unix_users()
    running = Hub(tmp_path_factory.mktemp("hub"), platform)
    yield running
    running.stop()
    remove_unix_users()


@pytest.fixture(scope="module")
def launched(hub, platform):
    """The instructor, the teaching assistant and two students launched from the LMS, in that order."""
    sessions = {}
    for user, roles in ((INSTRUCTOR, ["Instructor"]), (ASSISTANT, ["TeachingAssistant"]), (ANN, ["Learner"]),
                        (BEN, ["Learner"])):
        launch = Launch(platform, hub.url, user, roles)
        answer = launch.run()
        assert answer.status_code == 302, f"{user}'s launch: {answer.status_code} {answer.text[:500]}"
        sessions[user] = launch
    return sessions


def test_a_launch_logs_in_under_the_lms_user_id_with_nbgrader_groups_from_its_roles(hub, launched):
    graders, students = f"formgrade-{COURSE}", f"nbgrader-{COURSE}"
    expected = {INSTRUCTOR: {graders, students}, ASSISTANT: {graders, students}, ANN: {students}, BEN: {students}}
    for user, groups in expected.items():
        model = hub.user(user)
        assert model is not None, f"no hub user {user} after the launch"
        assert set(model["groups"]) == groups, f"{user}: groups {model['groups']}, expected {sorted(groups)}"
    assert hub.user(INSTRUCTOR)["admin"] and not hub.user(ANN)["admin"]


@pytest.mark.parametrize("spoiled", ["signature", "audience", "issuer", "expired", "unknown key id"])
def test_a_launch_the_platform_did_not_sign_for_this_hub_is_refused(hub, platform, spoiled):
    user = "7319999"
    launch = Launch(platform, hub.url, user, ["Learner"])
    finish = {"signature": {"key": new_key()}, "audience": {"spoil": {"aud": "another-tool"}},
              "issuer": {"spoil": {"iss": "https://evil.test"}}, "expired": {"lifetime": -60},
              "unknown key id": {"kid": "no-such-key"}}[spoiled]
    answer = launch.run(**finish)
    assert 400 <= answer.status_code < 500, f"{spoiled}: {answer.status_code} {answer.text[:300]}"
    assert hub.user(user) is None, f"{spoiled}: the launch made a hub user"


def test_a_replayed_launch_is_refused_with_a_page_that_says_so_and_logged(hub, platform, launched):
    launch = Launch(platform, hub.url, "7318888", ["Learner"])
    assert launch.run().status_code == 302
    replayed = launch.replay()
    assert replayed.status_code == 403, f"replay: {replayed.status_code}"
    assert "already used" in replayed.text, replayed.text[:500]
    assert "replayed id_token" in hub.log.read_text(errors="replace")


def test_each_student_server_runs_as_their_own_unix_user_and_cannot_read_another(hub, launched):
    for user in (ANN, BEN):
        hub.spawn(user)
        entry = pwd.getpwnam(user)
        assert oct(Path(entry.pw_dir).stat().st_mode & 0o777) == oct(0o700), f"{user}'s home is not private"
    written = hub.server(ANN, "PUT", "/api/contents/secret.txt",
                         json={"type": "file", "format": "text", "content": "ann's answer"})
    assert written.status_code in (200, 201), f"writing into ann's server: {written.status_code} {written.text}"
    secret = Path(pwd.getpwnam(ANN).pw_dir) / "secret.txt"
    assert secret.stat().st_uid == pwd.getpwnam(ANN).pw_uid, "ann's server did not run as ann"
    # ben's browser session asks ann's server for the file, through the contents API
    by_api = launched[BEN].session.get(f"{hub.url}/user/{ANN}/api/contents/secret.txt", timeout=30)
    assert by_api.status_code in (403, 404) and "ann's answer" not in by_api.text, (by_api.status_code, by_api.text[:300])
    # and ben's own Unix account (what his terminal runs as) reads it by path
    by_path = subprocess.run(["runuser", "-u", BEN, "--", "cat", str(secret)], capture_output=True, text=True)
    assert by_path.returncode != 0 and "Permission denied" in by_path.stderr, (by_path.returncode, by_path.stderr)
    # the server's environment: memory growth on, the class's GPU memory cap, nbgrader's exchange configuration
    import psutil

    uid = pwd.getpwnam(ANN).pw_uid
    servers = [process for process in psutil.process_iter(["uids", "cmdline"])
               if process.info["uids"] and process.info["uids"].real == uid
               and any("jupyterhub-singleuser" in part for part in process.info["cmdline"] or [])]
    assert servers, "no jupyterhub-singleuser process runs as ann"
    environment = servers[0].environ()
    assert environment.get("TF_FORCE_GPU_ALLOW_GROWTH") == "true"
    assert environment.get("COURSE_GPU_MEMORY_LIMIT_MB") == "2048"
    assert environment.get("JUPYTER_CONFIG_PATH") == str(hub.state / "jupyter-config")


def test_servers_read_nbgrader_exchange_configuration_from_the_state_folder(hub, launched):
    config = hub.state / "jupyter-config" / "nbgrader_config.py"
    text = config.read_text(encoding="utf-8")
    assert f"c.CourseDirectory.course_id = '{COURSE}'" in text
    assert f"c.Exchange.root = '{hub.state / 'exchange'}'" in text
    assert oct((hub.state / "exchange").stat().st_mode & 0o7777) == oct(0o1777)
    assert oct((hub.state / "hub").stat().st_mode & 0o777) == oct(0o700), "the hub's database must be private"
    listed = subprocess.run(["runuser", "-u", ANN, "--", "ls", str(hub.state / "hub")], capture_output=True, text=True)
    assert listed.returncode != 0, "a student could list the hub's own state"


def test_a_restarted_hub_keeps_its_users_their_groups_and_their_work(hub, launched):
    hub.spawn(ANN)
    saved = hub.server(ANN, "PUT", "/api/contents/work.txt", json={"type": "file", "format": "text", "content": "x = 1"})
    assert saved.status_code in (200, 201), saved.text
    before = {user: sorted(hub.user(user)["groups"]) for user in USERS}
    hub.stop()
    hub.start()
    assert not hub.user(ANN)["servers"], "the servers stop with the hub (JupyterHub's cleanup_servers)"
    assert {user: sorted(hub.user(user)["groups"]) for user in USERS} == before
    hub.spawn(ANN)
    read = hub.server(ANN, "GET", "/api/contents/work.txt")
    assert read.status_code == 200 and read.json()["content"] == "x = 1", read.text[:300]
