"""A submission's status, decided in one place from everything that is known about its run: the
worker process's outcome (`jobs.Outcome`: bounds hit, a crash, nbgrader's facts, a gradebook or
feedback failure) and the tamper scan's findings. Intake decides `INVALID` before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.runfolder import Status

if TYPE_CHECKING:
    from autograder.execution.jobs import Outcome
    from autograder.grading.tamper import Findings


@dataclass(frozen=True)
class Decision:
    status: Status
    reason: str
    keeps_points: bool     # False when the run failed: the row scores 0, whatever nbgrader recorded


def decide(outcome: "Outcome", findings: "Findings", timeout_s: float, memory_limit_gb: float,
           task_limit: int = 0) -> Decision:
    """The status of a run. A tamper finding wins over every run status, and the reason keeps both
    (an instructor must not re-run a tampering submission that then hung as if the grader had failed)."""
    result = outcome.result
    if outcome.memory_exceeded:
        status, reason = Status.ERROR, (f"memory limit exceeded: more than {memory_limit_gb:g} GB resident "
                                        "in the notebook's kernel")
    elif outcome.tasks_exceeded:
        status, reason = Status.ERROR, f"process limit exceeded: more than {task_limit} processes and threads"
    elif outcome.timed_out:
        status, reason = Status.TIMEOUT, f"the notebook ran longer than {timeout_s:g} s"
    elif result is None:
        status, reason = Status.ERROR, f"grading crashed: {outcome.crash}"
    elif result.nbgrader_failure is not None:
        status, reason = Status.ERROR, result.nbgrader_failure
    elif result.gradebook_failure is not None:
        status, reason = Status.ERROR, result.gradebook_failure
    elif result.timed_out_cell is not None:
        status, reason = Status.TIMEOUT, f"cell {result.timed_out_cell} ran past the time limit"
    elif result.answers_to_grade:
        status, reason = Status.NEEDS_MANUAL_GRADE, waiting_reason(result.answers_to_grade)
    else:
        status, reason = Status.GRADED, ""
    if result is not None and result.feedback_failure:  # the points stand; the student gets no page
        reason = "; ".join(filter(None, [reason, f"no feedback page: {result.feedback_failure}"]))
    keeps_points = status in (Status.GRADED, Status.NEEDS_MANUAL_GRADE)
    if findings.flagged:
        then = "" if keeps_points else f"; then {status}: {reason}"
        return Decision(Status.FLAGGED, findings.reason() + then, keeps_points)
    return Decision(status, reason, keeps_points)


def waiting_reason(answers_to_grade) -> str:
    return f"written answers to grade by hand: {', '.join(answers_to_grade)}"


def after_hand_grades(status: Status, reason: str, answers_to_grade) -> tuple[Status, str]:
    """After the hand grades (overrides, the formgrader) are applied: a row that waited for them and
    has none left waiting is graded."""
    if status == Status.NEEDS_MANUAL_GRADE:
        return (Status.NEEDS_MANUAL_GRADE, waiting_reason(answers_to_grade)) if answers_to_grade else (Status.GRADED, "")
    return status, reason
