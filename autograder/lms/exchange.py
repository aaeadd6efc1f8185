"""What `nbgrader collect <assignment>` leaves in the course directory, read by the rules nbgrader's own code
follows (nbgrader 0.9.6, the version the course installs; line numbers of its files there).

Students on JupyterHub hand in through nbgrader's exchange: `nbgrader submit` (exchange/default/submit.py)
copies the student's assignment folder to `<exchange>/<course>/inbound/<student_id>+<assignment_id>+
<timestamp>+<random>` (lines 59-62, 138) and writes the time into it as `timestamp.txt` (lines 139-140,
beside a `submission_secret.txt`). `nbgrader collect` (exchange/default/collect.py) takes, per student, the
newest of those folders (lines 57-68; `--before-duedate`: the newest before the gradebook's due date,
lines 69-77) and copies it whole to `format_path(submitted_directory, student_id, assignment_id)` (line
110), by default (coursedir.py lines 109-110, 157-158):

    submitted/<student_id>/<assignment_id>/<notebook>.ipynb
    submitted/<student_id>/<assignment_id>/timestamp.txt        2027-01-15 22:59:00.123456 UTC

A student's later resubmission replaces the collected folder only under `nbgrader collect --update`
(lines 116-135: the old folder is removed and the newer copied); without it the first collected stays.
Other assignments collected before sit beside it as `submitted/<student_id>/<other assignment>/`.

The time is `datetime.now(gettz(Exchange.timezone)).strftime(Exchange.timestamp_format)` (exchange/abc/
exchange.py lines 29-37, 60-65), by default `"%Y-%m-%d %H:%M:%S.%f %Z"` in `"UTC"`. nbgrader reads it back
with `parse_utc` (utils.py lines 190-208, through coursedir.py `get_existing_timestamp`, lines 324-340):
a last word after the date and time is a zone name for `dateutil.tz.gettz` or a number. Here a zone
name is looked up in the same tz database (`zoneinfo`: `UTC`, `CET`, `Europe/Berlin`). Two of nbgrader's
readings are wrong, so they are refused here rather than followed: a zone name `gettz` does not know
(`%Z` writes `CEST`, `EDT`, `PDT` in summer) leaves the time without a zone, which nbgrader then takes
as UTC, and a number (`%z`: `+0200`) becomes an offset of that many seconds. A time without any zone is
refused as the term file refuses one.
"""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timezone
from pathlib import Path


from autograder.errors import AutograderError
from autograder.settings import time_zone

SUBMITTED = "submitted"             # CourseDirectory.submitted_directory's default
FEEDBACK = "feedback"               # CourseDirectory.feedback_directory's default
TIMESTAMP_FILE = "timestamp.txt"
SECRET_FILE = "submission_secret.txt"
MAX_TIMESTAMP_BYTES = 1024
COLLECTED_RULE = "<student_id>/<assignment_id>/<notebook>.ipynb with <student_id>/<assignment_id>/timestamp.txt"

_OFFSET = re.compile(r"[+-]\d{2}:?\d{2}")


class TimestampProblem(AutograderError):
    """A timestamp.txt that gives no time: the message says why (intake keeps the notebook, without a time)."""


def timestamp(text: str, timestamp_zone: str | None = None) -> datetime:
    """The time of a `timestamp.txt`, in UTC: nbgrader's default `2027-01-15 22:59:00.123456 UTC` (or any
    zone name nbgrader resolves, `2027-01-15 23:59:00.000000 CET`), a numeric offset after the time, or
    ISO 8601 with an offset (a `timestamp_format` such as `%Y-%m-%dT%H:%M:%S%z`). A time without a zone is
    read in `timestamp_zone` where one is given (ngshare's `2027-01-15 22:59:00.123456` is UTC: its database
    keeps no zone), and refused otherwise."""
    text = text.strip()
    if not text:
        raise TimestampProblem("is empty")
    if len(text) > 100:
        raise TimestampProblem(f"holds {len(text)} characters, not a time")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = _with_zone(text)
    if (moment.tzinfo is None or moment.utcoffset() is None) and timestamp_zone:
        moment = moment.replace(tzinfo=time_zone(timestamp_zone))
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise TimestampProblem(f"{text!r} has no time zone")
    return moment.astimezone(timezone.utc)


def _with_zone(text: str) -> datetime:
    when, _, zone = text.rpartition(" ")
    try:
        local = datetime.fromisoformat(when)
    except ValueError:
        raise TimestampProblem(f"{text!r} is not a time nbgrader writes (e.g. 2027-01-15 22:59:00.123456 UTC)") from None
    if local.tzinfo is not None:
        raise TimestampProblem(f"{text!r} has two time zones")
    if _OFFSET.fullmatch(zone):
        return datetime.fromisoformat(f"{when}{zone}")
    try:
        return local.replace(tzinfo=time_zone(zone))
    except ValueError as error:
        raise TimestampProblem(f"{text!r}: {error}") from None


def place_feedback(pages: dict[tuple[str, str], Path], course: Path, assignment_id: str,
                   needs_secret: bool = True) -> tuple[int, list[str]]:
    """The feedback pages `pages` ((student_id, notebook stem) -> page) laid out where `nbgrader
    release_feedback <assignment>` takes them (exchange/default/release_feedback.py, lines 37-81):
    `<course>/feedback/<student_id>/<assignment_id>/<notebook>.html`, beside the `timestamp.txt` of the
    student's collected submission (which submission the page answers) and its `submission_secret.txt`,
    which nbgrader's own exchange reads to name the released page by `notebook_hash(secret, notebook)`
    (the name `nbgrader fetch_feedback` looks for in the student's server, and without which its
    release_feedback stops for the whole class). ngshare's exchange keeps no secret and needs none (its
    release_feedback reads the timestamp and the page: ngshare_exchange/release_feedback.py):
    `needs_secret` False (`needs_secret(config)`) places a page beside the timestamp alone, and copies a
    secret only where there is one. Returns (pages placed, "student: reason" for each page left out: a
    student whose collected folder under `<course>/submitted/` lacks a file the exchange needs). Pages
    already there are replaced.
    """
    placed, left_out = 0, []
    needed = (TIMESTAMP_FILE, SECRET_FILE) if needs_secret else (TIMESTAMP_FILE,)
    for (student_id, notebook), page in sorted(pages.items()):
        collected = course / SUBMITTED / student_id / assignment_id
        missing = [name for name in needed if not (collected / name).is_file()]
        if missing:
            left_out.append(f"{student_id}: no {' or '.join(missing)} in {collected} (not collected by nbgrader collect)")
            continue
        target = course / FEEDBACK / student_id / assignment_id
        target.mkdir(parents=True, exist_ok=True)
        for name in (TIMESTAMP_FILE, SECRET_FILE):
            if (collected / name).is_file():
                shutil.copyfile(collected / name, target / name)
        shutil.copyfile(page, target / f"{notebook}.html")
        placed += 1
    return placed, left_out


DEFAULT_EXCHANGE = "nbgrader.exchange.default"


def needs_secret(config) -> bool:
    """Whether the exchange an nbgrader configuration names releases feedback by the submission's secret:
    nbgrader's own (the default) does; another (ngshare's, set by `ngshare_exchange.configureExchange`)
    is taken at its word only when its release_feedback class is not nbgrader's."""
    chosen = config.get("ExchangeFactory", {}).get("release_feedback")
    if chosen is None:
        return True
    name = chosen if isinstance(chosen, str) else f"{chosen.__module__}.{chosen.__qualname__}"
    return name.startswith(DEFAULT_EXCHANGE + ".")
