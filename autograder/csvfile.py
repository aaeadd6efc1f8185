"""The one reader of the CSV files people give the grader and the grader gives back.

    lines = csvfile.read(path, ("student_id", "due"))            # every line, checked header
    found = csvfile.parse(path, ("student_id", "due"), convert)  # every line converted, or every bad one named

Headers and values are stripped, a byte order mark (Excel, Canvas) is skipped, a line is numbered as
a spreadsheet shows it (the header is line 1). `parse` converts each line and, when any conversion
fails, raises one error that names every bad line with its file and line number.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from autograder.errors import AutograderError

T = TypeVar("T")


class CsvError(AutograderError):
    """A CSV file that cannot be used as it is: the message names the file and every bad line."""


class BadLine(CsvError):
    """Raised by a `parse` conversion: what is wrong with the line (`parse` adds its file and number)."""


@dataclass(frozen=True)
class Line:
    path: Path
    number: int                  # as a spreadsheet numbers it: the header is line 1
    values: dict[str, str]       # column -> value, both stripped; a missing value is ""

    def __getitem__(self, column: str) -> str:
        return self.values.get(column, "")

    @property
    def where(self) -> str:
        return f"{self.path} line {self.number}"


def read(path: Path, required: tuple[str, ...], *, error: type[AutograderError] = CsvError,
         hint: str = "") -> list[Line]:
    """Every line of `path`, after checking that its header has the `required` columns. `error` is the
    exception raised (a subclass of `AutograderError`); `hint` is added to a missing file's message."""
    return read_table(path, required, error=error, hint=hint)[1]


def read_table(path: Path, required: tuple[str, ...], *, error: type[AutograderError] = CsvError,
               hint: str = "") -> tuple[list[str], list[Line]]:
    """`read`, with the header's columns in their order."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as problem:
        raise error(f"{path}: {problem}{hint}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [name.strip() for name in reader.fieldnames or []]
    lacking = [name for name in required if name not in header]
    if lacking:
        raise error(f"{path}: expected the columns {', '.join(required)}, found {', '.join(header) or 'no header'}")
    return header, [Line(Path(path), number, {(key or "").strip(): (value or "").strip()
                                              for key, value in row.items() if key is not None})
                    for number, row in enumerate(reader, start=2)]


def parse(path: Path, required: tuple[str, ...], convert: Callable[[Line], T], *,
          error: type[AutograderError] = CsvError, hint: str = "") -> list[T]:
    """`convert` applied to every line of `path`; raises `error` naming every line whose conversion
    raised `BadLine`, all at once."""
    found, problems = [], []
    for line in read(path, required, error=error, hint=hint):
        try:
            found.append(convert(line))
        except BadLine as problem:
            problems.append(f"{line.where}: {problem}")
    if problems:
        raise error("\n".join(problems))
    return found


def number(line: Line, column: str) -> float:
    """The number in `column` of `line`, or `BadLine` naming the column and what it holds."""
    try:
        return float(line[column])
    except ValueError:
        raise BadLine(f"{column} {line[column]!r} is not a number") from None
