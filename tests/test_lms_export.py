"""`autograder export`: grades.csv (as `autograder grade` writes it) to Canvas's and Moodle's import CSV,
matched against the roster the LMS exported. Fast: nothing is graded."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.grading import grades_csv
from autograder.grading.results import ClassResult, Row
from autograder.grading.status import Status
from autograder.lms import grade_import as export, roster
from autograder.runfolder import read_grades

ROOT = Path(__file__).resolve().parent.parent

CANVAS_ROSTER = """\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,01_session_vs_eager (4711),Current Score
    Points Possible,,,,,16,(read only)
"Lovelace, Ada",101,S101,ada,A,,
"Hopper, Grace",102,S102,grace,A,,
"Turing, Alan",103,S103,alan,B,,
"""

MOODLE_ROSTER = """First name,Last name,ID number,Institution,Department,Email address,Assignment: Lab 1 (Real)
Ada,Lovelace,S101,Uni,CS,ada@example.org,-
Grace,Hopper,S102,Uni,CS,grace@example.org,-
"""


def grades_file(folder: Path, rows: list[Row], notebooks: dict[str, float]) -> Path:
    result = ClassResult("01_session_vs_eager", rows, [], sum(notebooks.values()), folder, notebooks=notebooks)
    return grades_csv.write_csv(result)


def row(student: str, score: float, *, notebook: str = "01_session_vs_eager.ipynb", max_score: float = 16,
        status: Status = Status.GRADED, reason: str = "") -> Row:
    return Row(student, "01_session_vs_eager", notebook=notebook, score=score, raw_score=score, max_score=max_score,
               status=status, reason=reason)


def read_grades_of(path: Path):
    return export.grades_of(read_grades(path))


def read_csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def write_roster(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_canvas_import_keeps_the_export_layout_and_the_existing_assignment_column(tmp_path):
    grades, max_score = read_grades_of(grades_file(tmp_path, [row("101", 12.5), row("103", 16)],
                                                       {"01_session_vs_eager.ipynb": 16}))
    students = roster.read(write_roster(tmp_path, CANVAS_ROSTER), "ID")
    target = export.write(students, grades, max_score, "01_session_vs_eager", "canvas", tmp_path / "canvas.csv")
    assert read_csv(target) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01_session_vs_eager (4711)"],
        ["Points Possible", "", "", "", "", "16"],
        ["Lovelace, Ada", "101", "S101", "ada", "A", "12.5"],
        ["Hopper, Grace", "102", "S102", "grace", "A", "0"],    # in the roster, no submission: 0
        ["Turing, Alan", "103", "S103", "alan", "B", "16"],
    ]


def test_missing_blank_leaves_the_cell_empty_and_a_new_column_is_named_after_the_assignment(tmp_path):
    grades, max_score = read_grades_of(grades_file(tmp_path, [row("101", 3)], {"01_session_vs_eager.ipynb": 16}))
    plain = CANVAS_ROSTER.replace(",01_session_vs_eager (4711)", "").replace(",16,(read only)", ",(read only)")
    plain = plain.replace(",,\n", ",\n")
    students = roster.read(write_roster(tmp_path, plain), "ID")
    target = export.write(students, grades, max_score, "01_session_vs_eager", "canvas", tmp_path / "c.csv",
                          missing="blank")
    lines = read_csv(target)
    assert lines[0][-1] == "01_session_vs_eager"
    assert [line[-1] for line in lines[2:]] == ["3", "", ""]


def test_the_grade_is_the_penalised_score_summed_over_the_notebooks(tmp_path):
    late = row("101", 6, notebook="a.ipynb", max_score=10)
    late.raw_score, late.penalty = 8, 2
    path = grades_file(tmp_path, [late, row("101", 5, notebook="b.ipynb", max_score=6)],
                       {"a.ipynb": 10, "b.ipynb": 6})
    grades, max_score = read_grades_of(path)
    assert grades["101"] == export.Grade(11, 16) and max_score == 16


def test_moodle_import_has_the_rosters_user_columns_and_one_grade_column(tmp_path):
    grades, max_score = read_grades_of(grades_file(tmp_path, [row("grace@example.org", 9)],
                                                       {"01_session_vs_eager.ipynb": 16}))
    students = roster.read(write_roster(tmp_path, MOODLE_ROSTER), "Email address")
    target = export.write(students, grades, max_score, "01_session_vs_eager", "moodle", tmp_path / "m.csv")
    assert read_csv(target) == [
        ["First name", "Last name", "ID number", "Institution", "Department", "Email address", "01_session_vs_eager"],
        ["Ada", "Lovelace", "S101", "Uni", "CS", "ada@example.org", "0"],
        ["Grace", "Hopper", "S102", "Uni", "CS", "grace@example.org", "9"],
    ]


def test_a_graded_student_missing_from_the_roster_writes_nothing_and_is_named(tmp_path):
    grades, max_score = read_grades_of(grades_file(tmp_path, [row("101", 1), row("999", 2), row("998", 2)],
                                                       {"01_session_vs_eager.ipynb": 16}))
    students = roster.read(write_roster(tmp_path, CANVAS_ROSTER), "ID")
    with pytest.raises(export.ExportError, match="2 graded student.*998, 999"):
        export.write(students, grades, max_score, "01_session_vs_eager", "canvas", tmp_path / "c.csv")
    assert not (tmp_path / "c.csv").exists()


def test_a_roster_with_an_id_twice_is_ambiguous_and_names_the_lines(tmp_path):
    twice = CANVAS_ROSTER + '"Lovelace, Ada (2)",101,S104,ada2,B,,\n'
    with pytest.raises(roster.RosterError, match=r"'101' on lines 3, 6"):
        roster.read(write_roster(tmp_path, twice), "ID")


def test_a_roster_without_the_match_column_names_its_columns(tmp_path):
    with pytest.raises(roster.RosterError, match="no column 'Email address'.*Student, ID"):
        roster.read(write_roster(tmp_path, CANVAS_ROSTER), "Email address")


def test_a_row_the_grader_failed_blocks_the_export(tmp_path):
    path = grades_file(tmp_path, [row("101", 0, status=Status.ERROR, reason="grading crashed: boom"), row("102", 3)],
                       {"01_session_vs_eager.ipynb": 16})
    with pytest.raises(export.ExportError, match="101 has status error .*re-grade it first"):
        read_grades_of(path)


def cli_export(grades: Path, roster_path: Path, target: Path, fmt: str = "canvas", *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder.cli", "export", "01_session_vs_eager", "--format",
                           fmt, "--roster", str(roster_path), "--grades", str(grades), "--out", str(target), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_cli_exits_2_with_every_problem_and_writes_nothing(tmp_path):
    path = grades_file(tmp_path, [row("555", 1)], {"01_session_vs_eager.ipynb": 16})
    roster_path = write_roster(tmp_path, CANVAS_ROSTER)
    target = tmp_path / "out.csv"
    done = cli_export(path, roster_path, target)
    assert done.returncode == 2 and "nothing written" in done.stderr and "555" in done.stderr
    assert not target.exists()


def test_the_cli_writes_the_import_file_and_says_who_had_no_submission(tmp_path):
    path = grades_file(tmp_path, [row("101", 4)], {"01_session_vs_eager.ipynb": 16})
    roster_path = write_roster(tmp_path, CANVAS_ROSTER)
    target = tmp_path / "out.csv"
    done = cli_export(path, roster_path, target)
    assert done.returncode == 0, done.stderr
    assert "3 students, 1 graded, 2 without a submission (0): 102, 103" in done.stdout
    assert read_csv(target)[2][-1] == "4"


WORKSHEET = """Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,Last modified (submission),Last modified (grade),Feedback comments
Participant 1001,Ada Lovelace,ada@example.org,Submitted for grading,,16.00,Yes,"Monday, 4 January 2027, 10:00 AM",-,
Participant 1002,Grace Hopper,grace@example.org,Submitted for grading,,16.00,Yes,"Monday, 4 January 2027, 11:00 AM",-,
Participant 1003,Alan Turing,alan@example.org,No submission,,16.00,Yes,-,-,
"""


def test_moodle_worksheet_goes_back_with_its_grade_column_filled(tmp_path):
    """Moodle's download of submissions names students by participant id, the number in the grading
    worksheet's Identifier; the worksheet goes back as it came, with Grade filled."""
    grades = grades_file(tmp_path, [row("1001", 12), row("1002", 16)], {"01_session_vs_eager.ipynb": 16})
    (tmp_path / "worksheet.csv").write_text(WORKSHEET)
    result = cli_export(grades, tmp_path / "worksheet.csv", tmp_path / "upload.csv", "moodle-worksheet")
    assert result.returncode == 0, result.stderr
    with (tmp_path / "upload.csv").open(newline="") as handle:
        lines = list(csv.DictReader(handle))
    with (tmp_path / "worksheet.csv").open(newline="") as handle:
        before = list(csv.DictReader(handle))
    assert [line["Grade"] for line in lines] == ["12", "16", "0"]
    assert [{k: v for k, v in line.items() if k != "Grade"} for line in lines] == \
        [{k: v for k, v in line.items() if k != "Grade"} for line in before]


# The worksheet of a German and of a French Moodle site, in gradingtable.php's download order (recordid,
# fullname, email, status, grade, grademax, gradecanbechanged, lastmodifiedsubmission, lastmodifiedgrade,
# feedback). Headers and the identifier's word are the lang packs' strings (AMOS, as mirrored in
# projectestac/moodle-langpacks: assign's recordid, hiddenuser, maxgrade, gradecanbechanged,
# lastmodifiedsubmission, lastmodifiedgrade; "Bewertung"/"Note" and "Vollständiger Name"/"Nom complet" as
# those packs translate grade and fullname elsewhere). The email and status headers, the status values and
# "Kommentare"/"Commentaires" are plausible translations, not checked against the packs. German's
# hiddenuser has no trailing space ("Teilnehmer/in1001"); its maximum grade has a decimal comma.
WORKSHEET_DE = """ID,Vollständiger Name,E-Mail-Adresse,Status,Bewertung,Bestwertung,Bewertung kann geändert werden,Zuletzt geändert (Abgabe),Zuletzt geändert (Bewertung),Feedback als Kommentar
Teilnehmer/in1001,Ada Lovelace,ada@example.org,Zur Bewertung abgegeben,,"16,00",Ja,"Montag, 4. Januar 2027, 10:00",-,
Teilnehmer/in1002,Grace Hopper,grace@example.org,Zur Bewertung abgegeben,,"16,00",Ja,"Montag, 4. Januar 2027, 11:00",-,
Teilnehmer/in1003,Alan Turing,alan@example.org,Keine Abgabe,,"16,00",Ja,-,-,
"""
WORKSHEET_FR = """Identifiant,Nom complet,Adresse de courriel,Statut,Note,Note maximale,La note peut être modifiée,Dernière modification (travail remis),Dernière modification (note),Commentaires
Participant 1001,Ada Lovelace,ada@example.org,Remis pour évaluation,,"16,00",Oui,"lundi 4 janvier 2027, 10:00",-,
Participant 1002,Grace Hopper,grace@example.org,Remis pour évaluation,,"16,00",Oui,"lundi 4 janvier 2027, 11:00",-,
Participant 1003,Alan Turing,alan@example.org,Aucun devoir,,"16,00",Oui,-,-,
"""


@pytest.mark.parametrize(("text", "grade"), [(WORKSHEET_DE, "Bewertung"), (WORKSHEET_FR, "Note"), (WORKSHEET, "Grade")])
def test_a_worksheet_in_another_language_is_filled_in_its_grade_column_and_keeps_its_headers(tmp_path, text, grade):
    """Moodle writes the worksheet's headers in the site's language and reads them back the same way: the
    identifier and grade columns are found by their values and Moodle's column order, the headers kept."""
    grades = grades_file(tmp_path, [row("1001", 12.5), row("1002", 16)], {"01_session_vs_eager.ipynb": 16})
    (tmp_path / "worksheet.csv").write_text(text, encoding="utf-8")
    result = cli_export(grades, tmp_path / "worksheet.csv", tmp_path / "upload.csv", "moodle-worksheet")
    assert result.returncode == 0, result.stderr
    assert "3 students, 2 graded" in result.stdout
    before, after = read_csv(tmp_path / "worksheet.csv"), read_csv(tmp_path / "upload.csv")
    assert after[0] == before[0]
    column = before[0].index(grade)
    assert [line[column] for line in after[1:]] == ["12.5", "16", "0"]
    assert [line[:column] + line[column + 1:] for line in after] == [line[:column] + line[column + 1:] for line in before]


def test_an_ambiguous_worksheet_is_refused_and_the_columns_can_be_named(tmp_path):
    """Two columns that could be the grade (each numbers followed by one same number): nothing is written,
    the message names both and the option; --worksheet-columns settles it."""
    text = """Kennung,Name,Punkte,Maximum,Bonus,Maximum Bonus
Teilnehmer/in1001,Ada Lovelace,,16,,2
Teilnehmer/in1002,Grace Hopper,,16,,2
"""
    grades = grades_file(tmp_path, [row("1001", 12), row("1002", 16)], {"01_session_vs_eager.ipynb": 16})
    (tmp_path / "worksheet.csv").write_text(text, encoding="utf-8")
    refused = cli_export(grades, tmp_path / "worksheet.csv", tmp_path / "upload.csv", "moodle-worksheet")
    assert refused.returncode == 2
    assert "cannot tell which column is the grade" in refused.stderr
    assert "each of Punkte, Bonus could be it" in refused.stderr
    assert "--worksheet-columns" in refused.stderr
    assert not (tmp_path / "upload.csv").exists()
    named = cli_export(grades, tmp_path / "worksheet.csv", tmp_path / "upload.csv", "moodle-worksheet",
                       "--worksheet-columns", "Kennung,Punkte")
    assert named.returncode == 0, named.stderr
    assert read_csv(tmp_path / "upload.csv")[1:] == [["Teilnehmer/in1001", "Ada Lovelace", "12", "16", "", "2"],
                                                      ["Teilnehmer/in1002", "Grace Hopper", "16", "16", "", "2"]]
    wrong = cli_export(grades, tmp_path / "worksheet.csv", tmp_path / "upload.csv", "moodle-worksheet",
                       "--worksheet-columns", "Identifiant,Note")
    assert wrong.returncode == 2
    assert "--worksheet-columns 'Identifiant,Note'" in wrong.stderr and "no column Identifiant, Note" in wrong.stderr


def test_a_worksheet_without_participant_numbers_is_refused(tmp_path):
    with pytest.raises(export.ExportError, match="nor a first column whose every value is a word and a participant"):
        export.worksheet_columns(["Name", "Punkte", "Maximum"], [{"Name": "Ada", "Punkte": "", "Maximum": "16"}])
    with pytest.raises(export.ExportError, match=r"participant numbers are in Kennung, not first"):
        export.worksheet_columns(["Name", "Kennung", "Note", "Max"],
                                 [{"Name": "Ada", "Kennung": "Teilnehmer/in1", "Note": "", "Max": "16"}])
    with pytest.raises(export.ExportError, match="no column of numbers is followed by the maximum grade"):
        export.worksheet_columns(["Kennung", "Name", "Note"], [{"Kennung": "Teilnehmer/in1", "Name": "Ada", "Note": ""}])


def test_a_grade_export_is_no_worksheet(tmp_path):
    grades = grades_file(tmp_path, [row("ada@example.org", 12)], {"01_session_vs_eager.ipynb": 16})
    (tmp_path / "moodle.csv").write_text(MOODLE_ROSTER)
    students = roster.read(tmp_path / "moodle.csv", "Email address")
    grades_read, max_score = read_grades_of(grades)
    with pytest.raises(export.ExportError, match="not a Moodle grading worksheet: no column Identifier"):
        export.write(students, grades_read, max_score, "01_session_vs_eager", "moodle-worksheet", tmp_path / "x.csv")


def test_a_row_that_never_ran_and_names_no_roster_student_is_left_out_and_listed(tmp_path):
    grades = grades_file(tmp_path, [row("101", 12), row("notes.txt", 0, status=Status.INVALID, reason="stray"),
                                    row("999", 0, status=Status.INVALID, reason="broken")],
                         {"01_session_vs_eager.ipynb": 16})
    (tmp_path / "canvas.csv").write_text(CANVAS_ROSTER)
    result = cli_export(grades, tmp_path / "canvas.csv", tmp_path / "import.csv")
    assert result.returncode == 0, result.stderr
    assert "left out, not in the roster and never graded: 999" in result.stdout
    assert "left out, not in the roster and never graded: notes.txt" in result.stdout
    graded_unknown = grades_file(tmp_path, [row("101", 12), row("999", 3)], {"01_session_vs_eager.ipynb": 16})
    assert cli_export(graded_unknown, tmp_path / "canvas.csv", tmp_path / "import2.csv").returncode == 2


def test_a_score_with_written_answers_still_to_grade_is_exported_and_said_not_final(tmp_path):
    grades = grades_file(tmp_path, [row("101", 12, status=Status.NEEDS_MANUAL_GRADE, reason="written answers"),
                                    row("102", 16)], {"01_session_vs_eager.ipynb": 16})
    (tmp_path / "canvas.csv").write_text(CANVAS_ROSTER)
    result = cli_export(grades, tmp_path / "canvas.csv", tmp_path / "import.csv")
    assert result.returncode == 0, result.stderr
    assert "not final, written answers still to grade by hand (autograder formgrade, or overrides): 101" in result.stdout


def test_another_lms_is_a_plug_in_class_registered_by_name(tmp_path, monkeypatch):
    """A format is an `ImportFormat` subclass found under the `autograder.lms_formats` entry points: the
    three of the course are registered, an unknown name is refused with the known ones, and a course's
    own class (here registered by hand, as an entry point would) writes the file with the matching and
    the missing grades done for it."""
    from importlib.metadata import EntryPoint

    from autograder import cli

    assert cli.LMS_FORMATS == export.ENTRY_POINTS, "the command lists the formats the library loads"
    assert {name: type(make()).__name__ for name, make in export.formats().items()} == {
        "canvas": "Canvas", "moodle": "Moodle", "moodle-worksheet": "MoodleWorksheet"}
    broken = EntryPoint(name="broken", value="no_such_lms_module:Format", group=export.ENTRY_POINTS)
    monkeypatch.setattr(export, "formats", lambda: {"broken": export._Lazy(broken)})
    with pytest.raises(export.ExportError, match="the format 'broken' .no_such_lms_module:Format. cannot be loaded: "
                                                 "ModuleNotFoundError"):
        export.import_format("broken")

    class Tabbed(export.ImportFormat):
        match = "login"

        def write(self, roster, matched, target, *, column, max_score):
            target.write_text("".join(f"{line['login']}\t{grade}/{max_score:g}\n" for line, grade in matched))
            return target

    monkeypatch.setattr(export, "formats", lambda: {"canvas": export.Canvas, "tabbed": Tabbed})
    # the instance that read the roster writes the file
    with pytest.raises(export.ExportError, match="unknown format 'blackboard' \\(one of canvas, tabbed\\)"):
        export.import_format("blackboard")
    (tmp_path / "class.csv").write_text("login,name\nada,Ada\ngrace,Grace\n", encoding="utf-8")
    students, column = export.import_format("tabbed").roster(tmp_path / "class.csv", None, None)
    assert column is None and set(students.students) == {"ada", "grace"}
    grades = {"ada": export.Grade(12.0, 16.0)}
    written = export.write(students, grades, 16.0, "01_session_vs_eager", export.import_format("tabbed"),
                           tmp_path / "out.tsv", missing="blank")
    assert written.read_text() == "ada\t12/16\ngrace\t/16\n"
