"""Grading what `nbgrader collect` gathered: the submitted folder is made by nbgrader 0.9.6's own
ExchangeSubmit and ExchangeCollect against an exchange in a temporary folder (a student's clock set
for each submission; collect's gradebook lookup replaced by "no due date", the path it takes without
one), then read by intake: each student's notebook of the graded assignment, timestamp.txt as the
submission time, late against the term's due date."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import types
from pathlib import Path

import nbformat
import pytest

from autograder.grading import intake, lateness
from autograder.lms import exchange
from tests import notebooks

COURSE_ID = "tf101"
ASSIGNMENT = "00_gpu_setup"
NAME = f"{ASSIGNMENT}.ipynb"
OTHER = "01_session_vs_eager"
UTC = dt.timezone.utc
DUE = dt.datetime(2027, 1, 15, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=1)))   # 22:59 UTC


class Exchange:
    """An nbgrader exchange and course directory under `root`, driven by nbgrader's own classes."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch):
        from nbgrader.api import MissingEntry
        from nbgrader.exchange.abc import exchange as abc_exchange
        from nbgrader.exchange.default import collect

        self.root, self.course = root / "exchange", root / "course"
        self.course.mkdir(parents=True)
        self.homes = root / "home"

        class NoDueDate:   # collect asks the gradebook for a due date (collect.py lines 61-66)
            def __init__(self, *args):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def find_assignment(self, assignment_id):
                raise MissingEntry()

        class Clock(dt.datetime):
            now_is = dt.datetime.now(UTC)

            @classmethod
            def now(cls, tz=None):
                return cls.now_is.astimezone(tz) if tz else cls.now_is.replace(tzinfo=None)

        self.clock = Clock
        monkeypatch.setattr(collect, "Gradebook", NoDueDate)
        monkeypatch.setattr(abc_exchange, "datetime", types.SimpleNamespace(datetime=Clock))

    def config(self, assignment: str, **exchange_settings):
        from traitlets.config import Config

        config = Config()
        config.CourseDirectory.root = str(self.course)
        config.CourseDirectory.course_id = COURSE_ID
        config.CourseDirectory.assignment_id = assignment
        config.Exchange.root = str(self.root)
        config.Exchange.cache = str(self.root.parent / "cache")
        config.ExchangeCollect.check_owner = False
        for name, value in exchange_settings.items():
            setattr(config.Exchange, name, value)
        return config

    def release(self, assignment: str, notebook: bytes) -> None:
        """What `nbgrader release_assignment` leaves in the exchange, as submit checks against it."""
        (self.root / COURSE_ID / "outbound" / assignment).mkdir(parents=True)
        (self.root / COURSE_ID / "outbound" / assignment / f"{assignment}.ipynb").write_bytes(notebook)
        (self.root / COURSE_ID / "inbound").mkdir(parents=True, exist_ok=True)

    def submit(self, student: str, assignment: str, files: dict[str, bytes], at: dt.datetime,
               **exchange_settings) -> Path:
        """`nbgrader submit <assignment>` by `student` at `at`; the inbound folder it made."""
        from nbgrader.auth import Authenticator
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.exchange.default.submit import ExchangeSubmit

        work = self.homes / student / assignment
        work.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (work / name).write_bytes(data)
        self.clock.now_is = at
        config = self.config(assignment, **exchange_settings)
        config.CourseDirectory.student_id = student
        config.Exchange.assignment_dir = str(self.homes / student)
        submit = ExchangeSubmit(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                                config=config)
        submit.start()
        return self.root / COURSE_ID / "inbound" / submit.assignment_filename

    def collect(self, assignment: str, update: bool = False) -> Path:
        """`nbgrader collect [--update] <assignment>`; the course's submitted folder."""
        from nbgrader.auth import Authenticator
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.exchange.default.collect import ExchangeCollect

        config = self.config(assignment)
        config.ExchangeCollect.update = update
        ExchangeCollect(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                        config=config).start()
        return self.course / "submitted"


def at_utc(*fields) -> dt.datetime:
    return dt.datetime(*fields, tzinfo=UTC)


@pytest.fixture
def valid_bytes() -> bytes:
    return nbformat.writes(notebooks.tiny_assignment()).encode()


@pytest.fixture
def class_exchange(tmp_path, monkeypatch, valid_bytes) -> Exchange:
    found = Exchange(tmp_path, monkeypatch)
    found.release(ASSIGNMENT, valid_bytes)
    found.release(OTHER, valid_bytes)
    return found


def snapshot(folder: Path) -> dict[str, tuple]:
    return {path.relative_to(folder).as_posix(): (path.stat().st_mode, path.stat().st_mtime_ns,
                                                  hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "")
            for path in sorted(folder.rglob("*"))}


def by_id(found):
    return {submission.student_id: submission for submission in found}


def test_the_collected_assignment_is_read_with_nbgraders_times_and_nothing_is_changed(class_exchange, valid_bytes):
    on_time, late = at_utc(2027, 1, 15, 22, 0, 0, 250000), at_utc(2027, 1, 17, 9, 30)
    class_exchange.submit("ada", ASSIGNMENT, {NAME: valid_bytes, "notes.md": b"# mine"}, on_time)
    class_exchange.submit("bob", ASSIGNMENT, {NAME: valid_bytes}, late)
    # dave's other assignment holds a notebook named like this one's: it must not be looked at
    class_exchange.submit("dave", OTHER, {NAME: b"not this one", f"{OTHER}.ipynb": valid_bytes}, on_time)
    class_exchange.submit("dave", ASSIGNMENT, {NAME: valid_bytes}, on_time)
    class_exchange.submit("carol", OTHER, {f"{OTHER}.ipynb": valid_bytes}, on_time)   # not this assignment
    class_exchange.collect(OTHER)
    submitted = class_exchange.collect(ASSIGNMENT)

    # the layout nbgrader wrote: submitted/<student_id>/<assignment_id>/, timestamp.txt in the default format
    assert (submitted / "ada" / ASSIGNMENT / NAME).read_bytes() == valid_bytes
    assert (submitted / "ada" / ASSIGNMENT / "timestamp.txt").read_text() == "2027-01-15 22:00:00.250000 UTC"
    assert (submitted / "carol" / OTHER).is_dir() and not (submitted / "carol" / ASSIGNMENT).exists()
    assert intake.collected(submitted)
    before = snapshot(submitted)

    found = by_id(intake.read_class(submitted, NAME, ASSIGNMENT))

    assert snapshot(submitted) == before, "the submitted folder is only read"
    assert sorted(found) == ["ada", "bob", "dave"], "carol handed in another assignment only: no row"
    assert all(s.ok and s.notebook_bytes == valid_bytes for s in found.values()), {k: s.problem for k, s in found.items()}
    assert found["ada"].origin == f"ada/{ASSIGNMENT}/{NAME}"
    assert (found["ada"].submitted_at, found["bob"].submitted_at) == (on_time, late)
    assert not any(s.time_problem or s.lms or s.late_marked for s in found.values())

    term = lateness.Term(due={ASSIGNMENT: DUE}, policy=lateness.Policy("per_day", 10, 50))
    lateness.add_collected_times(term, {s.student_id: s.submitted_at for s in found.values()})
    assert term.late_seconds("ada", ASSIGNMENT) == 0.0
    assert term.late_seconds("bob", ASSIGNMENT) == (late - DUE).total_seconds() == 124260.0   # 1 day 10 h 31 min
    assert term.policy.penalty(6.0, term.late_seconds("bob", ASSIGNMENT)) == pytest.approx(1.2)   # 2 started days


def test_a_line_of_the_times_file_replaces_the_recorded_time(tmp_path):
    times = tmp_path / "times.csv"
    times.write_text("student_id,submitted_at\nbob,2027-01-15T23:00:00+01:00\n", encoding="utf-8")
    term = lateness.Term(due={ASSIGNMENT: DUE})
    lateness.add_times(term, times, {"ada", "bob"})
    lateness.add_collected_times(term, {"ada": at_utc(2027, 1, 16, 0, 0), "bob": at_utc(2027, 1, 17, 9, 30)})
    assert term.late_seconds("ada", ASSIGNMENT) == 3660.0
    assert term.late_seconds("bob", ASSIGNMENT) == 0.0, "the instructor's correction wins over timestamp.txt"


def test_collect_keeps_the_first_collected_submission_until_update(class_exchange, valid_bytes):
    first, again = at_utc(2027, 1, 15, 20, 0), at_utc(2027, 1, 16, 8, 0)
    class_exchange.submit("ada", ASSIGNMENT, {NAME: valid_bytes}, first)
    submitted = class_exchange.collect(ASSIGNMENT)
    changed = nbformat.writes(nbformat.v4.new_notebook()).encode()
    class_exchange.submit("ada", ASSIGNMENT, {NAME: changed}, again)

    class_exchange.collect(ASSIGNMENT)   # "Submission already exists, use --update to update"
    (kept,) = intake.read_class(submitted, NAME, ASSIGNMENT)
    assert (kept.submitted_at, kept.notebook_bytes) == (first, valid_bytes)

    class_exchange.collect(ASSIGNMENT, update=True)
    (newer,) = intake.read_class(submitted, NAME, ASSIGNMENT)
    assert (newer.submitted_at, newer.notebook_bytes) == (again, changed)


def test_a_broken_timestamp_leaves_the_time_empty_with_a_warning_and_the_notebook_graded(class_exchange, valid_bytes,
                                                                                       caplog):
    summer = dt.datetime(2027, 7, 1, 12, 0, tzinfo=UTC)
    class_exchange.submit("ada", ASSIGNMENT, {NAME: valid_bytes}, at_utc(2027, 1, 15, 21, 0),
                          timezone="Europe/Berlin")                              # "2027-01-15 22:00:00.000000 CET"
    class_exchange.submit("bob", ASSIGNMENT, {NAME: valid_bytes}, summer, timezone="Europe/Berlin")   # "... CEST"
    # a student owns the inbound folder nbgrader submit made for them, so the file can hold anything
    (class_exchange.submit("cy", ASSIGNMENT, {NAME: valid_bytes}, summer) / "timestamp.txt").write_text("soon")
    submitted = class_exchange.collect(ASSIGNMENT)
    assert (submitted / "bob" / ASSIGNMENT / "timestamp.txt").read_text() == "2027-07-01 14:00:00.000000 CEST"

    with caplog.at_level(logging.WARNING, logger="autograder"):
        found = by_id(intake.read_class(submitted, NAME, ASSIGNMENT))

    assert all(s.ok for s in found.values())
    assert found["ada"].submitted_at == at_utc(2027, 1, 15, 21, 0) and not found["ada"].time_problem
    assert found["bob"].submitted_at is None and found["cy"].submitted_at is None
    assert "bob/00_gpu_setup/timestamp.txt: '2027-07-01 14:00:00.000000 CEST': 'CEST' is not a time zone" \
        in found["bob"].time_problem
    assert "'soon' is not a time nbgrader writes" in found["cy"].time_problem
    assert "no submission time (on time, unless --submitted-at gives one)" in found["cy"].time_problem
    assert [record.getMessage() for record in caplog.records if record.name.startswith("autograder")] \
        == [found["bob"].time_problem, found["cy"].time_problem]


def test_what_is_not_a_notebook_gets_a_row_with_its_reason_and_the_rest_is_graded(class_exchange, valid_bytes):
    class_exchange.submit("ada", ASSIGNMENT, {NAME: valid_bytes}, at_utc(2027, 1, 15, 21, 0))
    class_exchange.submit("bob", ASSIGNMENT, {NAME: b"%PDF-1.7 not json"}, at_utc(2027, 1, 15, 21, 5))
    class_exchange.submit("cy", ASSIGNMENT, {"report.pdf": b"%PDF-1.7"}, at_utc(2027, 1, 15, 21, 10))
    submitted = class_exchange.collect(ASSIGNMENT)
    (submitted / "notes.txt").write_text("grading notes")   # a file where nbgrader puts students' folders
    (submitted / ".DS_Store").write_bytes(b"\0")

    found = by_id(intake.read_class(submitted, NAME, ASSIGNMENT))

    assert sorted(found) == ["ada", "bob", "cy", "notes.txt"]
    assert found["ada"].ok
    assert found["bob"].problem.startswith("not a valid notebook") and found["bob"].origin == f"bob/{ASSIGNMENT}/{NAME}"
    assert found["bob"].submitted_at == at_utc(2027, 1, 15, 21, 5), "the time is kept beside the rejection"
    assert found["cy"].problem == f"no {NAME} in the submission (found: nothing)"
    assert found["notes.txt"].problem == ("notes.txt is a file, not a student's folder as nbgrader collect writes "
                                          f"them ({exchange.COLLECTED_RULE})")


def test_the_submitted_folder_needs_the_assignment_and_a_plain_class_folder_is_not_it(class_exchange, valid_bytes,
                                                                                       tmp_path):
    class_exchange.submit("ada", ASSIGNMENT, {NAME: valid_bytes}, at_utc(2027, 1, 15, 21, 0))
    submitted = class_exchange.collect(ASSIGNMENT)
    with pytest.raises(intake.IntakeError, match="what nbgrader collect gathered .* none was given"):
        intake.read_class(submitted, NAME)
    plain = tmp_path / "plain"
    (plain / "ada" / ASSIGNMENT).mkdir(parents=True)   # a student's unpacked assignment folder, no timestamp.txt
    (plain / "ada" / ASSIGNMENT / NAME).write_bytes(valid_bytes)
    assert not intake.collected(plain)
    (ada,) = intake.read_class(plain, NAME, ASSIGNMENT)
    assert ada.ok and ada.origin == f"ada/{ASSIGNMENT}/{NAME}" and ada.submitted_at is None


def test_a_missing_or_linked_timestamp_gives_no_time(tmp_path, valid_bytes, caplog):
    for student in ("ada", "bob", "cy"):
        (tmp_path / student / ASSIGNMENT).mkdir(parents=True)
        (tmp_path / student / ASSIGNMENT / NAME).write_bytes(valid_bytes)
    (tmp_path / "ada" / ASSIGNMENT / "timestamp.txt").write_text("2027-01-15 22:00:00.000000 UTC\n")
    (tmp_path / "cy" / ASSIGNMENT / "timestamp.txt").symlink_to(tmp_path / "ada" / ASSIGNMENT / "timestamp.txt")
    found = by_id(intake.read_class(tmp_path, NAME, ASSIGNMENT))
    assert found["ada"].submitted_at == at_utc(2027, 1, 15, 22, 0)
    assert "timestamp.txt: is missing" in found["bob"].time_problem
    assert "timestamp.txt: is a symbolic link: not followed" in found["cy"].time_problem
    assert all(s.ok for s in found.values())


@pytest.mark.parametrize("text, expected", [
    ("2027-01-15 22:59:00.123456 UTC", at_utc(2027, 1, 15, 22, 59, 0, 123456)),   # nbgrader's default
    ("2027-01-15 23:59:00.000000 CET\n", at_utc(2027, 1, 15, 22, 59)),
    ("2027-07-15 23:59:00.000000 Europe/Berlin", at_utc(2027, 7, 15, 21, 59)),
    ("2027-07-15 23:59:00.000000 -0400", at_utc(2027, 7, 16, 3, 59)),           # nbgrader: -400 seconds
    ("2027-07-15T23:59:00+0200", at_utc(2027, 7, 15, 21, 59)),
    ("2027-07-15T23:59:00Z", at_utc(2027, 7, 15, 23, 59)),
])
def test_nbgraders_timestamps_are_read_in_utc(text, expected):
    assert exchange.timestamp(text) == expected


def test_a_time_without_a_zone_is_read_in_the_zone_given_for_it():
    """ngshare writes its UTC times without a zone (c.GradingSettings.timestamp_zone = 'UTC' on its hub)."""
    assert exchange.timestamp("2027-07-15 23:59:00.000000", "UTC") == at_utc(2027, 7, 15, 23, 59)
    assert exchange.timestamp("2027-07-15 23:59:00.000000", "Europe/Berlin") == at_utc(2027, 7, 15, 21, 59)
    # a time that names its zone keeps it
    assert exchange.timestamp("2027-07-15 23:59:00.000000 UTC", "Europe/Berlin") == at_utc(2027, 7, 15, 23, 59)
    with pytest.raises(ValueError, match="not a time zone of the tz database"):
        exchange.timestamp("2027-07-15 23:59:00.000000", "../../etc/passwd")


@pytest.mark.parametrize("text, reason", [
    ("", "is empty"),
    ("2027-07-15 23:59:00.000000", "has no time zone"),
    ("2027-07-15 23:59:00.000000 EDT", "'EDT' is not a time zone of the tz database"),
    ("2027-07-15 23:59:00 ../../../etc/passwd", "is not a time zone of the tz database"),
    ("2027-13-45 23:59:00 UTC", "is not a time nbgrader writes"),
    ("2027-07-15T23:59:00+02:00 UTC", "has two time zones"),
    ("9" * 200, "holds 200 characters"),
])
def test_a_timestamp_that_gives_no_time_says_why(text, reason):
    with pytest.raises(exchange.TimestampProblem, match=reason):
        exchange.timestamp(text)


def test_feedback_pages_are_laid_out_for_nbgrader_release_feedback(tmp_path):
    course = tmp_path / "course"
    collected = course / "submitted" / "ada" / "ps1"
    collected.mkdir(parents=True)
    (collected / "timestamp.txt").write_text("2027-01-15 22:00:00.000000 UTC")
    (collected / "submission_secret.txt").write_text("s3cret")
    (course / "submitted" / "bob" / "ps1").mkdir(parents=True)  # collected by hand: nothing
    # a timestamp but no secret: nbgrader's own release_feedback would stop for the whole class
    (course / "submitted" / "cy" / "ps1").mkdir(parents=True)
    (course / "submitted" / "cy" / "ps1" / "timestamp.txt").write_text("2027-01-15 22:00:00.000000")
    page = tmp_path / "ada.html"
    page.write_text("<p>ada's page</p>")
    pages = {("ada", "ps1"): page, ("bob", "ps1"): page, ("cy", "ps1"): page}
    placed, left_out = exchange.place_feedback(pages, course, "ps1")
    assert placed == 1
    assert left_out == [f"bob: no timestamp.txt or submission_secret.txt in {course / 'submitted' / 'bob' / 'ps1'} "
                        "(not collected by nbgrader collect)",
                        f"cy: no submission_secret.txt in {course / 'submitted' / 'cy' / 'ps1'} "
                        "(not collected by nbgrader collect)"]
    target = course / "feedback" / "ada" / "ps1"
    assert (target / "ps1.html").read_text() == "<p>ada's page</p>"
    assert (target / "submission_secret.txt").read_text() == "s3cret"
    assert (target / "timestamp.txt").read_text() == "2027-01-15 22:00:00.000000 UTC"
    assert not (course / "feedback" / "cy").exists()


def test_through_ngshare_a_page_needs_only_the_timestamp():
    """ngshare's collect keeps no submission_secret.txt and its release_feedback reads none: an exchange
    whose release_feedback is not nbgrader's own places a page beside the timestamp alone."""
    from traitlets.config import Config

    configured = Config()
    configured.ExchangeFactory.release_feedback = "ngshare_exchange.release_feedback.ExchangeReleaseFeedback"
    assert exchange.needs_secret(Config()) and not exchange.needs_secret(configured)
    from nbgrader.exchange.default import ExchangeReleaseFeedback

    nbgraders = Config()
    nbgraders.ExchangeFactory.release_feedback = ExchangeReleaseFeedback
    assert exchange.needs_secret(nbgraders)


def test_a_page_through_an_exchange_without_secrets_is_placed_beside_the_timestamp(tmp_path):
    course = tmp_path / "course"
    (course / "submitted" / "cy" / "ps1").mkdir(parents=True)
    (course / "submitted" / "cy" / "ps1" / "timestamp.txt").write_text("2027-01-15 22:00:00.000000")
    (course / "submitted" / "bob" / "ps1").mkdir(parents=True)
    page = tmp_path / "cy.html"
    page.write_text("<p>cy's page</p>")
    placed, left_out = exchange.place_feedback({("cy", "ps1"): page, ("bob", "ps1"): page}, course, "ps1",
                                               needs_secret=False)
    assert placed == 1 and left_out == [f"bob: no timestamp.txt in {course / 'submitted' / 'bob' / 'ps1'} "
                                        "(not collected by nbgrader collect)"]
    assert sorted(path.name for path in (course / "feedback" / "cy" / "ps1").iterdir()) == ["ps1.html", "timestamp.txt"]