"""`autograder`: grade a class, build the release, run the whole course. A thin layer over the library."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from course import syllabus
from course.layout import CourseRootNotFound, Layout
from autograder.grading.pipeline import GradingError


def _grade(args) -> int:
    from autograder.execution import sandbox
    from autograder.grading import export, report
    from autograder.grading.pipeline import Options, grade_class

    layout = Layout.find()
    try:  # said once here, before any work; grade_class hands the same decision to every job
        print(sandbox.describe(args.sandbox))
    except sandbox.SandboxUnavailable as error:
        raise GradingError(str(error)) from None
    if not (layout.source / args.assignment).is_dir():
        known = sorted(path.name for path in layout.source.iterdir() if path.is_dir()) if layout.source.is_dir() else []
        raise GradingError(f"unknown assignment {args.assignment!r}: no folder {layout.source / args.assignment} "
                           f"(the assignments in source/: {', '.join(known) or 'none'})")
    if args.assignment not in syllabus.ids():
        print(f"no profile for {args.assignment!r} in the syllabus: graded as submitted, without injected parameters")
    out = Path(args.out) if args.out else layout.build / "grading" / args.assignment
    submissions = Path(args.submissions).resolve()
    if out.resolve() == submissions or submissions in out.resolve().parents:
        raise GradingError(f"--out {out} is inside the submissions folder, which grading never writes to")
    if args.scheduler and args.workers:
        raise GradingError("--workers sets the local workers; with --scheduler the cluster's workers run the notebooks")
    options = Options(profile=args.profile, workers=args.workers or os.cpu_count() or 1, timeout=args.timeout,
                      memory_limit_gb=args.memory_limit, force=args.force, scheduler=args.scheduler,
                      db_url=args.db, sandbox=args.sandbox,
                      limits=sandbox.Limits(disk_bytes=int(args.disk_limit * 2**30), tasks=args.task_limit,
                                            cpu_seconds=int(args.cpu_limit)),
                      term=_course_file(args.term, layout.root / "term.toml"), extensions=_path(args.extensions),
                      submitted_at=_path(args.submitted_at),
                      overrides=_course_file(args.overrides, layout.root / "overrides" / f"{args.assignment}.csv"))
    result = grade_class(args.assignment, layout.source / args.assignment, submissions, out, options=options)
    csv_path = export.write_csv(result)
    max_path = export.write_max_points(result)
    html_path = report.write_html(result)
    print("\n".join(report.summary_lines(result)))
    print(f"grades: {csv_path} (out of: {max_path})\nreport: {html_path}\nfeedback: {out / 'feedback'}")
    return 0


def _export(args) -> int:
    from autograder.lms import export, roster

    layout = Layout.find()
    grades_path = Path(args.grades) if args.grades else layout.build / "grading" / args.assignment / "grades.csv"
    target = Path(args.out) if args.out else grades_path.parent / f"{args.format}-import.csv"
    try:
        grades, max_score = export.read_grades(grades_path)
        students = roster.read(Path(args.roster), args.match or export.MATCH[args.format])
        export.write(students, grades, max_score, args.assignment, args.format, target, missing=args.missing,
                     column=args.column)
    except (export.ExportError, roster.RosterError) as error:
        raise GradingError(f"nothing written:\n{error}") from None
    without = [student for student in students.ids() if student not in grades]
    for student in export.left_out(students, grades):
        print(f"left out, not in the roster and never graded: {student}")
    waiting = sorted(student for student, grade in grades.items() if grade.waiting)
    if waiting:
        print("not final, written answers still to grade by hand (autograder formgrade, or overrides): "
              + ", ".join(waiting))
    print(f"{target}: {len(students.students)} students, {len(grades)} graded"
          + (f", {len(without)} without a submission ({'0' if args.missing == 'zero' else 'blank'}): "
             + ", ".join(without) if without else ""))
    return 0


def _feedback(args) -> int:
    from datetime import datetime, timezone

    from autograder.grading import lateness
    from autograder.lms import feedback_zip

    layout = Layout.find()
    out = Path(args.grades_dir) if args.grades_dir else layout.build / "grading" / args.assignment
    target = Path(args.out) if args.out else out / "feedback.zip"
    try:
        term = lateness.read_term(_course_file(args.term, layout.root / "term.toml"))
        if args.extensions:
            lateness.add_extensions(term, Path(args.extensions), args.assignment, feedback_zip.students(out))
        released = feedback_zip.build(out, args.assignment, target, term=term, include_results=args.test_results,
                                      now=datetime.now(timezone.utc))
    except (lateness.TermError, feedback_zip.FeedbackError) as error:
        raise GradingError(str(error)) from None
    print(f"{target}: {released.pages} feedback pages of {released.students} students")
    for line in released.without_page:
        print(f"  no feedback page: {line}")
    if args.test_results:
        print(f"  test results for {len(released.with_results)} students past their due date"
              + (f"; withheld, not yet due: {', '.join(released.withheld)}" if released.withheld else ""))
    return 0


def _formgrade(args) -> int:
    from autograder.grading import formgrade
    from autograder.grading.cache import stored_rows
    from autograder.grading.pipeline import source_notebooks

    layout = Layout.find()
    out = Path(args.grades_dir) if args.grades_dir else layout.build / "grading" / args.assignment
    rows = stored_rows(out / "rows")
    if not rows:
        raise GradingError(f"no graded rows in {out / 'rows'}: run `autograder grade {args.assignment}` first")
    source = layout.source / args.assignment
    several = len(source_notebooks(args.assignment, source)) > 1
    prepared = formgrade.prepare(out, args.assignment, source, rows, layout.root / "nbgrader_config.py", several)
    print(f"{prepared.root}: {len(prepared.students)} students, {prepared.written} written answers to grade")
    for line in prepared.missing:
        print(f"  no autograded notebook here for {line} (graded on a cluster?)")
    if args.prepare_only:
        print(f"open it: cd {prepared.root} && jupyter lab   (Nbgrader menu, Formgrader, Manual Grading)")
        return 0
    lab = Path(sys.executable).parent / "jupyter-lab"
    os.chdir(prepared.root)
    os.execv(lab, [str(lab), *args.jupyter_args])
    return 0


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _course_file(value: str | None, default: Path) -> Path | None:
    """The file an option names, else the course's own file when there is one (term.toml, overrides/)."""
    if value:
        return Path(value)
    return default if default.exists() else None


def _release(args) -> int:
    from autograder.authoring import release

    layout = Layout.find()
    if args.check:
        problems = release.drift(layout)
        for problem in problems:
            print(problem)
        print("release/ is in sync with source/" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    for assignment_id in args.assignments or release.present(layout):
        print(f"generated {release.generate(layout, assignment_id, layout.release)}")
    return 0


def _demo_class(args) -> int:
    from autograder.authoring import demo

    layout = Layout.find()
    written = demo.write_class(layout.source_notebook(args.assignment), layout.release_notebook(args.assignment),
                               Path(args.out))
    for student_id, path in written.items():
        print(f"{student_id}: {path}")
    return 0


def _course_run(args) -> int:
    from autograder.authoring import course_run

    layout = Layout.find()
    lines = course_run.run(layout, args.profile)
    report_path = course_run.write_report(lines, layout.build / "report.html", args.profile)
    print(course_run.table(lines))
    print(f"report: {report_path}")
    return 0 if course_run.ok(lines) else 1


def _student_bundle(args) -> int:
    from autograder.authoring import bundle

    layout = Layout.find()
    out = Path(args.out) if args.out else layout.build / "student-bundle.zip"
    try:
        print(f"student bundle: {bundle.build_bundle(layout, out)}")
    except bundle.BundleError as error:
        print(f"autograder: {error}", file=sys.stderr)
        return 2
    return 0


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value
    return parse


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="autograder", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade a class of submissions")
    grade.add_argument("assignment", help="assignment id: a folder of source/, e.g. 00_gpu_setup")
    grade.add_argument("--submissions", required=True,
                       help="folder of <student_id>/<notebook>.ipynb or <student_id>.zip, or Canvas's or Moodle's "
                            "download of all submissions (the zip or its unpacked folder)")
    grade.add_argument("--out", help="output folder (default build/grading/<assignment>)")
    grade.add_argument("--profile", default="grade", choices=syllabus.PROFILES, help="profile injected (default grade)")
    grade.add_argument("--workers", type=_positive(int),
                       help="submissions graded at once on this machine (default: the number of cores)")
    grade.add_argument("--timeout", type=_positive(float), default=600.0,
                       help="wall-clock seconds per notebook (default 600)")
    grade.add_argument("--memory-limit", type=_positive(float), default=6.0, metavar="GB",
                       help="resident memory of a notebook's kernel, in GB (default 6)")
    grade.add_argument("--force", action="store_true", help="re-grade submissions already graded with the same content")
    grade.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                       help="a bubblewrap sandbox for every kernel (default auto: bwrap when it works, else none, "
                            "said so)")
    grade.add_argument("--disk-limit", type=_positive(float), default=1.0, metavar="GB",
                       help="size of each kernel sandbox's /tmp (its working folder) and /dev/shm, and its largest "
                            "file, in GB (default 1)")
    grade.add_argument("--task-limit", type=_positive(int), default=1024, metavar="N",
                       help="processes and threads of a notebook's worker and kernel (default 1024)")
    grade.add_argument("--cpu-limit", type=float, default=0.0, metavar="SECONDS",
                       help="CPU seconds per process of a kernel's sandbox (default 0: none; the wall clock "
                            "bounds it anyway)")
    grade.add_argument("--term", metavar="FILE",
                       help="due dates and the late penalty (TOML; default: term.toml in the course root, if any)")
    grade.add_argument("--extensions", metavar="CSV", help="per-student due dates: student_id,assignment,due")
    grade.add_argument("--submitted-at", metavar="CSV",
                       help="submission times: student_id,submitted_at (ISO 8601 with an offset); "
                            "a submission without one is on time")
    grade.add_argument("--overrides", metavar="CSV",
                       help="points set by hand: student_id,cell,points,comment,grader (default: "
                            "overrides/<assignment>.csv in the course root, if any); they survive --force")
    grade.add_argument("--scheduler", metavar="ADDRESS",
                       help="run the notebooks on a dask.distributed cluster, e.g. tcp://head-node:8786")
    grade.add_argument("--db", metavar="URL",
                       help="keep the gradebook in this database (SQLAlchemy URL), e.g. postgresql://grader@db/gradebook")
    grade.set_defaults(run=_grade)

    out = commands.add_parser("export", help="grades.csv as the grade import file of Canvas or Moodle")
    out.add_argument("assignment", help="assignment id (its grades: build/grading/<assignment>/grades.csv)")
    out.add_argument("--format", required=True, choices=("canvas", "moodle", "moodle-worksheet"))
    out.add_argument("--roster", required=True, metavar="CSV",
                     help="the class list the LMS exports (Canvas: the gradebook export; Moodle: a grade export, "
                          "or for moodle-worksheet the assignment's grading worksheet)")
    out.add_argument("--match", metavar="COLUMN",
                     help="the roster column that holds the students' ids as grading knows them "
                          "(default: ID on Canvas, Email address on Moodle, Identifier in a worksheet)")
    out.add_argument("--missing", choices=("zero", "blank"), default="zero",
                     help="a roster student without a submission: 0 (default) or an empty cell")
    out.add_argument("--column", help="the assignment's column name in the LMS (default: the roster's "
                                      "'<assignment> (<id>)' column on Canvas, else the assignment id)")
    out.add_argument("--grades", metavar="CSV", help="grades.csv to read (default build/grading/<assignment>/grades.csv)")
    out.add_argument("--out", metavar="CSV", help="file to write (default: <format>-import.csv beside grades.csv)")
    out.set_defaults(run=_export)

    fb = commands.add_parser("feedback", help="the class's feedback pages as one zip for the LMS")
    fb.add_argument("assignment", help="assignment id (its run: build/grading/<assignment>/)")
    fb.add_argument("--test-results", action="store_true",
                    help="add every graded test's name and result, hidden tests included (never their code), "
                         "for the students whose due date has passed")
    fb.add_argument("--term", metavar="FILE", help="due dates (default: term.toml in the course root, if any)")
    fb.add_argument("--extensions", metavar="CSV", help="per-student due dates: student_id,assignment,due")
    fb.add_argument("--grades-dir", metavar="DIR", help="the run's folder (default build/grading/<assignment>)")
    fb.add_argument("--out", metavar="ZIP", help="zip to write (default <run folder>/feedback.zip)")
    fb.set_defaults(run=_feedback)

    fg = commands.add_parser("formgrade", help="grade written answers by hand in nbgrader's formgrader")
    fg.add_argument("assignment", help="assignment id (its run: build/grading/<assignment>/)")
    fg.add_argument("--grades-dir", metavar="DIR", help="the run's folder (default build/grading/<assignment>)")
    fg.add_argument("--prepare-only", action="store_true",
                    help="prepare <run folder>/formgrade/ and say how to open it, without starting JupyterLab")
    fg.epilog = "Arguments after -- go to jupyter lab, e.g. autograder formgrade 04_xla -- --port 8890 --no-browser"
    fg.set_defaults(run=_formgrade)

    rel = commands.add_parser("release", help="generate release/ from source/ with nbgrader")
    rel.add_argument("assignments", nargs="*", help="assignment ids (default: every one with a source)")
    rel.add_argument("--check", action="store_true", help="only report drift between release/ and source/")
    rel.set_defaults(run=_release)

    demo = commands.add_parser("demo-class", help="write a demo class: the solution and the blank release")
    demo.add_argument("assignment")
    demo.add_argument("--out", required=True)
    demo.set_defaults(run=_demo_class)

    run = commands.add_parser("course-run", help="execute, check the release, grade the demo class, report")
    run.add_argument("--profile", default="ci", choices=syllabus.PROFILES)
    run.set_defaults(run=_course_run)

    student = commands.add_parser("student-bundle", help="zip what students get: release/, course/, install files, README")
    student.add_argument("--out", help="zip file to write (default build/student-bundle.zip)")
    student.set_defaults(run=_student_bundle)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    passed = argv[argv.index("--") + 1:] if "--" in argv else []   # for jupyter lab (formgrade)
    args = parser().parse_args(argv[:len(argv) - len(passed) - 1] if "--" in argv else argv)
    args.jupyter_args = passed
    try:
        return args.run(args)
    except (syllabus.UnknownAssignmentError, syllabus.UnknownProfileError, CourseRootNotFound,
            NotADirectoryError, GradingError) as error:
        print(f"autograder: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
