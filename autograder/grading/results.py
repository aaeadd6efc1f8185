"""What grading gives: a `Row` per student and the class's `ClassResult`; report and export read them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder.grading.similarity import Comparison
from autograder.runfolder import RunFolder, Status


@dataclass
class Row:
    student_id: str
    assignment: str
    name: str = ""                  # the student's name when intake knows it (the roster's, else the LMS download's)
    group: str = ""                 # the group whose submission this row is (--groups); empty for an individual
    notebook: str = ""              # the notebook's file name (an assignment may have several)
    score: float = 0.0              # the points: the tests', then the hand grades', then less the late penalty
    raw_score: float = 0.0          # the points before the late penalty: the tests' with the hand grades applied
    penalty: float = 0.0            # points taken for lateness (autograder.grading.lateness)
    submitted_at: str = ""          # ISO 8601, when known
    lms_late: bool = False          # the LMS's download marked it late (Canvas's LATE)
    late_by: float | None = None    # seconds after the (extended) due date; None: the student has no due date
    max_score: float = 0.0
    status: Status = Status.GRADED
    reason: str = ""
    seconds: float = 0.0
    cells: dict[str, float] = field(default_factory=dict)
    feedback: Path | None = None
    notes: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)  # points set by hand: cell, before -> after, by whom, why
    answers_to_grade: dict[str, str] = field(default_factory=dict)  # written answers awaiting a hand grade: cell -> answer
    reused: bool = False
    host: str = ""                  # where the notebook ran (a Dask worker's address on a cluster)
    not_run: bool = False           # never graded: the cluster could not run it (jobs.Outcome.not_run); not kept

    def as_json(self) -> dict:
        data = asdict(self)
        del data["not_run"]   # only rows that ran are stored (Cache.put): the stored shape stays ROW_FORMAT's
        data["feedback"] = str(self.feedback) if self.feedback else None
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Row":
        data = dict(data)
        data["feedback"] = Path(data["feedback"]) if data.get("feedback") else None
        data["status"] = Status(data["status"])
        return cls(**data)


@dataclass
class ClassResult:
    assignment: str
    rows: list[Row]                 # one per student and notebook
    grade_cells: list[str]          # grades.csv's cell columns: grade ids (notebook:grade id with several notebooks)
    max_score: float                # of the whole assignment
    out: Path
    notebooks: dict[str, float] = field(default_factory=dict)     # notebook -> its max score
    cell_points: dict[str, float] = field(default_factory=dict)   # cell column -> its points
    similarity: list[Comparison] = field(default_factory=list)    # similar submissions, per notebook (flags only)
    sandbox: str = ""               # the kernels' sandbox: "bwrap", or "none" (asked for); "" when not known

    @property
    def run_folder(self) -> RunFolder:
        return RunFolder(self.out, several=len(self.notebooks) > 1)
