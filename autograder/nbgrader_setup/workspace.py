"""A private nbgrader course directory for one grading run.

Grading never touches the repository's own gradebook or the submissions folder: the driver copies
the assignment's source into `<out>/course/source/`, lets nbgrader generate the assignment there
(which records the locked cells, hidden tests, checksums and points in a fresh gradebook), and
copies each submission into `<out>/course/submitted/`. The gradebook is `gradebook.db` in that
folder, or a shared database server when `db` is an SQLAlchemy URL (PostgreSQL).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from nbgrader.converters import Autograde, GenerateAssignment, GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder.execution.sandbox import Limits
from autograder.nbgrader_setup import config as course_config
from autograder.nbgrader_setup.gradebook import create_tables, gradebook_lock


@contextlib.contextmanager
def tools_on_path():
    """nbgrader runs `alembic` from PATH when it makes or upgrades a gradebook itself (`create`
    makes a new one in-process first, `autograder.nbgrader_setup.gradebook.create_tables`): this environment's bin first."""
    previous = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + previous
    try:
        yield
    finally:
        os.environ["PATH"] = previous


@dataclass
class Workspace:
    root: Path
    assignment_id: str
    profile: str = "grade"
    cell_timeout: int = course_config.CELL_TIMEOUT
    db: str | None = None          # a shared gradebook's SQLAlchemy URL; None: gradebook.db in `root`
    sandbox: str = "auto"          # the kernels' sandbox mode (autograder.execution.sandbox)
    limits: Limits = Limits()      # what each kernel's sandbox may use

    def config(self) -> Config:
        c = course_config.configure(Config(), profile=self.profile, cell_timeout=self.cell_timeout,
                                    sandbox=self.sandbox, limits=self.limits)
        c.CourseDirectory.root = str(self.root)
        c.CourseDirectory.assignment_id = self.assignment_id
        c.CourseDirectory.db_url = self.db_url
        return c

    def _coursedir(self, config: Config, student_id: str = "*") -> CourseDirectory:
        coursedir = CourseDirectory(config=config)
        coursedir.assignment_id = self.assignment_id
        coursedir.student_id = student_id
        return coursedir

    @property
    def db_url(self) -> str:
        return self.db or f"sqlite:///{self.root / 'gradebook.db'}"

    def _path(self, step: str, student_id: str = ".") -> Path:
        """Where nbgrader keeps `step` (its `<step>_directory` setting) for a student, as nbgrader
        itself formats it (`CourseDirectory.format_path`); "." is the student of source/ and release/."""
        coursedir = CourseDirectory(config=self.config())
        return Path(coursedir.format_path(getattr(coursedir, f"{step}_directory"), student_id, self.assignment_id))

    def submitted_dir(self, student_id: str) -> Path:
        return self._path("submitted", student_id)

    def autograded_dir(self, student_id: str) -> Path:
        return self._path("autograded", student_id)

    def feedback_dir(self, student_id: str) -> Path:
        return self._path("feedback", student_id)

    def release_dir(self) -> Path:
        return self._path("release")

    def create(self, source_assignment: Path) -> None:
        """Copy the assignment source in and generate it (gradebook + release) with nbgrader."""
        target = self._path("source")
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source_assignment, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        config = self.config()
        with tools_on_path(), gradebook_lock(self.db_url):
            create_tables(self.db_url)
            app = GenerateAssignment(coursedir=self._coursedir(config), config=config)
            app.force = True
            app.start()

    def autograde(self, student_id: str) -> None:
        """Run nbgrader's Autograde for one student; raises NbGraderException when it fails."""
        config = self.config()
        with tools_on_path(), gradebook_lock(self.db_url, shared=True):
            app = Autograde(coursedir=self._coursedir(config, student_id), config=config)
            app.force = True
            app.create_student = True
            app.start()

    def generate_feedback(self, student_id: str) -> None:
        config = self.config()
        with tools_on_path():
            app = GenerateFeedback(coursedir=self._coursedir(config, student_id), config=config)
            app.force = True
            app.start()
