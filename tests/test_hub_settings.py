"""hub/course_hub.py without a hub: the class's settings file, the roster, LTI roles to nbgrader's
groups, the nonce store that refuses a replayed launch, the folders a student's server cannot reach, the
servers' exchange configuration, and ngshare's roster against a stand-in for ngshare's API."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hub"))
import course_hub  # noqa: E402

LTI = """
[lti]
issuer = "https://lms.test"
client_id = "client"
authorize_url = "https://lms.test/authorize"
jwks_endpoint = "https://lms.test/jwks"
"""


def settings(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "class.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_example_settings_read_as_they_are_documented():
    example = course_hub.ClassSettings.read(ROOT / "hub" / "class.example.toml")
    assert example.course_id == "tf-internals" and example.lti.username_key == "custom_canvas_user_id"
    assert example.graders_group == "formgrade-tf-internals" and example.students_group == "nbgrader-tf-internals"
    assert example.state_dir == Path("/srv/tf-course-hub") and example.roster is None
    assert example.course_dir == Path("/srv/tf-course") and example.grader_user == "grader-tf-internals"
    assert example.exchange == "folder" and example.ngshare_port == 10101


@pytest.mark.parametrize("text, message", [
    ('course_id = "c"\nstate_dir = "s"\ncolour = "red"\n' + LTI, "unknown settings ['colour']"),
    ('state_dir = "s"\n' + LTI, "missing ['course_id']"),
    ('course_id = "c"\nstate_dir = "s"\n', "exactly one of [lti]"),
    ('course_id = "c"\nstate_dir = "s"\nroster = "r.txt"\n' + LTI, "exactly one of [lti]"),
    ('course_id = "c"\nstate_dir = "s"\nexchange = "nfs"\n' + LTI, "exchange = 'nfs': give one of ['folder', 'ngshare']"),
    ('course_id = "c"\nstate_dir = "s"\nexchange = "ngshare"\n' + LTI, 'exchange = "ngshare" needs course_dir'),
])
def test_a_settings_file_that_says_too_much_or_too_little_is_refused_by_name(tmp_path, text, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        course_hub.ClassSettings.read(settings(tmp_path, text))


def test_relative_paths_are_relative_to_the_settings_file(tmp_path):
    (tmp_path / "roster.txt").write_text("ann  # first\n\nben\n", encoding="utf-8")
    read = course_hub.ClassSettings.read(settings(tmp_path, 'course_id = "c"\nstate_dir = "state"\nroster = "roster.txt"\n'))
    assert read.state_dir == tmp_path / "state" and read.exchange_folder == tmp_path / "state" / "exchange"
    assert course_hub.roster_names(read.roster) == {"ann", "ben"}


def test_a_roster_line_that_cannot_be_a_unix_user_is_refused_with_its_line(tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("ann\nBen Smith\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"roster.txt:2: 'Ben Smith' is not a Unix user name"):
        course_hub.roster_names(roster)


@pytest.mark.parametrize("roles, graders", [
    (["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"], True),
    (["http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"], True),
    (["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"], False),
    (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor",
      "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"], False),  # an instructor elsewhere, a student here
    ([], False),
])
def test_lti_roles_become_nbgrader_groups(tmp_path, roles, graders):
    read = course_hub.ClassSettings.read(settings(tmp_path, 'course_id = "tf"\nstate_dir = "s"\n' + LTI))
    groups = course_hub.launch_groups(roles, read)
    assert groups == ["nbgrader-tf"] + (["formgrade-tf"] if graders else [])


def test_a_nonce_is_accepted_once_until_its_token_expires(tmp_path):
    store = course_hub.NonceStore(tmp_path / "nonces.sqlite")
    later = time.time() + 300
    assert store.first_use("https://lms.test", "n1", later)
    assert not store.first_use("https://lms.test", "n1", later), "a replay was accepted"
    assert store.first_use("https://other.test", "n1", later), "nonces are per issuer"
    again = course_hub.NonceStore(tmp_path / "nonces.sqlite")  # a restarted hub remembers
    assert not again.first_use("https://lms.test", "n1", later)
    assert again.first_use("https://lms.test", "old", time.time() - 1)
    assert again.first_use("https://lms.test", "new", later)  # the expired one is dropped on the way


def test_folders_closed_to_other_users_are_found_on_the_way_to_a_program(tmp_path):
    closed = tmp_path / "closed"
    program = closed / "bin" / "python"
    program.parent.mkdir(parents=True)
    program.write_text("", encoding="utf-8")
    closed.chmod(0o700)
    assert closed in course_hub.closed_folders(program)  # (pytest's own tmp folders are mode 700 too)
    closed.chmod(0o711)
    assert closed not in course_hub.closed_folders(program)
    assert course_hub.closed_folders(Path("/usr/bin/env")) == []


def test_the_spawner_is_systemds_where_systemd_runs_and_enforces_the_limits(tmp_path):
    read = course_hub.ClassSettings.read(settings(tmp_path, 'course_id = "tf"\nstate_dir = "s"\nmem_limit = "4G"\n' + LTI))
    name, traits = course_hub.spawner(read, systemd=True)
    module, _, cls = name.rpartition(".")
    spawner_class = getattr(__import__(module, fromlist=[cls]), cls)
    for trait, value in traits.items():
        assert spawner_class.class_traits()[trait].default_value is not None  # a trait of that spawner
        assert trait in spawner_class.class_trait_names(), trait
    assert traits["isolate_devices"] is False and traits["username_template"] == "{USERNAME}"
    assert course_hub.spawner(read, systemd=False) == ("jupyterhub.spawner.LocalProcessSpawner", {})


def test_the_servers_exchange_configuration_names_the_folder_or_ngshare(tmp_path):
    """Executed as nbgrader executes nbgrader_config.py (`c = get_config()`), in a process of its own
    without $USER or $JUPYTERHUB_USER (ngshare_exchange reads them when imported): the folder exchange
    sets its root; ngshare's replaces nbgrader's exchange classes by ngshare_exchange's, with the
    service's URL, and reads ngshare's submission times in UTC."""
    import json
    import os
    import subprocess

    base = 'course_id = "tf"\nstate_dir = "state"\ncourse_dir = "course"\n' + LTI
    probe = """
import json, sys
from traitlets.config import Config
config = Config()
exec(compile(open(sys.argv[1]).read(), "nbgrader_config.py", "exec"), {"get_config": lambda: config})
factory = config.ExchangeFactory
print(json.dumps({"course": config.CourseDirectory.course_id, "root": config.Exchange.get("root"),
                  "submit": getattr(factory.get("submit"), "__module__", None),
                  "url": factory["exchange"]().ngshare_url if "exchange" in factory else None,
                  "zone": config.GradingSettings.get("timestamp_zone")}))
"""
    environment = {name: value for name, value in os.environ.items() if name not in ("USER", "JUPYTERHUB_USER")}

    def run(settings_text: str) -> dict:
        read = course_hub.ClassSettings.read(settings(tmp_path, settings_text))
        (tmp_path / "nbgrader_config.py").write_text(course_hub.exchange_configuration(read), encoding="utf-8")
        done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "nbgrader_config.py")],
                              capture_output=True, text=True, env=environment, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    assert run(base) == {"course": "tf", "root": str(tmp_path / "state" / "exchange"), "submit": None, "url": None,
                         "zone": None}
    assert run('exchange = "ngshare"\nngshare_port = 10123\n' + base) == {
        "course": "tf", "root": None, "submit": "ngshare_exchange.submit",
        "url": "http://127.0.0.1:10123/services/ngshare", "zone": "UTC"}


class FakeNgshare:
    """A stand-in for ngshare's API (the calls the hub makes), on a port of its own: answers as ngshare
    does (409 for a course that exists, 403 for a token that is not its admin's), after `delay` seconds."""

    def __init__(self, admin_token: str, delay: float = 0.0):
        import asyncio
        import json
        import threading

        from tornado import web as tornado_web

        self.calls, self.courses, self.students, self.instructors = [], set(), {}, {}
        fake = self

        class Handler(tornado_web.RequestHandler):
            async def post(self, kind, course, name=None):
                fake.calls.append((kind, course, name, {key: self.get_body_argument(key)
                                                        for key in self.request.body_arguments}))
                await asyncio.sleep(delay)
                if self.request.headers.get("Authorization") != f"token {admin_token}":
                    return self.answer(403, False, "Permission denied")
                if kind == "course":
                    if course in fake.courses:
                        return self.answer(409, False, "Course already exists")
                    fake.courses.add(course)
                    for instructor in json.loads(self.get_body_argument("instructors")):
                        fake.instructors[instructor] = course
                elif course not in fake.courses:
                    return self.answer(404, False, "Course not found")
                elif kind == "student":
                    if name in fake.instructors:
                        return self.answer(409, False, "Cannot add instructor as student")
                    fake.students[name] = course
                else:
                    fake.students.pop(name, None)
                    fake.instructors[name] = course
                return self.answer(200, True)

            def answer(self, code, success, message=None):
                self.set_status(code)
                self.finish({"success": success, **({"message": message} if message else {})})

        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve():
            from tornado.httpserver import HTTPServer
            from tornado.netutil import bind_sockets

            asyncio.set_event_loop(self.loop)
            app = tornado_web.Application([(r"/services/ngshare/(course)/([^/]+)", Handler),
                                           (r"/services/ngshare/(student|instructor)/([^/]+)/([^/]+)", Handler)])
            sockets = bind_sockets(0, "127.0.0.1")
            HTTPServer(app).add_sockets(sockets)
            self.port = sockets[0].getsockname()[1]
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        started.wait(10)
        self.url = f"http://127.0.0.1:{self.port}/services/ngshare"

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class Log:
    def __init__(self):
        self.lines = []

    def info(self, message, *args):
        self.lines.append(("info", message % args))

    def warning(self, message, *args):
        self.lines.append(("warning", message % args))

    def error(self, message, *args):
        self.lines.append(("error", message % args))


def enrol(course, *args, **kwargs):
    import asyncio

    asyncio.run(course.enrol(*args, **kwargs))


def test_the_first_login_makes_the_course_and_each_adds_its_user_as_a_student():
    fake = FakeNgshare("formgrader-token")
    try:
        ngshare = course_hub.NgshareCourse(fake.url, "tf", ("tf",), "tf", "formgrader-token")
        enrol(ngshare, "7310003", Log(), {"given_name": "Ann", "family_name": "Lee", "email": "a@x.test"})
        enrol(ngshare, "7310004", Log())
    finally:
        fake.close()
    assert fake.courses == {"tf"} and fake.instructors == {"tf": "tf"}
    assert fake.students == {"7310003": "tf", "7310004": "tf"}
    assert [call[0] for call in fake.calls] == ["course", "student", "student"], "the course is made once"
    assert fake.calls[0][3] == {"instructors": '["tf"]'}
    assert fake.calls[1][3] == {"first_name": "Ann", "last_name": "Lee", "email": "a@x.test"}
    assert fake.calls[2][3] == {"first_name": "", "last_name": "", "email": ""}


def test_after_a_restart_the_instructors_are_made_instructors_again_and_never_students():
    """A hub restarted with an instructor added to its settings: the course exists (409), so each
    instructor is made one by name (ngshare moves a student who was enrolled before to the instructors)."""
    fake = FakeNgshare("roster-token")
    try:
        enrol(course_hub.NgshareCourse(fake.url, "tf", ("7310001",), "course-roster", "roster-token"), "7310005", Log())
        enrol(course_hub.NgshareCourse(fake.url, "tf", ("7310001",), "course-roster", "roster-token"), "7310002", Log())
        restarted = course_hub.NgshareCourse(fake.url, "tf", ("7310001", "7310002"), "course-roster", "roster-token")
        enrol(restarted, "7310002", log := Log())
    finally:
        fake.close()
    assert fake.instructors == {"7310001": "tf", "7310002": "tf"} and fake.students == {"7310005": "tf"}
    assert [call[:3] for call in fake.calls[-3:]] == [("course", "tf", None), ("instructor", "tf", "7310001"),
                                                       ("instructor", "tf", "7310002")]
    assert log.lines == [("info", "ngshare: '7310002' is an instructor of tf")]


def test_a_login_under_ngshares_admin_name_is_refused():
    """ngshare knows a user by name alone: a hub user named as its admin would be its admin."""
    from tornado import web as tornado_web

    fake = FakeNgshare("formgrader-token")
    try:
        with pytest.raises(tornado_web.HTTPError) as refused:
            enrol(course_hub.NgshareCourse(fake.url, "tf", ("tf",), "tf", "formgrader-token"), "tf", Log())
    finally:
        fake.close()
    assert refused.value.status_code == 403 and fake.calls == []


@pytest.mark.parametrize("case", ["refused", "down", "silent"])
def test_a_students_login_ngshare_refuses_or_does_not_answer_is_refused_with_a_page_and_logged(case):
    import socket

    from tornado import web as tornado_web

    fake = FakeNgshare("formgrader-token", delay=5.0 if case == "silent" else 0.0)
    url = fake.url
    if case == "down":
        with socket.socket() as probe:  # a port nothing listens on
            probe.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{probe.getsockname()[1]}/services/ngshare"
    token = "not-the-admins" if case == "refused" else "formgrader-token"
    log = Log()
    try:
        with pytest.raises(tornado_web.HTTPError) as refused:
            enrol(course_hub.NgshareCourse(url, "tf", ("tf",), "tf", token, wait_seconds=0.5), "7310003", log)
    finally:
        fake.close()
    assert refused.value.status_code == 503
    says = "refused to enrol you" if case == "refused" else "is not answering"
    assert says in refused.value.log_message, refused.value.log_message
    assert [level for level, _ in log.lines] == ["error"]
    assert log.lines[0][1].startswith("ngshare refused POST /course/tf" if case == "refused"
                                      else "ngshare did not answer POST /course/tf")


def test_a_graders_login_goes_on_without_ngshare_logged():
    """An instructor must still reach the hub (its admin page, the formgrader) when ngshare is down."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/services/ngshare"
    enrol(course_hub.NgshareCourse(url, "tf", ("tf",), "tf", "token", wait_seconds=0.5), "7310001", log := Log(),
          required=False)
    assert [level for level, _ in log.lines] == ["error", "warning"]
    assert log.lines[1][1] == "login of '7310001' goes on without ngshare (a grader)"
