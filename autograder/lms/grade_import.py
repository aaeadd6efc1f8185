"""A run's grades.csv as the file the LMS imports, matched against the roster it exported.

    autograder export 01_session_vs_eager --format canvas --roster gradebook_export.csv

It is given plain data: grades.csv's rows as `autograder.runfolder.read_grades` reads them. The
formats:

- `canvas`: Canvas's gradebook import CSV, with the columns of its gradebook export: `Student`, `ID`,
  `SIS User ID`, `SIS Login ID`, `Section`, then the assignment's column, with a `Points Possible`
  row under the header. A column named after the assignment creates a new assignment on import; the
  export reuses the roster's column when one is named `<assignment> (<canvas id>)`, so the grades go
  to the assignment that already exists.
- `moodle`: Moodle's grade import CSV: the roster's user columns, then one grade column; Moodle's
  import preview maps the id column to a user field (e.g. Email address to useremail) and the grade
  column to a grade item.
- `moodle-worksheet`: the assignment's grading worksheet (Grading action "Download grading worksheet")
  given back with its `Grade` column filled, every other column as it was, for "Upload grading
  worksheet" (mod/assign/feedback/offline/importgradeslib.php finds the `Identifier`, `Grade` and
  `Last modified (grade)` columns by their names in the site's language: `get_string('recordid',
  'assign')`, `get_string('grade')`, `get_string('lastmodifiedgrade', 'assign')`). Students are
  matched by participant id, the id Moodle's download of submissions gives. The file written back
  keeps the worksheet's own headers, whatever their language; `worksheet_columns` says how the
  identifier and grade columns are found without knowing the language.

Each format is a plug-in class (`ImportFormat`: how it reads the roster, names the assignment's
column and writes the file) registered under the `autograder.lms_formats` entry points in
pyproject.toml, as the executors are: another LMS is a subclass and one line there.

A student's grade is the sum of `score` (after the late penalty) over the assignment's notebooks.
A roster student without a row gets 0, or an empty cell with `missing="blank"`. A row the roster
cannot place whose submission could not be read at all (status `invalid`: a stray file of an LMS download
that names no student) is left out and listed. Nothing is written when a graded student is not in the roster, or a row has status `error` (the grader failed, not the
student: re-grade it first); every such problem is listed at once.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Callable

from autograder import csvfile
from autograder.errors import AutograderError
from autograder.lms.roster import Roster, worksheet_identifier
from autograder.lms.roster import read as read_roster
from autograder.runfolder import GradesLine, Status

ENTRY_POINTS = "autograder.lms_formats"   # name -> an ImportFormat subclass (pyproject.toml)
WORKSHEET_COLUMNS = ("Identifier", "Grade", "Last modified (grade)")
CANVAS_USER_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_USER_COLUMNS = ("First name", "Last name", "ID number", "Institution", "Department", "Email address")


class ExportError(AutograderError):
    """The grades cannot go to the LMS as they are: the message lists every problem."""


@dataclass(frozen=True)
class Grade:
    score: float
    max_score: float
    unreadable: bool = False    # every notebook of the student was `invalid`: never run
    waiting: bool = False       # written answers still wait for a hand grade: the score is not final


def grades_of(lines: list[GradesLine]) -> tuple[dict[str, Grade], float]:
    """grades.csv's rows summed per student over notebooks, and the assignment's max score. A row the
    grader failed (status error) stops the import: every such row is named."""
    problems = [f"{line.student_id} has status error on {line.notebook} ({line.reason}): re-grade it first"
                for line in lines if line.status == Status.ERROR]
    if problems:
        raise ExportError("\n".join(problems))
    grades: dict[str, Grade] = {}
    notebooks: dict[str, float] = {}
    for line in lines:
        before = grades.get(line.student_id, Grade(0.0, 0.0, True))
        grades[line.student_id] = Grade(before.score + line.score, before.max_score + line.max_score,
                                        before.unreadable and line.status == Status.INVALID,
                                        before.waiting or line.status == Status.NEEDS_MANUAL_GRADE)
        notebooks[line.notebook] = line.max_score
    return grades, sum(notebooks.values())


def left_out(roster: Roster, grades: dict[str, Grade]) -> list[str]:
    """Rows the roster cannot place and that never ran (a stray file's row): listed, not exported."""
    return sorted(student for student, grade in grades.items() if student not in roster.students and grade.unreadable)


def rows(roster: Roster, grades: dict[str, Grade], missing: str) -> list[tuple[dict[str, str], str]]:
    """Every roster student with the grade to import; raises when a graded student is not in the roster."""
    unknown = sorted(set(grades) - set(roster.students) - set(left_out(roster, grades)))
    if unknown:
        raise ExportError(f"{len(unknown)} graded student(s) not in {roster.path} (column {roster.match!r}): "
                          + ", ".join(unknown))
    out = []
    for student, row in roster.students.items():
        grade = grades.get(student)
        out.append((row, f"{grade.score:g}" if grade else ("0" if missing == "zero" else "")))
    return out


# A worksheet's grade and maximum grade, as mod/assign/gradingtable.php writes them in its download mode.
_NUMBER = re.compile(r"^-?\d+(?:[.,]\d+)?$")        # format_float'ed


def _grade_columns(columns: list[str], lines: list[dict[str, str]], after: int) -> list[str]:
    """The columns after `after` that can be the grade: every value empty, "-" or a number, and the next
    column the maximum grade (one and the same number on every row). gradingtable.php's download writes
    `grade` immediately followed by `grademax` (get_string('maxgrade', 'assign'))."""
    def same_number(name: str) -> bool:
        values = {line.get(name, "") for line in lines}
        return len(values) == 1 and bool(_NUMBER.match(next(iter(values))))

    def grade_like(name: str) -> bool:
        return all(line.get(name, "") in ("", "-") or _NUMBER.match(line.get(name, "")) for line in lines)

    return [name for index, name in enumerate(columns[:-1])
            if index > after and grade_like(name) and same_number(columns[index + 1])]


def worksheet_columns(columns: list[str], lines: list[dict[str, str]], given: str | None = None,
                      where: object = "the worksheet") -> tuple[str, str]:
    """The worksheet's identifier and grade columns, in the site's language.

    Moodle names them in the language of the site (`Identifier`/`Grade` in English, other words in
    German or French), and so does its upload, which looks them up by the same language strings. So:
    - `given` ("Identifiant,Note", the `--worksheet-columns` option): those two columns;
    - the English names when the worksheet has them (`Identifier`, `Grade`, `Last modified (grade)`);
    - else by what gradingtable.php's download writes, whatever the language: the identifier is the
      column `roster.worksheet_identifier` finds (`Identifier`, or the first column, whose every value is
      one word followed by the participant number), the grade is the column after it that holds only
      numbers, empty cells or "-" and is immediately followed by the maximum grade (`grademax`: the same
      number on every row).
    Anything else (none found, or more than one candidate) is refused with an ExportError that names
    the candidates and the option to name the columns."""
    if given:
        pair = [name.strip() for name in given.split(",")]
        lacking = [name for name in pair if name not in columns]
        if len(pair) != 2 or lacking:
            raise ExportError(f"--worksheet-columns {given!r}: expected two of {where}'s columns, the identifier's "
                              f"and the grade's ({'no column ' + ', '.join(lacking) if lacking else 'not two names'}; "
                              f"its columns: {', '.join(columns)})")
        return pair[0], pair[1]
    if all(name in columns for name in WORKSHEET_COLUMNS):
        return WORKSHEET_COLUMNS[0], WORKSHEET_COLUMNS[1]
    hint = ("; name them with --worksheet-columns \"<identifier>,<grade>\" (its columns: " + ", ".join(columns) + ")")
    identifier = worksheet_identifier(columns, lines, where, ExportError, hint)
    grade = _grade_columns(columns, lines, columns.index(identifier))
    if len(grade) != 1:
        raise ExportError(f"{where}: cannot tell which column is the grade (its English name Grade is not there, "
                          + ("and no column of numbers is followed by the maximum grade"
                             if not grade else f"and each of {', '.join(grade)} could be it") + ")" + hint)
    return identifier, grade[0]


def read_worksheet(path: Path, given: str | None = None) -> tuple[Roster, str]:
    """A grading worksheet as the roster (students by participant id) and the name of its grade column."""
    columns, lines = csvfile.read_table(path, (), error=ExportError)
    identifier, grade = worksheet_columns(columns, [line.values for line in lines], given, path)
    return read_roster(path, identifier, participant=True), grade


class ImportFormat:
    """One LMS's grade import file, a plug-in: `autograder export --format <name>` takes the class
    registered under that name in the `autograder.lms_formats` entry points (pyproject.toml), so another
    LMS is a subclass in a file of its own and one line there."""
    match = ""        # the roster's column that holds a student's id, unless --match names another

    def roster(self, path: Path, match: str | None, worksheet_columns: str | None) -> tuple[Roster, str | None]:
        """The class list the LMS exported, and the name of the column the grades go into when the
        file itself says it (None: `column` decides)."""
        return read_roster(path, match or self.match), None

    def column(self, roster: Roster, assignment: str, given: str | None, from_file: str | None) -> str | None:
        """The column the grades go into: --column (`given`), else the assignment's id. `from_file` is
        the column `roster` found in the file itself, if any."""
        return given or assignment

    def write(self, roster: Roster, matched: list[tuple[dict[str, str], str]], target: Path, *, column: str | None,
              max_score: float) -> Path:
        """`matched` (each roster student's line and grade) as the file the LMS imports, at `target`;
        `column` is None only where the format's `column` gives none."""
        raise NotImplementedError


class Canvas(ImportFormat):
    match = "ID"

    def column(self, roster: Roster, assignment: str, given: str | None, from_file: str | None) -> str | None:
        """--column, else the roster's `<assignment> (<canvas id>)` when there is one (the grades go to
        that assignment), else the id (a new assignment on import)."""
        existing = [name for name in roster.columns if name.startswith(f"{assignment} (") and name.endswith(")")]
        return given or (existing[0] if len(existing) == 1 else assignment)

    def write(self, roster: Roster, matched: list[tuple[dict[str, str], str]], target: Path, *, column: str | None,
              max_score: float) -> Path:
        assert column is not None
        return _table(target, CANVAS_USER_COLUMNS, column, matched,
                      ["Points Possible", *[""] * (len(CANVAS_USER_COLUMNS) - 1), f"{max_score:g}"])


class Moodle(ImportFormat):
    match = "Email address"

    def write(self, roster: Roster, matched: list[tuple[dict[str, str], str]], target: Path, *, column: str | None,
              max_score: float) -> Path:
        assert column is not None
        users = tuple([name for name in MOODLE_USER_COLUMNS if name in roster.columns]
                      + ([roster.match] if roster.match not in MOODLE_USER_COLUMNS else []))
        return _table(target, users, column, matched)


class MoodleWorksheet(ImportFormat):
    """The grading worksheet as it came, its own headers kept, with the grade column filled."""
    match = "Identifier"

    def roster(self, path: Path, match: str | None, worksheet_columns: str | None) -> tuple[Roster, str | None]:
        if match:   # the identifier column named: the grade column is found as without --match
            return read_roster(path, match, participant=True), None
        # the worksheet's identifier and grade columns, in the site's language
        return read_worksheet(path, worksheet_columns)

    def column(self, roster: Roster, assignment: str, given: str | None, from_file: str | None) -> str | None:
        """The worksheet's own grade column (--column is not used); None: `write` finds it."""
        return from_file

    def write(self, roster: Roster, matched: list[tuple[dict[str, str], str]], target: Path, *, column: str | None,
              max_score: float) -> Path:
        grade = column or worksheet_columns(roster.columns, list(roster.students.values()), None, roster.path)[1]
        if grade not in roster.columns:
            raise ExportError(f"{roster.path}: no column {grade!r} (its columns: {', '.join(roster.columns)})")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, roster.columns)
            writer.writeheader()
            for row, value in matched:
                writer.writerow({**row, grade: value})
        return target


def formats() -> dict[str, Callable[[], ImportFormat]]:
    """The formats `autograder export` knows, by name: the `autograder.lms_formats` entry points, each
    imported only when its format is asked for."""
    return {point.name: _Lazy(point) for point in entry_points(group=ENTRY_POINTS)}


class _Lazy:
    """An entry point that loads its class when called; a plug-in that cannot be imported is an
    ExportError naming it (the other formats still work)."""

    def __init__(self, point: EntryPoint):
        self.point = point

    def __call__(self) -> ImportFormat:
        try:
            return self.point.load()()
        except Exception as error:  # the plug-in's own import or constructor
            raise ExportError(f"the format {self.point.name!r} ({self.point.value}) cannot be loaded: "
                              f"{type(error).__name__}: {error}") from None


def import_format(name: str) -> ImportFormat:
    known = formats()
    if name not in known:
        raise ExportError(f"unknown format {name!r} (one of {', '.join(sorted(known))})")
    return known[name]()


def write(roster: Roster, grades: dict[str, Grade], max_score: float, assignment: str, fmt: str | ImportFormat,
          target: Path, *, missing: str = "zero", column: str | None = None, grade_column: str | None = None) -> Path:
    """The LMS's import file of format `fmt` (its name, or the instance that read the roster) at
    `target`: every roster student with their grade (`rows`), in the assignment's column (`column`,
    `grade_column` from the file itself, else the format's)."""
    plugin = import_format(fmt) if isinstance(fmt, str) else fmt
    matched = rows(roster, grades, missing)
    return plugin.write(roster, matched, target, column=plugin.column(roster, assignment, column, grade_column),
                        max_score=max_score)


def _table(target: Path, users: tuple[str, ...], column: str, matched: list[tuple[dict[str, str], str]],
           under_header: list[str] | None = None) -> Path:
    """A CSV of the roster's `users` columns and the grade `column`, one line per roster student."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*users, column])
        if under_header:
            writer.writerow(under_header)
        for row, value in matched:
            writer.writerow([*(row.get(user, "") for user in users), value])
    return target
