"""A term of 01 on the class's hub with ngshare as nbgrader's exchange (`exchange = "ngshare"`), the
exchange for servers that share no filesystem (Kubernetes): nothing passes through a shared folder,
every file goes over HTTP to the ngshare service, which knows each user by their hub token.

Through the same REST calls the browser makes: the formgrader's buttons (its /formgrader/api/ calls,
with the instructor's LTI login) release, collect and release feedback; each student's Assignments
panel (nbgrader's /assignments/ calls on their own server, whose hub token ngshare checks) fetches,
submits and fetches feedback; `autograder grade` and `autograder feedback --exchange` work on what was
collected. The hub enrols each user in ngshare's course when they launch from the LMS; a student's own
token is refused another's submission and the instructor's calls. tests/browser/test_hub_lab.py runs
the same term in Chromium with nbgrader's own exchange. Root only: the test makes its Unix users and
removes them.
"""

from __future__ import annotations

import json
import os
import pwd
import re
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest
import requests

from autograder.authoring.demo import type_in_solutions
from tests.browser.courses import LAYOUT
from tests.hub_server import Hub, class_hub, course_directory, grade_collected
from tests.lti_platform import Launch

pytestmark = [pytest.mark.hub,
              pytest.mark.skipif(os.geteuid() != 0, reason="the hub makes Unix users and runs servers as them: needs root")]

COURSE, ASSIGNMENT = "tf-internals-ngshare", "01_session_vs_eager"
NOTEBOOK = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
INSTRUCTOR, ANN, BEN = "7350001", "7350003", "7350004"
GRADER = f"grader-{COURSE}"  # the formgrader's Unix user, and ngshare's
USERS = (INSTRUCTOR, ANN, BEN, GRADER)


@pytest.fixture(scope="module")
def hub():
    with class_hub(COURSE, (INSTRUCTOR,), USERS, exchange="ngshare") as running:
        yield running


@pytest.fixture(scope="module")
def course(hub) -> Path:
    return course_directory(hub, COURSE, ASSIGNMENT)


@pytest.fixture(scope="module")
def launched(hub) -> dict[str, requests.Session]:
    """The instructor and two students launched from the LMS: their browser sessions."""
    sessions = {}
    for user, roles in ((INSTRUCTOR, ["Instructor"]), (ANN, ["Learner"]), (BEN, ["Learner"])):
        launch = Launch(hub.platform, hub.url, user, roles)
        answer = launch.run()
        assert answer.status_code == 302, f"{user}'s launch: {answer.status_code}\n" + hub.log.read_text(errors="replace")[-3000:]
        sessions[user] = launch.session
    return sessions


def formgrader(hub: Hub, session: requests.Session, action: str) -> dict:
    """A button of the formgrader's Manage Assignments page for 01 (its API call, with the page's XSRF
    token), as the instructor's browser presses it."""
    base = f"{hub.url}/services/{COURSE}/formgrader"
    hub.wait(lambda: session.get(base, timeout=30).status_code == 200, "the formgrader to answer", 90)
    xsrf = next(cookie.value for cookie in session.cookies  # the service's, not the hub's (path /hub/)
                if cookie.name == "_xsrf" and cookie.path.startswith(f"/services/{COURSE}"))
    answer = session.post(f"{base}/api/assignment/{ASSIGNMENT}/{action}", timeout=300, headers={"X-XSRFToken": xsrf})
    assert answer.status_code == 200, f"formgrader {action}: {answer.status_code} {answer.text[:500]}"
    result = answer.json()
    assert result.get("success"), f"formgrader {action}: {json.dumps(result)[:2000]}"
    return result


def panel(hub: Hub, student: str, action: str) -> list[dict]:
    """The Assignments panel's `action` (fetch, submit, fetch_feedback) on the student's own server;
    returns the panel's list of 01's entries after it."""
    answer = hub.server(student, "POST", f"/assignments/{action}",
                        params={"assignment_id": ASSIGNMENT, "course_id": COURSE})
    assert answer.status_code == 200, f"{student} {action}: {answer.status_code} {answer.text[:500]}"
    result = answer.json()
    assert result.get("success"), f"{student} {action}: {json.dumps(result)[:2000]}"
    return [entry for entry in result["value"] if entry["assignment_id"] == ASSIGNMENT]


def server_token(student: str) -> str:
    """The hub token of the student's server (what their terminal and kernels have): read from the
    server's environment, as root."""
    import psutil

    uid = pwd.getpwnam(student).pw_uid
    for process in psutil.process_iter(["uids", "cmdline"]):
        if (process.info["uids"] and process.info["uids"].real == uid
                and any("jupyterhub-singleuser" in part for part in process.info["cmdline"] or [])):
            return process.environ()["JUPYTERHUB_API_TOKEN"]
    raise AssertionError(f"no server runs as {student}")


def ngshare(hub: Hub, token: str, method: str, path: str) -> requests.Response:
    return requests.request(method, f"{hub.url}/services/ngshare{path}", timeout=30,
                            headers={"Authorization": f"token {token}"})


def test_a_class_releases_fetches_submits_is_collected_graded_and_reads_feedback_through_ngshare(hub, course, launched):
    started = datetime.now(timezone.utc)
    # the server's nbgrader configuration names ngshare, and no exchange folder is made
    configuration = (hub.state / "jupyter-config" / "nbgrader_config.py").read_text(encoding="utf-8")
    assert "configureExchange(c, " in configuration and "Exchange.root" not in configuration
    assert not (hub.state / "exchange").exists()
    assert oct((hub.state / "ngshare").stat().st_mode & 0o777) == oct(0o700)

    formgrader(hub, launched[INSTRUCTOR], "release")

    source = nbformat.read(LAYOUT.source_notebook(ASSIGNMENT), as_version=4)
    for student in (ANN, BEN):
        hub.spawn(student)
        fetched = panel(hub, student, "fetch")
        assert [entry["status"] for entry in fetched] == ["fetched"], (fetched, hub.log.read_text(errors="replace")[-3000:])
        notebook = Path(pwd.getpwnam(student).pw_dir) / NOTEBOOK
        assert notebook.stat().st_uid == pwd.getpwnam(student).pw_uid, "the fetch did not run as the student"
    # ann answers every exercise (saved through her server), ben submits the release untouched
    answered = type_in_solutions(nbformat.read(Path(pwd.getpwnam(ANN).pw_dir) / NOTEBOOK, as_version=4), source)
    saved = hub.server(ANN, "PUT", f"/api/contents/{NOTEBOOK}",
                       json={"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(answered))})
    assert saved.status_code == 200, saved.text[:300]
    for student in (ANN, BEN):
        submitted = panel(hub, student, "submit")
        assert any(entry["status"] == "submitted" for entry in submitted), submitted

    # ben's own token: not ann's submission, not the list of submissions, no release of his own
    ben = server_token(BEN)
    assert ngshare(hub, ben, "GET", f"/submission/{COURSE}/{ASSIGNMENT}/{ANN}").status_code == 403
    assert ngshare(hub, ben, "GET", f"/submissions/{COURSE}/{ASSIGNMENT}").status_code == 403
    assert ngshare(hub, ben, "POST", f"/assignment/{COURSE}/ben-made").status_code == 403
    # ...while his own list of the course's assignments answers (the token is one ngshare accepts)
    listed = ngshare(hub, ben, "GET", f"/assignments/{COURSE}")
    assert listed.status_code == 200 and ASSIGNMENT in listed.text, listed.text[:300]

    formgrader(hub, launched[INSTRUCTOR], "collect")
    for student in (ANN, BEN):
        assert (course / "submitted" / student / ASSIGNMENT / "timestamp.txt").is_file()
        assert (course / "submitted" / student / NOTEBOOK).is_file()

    # graded as in the formgrader's terminal, whose configuration reads ngshare's times (UTC, no zone) in UTC
    rows = grade_collected(hub, course, ASSIGNMENT)
    assert sorted(rows) == [ANN, BEN]
    assert float(rows[ANN]["score"]) > 0 and float(rows[BEN]["score"]) == 0, rows
    for student in (ANN, BEN):   # ngshare's time of the submission, which it keeps in UTC
        written = (course / "submitted" / student / ASSIGNMENT / "timestamp.txt").read_text(encoding="utf-8")
        assert datetime.fromisoformat(rows[student]["submitted_at"]) == \
            datetime.fromisoformat(written).replace(tzinfo=timezone.utc), (written, rows[student])
        assert started <= datetime.fromisoformat(rows[student]["submitted_at"]) <= datetime.now(timezone.utc)
    formgrader(hub, launched[INSTRUCTOR], "release_feedback")

    for student in (ANN, BEN):
        panel(hub, student, "fetch_feedback")
        home = Path(pwd.getpwnam(student).pw_dir)
        pages = list((home / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
        assert len(pages) == 1, f"{student}'s fetched feedback: {pages}"
        assert pages[0].stat().st_uid == pwd.getpwnam(student).pw_uid
        found = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", pages[0].read_text(encoding="utf-8"))
        assert found and float(found[1]) == float(rows[student]["score"]), (student, found and found[0])

