"""Benchmark, not a test: `autograder grade --workers N` against the peer an instructor has without it.

    .venv/bin/python -m tests.benchmarks.grading [--assignment 01_session_vs_eager] [--students 6] [--workers 2]
                                                 [--repeat 3] [--no-serial]

Every side grades the same class of correct submissions (the solutions typed into the release) with
the course's nbgrader configuration, so on every side each kernel runs in a sandbox of its own, and
every side writes grades and a feedback page per student:
- serial: plain `nbgrader autograde` then `nbgrader generate_feedback`, one course directory;
- hand-split peer: the class split into N parts by hand, each part graded the same way in a course
  directory of its own, the N processes side by side (DESIGN.md section 8: the peer to beat);
- ours: `autograder grade --workers N --force`.
Each side runs `--repeat` times, in turn (the order reversed every other run, so that a load that
grows or falls during the benchmark does not favour one side), and the medians are compared: the
ratio ours / peer is the peer's time over ours (goal: at least 1.0). Neither side's generation of the assignment is timed
(nbgrader's `generate_assignment` before, ours on a warm-up run with an empty class, as a re-grade
reuses it). The overhead per notebook is read from ours' worker results: the worker's time on a job
minus the lifetime of the job's kernel (its start, its cells, its shutdown), i.e. what grading adds
around the student's own execution, split into nbgrader's own work (its autograde's bookkeeping, its
feedback page: the peer pays them too) and ours; and ours beyond the peer per notebook, from the walls.
On a machine that other work shares, the walls move with the load (run it on an idle one); the CPU
seconds of each side's grading processes (getrusage: nbgrader's processes, or our driver and workers;
the sandboxed kernels are not counted on either side) move much less, and show whether ours does more
work around the kernels than the peer.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.authoring import demo
from autograder.runfolder import RunFolder
from course.layout import Layout

BIN = Path(sys.executable).parent
CPU: dict[str, list[float]] = collections.defaultdict(list)   # CPU seconds of each run's processes, by side
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")


def _class(layout: Layout, assignment: str, students: int, folder: Path) -> Path:
    demo.write_class(layout.source_notebook(assignment), layout.release_notebook(assignment), folder / "demo")
    solution = folder / "demo" / "solution" / f"{assignment}.ipynb"
    for number in range(students):
        target = folder / "class" / f"student{number:02d}"
        target.mkdir(parents=True)
        shutil.copyfile(solution, target / solution.name)
    return folder / "class"


def _nbgrader_course(layout: Layout, assignment: str, students: list[Path], course: Path) -> Path:
    """A plain nbgrader course directory: the course's configuration, the source generated, `students`
    submitted. Its kernels run in a sandbox, as ours do, so it kills each once its last cell has answered,
    as `autograder grade` does (the course's configuration alone lets a kernel exit by itself: nbgrader
    run by hand may have no sandbox)."""
    (course / "source").mkdir(parents=True)
    shutil.copytree(layout.source / assignment, course / "source" / assignment)
    shutil.copyfile(layout.root / "nbgrader_config.py", course / "nbgrader_config.py")
    with (course / "nbgrader_config.py").open("a", encoding="utf-8") as config:
        config.write('\nc.Execute.shutdown_kernel = "immediate"   # sandboxed kernels, as in autograder grade\n')
    subprocess.run([str(BIN / "nbgrader"), "generate_assignment", assignment, "--force"], cwd=course, env=ENV,
                   check=True, capture_output=True)
    for student in students:
        shutil.copytree(student, course / "submitted" / student.name / assignment)
    return course


def _children_cpu() -> float:
    """CPU seconds of every finished process this one started and waited for, with theirs. The
    sandboxed kernels are not among them (their bwrap sandbox's CPU time does not reach the process
    that started it), on either side: this is the grading processes' own CPU, nbgrader's and ours."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _plain(assignment: str, course: Path) -> subprocess.Popen:
    """nbgrader's autograde, then its feedback, as an instructor runs them by hand."""
    return subprocess.Popen(f"{BIN / 'nbgrader'} autograde {assignment} && "
                            f"{BIN / 'nbgrader'} generate_feedback {assignment}", shell=True, cwd=course, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def plain_nbgrader(layout: Layout, assignment: str, class_dir: Path, folder: Path, parts: int) -> float:
    """The class split into `parts` by hand, each part a plain nbgrader course graded side by side."""
    students = sorted(class_dir.iterdir())
    courses = [_nbgrader_course(layout, assignment, students[part::parts], folder / f"part{part}")
               for part in range(parts)]
    start, cpu = time.perf_counter(), _children_cpu()
    running = [_plain(assignment, course) for course in courses]
    codes = [process.wait() for process in running]
    seconds = time.perf_counter() - start
    CPU[f"plain{parts}"].append(_children_cpu() - cpu)
    graded = sum(len(list((course / "feedback").glob(f"*/{assignment}/*.html"))) for course in courses)
    if codes != [0] * parts or graded != len(students):
        raise SystemExit(f"plain nbgrader failed: exit codes {codes}, {graded} of {len(students)} feedback pages")
    return seconds


def autograder(layout: Layout, assignment: str, class_dir: Path, out: Path, workers: int) -> float:
    start, cpu = time.perf_counter(), _children_cpu()
    subprocess.run([str(BIN / "autograder"), "grade", assignment, "--submissions", str(class_dir), "--out",
                    str(out), "--workers", str(workers), "--force", "--quiet"],
                   cwd=layout.root, env=ENV, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    CPU["ours"].append(_children_cpu() - cpu)
    return seconds


def overheads(out: Path) -> list[dict[str, float]]:
    """Per job of the last run of ours, in seconds: the worker's time minus its kernel's lifetime (the
    overhead), and that split into nbgrader's own autograde work (sanitizing, restoring the tests,
    saving the grades: its autograde less the kernel), nbgrader's feedback page, and the rest (ours:
    the job's files, the gradebook read, the answers)."""
    found = []
    for path in RunFolder(out).jobs_dir.glob("*/*/job.result.json"):
        result = json.loads(path.read_text(encoding="utf-8"))
        overhead = result["worker_seconds"] - result["kernel_seconds"]
        autograde = result["autograde_seconds"] - result["kernel_seconds"]
        found.append({"overhead": overhead, "nbgrader autograde": autograde, "nbgrader feedback":
                      result["feedback_seconds"], "ours": overhead - autograde - result["feedback_seconds"]})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="01_session_vs_eager")
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-serial", action="store_true", help="leave the serial plain nbgrader run out")
    args = parser.parse_args()
    layout = Layout.find()
    runs: dict[str, list[float]] = {"serial": [], "peer": [], "ours": []}
    per_job: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        folder = Path(scratch)
        class_dir = _class(layout, args.assignment, args.students, folder)
        (folder / "nobody").mkdir()
        autograder(layout, args.assignment, folder / "nobody", folder / "ours", args.workers)   # generates once
        for run in range(args.repeat):
            sides = {"peer": lambda: plain_nbgrader(layout, args.assignment, class_dir, folder / f"peer{run}",
                                                    args.workers),
                     "ours": lambda: autograder(layout, args.assignment, class_dir, folder / "ours", args.workers)}
            if not args.no_serial:
                sides["serial"] = lambda: plain_nbgrader(layout, args.assignment, class_dir, folder / f"serial{run}", 1)
            order = list(sides) if run % 2 == 0 else list(reversed(sides))   # a drift of the load hits both
            for side in order:
                runs[side].append(sides[side]())
            per_job += overheads(folder / "ours")
            print(f"run {run + 1} ({', '.join(order)}): "
                  + ", ".join(f"{side} {runs[side][-1]:.1f} s" for side in order)
                  + f"; grading processes' CPU: peer {CPU[f'plain{args.workers}'][-1]:.1f} s, "
                    f"ours {CPU['ours'][-1]:.1f} s", flush=True)
    medians = {side: statistics.median(times) for side, times in runs.items() if times}
    print(f"{args.students} correct submissions of {args.assignment}, grades and a feedback page each, every "
          f"kernel in a sandbox of its own; medians of {args.repeat} runs")
    for side, times in runs.items():
        if times:
            print(f"{side + ':':<8}{medians[side]:7.1f} s   runs: " + " ".join(f"{value:.1f}" for value in times))
    if "serial" in medians:
        print(f"ours vs serial nbgrader: {medians['serial'] / medians['ours']:.2f}x")
    print(f"ours vs the hand-split peer ({args.workers} plain nbgrader processes side by side): "
          f"{medians['peer'] / medians['ours']:.2f} (goal >= 1.0); run by run: "
          + " ".join(f"{peer / ours:.2f}" for peer, ours in zip(runs["peer"], runs["ours"])))
    cpu = {"serial": CPU["plain1"], "peer": CPU[f"plain{args.workers}"], "ours": CPU["ours"]}
    print("CPU seconds of a side's grading processes, kernels not included (less sensitive to other load "
          "than the wall): "
          + ", ".join(f"{side} {statistics.median(values):.1f}" for side, values in cpu.items() if values)
          + f"; ours / peer {statistics.median(cpu['ours']) / statistics.median(cpu['peer']):.2f}")
    parts = {name: statistics.median(job[name] for job in per_job) for name in per_job[0]}
    print(f"overhead per notebook (worker time minus the kernel's lifetime), median of {len(per_job)} notebooks: "
          f"{parts['overhead']:.2f} s (goal <= 1 s): nbgrader's autograde besides the kernel "
          f"{parts['nbgrader autograde']:.2f} s, nbgrader's feedback page {parts['nbgrader feedback']:.2f} s, "
          f"the rest (ours) {parts['ours']:.2f} s")
    extra = (medians["ours"] - medians["peer"]) * args.workers / args.students
    print(f"ours beyond the peer, per notebook: {extra:+.2f} worker-seconds (both sides pay nbgrader's own work)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
