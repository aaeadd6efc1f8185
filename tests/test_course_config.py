"""The course's own nbgrader configuration counts: `autograder grade` loads the course's nbgrader_config.py
first and its grading settings on top, the course files nbgrader reads from the course root
(autotests.yml) reach the workspace, and a source nbgrader cannot generate stops the run with
nbgrader's own message."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import nbgrader
import pytest

from autograder.grading.pipeline import grade_class
from autograder.nbgrader_setup.workspace import GenerateError
from autograder.settings import GradingSettings
from tests import notebooks

ROOT = Path(__file__).resolve().parent.parent
NBGRADER_FILES = Path(nbgrader.__file__).parent / "tests" / "apps" / "files"   # nbgrader's own test files
STUB = "# A STUB OF THIS COURSE"

pytestmark = pytest.mark.grading


def course(root: Path, assignment: str, notebook, extra_config: str = "") -> Path:
    """A course directory: the repository's nbgrader_config.py and `extra_config` after it, and the
    assignment's source; returns the source folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text((ROOT / "nbgrader_config.py").read_text() + extra_config)
    source = root / "source" / assignment
    source.mkdir(parents=True)
    nbformat.write(notebook, source / f"{assignment}.ipynb")
    return source


def one_student(root: Path, assignment: str, notebook) -> Path:
    (root / "submissions" / "ann").mkdir(parents=True)
    nbformat.write(notebook, root / "submissions" / "ann" / f"{assignment}.ipynb")
    return root / "submissions"


def test_an_instructors_code_stub_and_output_limit_reach_the_graded_notebook(tmp_path):
    chatty = notebooks.notebook([
        notebooks.solution("def double(value):\n    ### BEGIN SOLUTION\n    return 2 * value\n    ### END SOLUTION",
                           "double"),
        notebooks.test_cell("for line in range(40):\n    print('line', line)\nassert double(2) == 4", "test_double", 2),
    ])
    source = course(tmp_path / "course", "ps1", chatty, f"c.LimitOutput.max_lines = 5\n"
                                                         f"c.ClearSolutions.code_stub = {{'python': {STUB!r}}}\n")
    result = grade_class("ps1", source, one_student(tmp_path, "ps1", chatty), tmp_path / "out",
                         settings=GradingSettings(timeout=120, workers=1), progress=lambda line: None)
    row = result.rows[0]
    assert (row.status, row.score) == ("graded", 2.0), row
    page = row.feedback.read_text(encoding="utf-8")
    assert "Output truncated" in page and "line 39" not in page, "the course's LimitOutput cut the output"
    release = nbformat.read(tmp_path / "out" / "course-0" / "release" / "ps1" / "ps1.ipynb", as_version=4)
    assert STUB in release.cells[0].source, "the course's code stub is in the release grading compares with"


def autotest_course(root: Path, *, with_templates: bool) -> Path:
    """nbgrader's own autotest notebook as an assignment; its templates, autotests.yml, in the course root
    (where nbgrader's documentation puts them) or nowhere."""
    notebook = nbformat.read(NBGRADER_FILES / "autotest-simple.ipynb", as_version=4)
    source = course(root, "ps2", notebook)
    if with_templates:
        shutil.copyfile(NBGRADER_FILES / "autotests.yml", root / "autotests.yml")
    return source


def test_autotests_yml_in_the_course_root_reaches_the_workspace(tmp_path):
    source = autotest_course(tmp_path / "course", with_templates=True)
    answer = nbformat.read(source / "ps2.ipynb", as_version=4)
    result = grade_class("ps2", source, one_student(tmp_path, "ps2", answer), tmp_path / "out",
                         settings=GradingSettings(timeout=120, workers=1), progress=lambda line: None)
    assert [(row.status, row.score, row.max_score) for row in result.rows] == [("graded", 1.0, 1.0)], result.rows


def test_a_source_nbgrader_cannot_generate_stops_the_run_with_nbgraders_own_message(tmp_path):
    source = autotest_course(tmp_path / "course", with_templates=False)
    answer = nbformat.read(source / "ps2.ipynb", as_version=4)
    with pytest.raises(GenerateError) as stopped:
        grade_class("ps2", source, one_student(tmp_path, "ps2", answer), tmp_path / "out",
                    settings=GradingSettings(timeout=120, workers=1), progress=lambda line: None)
    message = str(stopped.value)
    assert "No autotests.yml file found" in message and "FileNotFoundError" in message, message
    assert "Please see" not in message and "Traceback" not in message, message


def test_an_unclosed_solution_region_names_the_cell(tmp_path):
    broken = notebooks.notebook([notebooks.solution("def double(value):\n    ### BEGIN SOLUTION\n    return 2 * value",
                                                    "double")])
    source = course(tmp_path / "course", "ps3", broken)
    with pytest.raises(GenerateError, match="No end solution statement found.*return 2 \\* value"):
        grade_class("ps3", source, one_student(tmp_path, "ps3", broken), tmp_path / "out",
                    settings=GradingSettings(timeout=120, workers=1), progress=lambda line: None)


def test_grading_kills_a_sandboxed_kernel_once_its_last_cell_answers_and_lets_an_unsandboxed_one_exit(tmp_path):
    """The shutdown nbclient does after the last cell (`Execute.shutdown_kernel`): killed with its
    sandbox (about 1.4 s of every job saved), or, without one, left to exit so its exit handlers run
    (tests/test_grading_pipeline.py shows they do)."""
    from autograder.nbgrader_setup.config import grading_config
    from autograder.settings import GradingSettings

    from traitlets.config import Config

    from autograder.nbgrader_setup.config import configure

    chosen = {mode: grading_config(tmp_path, GradingSettings(sandbox=mode)).Execute.get("shutdown_kernel", "graceful")
              for mode in ("auto", "bwrap", "none")}
    assert chosen == {"auto": "immediate", "bwrap": "immediate", "none": "graceful"}
    # nbgrader run by hand with the course's configuration (its kernel may have no sandbox): nbclient's default
    assert "shutdown_kernel" not in configure(Config()).Execute
