"""One term's round trip through the CLI for a class downloaded from Canvas and one from Moodle: the
download (built here to the names Canvas's and Moodle's own code writes, autograder.lms.downloads) with a
late submission, a resubmission and a stray file; grading with late penalties, a written answer graded
in the formgrader's gradebook and an override, both surviving `--force`; the LMS's import file; the
feedback zip under the names the LMS takes back. (tests/browser/test_formgrader_manual_grade.py types a
hand grade into the formgrader's page itself; here it is written through nbgrader's gradebook API.)"""

from __future__ import annotations

import csv
import shutil
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.grading.cache import safe_id
from autograder.runfolder import RunFolder
from autograder.nbgrader_setup.config import COURSE_ID
from autograder.nbgrader_setup.workspace import Workspace
from tests import notebooks
from tests.test_manual_grading import grades, run, with_written_question

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "ps1"

pytestmark = pytest.mark.grading

CANVAS_ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,ps1 (4711)
    Points Possible,,,,,4
"Doe, Jane",12345,S1,jane,A,
"Smith, John",23456,S2,john,A,
"Lee, Ann",34567,S3,ann,A,
"Kim, Bo",45678,S4,bo,B,
"""

MOODLE_WORKSHEET = """Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,Last modified (grade)
Participant 1001,Jane Doe,jane@example.org,Submitted for grading,,4.00,Yes,-
Participant 1002,John Smith,john@example.org,Submitted for grading,,4.00,Yes,-
Participant 1003,Ann Lee,ann@example.org,No submission,,4.00,Yes,-
"""


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course with one notebook (ps1.ipynb: test_scale 3 points, test_parameters 1, a written answer 2),
    due in the past, 10 % of the score per started day late, and an appeal accepted in overrides/ps1.csv."""
    base = tmp_path_factory.mktemp("term")
    root = base / "course"
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    nbformat.write(with_written_question("Because its factor is 2."), root / "source" / ASSIGNMENT / "ps1.ipynb")
    releaser = Workspace(base / "release-ws", ASSIGNMENT)
    releaser.create(root / "source" / ASSIGNMENT)
    released = nbformat.read(releaser.release_dir() / "ps1.ipynb", as_version=4)
    (root / "term.toml").write_text('[due]\nps1 = "2026-11-15T23:59:00+01:00"\n'
                                    '[penalty]\nmethod = "per_day"\npercent_per_day = 10\ncap_percent = 50\n')
    (root / "overrides").mkdir()
    (root / "overrides" / "ps1.csv").write_text(
        "student_id,cell,points,comment,grader\n34567,test_scale,3,appeal: the grader's case was wrong,TA Kim\n")

    stub = next(cell for cell in released.cells if cell.get("id") == "written_why").source

    def answer(body: str, written: str = stub) -> bytes:
        notebook = notebooks.answered(released, f"def scale(value):\n    return {body}\n")
        next(cell for cell in notebook.cells if cell.get("id") == "written_why").source = written
        return nbformat.writes(notebook).encode()

    return {"base": base, "root": root, "right": answer("2 * value"), "wrong": answer("value + 2"),
            "explained": answer("2 * value", "It returns two times the value.")}


def zipped(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def canvas(course):
    base, root = course["base"], course["root"]
    download = zipped(base / "CS101-ps1 submissions.zip", {
        "doejane_12345_900_ps1.ipynb": course["explained"],       # answers the written question too
        "smithjohn_LATE_23456_901_ps1.ipynb": course["right"],     # Canvas: late, no time in the download
        "leeann_34567_903_ps1-1.ipynb": course["wrong"],           # submitted again: Canvas renamed it
        "leeann_34567_904_scratch.py": b"print('draft')",
        "notes from TA.txt": b"stray",                              # follows no Canvas rule
    })
    out = base / "canvas-out"
    first = run("grade", ASSIGNMENT, "--submissions", str(download), "--out", str(out), "--workers", "2",
                "--timeout", "60", cwd=root)
    rows_before = grades(out) if first.returncode == 0 else {}
    prepared = run("formgrade", ASSIGNMENT, "--grades-dir", str(out), "--prepare-only", cwd=root)
    if prepared.returncode == 0:   # the formgrader's Manual Grading page writes these two fields
        with Gradebook(f"sqlite:///{RunFolder(out).formgrade_dir / 'gradebook.db'}", COURSE_ID) as gradebook:
            gradebook.find_grade("written_why", "ps1", ASSIGNMENT, safe_id("12345")).manual_score = 2
            gradebook.find_comment("written_why", "ps1", ASSIGNMENT, safe_id("12345")).manual_comment = "clear"
            gradebook.db.commit()
    done = run("grade", ASSIGNMENT, "--submissions", str(download), "--out", str(out), "--workers", "2",
               "--timeout", "60", "--force", cwd=root)
    return {"first": first, "rows_before": rows_before, "prepared": prepared, "done": done, "out": out,
            "rows": grades(out), "download": download}


def test_canvas_intake_reads_every_student_and_rejects_the_stray_file(canvas):
    for step in ("first", "prepared", "done"):
        assert canvas[step].returncode == 0, canvas[step].stdout[-2000:] + canvas[step].stderr[-2000:]
    assert canvas["rows_before"]["12345"]["status"] == "needs_manual_grade"
    rows = canvas["rows"]
    assert {key: row["status"] for key, row in rows.items()} == {
        "12345": "graded", "23456": "graded", "34567": "graded", "notes from TA.txt": "invalid"}
    assert "follows no Canvas rule" in rows["notes from TA.txt"]["reason"]
    intake = {line["student_id"]: line for line in rows_of(canvas["out"] / "intake.csv")}
    assert intake["34567"]["origin"].endswith("leeann_34567_903_ps1-1.ipynb")
    assert intake["23456"]["late_marked"] == "yes"


def test_canvas_late_marker_and_override_in_grades_and_report(canvas):
    rows = canvas["rows"]
    scores = {key: (float(row["raw_score"]), float(row["penalty"]), float(row["score"])) for key, row in rows.items()}
    assert scores["12345"] == (6, 0, 6)           # the written answer's 2 points by the formgrader
    assert rows["12345"]["overrides"] == "written_why: unscored -> 2 by formgrader (clear)"
    assert scores["23456"] == (4, 0.4, 3.6)       # one started day: 10 % of 4
    assert "the LMS marked it late" in rows["23456"]["reason"]
    assert scores["34567"] == (4, 0, 4)           # 1 by the tests, test_scale 0 -> 3 by the override
    assert rows["34567"]["overrides"] == "test_scale: 0 -> 3 by TA Kim (appeal: the grader's case was wrong)"
    report = (canvas["out"] / "report.html").read_text(encoding="utf-8")
    assert "late penalty" in report and "by TA Kim" in report and "-0.4 (marked late by the LMS)" in report


def test_canvas_import_csv(canvas, course):
    roster = course["base"] / "canvas-roster.csv"
    roster.write_text(CANVAS_ROSTER)
    target = course["base"] / "canvas-import.csv"
    done = run("export", ASSIGNMENT, "--format", "canvas", "--roster", str(roster), "--grades",
               str(canvas["out"] / "grades.csv"), "--out", str(target), cwd=course["root"])
    assert done.returncode == 0, done.stderr
    assert "left out, not in the roster and never graded: notes from TA.txt" in done.stdout
    imported = {line["ID"]: line["ps1 (4711)"] for line in rows_of(target)}
    assert imported == {"": "6", "12345": "6", "23456": "3.6", "34567": "4", "45678": "0"}


def test_canvas_feedback_zip_goes_back_under_canvas_names(canvas, course):
    target = course["base"] / "canvas-feedback.zip"
    done = run("feedback", ASSIGNMENT, "--test-results", "--grades-dir", str(canvas["out"]), "--out", str(target),
               cwd=course["root"])
    assert done.returncode == 0, done.stderr
    names = sorted(zipfile.ZipFile(target).namelist())
    assert names == ["doejane_12345_900_ps1-feedback.html", "doejane_12345_900_ps1-test-results.html",
                     "leeann_34567_903_ps1-feedback.html", "leeann_34567_903_ps1-test-results.html",
                     "notes from TA.txt/ps1-test-results.html",
                     "smithjohn_LATE_23456_901_ps1-feedback.html", "smithjohn_LATE_23456_901_ps1-test-results.html"]


def test_canvas_hand_grades_and_penalty_survive_another_forced_regrade(canvas, course):
    again = run("grade", ASSIGNMENT, "--submissions", str(canvas["download"]), "--out", str(canvas["out"]),
                "--workers", "2", "--timeout", "60", "--force", cwd=course["root"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert "(unchanged, not re-graded)" not in again.stdout

    def timeless(rows):
        return {key: {column: value for column, value in row.items() if column != "seconds"} for key, row in rows.items()}

    assert timeless(grades(canvas["out"])) == timeless(canvas["rows"])


def test_a_moodle_class_from_download_to_worksheet_and_feedback(course):
    """The same term for a Moodle download: late by --submitted-at times, a written answer graded in the
    formgrader's gradebook and an override, both through a --force run, the worksheet, the feedback."""
    base, root = course["base"], course["root"]
    download = zipped(base / "CS101-Homework 1-77.zip", {
        "Jane Doe_1001_assignsubmission_file/ps1.ipynb": course["explained"],   # with a written answer
        "Jane Doe_1001_assignsubmission_onlinetext/onlinetext.html": b"<p>done</p>",
        "John Smith_1002_assignsubmission_file/ps1 (1).ipynb": course["wrong"],   # the file picker's rename
        "grading worksheet.csv": b"Identifier\n",                               # follows no Moodle rule
    })
    (base / "times.csv").write_text("student_id,submitted_at\n1001,2026-11-15T20:00:00+01:00\n"
                                    "1002,2026-11-17T12:00:00+01:00\n")
    (base / "moodle-overrides.csv").write_text(
        "student_id,cell,points,comment,grader\n1002,test_scale,3,appeal: the grader's case was wrong,TA Kim\n")
    out = base / "moodle-out"

    def grade(*extra: str) -> subprocess.CompletedProcess:
        return run("grade", ASSIGNMENT, "--submissions", str(download), "--out", str(out), "--workers", "2",
                   "--timeout", "60", "--submitted-at", str(base / "times.csv"),
                   "--overrides", str(base / "moodle-overrides.csv"), *extra, cwd=root)

    done = grade()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert grades(out)["1001"]["status"] == "needs_manual_grade"
    prepared = run("formgrade", ASSIGNMENT, "--grades-dir", str(out), "--prepare-only", cwd=root)
    assert prepared.returncode == 0, prepared.stderr
    with Gradebook(f"sqlite:///{RunFolder(out).formgrade_dir / 'gradebook.db'}", COURSE_ID) as gradebook:
        gradebook.find_grade("written_why", "ps1", ASSIGNMENT, safe_id("1001")).manual_score = 1.5
        gradebook.db.commit()
    done = grade("--force")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = grades(out)
    assert {key: (row["status"], float(row["raw_score"]), float(row["penalty"]), float(row["score"]))
            for key, row in rows.items() if key != "grading worksheet.csv"} == {
        "1001": ("graded", 5.5, 0, 5.5),      # 1.5 of the written answer's 2 by the formgrader
        "1002": ("graded", 4, 0.8, 3.2)}      # overridden to 4; two started days late: 20 %
    assert rows["grading worksheet.csv"]["status"] == "invalid"

    (base / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    done = run("export", ASSIGNMENT, "--format", "moodle-worksheet", "--roster", str(base / "worksheet.csv"),
               "--grades", str(out / "grades.csv"), "--out", str(base / "worksheet-upload.csv"), cwd=root)
    assert done.returncode == 0, done.stderr
    assert [line["Grade"] for line in rows_of(base / "worksheet-upload.csv")] == ["5.5", "3.2", "0"]

    done = run("feedback", ASSIGNMENT, "--grades-dir", str(out), "--out", str(base / "moodle-feedback.zip"), cwd=root)
    assert done.returncode == 0, done.stderr
    assert sorted(zipfile.ZipFile(base / "moodle-feedback.zip").namelist()) == [
        "Jane Doe_1001_assignsubmission_file/ps1-feedback.html",
        "John Smith_1002_assignsubmission_file/ps1-feedback.html"]
