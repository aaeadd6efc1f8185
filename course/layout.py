"""Where things live in the course directory (the repository root is the nbgrader course root)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MARKER = "nbgrader_config.py"


class CourseRootNotFound(FileNotFoundError):
    def __init__(self, start: Path):
        super().__init__(f"no {MARKER} in {start} or any folder above it; run from the course directory "
                         "or set COURSE_ROOT")
        self.start = start


def find_root(start: Path | None = None) -> Path:
    """The course directory: $COURSE_ROOT, else the first folder at or above `start` with nbgrader_config.py."""
    if os.environ.get("COURSE_ROOT"):
        return Path(os.environ["COURSE_ROOT"]).resolve()
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / MARKER).is_file():
            return folder
    raise CourseRootNotFound(start)


@dataclass(frozen=True)
class Layout:
    root: Path

    @classmethod
    def find(cls, start: Path | None = None) -> "Layout":
        return cls(find_root(start))

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def release(self) -> Path:
        return self.root / "release"

    @property
    def build(self) -> Path:
        return self.root / "build"

    def source_notebook(self, assignment_id: str) -> Path:
        return self.source / assignment_id / f"{assignment_id}.ipynb"

    def release_notebook(self, assignment_id: str) -> Path:
        return self.release / assignment_id / f"{assignment_id}.ipynb"

    def executed(self, profile: str, assignment_id: str, suffix: str = ".ipynb") -> Path:
        return self.build / "executed" / profile / f"{assignment_id}{suffix}"
