"""What the grading driver and a worker process exchange, written and read whole as JSON:
`WorkerJob` (job.json: which submission, in which course directory, under which settings) and
`WorkerResult` (result.json: the facts nbgrader left, never a status: `autograder.grading.status` decides
that, in one place, from these facts and the process's own outcome).

The driver sends a worker the path of a job.json as one line on its standard input; the worker answers
with the path of the result.json as one line on its standard output (`autograder.execution.worker`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from autograder.settings import GradingSettings


@dataclass(frozen=True)
class WorkerJob:
    workspace: str               # the nbgrader course directory
    assignment: str
    safe_id: str                 # the student's name inside nbgrader's folders (cache.safe_id)
    student_id: str              # the id as submitted, kept in the gradebook as lms_user_id
    notebook_name: str
    notebook_file: str           # the submitted notebook, copied into the job's folder
    settings: GradingSettings    # the run's settings, whole

    def write(self, path: Path) -> None:
        data = {item.name: getattr(self, item.name) for item in fields(self)}
        data["settings"] = self.settings.trait_values(config=True)
        path.write_text(json.dumps(data), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> "WorkerJob":
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{**data, "settings": GradingSettings(**data["settings"])})


@dataclass
class WorkerResult:
    score: float = 0.0
    max_score: float = 0.0
    cells: dict[str, float] = field(default_factory=dict)
    nbgrader_failure: str | None = None   # why nbgrader's autograde failed, when it did
    gradebook_failure: str | None = None  # why the gradebook could not be read or written, when it could not
    feedback_failure: str | None = None   # why nbgrader wrote no feedback page, when it did not
    timed_out_cell: str | None = None     # the id of a cell that ran past the cell timeout
    feedback: str | None = None           # the feedback page nbgrader wrote, when it did
    answers_to_grade: dict[str, str] = field(default_factory=dict)  # written answers waiting for a hand grade: id -> answer
    worker_seconds: float = 0.0           # the worker's time on the job, from its job.json to its result
    kernel_seconds: float = 0.0           # the lifetime of the job's kernels, start to shutdown
    autograde_seconds: float = 0.0        # nbgrader's autograde, its kernel's lifetime included
    feedback_seconds: float = 0.0         # nbgrader's feedback page

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> "WorkerResult":
        return cls(**json.loads(path.read_text(encoding="utf-8")))
