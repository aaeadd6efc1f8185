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
import subprocess
from pathlib import Path

import pytest

from course import gpu
from tests.hub_server import Hub, hub_folder, reachable_python, remove_unix_users
from tests.lti_platform import Launch, Platform, new_key

pytestmark = [pytest.mark.hub,
              pytest.mark.skipif(os.geteuid() != 0, reason="the hub makes Unix users and runs servers as them: needs root")]

COURSE = "tf-internals"  # the course's nbgrader course id (autograder/nbgrader_setup/config.py)
# LMS user ids (Canvas's numeric ids, as the LMS sends them): the hub's user names and Unix users
INSTRUCTOR, ASSISTANT, ANN, BEN = "7310001", "7310002", "7310003", "7310004"
USERS = (INSTRUCTOR, ASSISTANT, ANN, BEN)


@pytest.fixture(scope="module")
def platform():
    lms = Platform()
    yield lms
    lms.close()


GRADER = f"grader-{COURSE}"  # the Unix user the hub's formgrader runs as


@pytest.fixture(scope="module")
def hub(platform):
    remove_unix_users((*USERS, GRADER))
    with reachable_python(), hub_folder() as folder:
        running = Hub(folder, platform, COURSE, (INSTRUCTOR,))
        try:
            yield running
        finally:
            running.stop()
            remove_unix_users((*USERS, GRADER))


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
    assert environment.get(gpu.MEMORY_LIMIT_VARIABLE) == "2048"   # the variable the course kernel reads
    # the users' own lab configuration (no instructor tools) first, then what every server reads
    assert environment.get("JUPYTER_CONFIG_PATH") == os.pathsep.join(
        [str(hub.state / "jupyter-config" / "user-servers"), str(hub.state / "jupyter-config")])


def test_servers_read_nbgrader_exchange_configuration_from_the_state_folder(hub, launched):
    config = hub.state / "jupyter-config" / "nbgrader_config.py"
    text = config.read_text(encoding="utf-8")
    assert f"c.CourseDirectory.course_id = '{COURSE}'" in text
    assert f"c.Exchange.root = '{hub.state / 'exchange'}'" in text
    assert oct((hub.state / "exchange").stat().st_mode & 0o7777) == oct(0o1777)
    assert oct((hub.state / "hub").stat().st_mode & 0o777) == oct(0o700), "the hub's database must be private"
    listed = subprocess.run(["runuser", "-u", ANN, "--", "ls", str(hub.state / "hub")], capture_output=True, text=True)
    assert listed.returncode != 0, "a student could list the hub's own state"


def test_the_formgrader_is_a_hub_service_for_the_graders_only(hub, launched):
    """nbgrader's formgrader at /services/<course>/, run as the grader's Unix user on the course directory:
    the instructor and the teaching assistant reach it through the hub's login, a student is refused."""
    service = f"{hub.url}/services/{COURSE}/formgrader"
    hub.wait(lambda: launched[INSTRUCTOR].session.get(service, timeout=30).status_code == 200,
             "the formgrader to answer the instructor", 90)
    for grader in (INSTRUCTOR, ASSISTANT):
        page = launched[grader].session.get(service, timeout=30)
        assert page.status_code == 200 and "formgrade" in page.text.lower(), (grader, page.status_code)
    refused = launched[ANN].session.get(service, timeout=30)
    assert refused.status_code == 403, (refused.status_code, refused.url)
    course = hub.folder / "course"
    assert course.stat().st_uid == pwd.getpwnam(GRADER).pw_uid and (course / "nbgrader_config.py").is_file()


def test_a_class_without_an_lms_logs_in_with_unix_passwords_restricted_to_the_roster(platform):
    """`roster = "roster.txt"` instead of [lti]: PAM login with the machine's Unix passwords, only for the
    users the roster names; the instructors of the class file are the graders."""
    import secrets

    import requests

    teacher, student, outsider = "7319001", "7319002", "7319003"
    password = secrets.token_urlsafe(12)
    remove_unix_users((teacher, student, outsider, f"grader-{COURSE}-pam"))
    try:
        for name in (teacher, student, outsider):
            subprocess.run(["useradd", "--create-home", name], check=True)
            subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
        with reachable_python(), hub_folder() as folder:
            pam = Hub(folder, None, f"{COURSE}-pam", (teacher,), roster=[teacher, student])
            try:
                def login(name: str, secret: str) -> requests.Response:
                    session = requests.Session()
                    session.get(pam.url + "/hub/login", timeout=30)  # the login form sets the _xsrf cookie
                    return session.post(pam.url + "/hub/login", allow_redirects=False, timeout=30,
                                        data={"username": name, "password": secret,
                                              "_xsrf": session.cookies.get("_xsrf", "")})
                assert login(student, password).status_code == 302
                assert login(teacher, password).status_code == 302
                assert login(student, "wrong").status_code == 403
                assert login(outsider, password).status_code == 403, "a user the roster lacks logged in"
                assert set(pam.user(teacher)["groups"]) == {f"formgrade-{COURSE}-pam", f"nbgrader-{COURSE}-pam"}
                assert pam.user(student)["groups"] == [f"nbgrader-{COURSE}-pam"]
                assert pam.user(outsider) is None
            finally:
                pam.stop()
    finally:
        remove_unix_users((teacher, student, outsider, f"grader-{COURSE}-pam"))


def test_a_restarted_hub_keeps_its_users_their_groups_and_their_work(hub, launched):
    hub.spawn(ANN)
    saved = hub.server(ANN, "PUT", "/api/contents/work.txt", json={"type": "file", "format": "text", "content": "x = 1"})
    assert saved.status_code in (200, 201), saved.text
    before = {user: sorted(hub.user(user)["groups"]) for user in USERS}
    hub.stop()
    hub.start()
    assert {user: sorted(hub.user(user)["groups"]) for user in USERS} == before
    hub.spawn(ANN)
    read = hub.server(ANN, "GET", "/api/contents/work.txt")
    assert read.status_code == 200 and read.json()["content"] == "x = 1", read.text[:300]


def test_the_proxy_waits_for_an_answer_as_long_as_a_notebook_may_run(hub):
    """configurable-http-proxy's Python port gives up on a server's answer after 20 s (tornado's default
    request_timeout) unless started with --proxy-timeout; nbgrader's Validate answers only once the whole
    notebook ran, longer than that (tests/browser/test_hub_lab.py validates 01 through the proxy)."""
    import psutil

    commands = [process.info["cmdline"] for process in psutil.process_iter(["cmdline"])
                if any("configurable-http-proxy" in part for part in process.info["cmdline"] or [])
                and str(hub.port) in process.info["cmdline"]]
    assert len(commands) == 1, commands
    command = commands[0]
    assert int(command[command.index("--proxy-timeout") + 1]) >= 3600 * 1000, command
