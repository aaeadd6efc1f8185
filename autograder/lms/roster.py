"""The class list the LMS exports: Canvas's gradebook export, Moodle's grade export or Moodle's grading
worksheet (CSV); or a plain one, `student_id,name`.

Either file has a header row and one row per student; one of its columns identifies the student the
way the submissions folder names them (`--match`): Canvas's `ID` (the Canvas user id) by default,
Moodle's `Email address` by default, the worksheet's `Identifier` ("Participant 1001": the participant
id that Moodle's download of submissions names its folders with, which is what is matched; in another
language the column `worksheet_identifier` finds, for the export and the group roster alike). Canvas's
export has a `Points Possible` row (and, in newer versions, other rows without a student id) under the
header: rows with an empty id are not students.

`names` reads the students' names from any of these files for grades.csv and report.html
(`autograder grade --roster`); which columns it reads is `NAME_LAYOUTS`, and a grading worksheet's
in the site's language: its `Full name` column by the header of any language in `moodle_strings`,
its identifier as `worksheet_identifier` finds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder import csvfile
from autograder.errors import AutograderError
from autograder.lms import moodle_strings


class RosterError(AutograderError):
    """A roster that cannot be used as it is: the message says which file, line and column."""


@dataclass(frozen=True)
class Roster:
    path: Path
    columns: list[str]
    match: str                        # the column that identifies a student
    students: dict[str, dict[str, str]]  # id -> the student's row, in roster order

    def ids(self) -> list[str]:
        return list(self.students)


def participant_id(value: str) -> str:
    """The participant id of a worksheet's `Identifier` ("Participant 1001" in English, other words in
    other languages: the number at its end)."""
    found = re.search(r"(\d+)\s*$", value)
    return found.group(1) if found else value


WORKSHEET_ID = "Identifier"   # Moodle's grading worksheet: "Participant 1001"
# The identifier's every value, as mod/assign/gradingtable.php writes it in its download mode.
_PARTICIPANT = re.compile(r"^(\D*\S)\s*(\d+)$")   # get_string('hiddenuser', 'assign') . <participant id>


def _participant_columns(columns: list[str], lines: list[dict[str, str]]) -> list[str]:
    """The columns whose every value is one and the same word(s) followed by a number: "Participant 1001",
    "Teilnehmer/in1001", ... (the identifier: `get_string('hiddenuser', 'assign')` and the record id)."""
    found = []
    for name in columns:
        prefixes = {match.group(1) if match else None
                    for match in (_PARTICIPANT.match(line.get(name, "")) for line in lines)}
        prefix = next(iter(prefixes)) if len(prefixes) == 1 else None   # the word(s) every value starts with
        if prefix is not None and re.search(r"[^\W\d_]", prefix):
            found.append(name)
    return found


def worksheet_identifier(columns: list[str], lines: list[dict[str, str]], where: object,
                         error: type[AutograderError], hint: str = "") -> str:
    """A grading worksheet's identifier column, in the site's language: `Identifier` (English), else the
    first column when its every value is one word followed by the participant number. gradingtable.php's
    download always writes `recordid` first (in place of the picture, or alone when identities are
    hidden), headed `get_string('recordid', 'assign')` in the site's language. Anything else is `error`
    (saying where participant numbers are, if anywhere), its message ending with `hint`."""
    if WORKSHEET_ID in columns:
        return WORKSHEET_ID
    ids = _participant_columns(columns, lines)
    if not columns or columns[0] not in ids:
        raise error(f"{where} is not a Moodle grading worksheet: no column {WORKSHEET_ID}, nor a first column whose "
                    "every value is a word and a participant number ('Participant 1001', as Moodle writes it)"
                    + (f" (participant numbers are in {', '.join(ids)}, not first)" if ids else "") + hint)
    return columns[0]


def read(path: Path, match: str, *, participant: bool = False) -> Roster:
    """Read `path`; every id in column `match` once (a worksheet's `Identifier`, or with `participant` its
    identifier column in another language, as its participant id). Duplicates are listed with their
    lines, all at once."""
    key = participant_id if participant or match == WORKSHEET_ID else (lambda value: value)
    columns, lines = csvfile.read_table(path, (), error=RosterError)
    if match not in columns:
        raise RosterError(f"{path}: no column {match!r} to match students by (its columns: {', '.join(columns)})")
    students: dict[str, dict[str, str]] = {}
    numbers: dict[str, list[int]] = {}
    for line in lines:
        student = key(line[match])
        if not student:
            continue
        numbers.setdefault(student, []).append(line.number)
        students.setdefault(student, line.values)
    twice = [f"{student!r} on lines {', '.join(map(str, found))}" for student, found in numbers.items() if len(found) > 1]
    if twice:
        raise RosterError(f"{path}: the same {match} more than once (ambiguous): " + "; ".join(twice))
    if not students:
        raise RosterError(f"{path}: no student rows (every {match} is empty)")
    return Roster(path, columns, match, students)


# A roster's layout, recognised by its columns: (id column, name columns) -> the student's name is the
# name columns joined by a space. In this order: a file with a `student_id` column is a plain one. Moodle's
# grading worksheet is none of these: its headers are in the site's language (`names`).
NAME_LAYOUTS = (
    ("student_id", ("name",)),                           # plain
    ("ID", ("Student",)),                                # Canvas's gradebook export: "Lovelace, Ada"
    ("Email address", ("First name", "Last name")),      # Moodle's grade export
)


def names(path: Path) -> dict[str, str]:
    """Student id -> name, from a roster in one of the `NAME_LAYOUTS` or a Moodle grading worksheet in any
    language of `moodle_strings` (its participant id -> its full name); each id once (`read`'s checks)."""
    columns, lines = csvfile.read_table(path, (), error=RosterError)
    for match, name_columns in NAME_LAYOUTS:
        if match in columns and all(column in columns for column in name_columns):
            roster = read(path, match)
            return {student: " ".join(filter(None, (row.get(column, "") for column in name_columns)))
                    for student, row in roster.students.items()}
    full_name = next((column for column in columns if column in moodle_strings.FULL_NAME), None)
    if full_name:
        identifier = worksheet_identifier(columns, [line.values for line in lines], path, RosterError,
                                          f"; its column {full_name} is the header of a grading worksheet's "
                                          f"names in Moodle (its columns: {', '.join(columns)})")
        roster = read(path, identifier, participant=True)
        return {student: row.get(full_name, "") for student, row in roster.students.items()}
    layouts = "; ".join(f"{match} with {' and '.join(name_columns)}" for match, name_columns in NAME_LAYOUTS)
    raise RosterError(f"{path}: no columns to read names from (its columns: {', '.join(columns) or 'none'}); "
                      f"expected one of: {layouts}; or a Moodle grading worksheet ({WORKSHEET_ID} and Full name, "
                      "in any language of Moodle's lang packs)")
