"""The assignment's source, as grading reads it: its notebooks (`source_notebooks`), their graded
cells and points (`cell_points`), and the hash of everything its grading workspace is generated from
(`source_hash`: the source folder and the course's files that nbgrader reads), which also keys the
rows kept between runs (`autograder.grading.cache`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from autograder import __version__
from autograder.errors import AutograderError
from autograder.nbgrader_setup import config as course_config
from autograder.settings import GradingSettings


class GradingError(AutograderError):
    """Grading could not run at all (as opposed to a student's notebook failing)."""


def source_notebooks(assignment_id: str, source_dir: Path) -> list[Path]:
    """The notebooks of an assignment's source folder, `<assignment>.ipynb` first when there is one."""
    if not source_dir.is_dir():
        raise GradingError(f"no source folder {source_dir} for assignment {assignment_id!r}")
    found = sorted(source_dir.glob("*.ipynb"), key=lambda path: (path.stem != assignment_id, path.name))
    if not found:
        raise GradingError(f"{source_dir} holds no notebook")
    return found


def source_hash(source_dir: Path, course_root: Path, settings: GradingSettings) -> str:
    """What a generated workspace depends on: the assignment's files, the course's files that nbgrader
    reads (`config.course_files`), and the versions that generate it."""
    import nbgrader

    digest = hashlib.sha256(f"{__version__} {nbgrader.__version__}".encode())
    files = [(path.relative_to(source_dir), path) for path in sorted(source_dir.rglob("*"))
             if path.is_file() and ".ipynb_checkpoints" not in path.parts and "__pycache__" not in path.parts]
    for name in course_config.course_files(course_config.grading_config(course_root, settings)):
        if (course_root / name).is_file():
            files.append((Path("..", name), course_root / name))
    for relative, path in files:
        digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cell_points(notebook) -> dict[str, float]:
    """The graded cells of a (source) notebook: grade id -> points, in notebook order."""
    return {cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"].get("points", 0))
            for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")}
