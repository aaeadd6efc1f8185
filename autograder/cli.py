"""`autograder`: grade a class, build the release, run the whole course. A thin layer over the library:
parse, call one library function, print what was asked for; every `AutograderError` (and the course
package's own errors of a course root or an id) becomes exit code 2, in `main` alone.

Logging goes through `logging` to the standard error, with levels: `--verbose` shows DEBUG, `--quiet`
only warnings and errors (and no progress lines). The progress of `grade` (one line per row) and the
final summaries go to the standard output.
"""

from __future__ import annotations

import argparse
from importlib.metadata import entry_points
import logging
import os
import sys
from pathlib import Path
from typing import Any

from course import syllabus
from course.layout import CourseRootNotFound, Layout
from autograder.errors import AutograderError

LMS_FORMATS = "autograder.lms_formats"   # autograder.lms.grade_import.ENTRY_POINTS, named without importing it
from autograder.runfolder import BuildFolder, RunFolder
from autograder.settings import GradingSettings
from traitlets import Bool, Enum
from traitlets.config import Config

log = logging.getLogger("autograder")
ERRORS = (AutograderError, CourseRootNotFound, syllabus.UnknownAssignmentError, syllabus.UnknownProfileError)


def _grade(args) -> int:
    from autograder.execution import sandbox
    from autograder.grading import report
    from autograder.grading.assignment import GradingError
    from autograder.grading.pipeline import grade_class

    layout = Layout.find()
    settings = _settings(layout, args)
    description = sandbox.describe(settings.sandbox)   # said once, before any work
    (log.warning if "NONE" in description else log.info)(description)
    _source_folder(layout, args.assignment)
    if args.assignment not in syllabus.ids():
        log.warning("no profile for %r in the syllabus: graded as submitted, without injected parameters",
                    args.assignment)
    run_folder = RunFolder(Path(args.out)) if args.out else BuildFolder(layout.build).grading(args.assignment)
    submissions = Path(args.submissions).resolve()
    if run_folder.root.resolve() == submissions or submissions in run_folder.root.resolve().parents:
        raise GradingError(f"--out {run_folder.root} is inside the submissions folder, which grading never writes to")
    if settings.scheduler and settings.workers:
        raise GradingError("--workers sets the local workers; with --scheduler the cluster's workers run the notebooks")
    result = grade_class(args.assignment, layout.source / args.assignment, submissions, run_folder.root,
                         settings=settings, progress=(lambda line: None) if args.quiet else print)
    print("\n".join(report.summary_lines(result)))
    folder = result.run_folder
    print(f"grades: {folder.grades_csv} (out of: {folder.max_points_csv})\nreport: {folder.report_html}"
          f"\nfeedback: {folder.feedback_dir}")
    return 0


def _settings(layout: Layout, args) -> GradingSettings:
    """The grading settings of every command, built once and never changed: the course's own files
    (term.toml, overrides/<assignment>.csv) where they exist, the course's nbgrader configuration on
    top, the options given on top of both."""
    from autograder.nbgrader_setup.config import load_course_config

    config = Config({GradingSettings.__name__: {name: str(path) for name, path in (
        ("term", layout.root / "term.toml"),
        ("overrides", layout.root / "overrides" / f"{args.assignment}.csv")) if path.is_file()}})
    config.merge(load_course_config(layout.root))
    config.merge(Config({GradingSettings.__name__: args.settings}))
    return GradingSettings(config=config)


def _source_folder(layout: Layout, assignment: str) -> Path:
    """`source/<assignment>/`, or a GradingError that lists the assignments there are."""
    from autograder.grading.assignment import GradingError

    if not (layout.source / assignment).is_dir():
        known = sorted(path.name for path in layout.source.iterdir() if path.is_dir()) if layout.source.is_dir() else []
        raise GradingError(f"unknown assignment {assignment!r}: no folder {layout.source / assignment} "
                           f"(the assignments in source/: {', '.join(known) or 'none'})")
    return layout.source / assignment


def _run_folder(layout: Layout, assignment: str, given: str | None) -> RunFolder:
    return RunFolder(Path(given)) if given else BuildFolder(layout.build).grading(assignment)


def _export(args) -> int:
    from autograder.lms import grade_import
    from autograder.runfolder import read_grades

    layout = Layout.find()
    grades_path = Path(args.grades) if args.grades else _run_folder(layout, args.assignment, None).grades_csv
    target = Path(args.out) if args.out else RunFolder(grades_path.parent).lms_import(args.format)
    grades, max_score = grade_import.grades_of(read_grades(grades_path))
    plugin = grade_import.import_format(args.format)
    students, grade_column = plugin.roster(Path(args.roster), args.match, args.worksheet_columns)
    try:
        grade_import.write(students, grades, max_score, args.assignment, plugin, target, missing=args.missing,
                           column=args.column, grade_column=grade_column)
    except grade_import.ExportError as error:
        raise grade_import.ExportError(f"nothing written:\n{error}") from None
    without = [student for student in students.ids() if student not in grades]
    for student in grade_import.left_out(students, grades):
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
    run_folder = _run_folder(layout, args.assignment, args.grades_dir)
    if args.exchange:
        return _feedback_for_exchange(run_folder, args)
    target = Path(args.out) if args.out else run_folder.feedback_zip
    students = feedback_zip.students(run_folder.root)
    term = lateness.class_term(_settings(layout, args), args.assignment, students)
    released = feedback_zip.build(run_folder.root, args.assignment, target,
                                  due=lateness.due_dates(term, args.assignment, students),
                                  include_results=args.test_results, now=datetime.now(timezone.utc))
    print(f"{target}: {released.pages} feedback pages of {released.students} students")
    for line in released.without_page:
        print(f"  no feedback page: {line}")
    if args.test_results:
        print(f"  test results for {len(released.with_results)} students past their due date"
              + (f"; withheld, not yet due: {', '.join(released.withheld)}" if released.withheld else ""))
    return 0


def _feedback_for_exchange(run_folder, args) -> int:
    from autograder.lms import exchange
    from autograder.runfolder import read_grades, stem

    pages = {(line.student_id, stem(line.notebook)): run_folder.feedback_page(line.student_id, line.notebook)
             for line in read_grades(run_folder.grades_csv)}
    from autograder.nbgrader_setup.config import load_course_config

    course = Path(args.exchange)
    placed, left_out = exchange.place_feedback({key: page for key, page in pages.items() if page.is_file()},
                                               course, args.assignment,
                                               needs_secret=exchange.needs_secret(load_course_config(course)))
    print(f"{course / exchange.FEEDBACK}: {placed} feedback pages for nbgrader release_feedback {args.assignment}")
    for line in left_out + [f"{student}: no feedback page" for (student, _), page in pages.items() if not page.is_file()]:
        print(f"  left out: {line}")
    return 0


def _solutions(args) -> int:
    from datetime import datetime, timezone

    from autograder.authoring import solutions
    from autograder.grading import lateness
    from autograder.lms import feedback_zip
    from autograder.nbgrader_setup.config import load_course_config

    layout = Layout.find()
    source = _source_folder(layout, args.assignment)
    now = lateness.parse_time(args.now, "--now") if args.now else datetime.now(timezone.utc)
    run_folder = _run_folder(layout, args.assignment, args.grades_dir)
    students = feedback_zip.students(run_folder.root)
    term = lateness.class_term(_settings(layout, args), args.assignment, students)
    released = solutions.build(run_folder.root, args.assignment, source,
                               due=lateness.due_dates(term, args.assignment, students),
                               now=now, config=load_course_config(layout.root),
                               target=Path(args.out) if args.out else None)
    print(f"{released.files[-1]}: the solutions of {len(released.given)} of {released.students} students, "
          f"past their due date at {now.isoformat()}")
    if released.withheld:
        print(f"  withheld, not yet due: {', '.join(released.withheld)}")
    for line in released.left_out:
        print(f"  left out: {line}")
    return 0


def _formgrade(args) -> int:
    from autograder.grading import formgrade
    from autograder.grading.cache import stored_rows
    from autograder.grading.assignment import GradingError
    from autograder.nbgrader_setup.gradebook import database_problem

    layout = Layout.find()
    settings = _settings(layout, args)
    if settings.db_url and (problem := database_problem(settings.db_url)):
        raise GradingError(problem)
    source = layout.source / args.assignment
    run_folder = RunFolder.open(_run_folder(layout, args.assignment, args.grades_dir).root)
    rows = stored_rows(run_folder.rows_dir)
    if not rows:
        raise GradingError(f"no graded rows in {run_folder.rows_dir}: run `autograder grade {args.assignment}` first")
    prepared = formgrade.prepare(run_folder, args.assignment, source, rows, layout.root, settings)
    print(f"{prepared.root}: {len(prepared.students)} students, {prepared.answers_to_grade} written answers to grade"
          + (" (the shared gradebook)" if settings.db_url else ""))
    for line in prepared.missing:
        print(f"  no autograded notebook here for {line} (graded on a cluster?)")
    if args.prepare_only:
        print(f"open it: cd {prepared.root} && jupyter lab   (Nbgrader menu, Formgrader, Manual Grading)")
        return 0
    lab = Path(sys.executable).parent / "jupyter-lab"
    os.chdir(prepared.root)
    os.execv(lab, [str(lab), *args.jupyter_args])
    return 0


def _release(args) -> int:
    from autograder.authoring import release

    layout = Layout.find()
    if args.check:
        problems = release.drift(layout)
        for problem in problems:
            print(problem)
        print("release/ is in sync with source/" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    for assignment_id in args.assignments:
        _source_folder(layout, assignment_id)   # a mistyped id stops before anything is generated
    for assignment_id in args.assignments or release.present(layout):
        print(f"generated {release.generate(layout, assignment_id, layout.release)}")
    return 0


def _demo_class(args) -> int:
    from autograder.authoring import demo

    layout = Layout.find()
    _source_folder(layout, args.assignment)
    paths = demo.write_class(layout.source_notebook(args.assignment), layout.release_notebook(args.assignment),
                             Path(args.out))
    for student_id, path in paths.items():
        print(f"{student_id}: {path}")
    return 0


def _course_run(args) -> int:
    from autograder.authoring import course_run

    layout = Layout.find()
    lines = course_run.run(layout, args.profile)
    report_path = course_run.write_report(lines, BuildFolder(layout.build).report_html, args.profile)
    print(course_run.table(lines))
    print(f"report: {report_path}")
    return 0 if course_run.ok(lines) else 1


def _student_bundle(args) -> int:
    from autograder.authoring import bundle

    layout = Layout.find()
    out = Path(args.out) if args.out else BuildFolder(layout.build).student_bundle
    print(f"student bundle: {bundle.build_bundle(layout, out)}")
    return 0


def _setting(name: str):
    """An argparse type for the grading setting `name`: the text read by the trait itself (traitlets'
    `from_string`, as its own command line reads it), checked by the trait's validation (a positive
    timeout, a known sandbox mode)."""
    trait = GradingSettings.class_traits()[name]

    def parse(text: str):
        try:
            value = trait.from_string(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        try:
            GradingSettings(**{name: value})
        except Exception as error:  # traitlets' TraitError, or the validator's ValueError
            raise argparse.ArgumentTypeError(str(error).splitlines()[0]) from None
        return value
    return parse


def add_settings(parser: argparse.ArgumentParser) -> None:
    """One option per grading setting (`GradingSettings`' traits), in the order they are declared."""
    traits = GradingSettings.class_traits(config=True)
    for name in [name for name in vars(GradingSettings) if name in traits]:
        add_setting(parser, name)


def add_setting(parser: argparse.ArgumentParser, name: str, help: str | None = None) -> None:
    """The option of grading setting `name`: its flag, type, choices, help (or `help`) and default from the
    trait. An option not given is not set, so the course's nbgrader configuration stands."""
    trait = GradingSettings.class_traits(config=True)[name]
    flag = trait.metadata.get("flag", f"--{name.replace('_', '-')}")
    default = trait.default_value
    shown = "" if default is None else f" (default {default:g})" if isinstance(default, float) else f" (default {default})"
    options: dict[str, Any] = dict(dest=f"setting_{name}", default=argparse.SUPPRESS, help=help or trait.help + shown)
    if isinstance(trait, Bool):
        options.update(action="store_true", help=help or trait.help)
    elif isinstance(trait, Enum):
        options.update(choices=trait.values)
    else:
        options.update(type=_setting(name), metavar=trait.metadata.get("metavar"))
    parser.add_argument(flag, **options)


def settings_given(args: argparse.Namespace) -> dict:
    """The grading settings the command line gave, by trait name."""
    return {name.removeprefix("setting_"): value for name, value in vars(args).items() if name.startswith("setting_")}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="autograder", description=__doc__.splitlines()[0])
    logs = argparse.ArgumentParser(add_help=False)
    level = logs.add_mutually_exclusive_group()
    level.add_argument("-v", "--verbose", action="store_true", help="log DEBUG messages too")
    level.add_argument("-q", "--quiet", action="store_true", help="log only warnings and errors, no progress lines")
    commands = top.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", parents=[logs], help="grade a class of submissions",
                                epilog="Each option is a grading setting (c.GradingSettings.<name> in the course's "
                                       "nbgrader_config.py; the option wins).")
    grade.add_argument("assignment", help="assignment id: a folder of source/, e.g. 00_gpu_setup")
    grade.add_argument("--submissions", required=True,
                       help="folder of <student_id>/<notebook>.ipynb or <student_id>.zip, or Canvas's or Moodle's "
                            "download of all submissions (the zip or its unpacked folder)")
    grade.add_argument("--out", help="output folder (default build/grading/<assignment>)")
    add_settings(grade)
    grade.set_defaults(handler=_grade)

    out = commands.add_parser("export", parents=[logs], help="grades.csv as the grade import file of Canvas or Moodle")
    out.add_argument("assignment", help="assignment id (its grades: build/grading/<assignment>/grades.csv)")
    out.add_argument("--format", required=True, choices=sorted(point.name for point in entry_points(group=LMS_FORMATS)),
                     help="the LMS's import file (the `autograder.lms_formats` entry points: another LMS is a plug-in)")
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
    out.add_argument("--worksheet-columns", metavar="IDENTIFIER,GRADE",
                     help="moodle-worksheet: the worksheet's identifier and grade columns, e.g. \"Identifiant,Note\" "
                          "(default: Identifier,Grade, else found by their values and Moodle's column order)")
    out.add_argument("--grades", metavar="CSV", help="grades.csv to read (default build/grading/<assignment>/grades.csv)")
    out.add_argument("--out", metavar="CSV", help="file to write (default: <format>-import.csv beside grades.csv)")
    out.set_defaults(handler=_export)

    fb = commands.add_parser("feedback", parents=[logs], help="the class's feedback pages as one zip for the LMS")
    fb.add_argument("assignment", help="assignment id (its run: build/grading/<assignment>/)")
    fb.add_argument("--test-results", action="store_true",
                    help="add every graded test's name and result, hidden tests included (never their code), "
                         "for the students whose due date has passed")
    add_setting(fb, "term")
    add_setting(fb, "extensions")
    fb.add_argument("--grades-dir", metavar="DIR", help="the run's folder (default build/grading/<assignment>)")
    fb.add_argument("--out", metavar="ZIP", help="zip to write (default <run folder>/feedback.zip)")
    fb.add_argument("--exchange", metavar="COURSE_DIR",
                    help="instead of a zip, put the pages where `nbgrader release_feedback <assignment>` takes them, "
                         "in the course directory whose submitted/ was graded (nbgrader's exchange on a hub)")
    fb.set_defaults(handler=_feedback)

    sol = commands.add_parser("solutions", parents=[logs],
                              help="the reference solutions, hidden tests removed, for the students past their due date")
    sol.add_argument("assignment", help="assignment id (its source: source/<assignment>/, its run: build/grading/<assignment>/)")
    add_setting(sol, "term")
    add_setting(sol, "extensions")
    sol.add_argument("--now", metavar="WHEN", help="the time to compare due dates with, ISO 8601 with a UTC offset "
                                                  "(default: now)")
    sol.add_argument("--grades-dir", metavar="DIR", help="the run's folder (default build/grading/<assignment>)")
    sol.add_argument("--out", metavar="ZIP", help="zip to write (default <run folder>/solutions.zip)")
    sol.set_defaults(handler=_solutions)

    fg = commands.add_parser("formgrade", parents=[logs], help="grade written answers by hand in nbgrader's formgrader")
    fg.add_argument("assignment", help="assignment id (its run: build/grading/<assignment>/)")
    fg.add_argument("--grades-dir", metavar="DIR", help="the run's folder (default build/grading/<assignment>)")
    add_setting(fg, "db_url",
                help="the shared gradebook the class was graded into (autograder grade --db, e.g. "
                     "postgresql://grader@db/gradebook): the formgrader opens it, so several graders can "
                     "grade at once; default: c.GradingSettings.db_url of the course's nbgrader_config.py, "
                     "else a SQLite gradebook in the run's formgrade/")
    fg.add_argument("--prepare-only", action="store_true",
                    help="prepare <run folder>/formgrade/ and say how to open it, without starting JupyterLab")
    fg.epilog = "Arguments after -- go to jupyter lab, e.g. autograder formgrade 04_xla -- --port 8890 --no-browser"
    fg.set_defaults(handler=_formgrade)

    rel = commands.add_parser("release", parents=[logs], help="generate release/ from source/ with nbgrader")
    rel.add_argument("assignments", nargs="*", help="assignment ids (default: every one with a source)")
    rel.add_argument("--check", action="store_true", help="only report drift between release/ and source/")
    rel.set_defaults(handler=_release)

    demo = commands.add_parser("demo-class", parents=[logs], help="write a demo class: the solution and the blank release")
    demo.add_argument("assignment")
    demo.add_argument("--out", required=True)
    demo.set_defaults(handler=_demo_class)

    course = commands.add_parser("course-run", parents=[logs], help="execute, check the release, grade the demo class, report")
    course.add_argument("--profile", default="ci", choices=syllabus.PROFILES)
    course.set_defaults(handler=_course_run)

    student = commands.add_parser("student-bundle", parents=[logs], help="zip what students get: release/, course/, install files, README")
    student.add_argument("--out", help="zip file to write (default build/student-bundle.zip)")
    student.set_defaults(handler=_student_bundle)
    return top


def _logging(args: argparse.Namespace) -> None:
    """The grader's log on the standard error: INFO and up by default, DEBUG with --verbose, WARNING with
    --quiet. Other libraries log their warnings only (nbgrader's own errors become rows' reasons)."""
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", force=True)
    log.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    passed = argv[argv.index("--") + 1:] if "--" in argv else []   # for jupyter lab (formgrade)
    args = parser().parse_args(argv[:len(argv) - len(passed) - 1] if "--" in argv else argv)
    args.jupyter_args = passed
    args.settings = settings_given(args)
    _logging(args)
    try:
        return args.handler(args)
    except ERRORS as error:
        print(f"autograder: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
