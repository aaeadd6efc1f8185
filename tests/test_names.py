"""Names and markers where people read them: grades.csv carries the student's name (an LMS download's, or
the roster's given with `autograder grade --roster`), the LMS's late marker as a column of its own, and
an empty `late_by` for a student without a due date; `read_grades` reads them back, and reads a
grades.csv written before those columns. Fast: the run's read and settle steps on plain files, no
kernel (report.html's names and written answers: tests/test_grading_units.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat
import pytest

from autograder import cli as autograder_cli
from autograder.csvfile import CsvError
from autograder.grading import pipeline
from autograder.grading.results import Row
from autograder.lms import roster
from autograder.runfolder import RunFolder, Status, read_grades
from autograder.settings import GradingSettings
from tests import notebooks
from tests.test_lms_export import WORKSHEET_DE, WORKSHEET_FR

NAME = "ps1.ipynb"
CANVAS_ROSTER = """\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,ps1 (4711)
    Points Possible,,,,,4
"Doe, Jane",12345,S1,jane,A,
"Smith, John",23456,S2,john,A,
"""


def graded_rows(tmp_path: Path, **settings) -> dict[str, dict[str, str]]:
    """A Canvas download of two students (John's marked LATE) through the run's read, settle and spread steps,
    its grades.csv written and read back by student."""
    source = tmp_path / "source" / "ps1"
    source.mkdir(parents=True)
    nbformat.write(notebooks.tiny_assignment(), source / NAME)
    submissions = tmp_path / "download"
    submissions.mkdir()
    data = nbformat.writes(notebooks.tiny_assignment()).encode()
    (submissions / "doejane_12345_900_ps1.ipynb").write_bytes(data)
    (submissions / "smithjohn_LATE_23456_901_ps1.ipynb").write_bytes(data)
    run = RunFolder(tmp_path / "out")
    chosen = GradingSettings(**settings)
    the_class = pipeline.read("ps1", source, [source / NAME], run, submissions, chosen)
    rows = [Row(student, "ps1", notebook=NAME, score=2.0, max_score=4.0, status=Status.GRADED)
            for student in ("12345", "23456")]
    rows = pipeline.spread(the_class, pipeline.settle(the_class, rows))
    pipeline.write(the_class, rows, [], chosen)
    with run.grades_csv.open(newline="", encoding="utf-8") as handle:
        return {line["student_id"]: line for line in csv.DictReader(handle)}


def test_grades_csv_has_the_downloads_names_the_late_marker_and_no_late_by_without_a_due_date(tmp_path):
    rows = graded_rows(tmp_path)
    header = list(rows["12345"])
    assert header[:8] == ["student_id", "name", "group", "assignment", "notebook", "submitted_at", "lms_late", "late_by"]
    assert (rows["12345"]["name"], rows["12345"]["lms_late"], rows["12345"]["late_by"]) == ("doejane", "", "")
    assert (rows["23456"]["name"], rows["23456"]["lms_late"], rows["23456"]["late_by"]) == ("smithjohn", "yes", "")
    assert rows["23456"]["score"] == "2", "no term: no penalty, the marker is shown, not charged"
    lines = {line.student_id: line for line in read_grades(tmp_path / "out" / "grades.csv")}
    assert (lines["23456"].name, lines["23456"].lms_late, lines["23456"].late_by) == ("smithjohn", True, None)
    assert "<td>12345</td><td>doejane</td>" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


def test_the_roster_names_win_and_late_by_is_a_number_with_a_due_date(tmp_path):
    (tmp_path / "gradebook.csv").write_text(CANVAS_ROSTER, encoding="utf-8")
    (tmp_path / "term.toml").write_text('[due]\nps1 = "2027-01-15T23:59:00+01:00"\n[penalty]\nmethod = "per_day"\n'
                                        'percent_per_day = 10\n', encoding="utf-8")
    rows = graded_rows(tmp_path, roster=str(tmp_path / "gradebook.csv"), term=str(tmp_path / "term.toml"))
    assert (rows["12345"]["name"], rows["12345"]["lms_late"], rows["12345"]["late_by"]) == ("Doe, Jane", "", "0")
    assert (rows["23456"]["name"], rows["23456"]["lms_late"], rows["23456"]["late_by"]) == ("Smith, John", "yes", "0")
    assert rows["23456"]["score"] == "1.8", "marked late without a time: charged one started day"
    assert "<td>23456</td><td>Smith, John</td>" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("text, names", [
    (CANVAS_ROSTER, {"12345": "Doe, Jane", "23456": "Smith, John"}),
    ("Identifier,Full name,Email address,Status,Grade\nParticipant 1001,Jane Doe,jd@x.org,,\n"
     "Participant 1002,John Smith,js@x.org,,\n", {"1001": "Jane Doe", "1002": "John Smith"}),
    ("First name,Last name,ID number,Email address\nJane,Doe,S1,jd@x.org\nJohn,,S2,js@x.org\n",
     {"jd@x.org": "Jane Doe", "js@x.org": "John"}),
    ("student_id,name,section\nada,Ada Lovelace,A\nbo,,B\n", {"ada": "Ada Lovelace", "bo": ""}),
])
def test_a_roster_of_each_layout_gives_the_names(tmp_path, text, names):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    assert roster.names(path) == names


@pytest.mark.parametrize("text", [WORKSHEET_DE, WORKSHEET_FR], ids=["de", "fr"])
def test_a_grading_worksheet_in_another_language_gives_the_names(tmp_path, text):
    """A German or French site's worksheet (tests/test_lms_export.py's): the identifier found as the export
    finds it, the names by the lang packs' `fullname` header; each participant id once."""
    path = tmp_path / "worksheet.csv"
    path.write_text(text, encoding="utf-8")
    assert roster.names(path) == {"1001": "Ada Lovelace", "1002": "Grace Hopper", "1003": "Alan Turing"}
    path.write_text(text + text.splitlines()[1] + "\n", encoding="utf-8")
    with pytest.raises(roster.RosterError, match="the same .* more than once.*'1001' on lines 2, 5"):
        roster.names(path)


@pytest.mark.parametrize("text, message", [
    ("user,grade\nada,3\n", "no columns to read names from .*student_id with name"),
    ("student_id,name\nada,Ada\nada,Ada L.\n", "the same student_id more than once.*lines 2, 3"),
])
def test_an_unusable_roster_stops_the_run_before_grading(tmp_path, text, message):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(roster.RosterError, match=message):
        graded_rows(tmp_path, roster=str(path))
    assert not (tmp_path / "out" / "course-0").exists()


def test_read_grades_reads_the_new_columns_and_a_grades_csv_written_before_them(tmp_path):
    path = tmp_path / "grades.csv"
    common = "raw_score,penalty,score,max_score,status,reason,overrides,seconds,test_a"
    path.write_text(f"student_id,name,assignment,notebook,submitted_at,lms_late,late_by,{common}\n"
                    "ada,Ada Lovelace,ps1,ps1.ipynb,,yes,,3,0,3,4,graded,,,1,3\n"
                    "bo,,ps1,ps1.ipynb,2027-01-16T00:00:00+00:00,,3600,4,0,4,4,graded,,,1,\n", encoding="utf-8")
    ada, bo = read_grades(path)
    assert (ada.name, ada.lms_late, ada.late_by, ada.cells) == ("Ada Lovelace", True, None, {"test_a": 3.0})
    assert (bo.name, bo.lms_late, bo.late_by, bo.cells) == ("", False, 3600.0, {"test_a": None})
    path.write_text(f"student_id,assignment,notebook,submitted_at,late_by,{common}\n"
                    "ada,ps1,ps1.ipynb,,0,3,0,3,4,graded,,,1,3\n", encoding="utf-8")
    [old] = read_grades(path)
    assert (old.name, old.lms_late, old.late_by, old.cells) == ("", False, 0.0, {"test_a": 3.0})
    path.write_text(f"student_id,name,assignment,notebook,submitted_at,lms_late,late_by,{common}\n"
                    "ada,,ps1,ps1.ipynb,,LATE,,3,0,3,4,graded,,,1,3\n", encoding="utf-8")
    with pytest.raises(CsvError, match="line 2: lms_late 'LATE' is neither 'yes' nor empty"):
        read_grades(path)


def test_grade_takes_a_roster_option():
    args = autograder_cli.parser().parse_args(["grade", "ps1", "--submissions", "s", "--roster", "class.csv"])
    assert autograder_cli.settings_given(args)["roster"] == "class.csv"
