"""The reference solutions handed back after the deadline, after `autograder grade`.

    autograder solutions 01_session_vs_eager [--term FILE] [--extensions CSV] [--now WHEN]

Each source notebook of the assignment becomes its solution notebook (`solution_notebook`): nbgrader's
own `ClearHiddenTests` removes every hidden-test region (and `ClearMarkScheme` every task cell's mark
scheme, which nbgrader never shows a student), `ClearOutput` every output; the solution regions stay,
code and written answers' model answers alike, without their `### BEGIN/END SOLUTION` lines, and the
nbgrader cell metadata goes, so it is a plain notebook. The delimiters are those of the course's
nbgrader configuration, as for `nbgrader generate_assignment`.

Who gets it: every student of the run's grades.csv (the class `grade` read) whose due date, the term
file's or their extension's, has passed at `now`; the others are named with their date. An assignment
without a due date is refused: solutions go out only after one. A row of an LMS download that names no
student (a stray file) gets nothing and is listed. Each student's copy goes to
`<run>/solutions/<student>/<notebook>.ipynb` and into `<run>/solutions.zip`, under the names the LMS
takes back, as the feedback zip's (`autograder.lms.feedback_zip.archive_name`): Canvas
`doejane_12345_678_<notebook>-solution.ipynb`, Moodle `Jane Doe_1001_assignsubmission_file/<notebook>-solution.ipynb`,
else `<student>/<notebook>-solution.ipynb`.
"""

from __future__ import annotations

import shutil
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, ClearOutput, ClearSolutions
from traitlets.config import Config

from autograder.errors import AutograderError
from autograder.grading.assignment import source_notebooks
from autograder.lms import feedback_zip
from autograder.runfolder import RunFolder, read_grades, read_intake

KIND = "solution"


class SolutionsError(AutograderError):
    """The solutions cannot be released as asked: the message says why."""


@dataclass
class Released:
    students: int = 0                                     # students of the run
    given: list[str] = field(default_factory=list)        # students past their due date, who got the solutions
    withheld: list[str] = field(default_factory=list)     # not yet due: "student (due <date>)"
    left_out: list[str] = field(default_factory=list)     # rows that name no student: "<id> (why)"
    files: list[Path] = field(default_factory=list)       # every file written, the zip included


def solution_notebook(source: Path, config: Config | None = None) -> nbformat.NotebookNode:
    """The reference notebook at `source` as a student may read it after the deadline: solutions and
    model answers kept, hidden tests, mark schemes and outputs removed, solution delimiters dropped."""
    config = config or Config()
    notebook = nbformat.read(source, as_version=4)
    resources: dict = {}
    try:
        for step in (ClearHiddenTests, ClearMarkScheme, ClearOutput):
            notebook, resources = step(config=config).preprocess(notebook, resources)
    except RuntimeError as error:     # nbgrader's own message: a region without its end, one in a wrong cell
        raise SolutionsError(f"{source}: {error}") from None
    delimiters = ClearSolutions(config=config)
    begin, end = delimiters.begin_solution_delimeter, delimiters.end_solution_delimeter
    for cell in notebook.cells:
        cell.source = "\n".join(line for line in cell.source.split("\n") if begin not in line and end not in line)
        cell.metadata.pop("nbgrader", None)
    return notebook


def strays(run_folder: RunFolder) -> set[str]:
    """Row ids of an LMS download that name no student: files the LMS's naming rule gave no student
    (intake.csv: an LMS, no re-upload name)."""
    if not run_folder.intake_csv.exists():
        return set()
    return {line.student_id for line in read_intake(run_folder.intake_csv) if line.lms and not line.reupload}


def build(out: Path, assignment: str, source_dir: Path, *, due: dict[str, datetime] | None, now: datetime,
          config: Config | None = None, target: Path | None = None) -> Released:
    """Write the solutions of the run at `out` for every student whose due date (`due`, per student; None:
    the assignment has none, which is refused) has passed at `now`: `<out>/solutions/` and the zip at
    `target` (default `<out>/solutions.zip`). Both are rewritten on every call."""
    if due is None:
        raise SolutionsError(f"no due date for {assignment} in the term file: solutions are released only after it")
    run_folder = RunFolder.open(out)
    lines = read_grades(run_folder.grades_csv)
    target = target or run_folder.solutions_zip
    notebooks = {path.name: path for path in source_notebooks(assignment, source_dir)}
    unknown = sorted({line.notebook for line in lines} - set(notebooks))
    if unknown:
        raise SolutionsError(f"{run_folder.grades_csv} grades notebook(s) {', '.join(unknown)} that {source_dir} "
                             "does not hold: is it this assignment's run?")
    solutions = {name: nbformat.writes(solution_notebook(path, config)) for name, path in notebooks.items()}
    reupload = feedback_zip.reupload_names(run_folder)
    not_students = strays(run_folder)
    released = Released(students=len({line.student_id for line in lines}))
    if run_folder.solutions_dir.exists():
        shutil.rmtree(run_folder.solutions_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for line in sorted(lines, key=lambda line: (line.student_id, line.notebook)):
            student, notebook = line.student_id, line.notebook
            if student in not_students or not _safe(student):
                why = f"{student} (a file of the download that names no student)"
                if why not in released.left_out:
                    released.left_out.append(why)
                continue
            if due[student] > now:
                withheld = f"{student} (due {due[student].isoformat()})"
                if withheld not in released.withheld:
                    released.withheld.append(withheld)
                continue
            path = run_folder.solution(student, notebook)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(solutions[notebook], encoding="utf-8")
            released.files.append(path)
            archive.writestr(name_in_zip(student, notebook, reupload.get((student, notebook))), solutions[notebook])
            if student not in released.given:
                released.given.append(student)
    released.files.append(target)
    return released


def _safe(student: str) -> bool:
    """A student id that is one folder name (a path of a stray file is not)."""
    return bool(student) and student not in (".", "..") and "/" not in student and "\\" not in student


def name_in_zip(student: str, notebook: str, reupload: str | None = None) -> str:
    """The zip member a student's solution of `notebook` is written as."""
    return feedback_zip.archive_name(reupload, student, notebook, KIND, suffix=".ipynb")
