"""Due dates, extensions and late penalties, applied after grading (a new due date needs no re-grade).

The term file (TOML, the instructor edits it; `term.toml` at the course root by default):

    [due]                                   # per assignment, ISO 8601 with a UTC offset
    00_gpu_setup = "2027-01-15T23:59:00+01:00"

    [penalty]                               # modelled on nbgrader's LateSubmissionPlugin
    method = "per_day"                      # none (default) | zero | per_day
    percent_per_day = 10                    # per_day: this share of the student's score per started day
    cap_percent = 50                        # per_day: never more than this share

Extensions (CSV: `student_id,assignment,due`, a new due date for one student) and submission times
(CSV: `student_id,submitted_at`) are files of their own; a submission that `nbgrader collect` gathered
brings its own time (its timestamp.txt: `add_collected_times`), which a line of the times file replaces.
A submission without a time is on time, unless the LMS's download marked it late (Canvas's LATE): then
it is charged as late by one started day.
Every problem (a malformed date, a date without an offset, an unknown student or assignment, a
student twice) is reported with its file and line, all at once, before anything is graded.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets.config import Config

from autograder import csvfile
from autograder.errors import AutograderError
from autograder.grading.results import Row
from autograder.settings import GradingSettings

METHODS = ("none", "zero", "per_day")
DAY_SECONDS = 86400


class TermError(AutograderError):
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
    time_problems: dict[str, str] = field(default_factory=dict)   # why a collected submission's time is unknown

    def due_for(self, student_id: str, assignment: str) -> datetime | None:
        return self.extensions.get((student_id, assignment), self.due.get(assignment))

    def late_seconds(self, student_id: str, assignment: str) -> float | None:
        """Seconds after the student's due date; 0 without a submission time (on time); None when the
        student has no due date for `assignment`."""
        due, at = self.due_for(student_id, assignment), self.submitted.get(student_id)
        if due is None:
            return None
        return max(0.0, (at - due).total_seconds()) if at else 0.0

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


def add_extensions(term: Term, path: Path, assignment_id: str, students: set[str]) -> None:
    """The extensions file may list the whole term: its lines for `assignment_id` must name students of
    this class; the others must name an assignment the term file has a due date for."""
    def extension(line: csvfile.Line) -> tuple[tuple[str, str], datetime]:
        student, assignment = line["student_id"], line["assignment"]
        if assignment == assignment_id and student not in students:
            raise csvfile.BadLine(f"student {student!r} has no submission in this class")
        if assignment != assignment_id and assignment not in term.due:
            raise csvfile.BadLine(f"unknown assignment {assignment!r} (not this one, and no due date in the term file)")
        if (student, assignment) in term.extensions:
            raise csvfile.BadLine(f"a second extension for {student} on {assignment}")
        term.extensions[student, assignment] = _time(line, "due")
        return (student, assignment), term.extensions[student, assignment]

    csvfile.parse(path, ("student_id", "assignment", "due"), extension, error=TermError)


def add_times(term: Term, path: Path, students: set[str]) -> None:
    def submitted(line: csvfile.Line) -> datetime:
        student = line["student_id"]
        if student not in students:
            raise csvfile.BadLine(f"student {student!r} has no submission in this class")
        if student in term.submitted:
            raise csvfile.BadLine(f"a second time for {student}")
        term.submitted[student] = _time(line, "submitted_at")
        return term.submitted[student]

    csvfile.parse(path, ("student_id", "submitted_at"), submitted, error=TermError)


def add_collected_times(term: Term, times: dict[str, datetime]) -> None:
    """The times nbgrader's exchange recorded (intake reads each timestamp.txt), for every student the
    times file (`add_times`) gives none: the instructor's line is the correction of a recorded time."""
    for student, at in times.items():
        term.submitted.setdefault(student, at)


def _time(line: csvfile.Line, column: str) -> datetime:
    try:
        return parse_time(line[column], line.where)
    except TermError as error:
        raise csvfile.BadLine(str(error).removeprefix(f"{line.where}: ")) from None


def due_dates(term: Term, assignment: str, students: set[str]) -> dict[str, datetime] | None:
    """Each student's due date for `assignment` (an extension or the term's), or None when the term
    gives the assignment no due date."""
    if assignment not in term.due:
        return None
    dates: dict[str, datetime] = {}
    for student in students:
        due = term.due_for(student, assignment)
        assert due is not None, "the assignment is in term.due (above), due_for's fallback"
        dates[student] = due
    return dates


def class_term(settings: GradingSettings, assignment_id: str, students: set[str],
               submission_of: dict[str, str] | None = None) -> Term:
    """The settings' term file with the extensions and submission times of `students`, as every command
    reads it; a group member's line is the group's submission's (`submission_of`)."""
    submission_of = submission_of or {}
    term = read_term(Path(settings.term) if settings.term else None)
    if settings.extensions:
        add_extensions(term, Path(settings.extensions), assignment_id, students)
    if settings.submitted_at:
        add_times(term, Path(settings.submitted_at), students)
    term.extensions = {(submission_of.get(student, student), assignment): due
                       for (student, assignment), due in term.extensions.items()}
    term.submitted = {submission_of.get(student, student): at for student, at in term.submitted.items()}
    return term


def apply(row: Row, term: Term, plugin: LateSubmissionPlugin | None = None) -> None:
    """The row's submission time, lateness and late penalty under `term`: its score is its raw score less
    the penalty (a status without a score is charged nothing). The penalty is the term's policy's, or,
    when the course names a late-submission plugin of its own (`penalty_plugin`), that plugin's, asked
    as nbgrader asks it (only for a late submission) and kept between 0 and the score as nbgrader keeps it."""
    at = term.submitted.get(row.student_id)
    row.submitted_at = at.isoformat() if at else ""
    row.lms_late = row.student_id in term.marked_late
    row.late_by = term.late_seconds(row.student_id, row.assignment)
    by_marker = term.charged_by_marker(row.student_id)
    seconds = 1.0 if by_marker else row.late_by or 0.0
    if not row.status.scored:
        row.penalty = 0.0
    elif plugin is None:
        row.penalty = term.policy.penalty(row.score, seconds)
    else:
        asked = plugin.late_submission_penalty(row.student_id, row.score, seconds) if seconds > 0 else None
        row.penalty = min(max(float(asked or 0.0), 0.0), row.score)
    if at is None and (problem := term.time_problems.get(row.student_id)):
        row.reason = "; ".join(filter(None, [row.reason, problem]))
    if by_marker:   # one second late: one started day
        row.reason = "; ".join(filter(None, [row.reason, "the LMS marked it late and no submission time was given "
                                             "(--submitted-at): charged as late by one started day"]))
    row.score = max(0.0, row.raw_score - row.penalty)


class TermPenalty(LateSubmissionPlugin):
    """The course's late penalty as nbgrader's late-submission plugin (`c.AssignLatePenalties.plugin_class`,
    which the course's nbgrader configuration sets: `autograder.nbgrader_setup.config`), so that
    `nbgrader autograde` run by hand charges what `autograder grade` charges: the policy of the term
    file (`c.GradingSettings.term`, else term.toml in the folder nbgrader runs in, the course root) for
    the seconds late that nbgrader computed from its gradebook's due date. (`autograder grade` applies
    the penalty itself after grading, from the same policy: its gradebooks hold no due date.)"""

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        configured = GradingSettings(parent=self).term
        path = Path(configured) if configured else Path("term.toml")
        return read_term(path if path.is_file() else None).policy.penalty(score, total_seconds_late)


def penalty_plugin(config: Config) -> LateSubmissionPlugin | None:
    """The course's own late-submission plugin when its nbgrader configuration names one
    (`c.AssignLatePenalties.plugin_class = "mycourse.penalties.PerHour"`, a subclass of nbgrader's
    LateSubmissionPlugin), built as nbgrader builds it, so that `autograder grade` and `nbgrader
    autograde` charge alike; None for the course's own `TermPenalty` (the term's policy, read directly)."""
    from nbgrader.preprocessors import AssignLatePenalties

    penalties = AssignLatePenalties(config=config)
    if penalties.plugin_class is TermPenalty:
        return None
    penalties.init_plugin()
    return penalties.plugin_inst
