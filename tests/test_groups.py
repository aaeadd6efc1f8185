"""Group work (`--groups`, autograder.lms.groups): the three group rosters (plain, Canvas's group set
export, Moodle's grading worksheet of a team assignment), the errors named before anything is graded,
and a class downloaded from a plain folder, Canvas and Moodle graded with a group roster: each group's
submission graded once, its row in grades.csv once per member with the group named, the LMS's import
file and the feedback zip covering every member. Fast: a stand-in executor gives every job full marks,
no notebook runs and no nbgrader workspace is generated."""

from __future__ import annotations

import csv
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from autograder.execution import executors
from autograder.execution.jobs import Outcome
from autograder.execution.protocol import WorkerResult
from autograder.grading import pipeline
from autograder.lms import feedback_zip, grade_import, groups, roster
from autograder.runfolder import read_grades
from autograder.settings import GradingSettings

ASSIGNMENT = "ps1"

PLAIN = """group,student_id
Team A,ann
Team A,bob
Team B,dora
Team B,eli
"""

CANVAS_GROUPS = """name,canvas_user_id,user_id,login_id,sections,group_name,canvas_group_id,group_id
"Doe, Jane",12345,S1,jane,A,Group A,901,
"Smith, John",23456,S2,john,A,Group A,901,
"Lee, Ann",34567,S3,ann,A,,,
"Kim, Bo",45678,S4,bo,B,Group B,902,
"""

CANVAS_ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,ps1 (4711)
    Points Possible,,,,,6
"Doe, Jane",12345,S1,jane,A,
"Smith, John",23456,S2,john,A,
"Lee, Ann",34567,S3,ann,A,
"Kim, Bo",45678,S4,bo,B,
"""

WORKSHEET = """Identifier,Full name,Email address,Status,Group,Grade,Maximum Grade,Grade can be changed,Last modified (grade)
Participant 1001,Jane Doe,jane@example.org,Submitted for grading,Team Red,,6.00,Yes,-
Participant 1002,John Smith,john@example.org,Submitted for grading,Team Red,,6.00,Yes,-
Participant 1003,Ann Lee,ann@example.org,Submitted for grading,Default group,,6.00,Yes,-
Participant 1004,Bo Kim,bo@example.org,No submission,Team Blue,,6.00,Yes,-
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# --- the rosters


def test_a_plain_roster_lists_each_groups_members_in_order(tmp_path):
    found = groups.read(write(tmp_path / "groups.csv", PLAIN))
    assert {name: group.members for name, group in found.groups.items()} == {
        "Team A": ["ann", "bob"], "Team B": ["dora", "eli"]}
    assert found.of("bob").name == "Team A" and found.of("Team B").name == "Team B" and found.of("carl") is None
    assert found.of("7", "moodle", "Team A").name == "Team A", "Moodle's team folder, by the group's name"
    underscored = groups.read(write(tmp_path / "underscored.csv", "group,student_id\nTeam_Red,ann\n"))
    assert underscored.of("12", "moodle", "Team Red").name == "Team_Red", "Moodle's folder turns _ into spaces"


def test_canvas_group_set_export_matches_members_by_canvas_user_id(tmp_path):
    found = groups.read(write(tmp_path / "groups.csv", CANVAS_GROUPS))
    assert {name: group.members for name, group in found.groups.items()} == {
        "Group A": ["12345", "23456"], "Group B": ["45678"]}
    assert found.of("34567") is None, "an empty group_name is a student in no group"
    assert found.of("901").name == "Group A", "the canvas_group_id names the group too"
    assert found.groups["Group A"].names["23456"] == "Smith, John"


def test_moodle_worksheet_of_a_team_assignment_gives_participant_ids_and_the_teams(tmp_path):
    found = groups.read(write(tmp_path / "worksheet.csv", WORKSHEET))
    assert {name: group.members for name, group in found.groups.items()} == {
        "Team Red": ["1001", "1002"], "Team Blue": ["1004"]}
    assert found.of("1003") is None, "Default group: a student in no group"
    assert found.of("12", "moodle", "Team Red").name == "Team Red", "a team's folder names the group"


# The team worksheet of a German and of a French site: the headers and identifiers of
# tests/test_lms_export.py's WORKSHEET_DE and WORKSHEET_FR (German's "Teilnehmer/in1001" without a space,
# its decimal comma), with the group column gradingtable.php writes after the status, named and filled
# with the lang packs' strings (submissionteam "Gruppe"/"Groupe", defaultteam "Standard-Gruppe"/"Groupe
# par défaut"). The status values are plausible translations, not checked against the packs.
WORKSHEET_DE = """ID,Vollständiger Name,E-Mail-Adresse,Status,Gruppe,Bewertung,Bestwertung,Bewertung kann geändert werden,Zuletzt geändert (Bewertung)
Teilnehmer/in1001,Jane Doe,jane@example.org,Zur Bewertung abgegeben,Team Red,,"6,00",Ja,-
Teilnehmer/in1002,John Smith,john@example.org,Zur Bewertung abgegeben,Team Red,,"6,00",Ja,-
Teilnehmer/in1003,Ann Lee,ann@example.org,Zur Bewertung abgegeben,Standard-Gruppe,,"6,00",Ja,-
Teilnehmer/in1004,Bo Kim,bo@example.org,Keine Abgabe,Team Blue,,"6,00",Ja,-
"""
WORKSHEET_FR = """Identifiant,Nom complet,Adresse de courriel,Statut,Groupe,Note,Note maximale,La note peut être modifiée,Dernière modification (note)
Participant 1001,Jane Doe,jane@example.org,Remis pour évaluation,Team Red,,"6,00",Oui,-
Participant 1002,John Smith,john@example.org,Remis pour évaluation,Team Red,,"6,00",Oui,-
Participant 1003,Ann Lee,ann@example.org,Remis pour évaluation,Groupe par défaut,,"6,00",Oui,-
Participant 1004,Bo Kim,bo@example.org,Aucun devoir,Team Blue,,"6,00",Oui,-
"""


def groups_of(found: groups.Groups) -> dict[str, tuple[list[str], dict[str, str]]]:
    return {name: (group.members, group.names) for name, group in found.groups.items()}


@pytest.mark.parametrize("text", [WORKSHEET_DE, WORKSHEET_FR], ids=["de", "fr"])
def test_a_team_worksheet_in_another_language_reads_into_the_english_ones_groups(tmp_path, text):
    """The identifier found as the export finds it, the group and full name columns by their headers in
    the site's language, "Default group" in that language a student in no group."""
    english = groups.read(write(tmp_path / "english.csv", WORKSHEET))
    found = groups.read(write(tmp_path / "worksheet.csv", text))
    assert groups_of(found) == groups_of(english) == {
        "Team Red": (["1001", "1002"], {"1001": "Jane Doe", "1002": "John Smith"}),
        "Team Blue": (["1004"], {"1004": "Bo Kim"})}
    assert found.of("1003") is None
    assert groups.upload_name("moodle", "Team Red_12_assignsubmission_file/", found.groups["Team Red"], "1002") == \
        "John Smith_1002_assignsubmission_file/", "the member's name from the full name column"


@pytest.mark.parametrize(("text", "no_group", "several"), [
    (WORKSHEET_DE, "Kein Mitglied einer Gruppe. Die Abgabe von Aufgaben ist nicht möglich.",
     "Mitglied in mehreren Gruppen. Die Abgabe von Aufgaben ist nicht möglich."),
    (WORKSHEET_FR, "Membre d’aucun groupe\u00a0; impossible donc de remettre un travail.",
     "Membre de plusieurs groupes\u00a0; impossible donc de remettre un travail.")], ids=["de", "fr"])
def test_no_group_and_several_groups_are_recognised_in_the_sites_language(tmp_path, text, no_group, several):
    """Where the assignment requires a group, Moodle writes noteamgrader or multipleteamsgrader in the group
    column (the lang packs' strings, French's with a no-break space before its semicolon): the first is a
    student in no group, the second is refused."""
    default = "Standard-Gruppe" if text is WORKSHEET_DE else "Groupe par défaut"
    found = groups.read(write(tmp_path / "none.csv", text.replace(default, f'"{no_group}"')))
    assert found.of("1003") is None and list(found.groups) == ["Team Red", "Team Blue"]
    bo = "Teilnehmer/in1004" if text is WORKSHEET_DE else "Participant 1004"
    with pytest.raises(groups.GroupsError, match=f"line 5: {bo} is in more than one group"):
        groups.read(write(tmp_path / "several.csv", text.replace("Team Blue", f'"{several}"')))


def test_a_worksheet_in_a_language_not_known_is_refused_naming_its_columns(tmp_path):
    polish = ("Identyfikator,Imię i nazwisko,Status,Grupa,Ocena,Maksymalna ocena\n"
              "Uczestnik 1001,Jane Doe,Przesłane do oceny,Team Red,,6\n")
    with pytest.raises(groups.GroupsError) as raised:
        groups.read(write(tmp_path / "worksheet.csv", polish))
    message = str(raised.value)
    assert "a group column named as Moodle names it" in message and "Gruppe" in message, message
    assert "found Identyfikator, Imię i nazwisko, Status, Grupa, Ocena, Maksymalna ocena" in message, message
    assert "write the plain CSV from it" in message, message
    moved = "Vollständiger Name,ID,Gruppe\nJane Doe,Teilnehmer/in1001,Team Red\n"
    with pytest.raises(groups.GroupsError, match=r"participant numbers are in ID, not first\); its column Gruppe .*"
                                                  r"\(its columns: Vollständiger Name, ID, Gruppe\)"):
        groups.read(write(tmp_path / "moved.csv", moved))
    with pytest.raises(groups.GroupsError, match="more than one column could be the group's, Gruppe, Group"):
        groups.read(write(tmp_path / "two.csv", "ID,Gruppe,Group\nTeilnehmer/in1001,Team Red,Team Red\n"))


def test_a_student_in_two_groups_and_a_group_without_members_are_named_at_once(tmp_path):
    text = PLAIN + "Team B,bob\nTeam C,\n"
    with pytest.raises(groups.GroupsError) as raised:
        groups.read(write(tmp_path / "groups.csv", text))
    message = str(raised.value)
    assert "line 6: student bob is in two groups, 'Team A' (line 3) and 'Team B'" in message, message
    assert "line 7: group 'Team C' has no members" in message, message


def test_canvas_student_in_two_groups_and_moodles_several_groups_are_refused(tmp_path):
    with pytest.raises(groups.GroupsError, match="student 12345 is in two groups, 'Group A' .* and 'Group B'"):
        groups.read(write(tmp_path / "canvas.csv", CANVAS_GROUPS + '"Doe, Jane",12345,S1,jane,A,Group B,902,\n'))
    several = WORKSHEET.replace("Ann Lee,ann@example.org,Submitted for grading,Default group",
                                "Ann Lee,ann@example.org,Submitted for grading,"
                                '"Member of more than one group, so unable to make submissions."')
    with pytest.raises(groups.GroupsError, match="line 4: Participant 1003 is in more than one group"):
        groups.read(write(tmp_path / "worksheet.csv", several))


def test_a_file_that_is_no_group_roster_names_the_layouts(tmp_path):
    with pytest.raises(groups.GroupsError, match="not a group roster: expected the columns group, student_id"):
        groups.read(write(tmp_path / "groups.csv", "team,member\na,b\n"))


def test_a_group_with_two_submissions_names_both():
    found = groups.Groups(Path("groups.csv"), {}, {})
    team = groups.Group("Team A", members=["ann", "bob"])
    found.groups["Team A"] = team
    found.member_of.update(ann=team, bob=team)
    with pytest.raises(groups.GroupsError, match="group 'Team A' has 2 submissions, one each from ann and bob"):
        found.check([("ann", "", ""), ("bob", "", ""), ("carl", "", "")])
    assert found.check([("Team A", "", ""), ("carl", "", "")]) == {"Team A": team}


# --- a class graded with a group roster


def source_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    test = nbformat.v4.new_code_cell("assert True")
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": "test_a",
                                 "points": 6, "schema_version": 3}
    notebook.cells = [nbformat.v4.new_code_cell("x = 1"), test]
    return notebook


class Release:
    """Stands for the nbgrader workspace: its release folder holds the source notebook."""
    def __init__(self, folder: Path):
        self.folder = folder

    def release_dir(self) -> Path:
        return self.folder


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A source folder and a stand-in executor that gives every job full marks and a feedback page
    naming the submission; `ran` lists the submissions it graded."""
    source = tmp_path / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    nbformat.write(source_notebook(), source / f"{ASSIGNMENT}.ipynb")
    ran: list[str] = []

    class FullMarks:
        workspaces = 1

        def run_all(self, batch, workspaces):
            for job in batch:
                ran.append(job.student_id)
                yield job, Outcome(0.5, host="here", feedback_html=f"<p>feedback of {job.student_id}</p>",
                                   result=WorkerResult(score=6.0, max_score=6.0, cells={"test_a": 6.0}))

        def close(self):
            pass

    monkeypatch.setattr(executors, "open_executor", lambda settings, run: FullMarks())
    monkeypatch.setattr(pipeline, "_workspaces", lambda graded, settings, count: [Release(source)])
    monkeypatch.setattr(pipeline, "_similar", lambda graded, releases, settings: [])
    return {"source": source, "ran": ran, "notebook": nbformat.writes(source_notebook()).encode(), "base": tmp_path}


def grade(course, submissions: Path, roster_text: str, **settings) -> Path:
    out = course["base"] / "out"
    roster_path = write(course["base"] / "groups.csv", roster_text)
    pipeline.grade_class(ASSIGNMENT, course["source"], submissions, out, progress=lambda line: None,
                         settings=GradingSettings(sandbox="none", workers=1, groups=str(roster_path), **settings))
    return out


def release_zip(out: Path) -> zipfile.ZipFile:
    feedback_zip.build(out, ASSIGNMENT, out / "feedback.zip", due=None, include_results=False,
                       now=datetime(2027, 2, 1, tzinfo=timezone.utc))
    return zipfile.ZipFile(out / "feedback.zip")


def test_a_folder_class_grades_each_group_once_and_gives_every_member_its_row(course):
    submissions = course["base"] / "submissions"
    for folder in ("Team A", "dora", "carl"):        # a group by its name, a group by a member, an individual
        (submissions / folder).mkdir(parents=True)
        (submissions / folder / f"{ASSIGNMENT}.ipynb").write_bytes(course["notebook"])
    out = grade(course, submissions, PLAIN)
    assert sorted(course["ran"]) == ["Team A", "carl", "dora"], "each group's submission graded once"
    lines = rows_of(out / "grades.csv")
    assert list(lines[0])[:4] == ["student_id", "name", "group", "assignment"]
    assert [(line["student_id"], line["group"], line["score"], line["status"]) for line in lines] == [
        ("ann", "Team A", "6", "graded"), ("bob", "Team A", "6", "graded"), ("carl", "", "6", "graded"),
        ("dora", "Team B", "6", "graded"), ("eli", "Team B", "6", "graded")]
    assert [line.group for line in read_grades(out / "grades.csv")] == ["Team A", "Team A", "", "Team B", "Team B"]
    archive = release_zip(out)
    assert sorted(archive.namelist()) == ["ann/ps1.html", "bob/ps1.html", "carl/ps1.html", "dora/ps1.html",
                                          "eli/ps1.html"]
    assert archive.read("eli/ps1.html") == b"<p>feedback of dora</p>", "the group's page, under every member"


def test_a_members_override_and_submission_time_are_the_groups(course):
    """A line of the overrides or --submitted-at file that names a member sets the group's row, so
    every member's."""
    submissions = course["base"] / "submissions"
    (submissions / "Team A").mkdir(parents=True)
    (submissions / "Team A" / f"{ASSIGNMENT}.ipynb").write_bytes(course["notebook"])
    out = grade(course, submissions, PLAIN,
                overrides=str(write(course["base"] / "overrides.csv",
                                    "student_id,cell,points,comment,grader\nbob,test_a,4,appeal,TA Kim\n")),
                term=str(write(course["base"] / "term.toml", '[due]\nps1 = "2027-01-15T23:59:00+01:00"\n'
                               '[penalty]\nmethod = "per_day"\npercent_per_day = 25\ncap_percent = 50\n')),
                submitted_at=str(write(course["base"] / "times.csv",
                                       "student_id,submitted_at\nann,2027-01-16T10:00:00+01:00\n")))
    assert [(line["student_id"], line["raw_score"], line["penalty"], line["score"], line["overrides"][:14])
            for line in rows_of(out / "grades.csv")] == [
        ("ann", "4", "1", "3", "test_a: 6 -> 4"), ("bob", "4", "1", "3", "test_a: 6 -> 4")]


def test_an_error_of_the_roster_stops_the_run_before_anything_is_graded(course):
    submissions = course["base"] / "submissions"
    for folder in ("ann", "bob"):                      # two members of one group handed in each
        (submissions / folder).mkdir(parents=True)
        (submissions / folder / f"{ASSIGNMENT}.ipynb").write_bytes(course["notebook"])
    with pytest.raises(groups.GroupsError, match="group 'Team A' has 2 submissions, one each from ann and bob"):
        grade(course, submissions, PLAIN)
    with pytest.raises(groups.GroupsError, match="student ann is in two groups"):
        grade(course, submissions, PLAIN + "Team B,ann\n")
    assert course["ran"] == []
    assert not (course["base"] / "out" / "grades.csv").exists()


def test_a_canvas_class_the_representatives_file_reaches_every_member(course):
    submissions = course["base"] / "canvas"
    submissions.mkdir()
    (submissions / "doejane_12345_678_ps1.ipynb").write_bytes(course["notebook"])        # Group A's representative
    (submissions / "leeann_LATE_34567_679_ps1.ipynb").write_bytes(course["notebook"])    # in no group
    out = grade(course, submissions, CANVAS_GROUPS)
    assert sorted(course["ran"]) == ["12345", "34567"]
    assert [(line["student_id"], line["group"]) for line in rows_of(out / "grades.csv")] == [
        ("12345", "Group A"), ("23456", "Group A"), ("34567", "")]
    grades, max_score = grade_import.grades_of(read_grades(out / "grades.csv"))
    target = grade_import.write(roster.read(write(course["base"] / "gradebook.csv", CANVAS_ROSTER), "ID"), grades,
                                max_score, ASSIGNMENT, "canvas", out / "canvas-import.csv")
    assert [(line["ID"], line["ps1 (4711)"]) for line in rows_of(target)][1:] == [
        ("12345", "6"), ("23456", "6"), ("34567", "6"), ("45678", "0")]
    assert sorted(release_zip(out).namelist()) == [
        "doejane_12345_678_ps1-feedback.html", "leeann_LATE_34567_679_ps1-feedback.html",
        "smithjohn_23456_678_ps1-feedback.html"], "a member's name: their user id, the group's attachment id"


def test_a_moodle_team_submission_reaches_every_member_by_participant_id(course):
    submissions = course["base"] / "moodle"
    for folder in ("Team Red_12_assignsubmission_file", "Ann Lee_1003_assignsubmission_file"):
        (submissions / folder).mkdir(parents=True)
        (submissions / folder / f"{ASSIGNMENT}.ipynb").write_bytes(course["notebook"])
    out = grade(course, submissions, WORKSHEET)
    assert sorted(course["ran"]) == ["1003", "12"]
    assert [(line["student_id"], line["group"]) for line in rows_of(out / "grades.csv")] == [
        ("1001", "Team Red"), ("1002", "Team Red"), ("1003", "")]
    worksheet = write(course["base"] / "worksheet.csv", WORKSHEET)
    students, grade_column = grade_import.read_worksheet(worksheet)
    grades, max_score = grade_import.grades_of(read_grades(out / "grades.csv"))
    target = grade_import.write(students, grades, max_score, ASSIGNMENT, "moodle-worksheet",
                                out / "moodle-worksheet-import.csv", grade_column=grade_column)
    assert [(line["Identifier"], line["Grade"]) for line in rows_of(target)] == [
        ("Participant 1001", "6"), ("Participant 1002", "6"), ("Participant 1003", "6"), ("Participant 1004", "0")]
    assert sorted(release_zip(out).namelist()) == [
        "Ann Lee_1003_assignsubmission_file/ps1-feedback.html",
        "Jane Doe_1001_assignsubmission_file/ps1-feedback.html",
        "John Smith_1002_assignsubmission_file/ps1-feedback.html"]


# --- Moodle's default group folder: the students in no group


def moodle_team_download(course, default: str) -> Path:
    """A team assignment's download as Moodle 4.1+ writes it (mod/assign/classes/downloader.php): a group's
    folder with its id, the default group's (the students in no group) by its name alone, in the site's
    language."""
    submissions = course["base"] / "moodle"
    for folder in ("Team Red_12_assignsubmission_file", f"{default}_assignsubmission_file"):
        (submissions / folder).mkdir(parents=True)
        (submissions / folder / f"{ASSIGNMENT}.ipynb").write_bytes(course["notebook"])
    return submissions


@pytest.mark.parametrize(("worksheet", "default", "identifier"), [
    (WORKSHEET, "Default group", "Identifier"), (WORKSHEET_DE, "Standard-Gruppe", "ID")], ids=["en", "de"])
def test_the_default_group_folder_is_the_one_student_in_no_group(course, worksheet, default, identifier):
    """An English and a German site: Ann (the worksheet's one student in the default group) gets the
    default group folder's row, her feedback under her own folder and her grade in the worksheet."""
    out = grade(course, moodle_team_download(course, default), worksheet)
    assert sorted(course["ran"]) == ["12", default], "the default group's submission graded once"
    assert [(line["student_id"], line["name"], line["group"], line["score"], line["status"])
            for line in rows_of(out / "grades.csv")] == [
        ("1001", "Jane Doe", "Team Red", "6", "graded"), ("1002", "John Smith", "Team Red", "6", "graded"),
        ("1003", "Ann Lee", default, "6", "graded")]
    intake_lines = {line["student_id"]: line for line in rows_of(out / "intake.csv")}
    assert intake_lines["1003"]["origin"] == f"{default}_assignsubmission_file/{ASSIGNMENT}.ipynb"
    assert sorted(release_zip(out).namelist()) == [
        "Ann Lee_1003_assignsubmission_file/ps1-feedback.html", "Jane Doe_1001_assignsubmission_file/ps1-feedback.html",
        "John Smith_1002_assignsubmission_file/ps1-feedback.html"], "the participant id importziplib.php reads"
    students, grade_column = grade_import.read_worksheet(write(course["base"] / "worksheet.csv", worksheet))
    grades, max_score = grade_import.grades_of(read_grades(out / "grades.csv"))
    target = grade_import.write(students, grades, max_score, ASSIGNMENT, "moodle-worksheet",
                                out / "moodle-worksheet-import.csv", grade_column=grade_column)
    assert [line[grade_column] for line in rows_of(target)] == ["6", "6", "6", "0"], "Ann's grade, not a 0"


def test_a_default_group_folder_that_no_one_student_is_refused_naming_it(tmp_path):
    """Moodle keeps one submission for all its students in no group: with two of them in the worksheet, or
    with a roster that says nothing of them, the download cannot say whose it is; both named at once with
    a group's second submission."""
    two = groups.read(write(tmp_path / "two.csv", WORKSHEET_DE.replace("Keine Abgabe,Team Blue", "Keine Abgabe,"
                                                                        "Standard-Gruppe")))
    assert two.default.members == ["1003", "1004"] and two.of("1004") is None
    where = f"dl.zip:Standard-Gruppe_assignsubmission_file/{ASSIGNMENT}.ipynb"
    with pytest.raises(groups.GroupsError) as raised:
        two.check([("12", "moodle", "Team Red"), ("1001", "moodle", "Jane Doe"),
                   ("Standard-Gruppe", "moodle", "Standard-Gruppe", where)])
    message = str(raised.value)
    assert "group 'Team Red' has 2 submissions, one each from 12 and 1001" in message, message
    assert (f"{where}: Moodle's default group folder ('Standard-Gruppe') is the one submission Moodle keeps for "
            "all 2 students in no group, 1003 (line 4), 1004 (line 5), and names none of them") in message, message
    assert "rename its folder to '<full name>_<participant id>_assignsubmission_file'" in message, message
    plain = groups.read(write(tmp_path / "plain.csv", PLAIN))
    with pytest.raises(groups.GroupsError, match="Default group_assignsubmission_file/x.ipynb: Moodle's default group "
                                                 "folder .* names no student, and this roster puts no student in"):
        plain.check([("Default group", "moodle", "Default group", "Default group_assignsubmission_file/x.ipynb")])
    named = groups.read(write(tmp_path / "named.csv", PLAIN + "Default group,carl\n"))
    assert named.check([("Default group", "moodle", "Default group")]) == {
        "Default group": named.groups["Default group"]}, "a plain roster's group of that name says whose it is"


def test_the_default_group_folder_without_a_group_roster_is_a_rejection(course):
    submissions = moodle_team_download(course, "Standard-Gruppe")
    out = course["base"] / "out"
    pipeline.grade_class(ASSIGNMENT, course["source"], submissions, out, progress=lambda line: None,
                         settings=GradingSettings(sandbox="none", workers=1))
    assert course["ran"] == ["12"]
    rows = {line["student_id"]: line for line in rows_of(out / "grades.csv")}
    assert rows["Standard-Gruppe"]["status"] == "invalid"
    assert "Moodle's default group folder ('Standard-Gruppe': the submission of a team assignment's students in no " \
           "group) names no student: grade with --groups" in rows["Standard-Gruppe"]["reason"]


# --- the class roster


def test_a_member_the_class_roster_lacks_is_refused_with_the_other_problems(tmp_path):
    class_list = {"ann": "Ann", "bob": "Bob", "dora": "Dora"}
    with pytest.raises(groups.GroupsError) as raised:
        groups.read(write(tmp_path / "groups.csv", PLAIN + "Team A,dora\n"), class_list, "class.csv")
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'groups.csv'}:\n"), message
    assert "line 6: student dora is in two groups, 'Team B' (line 4) and 'Team A'" in message, message
    assert "line 5: student eli of group 'Team B' is not in the class roster class.csv" in message, message
    assert "none of its students" not in message
    worksheet = write(tmp_path / "worksheet.csv", WORKSHEET)
    found = groups.read(worksheet, {"1001", "1002", "1003", "1004"}, "w.csv")
    assert list(found.groups) == ["Team Red", "Team Blue"] and found.default.members == ["1003"]
    with pytest.raises(groups.GroupsError, match="line 4: student 1003 of group 'Default group' is not in the class "
                                                 "roster w.csv"):
        groups.read(worksheet, {"1001", "1002", "1004"}, "w.csv")
    with pytest.raises(groups.GroupsError, match=r"\(none of its students is in gradebook.csv: do both name students "
                                                 "alike"):
        groups.read(worksheet, {"jane@example.org"}, "gradebook.csv")


def test_a_member_the_class_roster_lacks_stops_the_run_before_anything_is_graded(course):
    submissions = course["base"] / "submissions"
    (submissions / "Team A").mkdir(parents=True)
    (submissions / "Team A" / f"{ASSIGNMENT}.ipynb").write_bytes(course["notebook"])
    class_roster = write(course["base"] / "class.csv", "student_id,name\nann,Ann Lee\nbob,Bob Ray\ndora,Dora Kim\n")
    with pytest.raises(groups.GroupsError, match=f"line 5: student eli of group 'Team B' is not in the class "
                                                 f"roster {class_roster}"):
        grade(course, submissions, PLAIN, roster=str(class_roster))
    assert course["ran"] == [] and not (course["base"] / "out" / "grades.csv").exists()
    write(class_roster, class_roster.read_text() + "eli,Eli Park\n")
    out = grade(course, submissions, PLAIN, roster=str(class_roster))
    assert [(line["student_id"], line["name"]) for line in rows_of(out / "grades.csv")] == [
        ("ann", "Ann Lee"), ("bob", "Bob Ray")]
