"""Finished rows kept between runs, so a re-run grades only what changed, and what was never graded:
a row of a submission the grader never ran (`Row.not_run`: the cluster could not run it) is not kept."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from autograder import __version__
from autograder.grading import intake
from autograder.grading.results import Row

# the shape of a stored row: a row stored in another (an older version's) is graded again
ROW_FORMAT = 2


def safe_id(student_id: str) -> str:
    """The name a student has inside nbgrader's folders: ids may hold spaces, accents or glob characters."""
    return "s" + hashlib.sha256(student_id.encode("utf-8")).hexdigest()[:16]


class Cache:
    """Finished rows under `out/rows/`, valid for one content hash of (submission, course, settings):
    `course` is the hash of everything the grading workspace is generated from (the assignment's source
    folder and the course's files: `assignment.source_hash`, the same hash that decides when the workspace
    is generated again), `settings` whatever else decides a row (JSON-able: `GradingSettings.key()`)."""

    def __init__(self, folder: Path, course: str, settings: object):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.salt = hashlib.sha256(json.dumps([__version__, ROW_FORMAT, course, settings]).encode()).hexdigest()

    def key(self, submission: intake.Submission) -> str:
        return hashlib.sha256((self.salt + submission.content_hash).encode()).hexdigest()

    def get(self, submission: intake.Submission) -> Row | None:
        path = self.folder / f"{safe_id(submission.student_id)}.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != self.key(submission) or data.get("format") != ROW_FORMAT:
            return None
        row = Row.from_json(data["row"])
        if row.feedback and not row.feedback.exists():
            return None
        row.reused = True
        return row

    def put(self, submission: intake.Submission, row: Row) -> None:
        """Keep `row` for the next run, unless it was never run (`Row.not_run`): then the next run grades it."""
        if row.not_run:
            return
        path = self.folder / f"{safe_id(submission.student_id)}.json"
        path.write_text(json.dumps({"format": ROW_FORMAT, "key": self.key(submission), "row": row.as_json()}),
                        encoding="utf-8")


def stored_rows(folder: Path) -> list[Row]:
    """Every row a run left under `folder` (its rows/, one sub-folder per notebook when there are
    several): the rows as grading gave them, before overrides and late penalties. Rows an older
    version stored are left out (the next run grades them again)."""
    stored = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.rglob("*.json"))]
    return [Row.from_json(data["row"]) for data in stored if data.get("format") == ROW_FORMAT]
