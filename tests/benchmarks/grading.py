"""Benchmark, not a test: plain serial `nbgrader autograde` against `autograder grade --workers N`.

    .venv/bin/python -m tests.benchmarks.grading [--assignment 01_session_vs_eager] [--students 6] [--workers 2] [--repeat 3]

Both grade the same class of correct submissions (the solutions typed into the release) with the
course's nbgrader configuration, so on both sides every kernel runs in a sandbox of its own; it
prints every run, the medians, the speed-up, and the autograder's time per notebook beyond what
nbgrader itself needs per notebook. Target: a speed-up of at least 1.8 on 2 cores. Each side runs
`--repeat` times, alternating, and the medians are compared (run it on an otherwise idle machine).
The autograder's first run generates its course directory; the later runs reuse it (as an
instructor's re-grade does), so `--repeat 1` shows the cost of a first run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.authoring import demo
from course.layout import Layout

BIN = Path(sys.executable).parent


def _class(layout: Layout, assignment: str, students: int, folder: Path) -> Path:
    demo.write_class(layout.source_notebook(assignment), layout.release_notebook(assignment), folder / "demo")
    solution = folder / "demo" / "solution" / f"{assignment}.ipynb"
    for number in range(students):
        target = folder / "class" / f"student{number:02d}"
        target.mkdir(parents=True)
        shutil.copyfile(solution, target / solution.name)
    return folder / "class"


def plain_nbgrader(layout: Layout, assignment: str, class_dir: Path, folder: Path) -> float:
    course = folder / "plain"
    (course / "source").mkdir(parents=True)
    shutil.copytree(layout.source / assignment, course / "source" / assignment)
    shutil.copyfile(layout.root / "nbgrader_config.py", course / "nbgrader_config.py")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    subprocess.run([str(BIN / "nbgrader"), "generate_assignment", assignment, "--force"], cwd=course, env=env,
                   check=True, capture_output=True)
    for student in class_dir.iterdir():
        target = course / "submitted" / student.name / assignment
        target.mkdir(parents=True)
        shutil.copytree(student, target, dirs_exist_ok=True)
    start = time.perf_counter()
    subprocess.run([str(BIN / "nbgrader"), "autograde", assignment], cwd=course, env=env, capture_output=True)
    return time.perf_counter() - start


def autograder(layout: Layout, assignment: str, class_dir: Path, out: Path, workers: int) -> float:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    start = time.perf_counter()
    subprocess.run([str(BIN / "autograder"), "grade", assignment, "--submissions", str(class_dir), "--out",
                    str(out), "--workers", str(workers), "--force"],
                   cwd=layout.root, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01_session_vs_eager")
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    layout = Layout.find()
    plains, ourses = [], []
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        folder = Path(scratch)
        class_dir = _class(layout, args.assignment, args.students, folder)
        for run in range(args.repeat):
            plains.append(plain_nbgrader(layout, args.assignment, class_dir, folder / f"run{run}"))
            ourses.append(autograder(layout, args.assignment, class_dir, folder / "ours", args.workers))
            print(f"run {run + 1}: plain {plains[-1]:.1f} s, ours {ourses[-1]:.1f} s", flush=True)
    plain, ours = statistics.median(plains), statistics.median(ourses)
    per_plain = plain / args.students
    per_ours = ours * args.workers / args.students
    print(f"{args.students} submissions of {args.assignment}, every kernel in a sandbox of its own")
    print("plain runs (s): " + " ".join(f"{value:.1f}" for value in plains))
    print("ours runs (s):  " + " ".join(f"{value:.1f}" for value in ourses))
    print(f"medians of {args.repeat} runs")
    print(f"{'plain nbgrader autograde, serial:':<38}{plain:7.1f} s  ({per_plain:.1f} s per notebook)")
    print(f"{f'autograder grade --workers {args.workers}:':<38}{ours:7.1f} s  ({per_ours:.1f} worker-seconds per notebook)")
    print(f"speed-up: {plain / ours:.2f}x (target >= 1.8 on 2 cores)")
    print(f"overhead per notebook: {per_ours - per_plain:+.2f} worker-seconds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
