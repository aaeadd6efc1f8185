"""Due dates, extensions and late penalties, applied after grading (a new due date needs no re-grade).

The term file (TOML, the instructor edits it; `term.toml` at the course root by default):

    [due]                                   # per assignment, ISO 8601 with a UTC offset
    00_gpu_setup = "2027-01-15T23:59:00+01:00"

    [penalty]                               # modelled on nbgrader's LateSubmissionPlugin
    method = "per_day"                      # none (default) | zero | per_day
    percent_per_day = 10                    # per_day: this share of the student's score per started day
    cap_percent = 50                        # per_day: never more than this share

Extensions (CSV: `student_id,assignment,due`, a new due date for one student) and submission times
(CSV: `student_id,submitted_at`) are files of their own. A submission without a time is on time,
unless the LMS's download marked it late (Canvas's LATE): then it is charged as late by one started day.
Every problem (a malformed date, a date without an offset, an unknown student or assignment, a
student twice) is reported with its file and line before anything is graded.
"""

from __future__ import annotations

import csv
import math
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

METHODS = ("none", "zero", "per_day")
DAY_SECONDS = 86400


class TermError(ValueError):
    """A term, extensions or times file that cannot be used as it is: the message says where and why."""


def parse_time(text: str, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TermError(f"{where}: {text!r} is not an ISO 8601 date and time (e.g. 2027-01-15T23:59:00+01:00)") from None
    if moment.tzinfo is None:
        raise TermError(f"{where}: {text!r} has no UTC offset (add one, e.g. +01:00 or Z)")
    return moment


@dataclass(frozen=True)
class Policy:
    method: str = "none"
    percent_per_day: float = 0.0
    cap_percent: float = 100.0

    def penalty(self, score: float, late_seconds: float) -> float:
        """Points taken from `score` for a submission `late_seconds` after its due date."""
        if late_seconds <= 0 or self.method == "none":
            return 0.0
        if self.method == "zero":
            return score
        days = math.ceil(late_seconds / DAY_SECONDS)
        return score * min(self.cap_percent, days * self.percent_per_day) / 100


@dataclass
class Term:
    due: dict[str, datetime] = field(default_factory=dict)
    policy: Policy = Policy()
    extensions: dict[tuple[str, str], datetime] = field(default_factory=dict)
    submitted: dict[str, datetime] = field(default_factory=dict)
    marked_late: set[str] = field(default_factory=set)   # students the LMS's download marks late (Canvas's LATE)

    def due_for(self, student_id: str, assignment: str) -> datetime | None:
        return self.extensions.get((student_id, assignment), self.due.get(assignment))

    def late_seconds(self, student_id: str, assignment: str) -> float:
        due, at = self.due_for(student_id, assignment), self.submitted.get(student_id)
        return max(0.0, (at - due).total_seconds()) if due and at else 0.0

    def charged_by_marker(self, student_id: str) -> bool:
        """Late by the LMS's marker only: no submission time is known, so the penalty is that of one
        started day (`zero`: the whole score), the least any late submission gets."""
        return student_id in self.marked_late and student_id not in self.submitted and self.policy.method != "none"


def read_term(path: Path | None) -> Term:
    """The due dates and the penalty policy of a term file; no file: no due dates, no penalty."""
    if path is None:
        return Term()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise TermError(f"{path}: {error}") from None
    unknown = set(data) - {"due", "penalty"}
    if unknown:
        raise TermError(f"{path}: unknown section(s) {', '.join(sorted(unknown))} (expected [due] and [penalty])")
    due = {assignment: parse_time(str(text), f"{path} [due] {assignment}")
           for assignment, text in data.get("due", {}).items()}
    settings = data.get("penalty", {})
    method = settings.get("method", "none")
    if method not in METHODS:
        raise TermError(f"{path} [penalty] method: {method!r} is not one of {', '.join(METHODS)}")
    try:
        policy = Policy(method, float(settings.get("percent_per_day", 0)), float(settings.get("cap_percent", 100)))
    except (TypeError, ValueError):
        raise TermError(f"{path} [penalty]: percent_per_day and cap_percent must be numbers") from None
    if method == "per_day" and not (0 < policy.percent_per_day and 0 <= policy.cap_percent <= 100):
        raise TermError(f"{path} [penalty]: per_day needs percent_per_day > 0 and cap_percent between 0 and 100")
    return Term(due, policy)


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or not set(columns) <= set(reader.fieldnames):
                raise TermError(f"{path}: expected the columns {', '.join(columns)}, found {reader.fieldnames}")
            return [(number, row) for number, row in enumerate(reader, start=2)]
    except OSError as error:
        raise TermError(f"{path}: {error}") from None


def add_extensions(term: Term, path: Path, assignment_id: str, students: set[str]) -> None:
    """The extensions file may list the whole term: its lines for `assignment_id` must name students of
    this class; the others must name an assignment the term file has a due date for."""
    for line, row in _rows(path, ("student_id", "assignment", "due")):
        where = f"{path} line {line}"
        student, assignment = row["student_id"].strip(), row["assignment"].strip()
        if assignment == assignment_id and student not in students:
            raise TermError(f"{where}: student {student!r} has no submission in this class")
        if assignment != assignment_id and assignment not in term.due:
            raise TermError(f"{where}: unknown assignment {assignment!r} (not this one, and no due date in the term file)")
        if (student, assignment) in term.extensions:
            raise TermError(f"{where}: a second extension for {student} on {assignment}")
        term.extensions[student, assignment] = parse_time(row["due"], where)


def add_times(term: Term, path: Path, students: set[str]) -> None:
    for line, row in _rows(path, ("student_id", "submitted_at")):
        where = f"{path} line {line}"
        student = row["student_id"].strip()
        if student not in students:
            raise TermError(f"{where}: student {student!r} has no submission in this class")
        if student in term.submitted:
            raise TermError(f"{where}: a second time for {student}")
        term.submitted[student] = parse_time(row["submitted_at"], where)
