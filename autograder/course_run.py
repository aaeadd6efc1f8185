"""`make run`: the whole course chain on this machine, with a report.

For every assignment that has a source notebook: execute it under a profile (papermill), check
release/ is what source/ generates, grade a demo class (the solutions typed into the release, and
the untouched release) through the real grading command, and write `build/report.html` with a
summary table on the terminal. Assignments not written yet are listed as missing.
"""

from __future__ import annotations

import csv
import html
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course import runner
from course.layout import Layout
from autograder import demo, release


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


def tests_passed(executed: Path) -> tuple[int, int]:
    """Graded test cells of an executed notebook that ran without an error, and how many there are."""
    notebook = nbformat.read(executed, as_version=4)
    tests = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")
             and not cell.metadata["nbgrader"].get("solution")]
    passed = [cell for cell in tests if not any(o.get("output_type") == "error" for o in cell.get("outputs", []))]
    return len(passed), len(tests)


def run(layout: Layout, profile: str = "ci") -> list[Line]:
    lines = []
    drift = release.drift(layout)
    for result in runner.run_all(layout, profile):
        line = Line(result.assignment, result.status, round(result.seconds, 1))
        lines.append(line)
        if result.status == "missing":
            continue
        if result.status == "failed":
            line.problems.append(result.error)
        if result.executed and result.executed.exists():
            line.tests_passed, line.tests_total = tests_passed(result.executed)
        line.problems += [problem for problem in drift if problem.startswith(f"release/{result.assignment}")]
        _grade_demo(layout, result.assignment, line)
        if line.problems and line.status == "ok":
            line.status = "problems"
    return lines


def _grade_demo(layout: Layout, assignment_id: str, line: Line) -> None:
    """Grade the demo class with `autograder grade`, the instructors' command, in a process of its
    own; its output goes to `build/demo/<assignment>/grade.log`, its rows come from grades.csv."""
    out = layout.build / "demo" / assignment_id
    if not layout.release_notebook(assignment_id).exists():
        line.problems.append("no release notebook to grade: run `make release`")
        return
    demo.write_class(layout.source_notebook(assignment_id), layout.release_notebook(assignment_id), out / "submissions")
    command = [sys.executable, "-m", "autograder.cli", "grade", assignment_id, "--submissions",
               str(out / "submissions"), "--out", str(out / "grading"), "--workers", str(min(2, os.cpu_count() or 1)),
               "--force"]
    log = out / "grade.log"
    with log.open("wb") as handle:
        done = subprocess.run(command, cwd=layout.root, stdout=handle, stderr=subprocess.STDOUT,
                              env=dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"))
    grades = out / "grading" / "grades.csv"
    if done.returncode != 0 or not grades.exists():
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or ["no output"]
        line.problems.append(f"`autograder grade` exited with {done.returncode}: {tail[0][:200]} (see {log})")
        return
    with grades.open(newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    solution, blank = rows["solution"], rows["blank"]
    line.solution_score = f"{solution['score']}/{solution['max_score']}"
    line.blank_score = f"{blank['score']}/{blank['max_score']}"
    if (solution["status"] != "graded" or float(solution["score"]) != float(solution["max_score"])
            or float(solution["max_score"]) == 0):
        line.problems.append(f"the solution got {line.solution_score} ({solution['status']} {solution['reason']})".strip())
    if float(blank["score"]) != 0:
        line.problems.append(f"the blank release got {line.blank_score}, expected 0")


def table(lines: list[Line]) -> str:
    header = f"{'assignment':<22} {'status':<9} {'seconds':>8} {'tests':>7} {'solution':>9} {'blank':>7}"
    rows = [header, "-" * len(header)]
    for line in lines:
        tests = f"{line.tests_passed}/{line.tests_total}" if line.tests_total else "-"
        rows.append(f"{line.assignment:<22} {line.status:<9} {line.seconds:>8.1f} {tests:>7} "
                    f"{line.solution_score or '-':>9} {line.blank_score or '-':>7}")
        rows += [f"    ! {problem}" for problem in line.problems]
    return "\n".join(rows)


def write_report(lines: list[Line], path: Path, profile: str) -> Path:
    escape = html.escape
    body = "".join(
        f"<tr><td>{escape(line.assignment)}</td><td>{line.status}</td><td>{line.seconds:.1f}</td>"
        f"<td>{line.tests_passed}/{line.tests_total}</td><td>{line.solution_score or '-'}</td>"
        f"<td>{line.blank_score or '-'}</td><td>{'<br>'.join(escape(p) for p in line.problems)}</td></tr>"
        for line in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""<!doctype html><html><head><meta charset="utf-8"><title>Course run ({profile})</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px}}</style>
</head><body><h1>Course run, {escape(profile)} profile</h1>
<p>Each notebook executed end to end under the profile; the demo class graded through <code>autograder grade</code>:
the solutions typed into the release (must get full marks) and the untouched release (must get zero).</p>
<table><tr><th>assignment</th><th>status</th><th>wall time (s)</th><th>tests passed</th><th>solution</th><th>blank release</th><th>problems</th></tr>
{body}</table></body></html>""", encoding="utf-8")
    return path


def ok(lines: list[Line]) -> bool:
    return all(line.status in ("ok", "missing") for line in lines) and any(line.status == "ok" for line in lines)
