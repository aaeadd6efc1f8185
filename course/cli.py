"""`course`: what a student or an instructor asks of the course from a terminal."""

from __future__ import annotations

import argparse
import sys

from course import syllabus


def _doctor(args) -> int:
    from course import doctor  # TensorFlow's log lines are captured into the diagnosis, not printed

    diagnosis = doctor.diagnose()
    print(doctor.format_json(diagnosis) if args.json else doctor.format_text(diagnosis))
    return 0 if diagnosis["ok"] else 1


def _list(args) -> int:
    from course.layout import CourseRootNotFound, Layout

    try:
        layout = Layout.find()
    except CourseRootNotFound:
        layout = None
    for assignment in syllabus.ASSIGNMENTS:
        present = "" if layout is None else ("  " if layout.source_notebook(assignment.id).exists() else "  (not written yet)")
        print(f"{assignment.id:<22} {assignment.title}: {assignment.teaches}{present}")
    return 0


def _run(args) -> int:
    from course import runner
    from course.layout import Layout

    results = runner.run_all(Layout.find(), args.profile, args.assignments or None)
    for result in results:
        print(f"{result.assignment:<22} {result.status:<8} {result.seconds:6.1f} s  {result.html or result.error}")
    return 0 if all(result.status != "failed" for result in results) else 1


def _prepare(args) -> int:
    import shutil
    from pathlib import Path

    from course import runner
    from course.layout import Layout

    layout = Layout.find()
    out = Path(args.out)
    for assignment in syllabus.ASSIGNMENTS:
        notebook = layout.source_notebook(assignment.id)
        if not notebook.exists():
            continue
        target = out / assignment.id
        shutil.copytree(notebook.parent, target, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.ipynb"))
        runner.prepare(notebook, target / notebook.name, args.profile, assignment.id)
        print(f"prepared {target / notebook.name} ({args.profile} profile)")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="course", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    doctor = commands.add_parser("doctor", help="diagnose this environment (the checks of 00_gpu_setup)")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.set_defaults(run=_doctor)
    listing = commands.add_parser("list", help="the assignments, in order")
    listing.set_defaults(run=_list)
    run = commands.add_parser("run", help="execute notebooks under a profile into build/executed/")
    run.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    run.add_argument("--profile", default="ci", choices=syllabus.PROFILES)
    run.set_defaults(run=_run)
    prepare = commands.add_parser("prepare", help="inject a profile into every source notebook without running it (for nbval)")
    prepare.add_argument("--profile", default="ci", choices=syllabus.PROFILES)
    prepare.add_argument("--out", required=True, help="folder for <assignment>/<assignment>.ipynb")
    prepare.set_defaults(run=_prepare)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (syllabus.UnknownAssignmentError, FileNotFoundError) as error:
        print(f"course: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
