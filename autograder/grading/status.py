"""A submission's status, decided in one place from everything that is known about its run: the
worker process's outcome (`jobs.Outcome`: bounds hit, a crash, nbgrader's facts) and the tamper
scan's findings. Intake decides `INVALID` before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.execution.jobs import Outcome
    from autograder.grading.tamper import Findings


class Status(StrEnum):
    GRADED = "graded"      # scored
    FLAGGED = "flagged"    # scored (or not, when its run failed too), and the tamper scan found something
    TIMEOUT = "timeout"    # the notebook or one of its cells ran past its time limit: 0
    ERROR = "error"        # the run failed (memory, processes, a crash, nbgrader could not grade it): 0
    INVALID = "invalid"    # the submission could not be read: 0, never run
    NEEDS_MANUAL_GRADE = "needs_manual_grade"  # scored by the tests; written answers wait for a hand grade

    @property
    def scored(self) -> bool:
        """The row's points stand (and a late penalty applies to them)."""
        return self in (Status.GRADED, Status.FLAGGED, Status.NEEDS_MANUAL_GRADE)


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
    elif result.timed_out_cell is not None:
        status, reason = Status.TIMEOUT, f"cell {result.timed_out_cell} ran past the time limit"
    elif result.pending:
        status, reason = Status.NEEDS_MANUAL_GRADE, written(result.pending)
    else:
        status, reason = Status.GRADED, ""
    keeps_points = status in (Status.GRADED, Status.NEEDS_MANUAL_GRADE)
    if findings.flagged:
        run = "" if keeps_points else f"; then {status}: {reason}"
        return Decision(Status.FLAGGED, findings.reason() + run, keeps_points)
    return Decision(status, reason, keeps_points)


def written(pending) -> str:
    return f"written answers to grade by hand: {', '.join(pending)}"


def settle(status: Status, reason: str, pending) -> tuple[Status, str]:
    """After the hand grades (overrides, the formgrader) are applied: a row that waited for them and
    has none left waiting is graded."""
    if status == Status.NEEDS_MANUAL_GRADE:
        return (Status.NEEDS_MANUAL_GRADE, written(pending)) if pending else (Status.GRADED, "")
    return status, reason
