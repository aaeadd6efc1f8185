"""A private nbgrader course directory for one grading run.

Grading never touches the repository's own gradebook or the submissions folder: the driver copies
the course's own files that nbgrader reads from the course root (its nbgrader_config.py, autotests.yml,
a header or footer notebook: `config.course_files`) and the assignment's source into the workspace,
lets nbgrader generate the assignment there (which records the locked cells, hidden tests, checksums
and points in a fresh gradebook), and copies each submission into its `submitted/` folder. nbgrader
works from the workspace as it works from the course root, with the course's configuration and the
grading settings on top (`config.grading_config`). The gradebook is `gradebook.db` in that folder, or
a shared database server when the settings' `db_url` is an SQLAlchemy URL (PostgreSQL).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.converters import Autograde, GenerateAssignment, GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from autograder.errors import AutograderError
from autograder.nbgrader_setup import config as course_config
from autograder.nbgrader_setup.gradebook import create_tables, gradebook_lock
from autograder.nbgrader_setup.log_capture import errors_logged, explain
from autograder.settings import GradingSettings


class GenerateError(AutograderError):
    """nbgrader cannot generate the assignment from its source: the message is nbgrader's own."""


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
    """The nbgrader course directory at `root` for one assignment: `create` once, then `autograde` and
    `generate_feedback` per student (their `student_id` is the name inside nbgrader's folders, a safe
    id). Each writes only under `root` and into the gradebook (`db_url`); none changes the object."""
    root: Path
    assignment_id: str
    settings: GradingSettings = field(default_factory=GradingSettings)

    def config(self) -> Config:
        c = course_config.grading_config(self.root, self.settings)
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
        return self.settings.db_url or f"sqlite:///{self.root / 'gradebook.db'}"

    @property
    def course_id(self) -> str:
        return CourseDirectory(config=self.config()).course_id

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

    def create(self, source_assignment: Path, course_root: Path | None = None) -> None:
        """Copy the course's files and the assignment's source in and generate the assignment (gradebook
        and release) with nbgrader. `course_root` is the course directory whose files nbgrader reads
        (default: the one whose source/ holds `source_assignment`, as nbgrader lays a course out).
        Raises `GenerateError` with nbgrader's own message when nbgrader cannot generate it."""
        course_root = course_root or source_assignment.resolve().parent.parent
        self.root.mkdir(parents=True, exist_ok=True)
        wanted = course_config.grading_config(course_root, self.settings)
        for name in course_config.course_files(wanted):
            if (course_root / name).is_file():
                (self.root / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(course_root / name, self.root / name)
        target = self._path("source")
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source_assignment, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        config = self.config()
        errors: list[str] = []
        with tools_on_path(), gradebook_lock(self.db_url):
            create_tables(self.db_url)
            app = GenerateAssignment(coursedir=self._coursedir(config), config=config)
            app.force = True
            try:
                with errors_logged(errors):
                    app.start()
            except Exception as failure:  # nbgrader's NbGraderException, or what a preprocessor raised
                raise GenerateError(f"nbgrader cannot generate {self.assignment_id} from {source_assignment}: "
                                    f"{explain(errors, failure)}") from None

    def autograde(self, student_id: str) -> None:
        """Run nbgrader's Autograde for one student; raises NbGraderException when it fails."""
        config = self.config()
        with tools_on_path(), gradebook_lock(self.db_url, shared=True):
            app = Autograde(coursedir=self._coursedir(config, student_id), config=config)
            app.force = True
            app.create_student = True
            app.start()

    def generate_feedback(self, student_id: str) -> None:
        """Run nbgrader's GenerateFeedback for one student (their autograded notebook must be there);
        writes `feedback_dir(student_id)`; raises NbGraderException when it fails."""
        config = self.config()
        with tools_on_path():
            app = GenerateFeedback(coursedir=self._coursedir(config, student_id), config=config)
            app.force = True
            app.start()
