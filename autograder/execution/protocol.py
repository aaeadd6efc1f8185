"""What the grading driver and one worker process exchange, written and read whole as JSON:
`WorkerJob` (job.json: which submission, in which course directory, under which profile) and
`WorkerResult` (result.json: the facts nbgrader left, never a status: `autograder.grading.status` decides
that, in one place, from these facts and the process's own outcome)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder.execution.sandbox import Limits


@dataclass(frozen=True)
class WorkerJob:
    workspace: str               # the nbgrader course directory
    assignment: str
    student: str                 # the student's safe id (the name inside nbgrader's folders)
    student_id: str              # the id as submitted, kept in the gradebook as lms_user_id
    notebook_name: str
    notebook_file: str           # the submitted notebook, copied into the job's folder
    profile: str
    cell_timeout: int            # seconds per cell
    sandbox: str                 # the kernels' sandbox mode, as the driver decided it
    limits: Limits = Limits()    # what the kernel's sandbox may use
    db_url: str | None = None    # a shared gradebook; None: the workspace's own SQLite file

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> "WorkerJob":
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{**data, "limits": Limits(**data["limits"])})


@dataclass
class WorkerResult:
    score: float = 0.0
    max_score: float = 0.0
    cells: dict[str, float] = field(default_factory=dict)
    nbgrader_failure: str | None = None   # why nbgrader's autograde failed, when it did
    timed_out_cell: str | None = None     # the id of a cell that ran past the cell timeout
    feedback: str | None = None           # the feedback page nbgrader wrote, when it did
    pending: dict[str, str] = field(default_factory=dict)  # manually graded cells answered: id -> the answer

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> "WorkerResult":
        return cls(**json.loads(path.read_text(encoding="utf-8")))
