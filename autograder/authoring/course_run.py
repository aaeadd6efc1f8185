"""`make run`: the whole course chain on this machine, with a report.

For every assignment that has a source notebook: execute it under a profile (papermill), check
release/ is what source/ generates, grade a demo class (the solutions typed into the release, and
the untouched release) through the real grading command, and write `build/report.html` with a
summary table on the terminal. Assignments not written yet are listed as missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from course import gpu, runner, syllabus
from course.layout import Layout
from autograder.authoring import demo, release
from autograder.execution import sandbox
from autograder import pages
from autograder.runfolder import BuildFolder, RunFolder, Status, read_grades, read_max_points


@dataclass
class Line:
    assignment: str
    status: str
    seconds: float = 0.0
    tests_passed: int = 0
    tests_total: int = 0
    solution_score: str = ""
    blank_score: str = ""
    problems: list[str] = field(default_factory=list)
    kernel_log: Path | None = None  # the notebook's kernel's own stdout and stderr
    grade_log: Path | None = None  # the demo grading's output


def tests_passed(executed: Path) -> tuple[int, int]:
    """Graded test cells of an executed notebook that ran without an error, and how many there are."""
    notebook = nbformat.read(executed, as_version=4)
    tests = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")
             and not cell.metadata["nbgrader"].get("solution")]
    passed = [cell for cell in tests if not any(o.get("output_type") == "error" for o in cell.get("outputs", []))]
    return len(passed), len(tests)


def demo_sandbox() -> tuple[str | None, str | None]:
    """The sandbox the demo classes are graded in, and why none when there is none: they are the
    course's own solutions and release, so a machine where bwrap cannot start grades them without one
    (`--sandbox none`), and says so; a student's class is never graded so unasked. (None, None): the
    course's configured mode, which refuses when it cannot start."""
    problem = sandbox.probe()
    return ("none", problem) if problem else (None, None)


def run(layout: Layout, profile: str = "ci", say: Callable[[str], None] = print) -> list[Line]:
    """Every assignment in syllabus order: execute it, then grade its demo class while the next one
    executes (two processes for two cores). `say` gets one line per assignment when it is done."""
    lines = []
    drift = release.drift(layout)
    mode, why = demo_sandbox()
    if why:
        say(f"the demo classes (the course's own solutions and release) are graded WITHOUT a kernel sandbox: {why}")
    grading: DemoGrading | None = None
    for assignment_id in syllabus.ids():
        notebook = layout.source_notebook(assignment_id)
        if not notebook.exists():
            if grading:  # nothing to execute meanwhile: its line first, so the lines keep the syllabus order
                say(grading.finish())
                grading = None
            lines.append(Line(assignment_id, "missing"))
            say(f"{assignment_id:<22} missing: {notebook} does not exist yet")
            continue
        result = runner.run_notebook(notebook, layout.executed(profile, assignment_id), profile, assignment_id)
        line = Line(result.assignment, result.status, round(result.seconds, 1), kernel_log=result.kernel_log)
        lines.append(line)
        if result.status == "failed":
            line.problems.append(f"{result.error} (kernel log: {_shown(layout, result.kernel_log)})")
        if result.executed and result.executed.exists():
            line.tests_passed, line.tests_total = tests_passed(result.executed)
            line.problems += [f"a figure without a description (course.plotting.show gives one): {where}"
                              for where in runner.undescribed_figures(result.executed)]
            if profile == "gpu":  # a GPU-only cell that skipped on the GPU runner is a failure there
                line.problems += [f"a GPU-only cell skipped: {text}" for text in gpu.skipped_cells(result.executed)]
        line.problems += [problem for problem in drift if problem.startswith(f"release/{result.assignment}")]
        if grading:
            say(grading.finish())
        grading = DemoGrading(layout, line, profile, mode)
    if grading:
        say(grading.finish())
    return lines


def _shown(layout: Layout, path: Path | None) -> str:
    """`path` relative to the course root when it is inside it (how the terminal shows it)."""
    if path is None:
        return "-"
    try:
        return str(path.resolve().relative_to(layout.root.resolve()))
    except ValueError:
        return str(path)


def grade_command(assignment: str, build: BuildFolder, profile: str, sandbox_mode: str | None = None) -> list[str]:
    """`autograder grade` for the demo class in `build`: one worker (it runs beside the notebooks'
    execution), in `sandbox_mode` when given (`demo_sandbox`); under the gpu profile as a GPU class is graded, with
    the gpu sizes (other profiles grade with the `grade` profile, the command's default)."""
    command = [sys.executable, "-m", "autograder.cli", "grade", assignment, "--submissions",
               str(build.demo_submissions(assignment)), "--out", str(build.demo_grading(assignment).root),
               "--workers", "1", "--force", *(["--sandbox", sandbox_mode] if sandbox_mode else [])]
    if profile == "gpu":
        command += ["--profile", "gpu"]
    return command


class DemoGrading:
    """The demo class of one assignment graded by `autograder grade`, the instructors' command, in a
    process of its own (started at once; `finish` waits for it): its output goes to
    `build/demo/<assignment>/grade.log`, its rows come from grades.csv."""

    def __init__(self, layout: Layout, line: Line, profile: str = "ci", sandbox_mode: str | None = None):
        self.layout, self.line = layout, line
        self.build = BuildFolder(layout.build)
        self.out = self.build.demo(line.assignment)
        self.log = line.grade_log = self.build.demo_log(line.assignment)
        self.process: subprocess.Popen | None = None
        if not layout.release_notebook(line.assignment).exists():
            line.problems.append("no release notebook to grade: run `make release`")
            return
        shutil.rmtree(self.out, ignore_errors=True)
        demo.write_class(layout.source_notebook(line.assignment), layout.release_notebook(line.assignment),
                         self.build.demo_submissions(line.assignment))
        with self.log.open("wb") as handle:
            self.process = subprocess.Popen(
                grade_command(line.assignment, self.build, profile, sandbox_mode), cwd=layout.root, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"))

    def finish(self) -> str:
        """Wait for the grading, read its rows into the line; the assignment's one-line summary."""
        if self.process is not None:
            self._read(self.process.wait())
        line = self.line
        if line.problems and line.status == "ok":
            line.status = "problems"
        tests = f"{line.tests_passed}/{line.tests_total}" if line.tests_total else "-"
        text = (f"{line.assignment:<22} {line.status:<9} executed in {line.seconds:.1f} s, tests {tests}, "
                f"solution {line.solution_score or '-'}, blank {line.blank_score or '-'}")
        return "\n".join([text, *(f"    ! {problem}" for problem in line.problems)])

    def _read(self, returncode: int) -> None:
        line, run_folder = self.line, self.build.demo_grading(self.line.assignment)
        if returncode != 0 or not run_folder.grades_csv.exists():
            tail = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or ["no output"]
            line.problems.append(f"`autograder grade` exited with {returncode}: {tail[0][:200]} "
                                 f"(see {_shown(self.layout, self.log)})")
            return
        rows = {row.student_id: row for row in read_grades(run_folder.grades_csv)}
        maxima = read_max_points(run_folder.max_points_csv)
        solution, blank = rows["solution"], rows["blank"]
        # the solution's written answers (the model answers typed in) wait for a hand grade: their
        # cells stay empty and their points are not in the score
        by_hand = (sum(points for column, points in maxima.items()
                       if column in solution.cells and solution.cells[column] is None)
                   if solution.status == Status.NEEDS_MANUAL_GRADE else 0.0)
        line.solution_score = (f"{solution.score:g}/{solution.max_score:g}"
                               + (f" (+{by_hand:g} by hand)" if by_hand else ""))
        line.blank_score = f"{blank.score:g}/{blank.max_score:g}"
        if (solution.status not in (Status.GRADED, Status.NEEDS_MANUAL_GRADE)
                or solution.score + by_hand != solution.max_score or solution.max_score == 0):
            line.problems.append(f"the solution got {line.solution_score} ({solution.status} "
                                 f"{solution.reason})".strip() + f" (see {_shown(self.layout, self.log)})")
        if blank.score != 0:
            line.problems.append(f"the blank release got {line.blank_score}, expected 0")


def table(lines: list[Line]) -> str:
    header = f"{'assignment':<22} {'status':<9} {'seconds':>8} {'tests':>7} {'solution':>22} {'blank':>7}"
    rows = [header, "-" * len(header)]
    for line in lines:
        tests = f"{line.tests_passed}/{line.tests_total}" if line.tests_total else "-"
        rows.append(f"{line.assignment:<22} {line.status:<9} {line.seconds:>8.1f} {tests:>7} "
                    f"{line.solution_score or '-':>22} {line.blank_score or '-':>7}")
        rows += [f"    ! {problem}" for problem in line.problems]
    return "\n".join(rows)


def _links(line: Line, report: Path) -> list[tuple[str, str]]:
    """(name, href relative to the report) for what the line's run left: the executed notebook's HTML,
    the kernel's own log, the demo grading's log and report."""
    found = {"notebook": line.kernel_log and line.kernel_log.with_name(f"{line.assignment}.html"),
             "kernel log": line.kernel_log, "grading log": line.grade_log,
             "grading report": line.grade_log and RunFolder(line.grade_log.parent / "grading").report_html}
    return [(name, os.path.relpath(path, report.parent)) for name, path in found.items() if path and path.exists()]


def write_report(lines: list[Line], path: Path, profile: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pages.render("course_run.html", lines=lines, profile=profile,
                                 links=[_links(line, path) for line in lines]), encoding="utf-8")
    return path


def ok(lines: list[Line]) -> bool:
    return all(line.status in ("ok", "missing") for line in lines) and any(line.status == "ok" for line in lines)
