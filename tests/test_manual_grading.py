"""Written answers graded by hand: nbgrader's manually graded answer cells come out of grading as
`needs_manual_grade` with the answer in the report; a hand grade from the overrides file or from the
formgrader's gradebook (`autograder formgrade`, its own SQLite file or with `--db` the shared
PostgreSQL gradebook, where several graders grade at once) is applied after grading and survives `--force`."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbformat import v4
from nbgrader.api import Gradebook

from autograder import cli
from autograder.grading import formgrade, pipeline
from autograder.grading.cache import safe_id
from autograder.runfolder import RunFolder
from autograder.nbgrader_setup.config import COURSE_ID
from autograder.nbgrader_setup.workspace import Workspace
from autograder.settings import GradingSettings
from tests import notebooks, servers
from tests.test_any_assignment import part

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ASSIGNMENT = "ps1"

pytestmark = pytest.mark.grading
# nbgrader's Gradebook.add_submission (run in the test's process by `formgrade --db`) warns of its
# own autoflush while it builds a submission; the submission is made all the same
NBGRADER_AUTOFLUSH = "ignore:Object of type:sqlalchemy.exc.SAWarning"


def written(answer: str) -> nbformat.NotebookNode:
    cell = v4.new_markdown_cell(answer, id="written_why")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "written_why", "locked": False, "points": 2,
                                 "schema_version": 3, "solution": True, "task": False}
    return cell


def with_written_question(answer: str) -> nbformat.NotebookNode:
    notebook = part(2)
    notebook.cells += [v4.new_markdown_cell("Why does `scale` double its input? (2 points)", id="question"),
                       written(answer)]
    return notebook


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "autograder"), *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"))


def grades(out: Path) -> dict[str, dict[str, str]]:
    with (out / "grades.csv").open(newline="", encoding="utf-8") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def build_class(base: Path) -> dict:
    """A course whose ps1.ipynb has a written question (2 points) after its tests (4 points), graded:
    ann answered it, bob left it as released, cy answered it and an override grades cy's answer."""
    root = base / "course"
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    nbformat.write(with_written_question("Because the factor is 2: `return 2 * value`."),
                   root / "source" / ASSIGNMENT / "ps1.ipynb")
    releaser = Workspace(base / "release-ws", ASSIGNMENT)
    releaser.create(root / "source" / ASSIGNMENT)
    released = nbformat.read(releaser.release_dir() / "ps1.ipynb", as_version=4)
    subs = base / "submissions"
    stub = next(cell for cell in released.cells if cell.get("id") == "written_why").source
    for student, answer in {"ann": "It multiplies by <b>two</b>.", "bob": stub, "cy": "Twice the value."}.items():
        notebook = notebooks.answered(released, "def scale(value):\n    return 2 * value\n")
        next(cell for cell in notebook.cells if cell.get("id") == "written_why").source = answer
        (subs / student).mkdir(parents=True)
        nbformat.write(notebook, subs / student / "ps1.ipynb")
    (root / "overrides").mkdir()
    (root / "overrides" / "ps1.csv").write_text(
        "student_id,cell,points,comment,grader\ncy,written_why,2,names the factor,TA Kim\n")
    out = base / "out"
    done = grade_class(subs, out, root)
    return {"done": done, "rows": grades(out), "out": out, "root": root, "subs": subs, "released": released}


def grade_class(subs: Path, out: Path, root: Path, *options: str) -> subprocess.CompletedProcess:
    return run("grade", ASSIGNMENT, "--submissions", str(subs), "--out", str(out), "--workers", "2",
               "--timeout", "60", *options, cwd=root)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return build_class(tmp_path_factory.mktemp("manual"))


def test_the_release_holds_no_model_answer(graded):
    cell = next(cell for cell in graded["released"].cells if cell.get("id") == "written_why")
    assert "factor is 2" not in cell.source


def test_an_answered_written_cell_waits_for_a_hand_grade(graded):
    assert graded["done"].returncode == 0, graded["done"].stdout[-2000:] + graded["done"].stderr[-2000:]
    rows = graded["rows"]
    assert (rows["ann"]["status"], float(rows["ann"]["score"]), float(rows["ann"]["max_score"])) == \
        ("needs_manual_grade", 4, 6)
    assert rows["ann"]["reason"] == "written answers to grade by hand: written_why"
    assert rows["ann"]["written_why"] == "", "no points until graded"
    assert "1 written answers to grade by hand" in graded["done"].stdout


def test_an_untouched_written_cell_scores_zero_and_waits_for_nothing(graded):
    bob = graded["rows"]["bob"]
    assert (bob["status"], float(bob["score"]), bob["written_why"]) == ("graded", 4, "0")


def test_an_override_grades_a_written_answer(graded):
    cy = graded["rows"]["cy"]
    assert (cy["status"], float(cy["score"]), cy["written_why"]) == ("graded", 6, "2")
    assert cy["overrides"] == "written_why: unscored -> 2 by TA Kim (names the factor)"


def page(out: Path, student: str) -> str:
    return RunFolder(out).feedback_page(student, "ps1.ipynb").read_text(encoding="utf-8")


def test_the_feedback_page_is_made_again_with_the_hand_grade(graded):
    """cy's page, made again after the override: the hand grade's points and comment on the answer, no
    note; ann's answer still waits. The workers' gradebooks hold no hand grade afterwards."""
    cy = page(graded["out"], "cy")
    assert '<a href="#written_why">Written response</a> (Score: 2.0 / 2.0)' in cy
    assert "<b>Comments:</b> <p>names the factor</p>" in cy
    assert "Waits for a hand grade" not in cy and "graded by hand" not in cy and "(Score: 6.0 / 6.0)" in cy
    assert "Waits for a hand grade" in page(graded["out"], "ann")
    for workspace in RunFolder(graded["out"]).workspaces():
        with Gradebook(f"sqlite:///{workspace / 'gradebook.db'}", COURSE_ID) as gradebook:
            assert all(grade.manual_score is None for submission in gradebook.find_assignment(ASSIGNMENT).submissions
                       for notebook in submission.notebooks for grade in notebook.grades)


def test_the_report_shows_the_answer_rendered(graded):
    report = (graded["out"] / "report.html").read_text(encoding="utf-8")
    assert "Written answers to grade by hand" in report
    assert "<p>It multiplies by <b>two</b>.</p>" in report, "as the student wrote it to be read (sanitised)"
    assert "Twice the value." not in report, "cy's answer is graded"


def test_a_formgrader_grade_is_read_back_and_survives_force(graded):
    out, root = graded["out"], graded["root"]
    done = run("formgrade", ASSIGNMENT, "--grades-dir", str(out), "--prepare-only", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "2 written answers to grade" in done.stdout      # ann's and cy's: the file's grade is not the formgrader's
    gradebook_url = f"sqlite:///{RunFolder(out).formgrade_dir / 'gradebook.db'}"
    with Gradebook(gradebook_url, COURSE_ID) as gradebook:
        ann = safe_id("ann")        # nbgrader knows students by their safe id, the real one is lms_user_id
        assert gradebook.find_student(ann).lms_user_id == "ann"
        grade = gradebook.find_grade("written_why", "ps1", ASSIGNMENT, ann)
        assert grade.needs_manual_grade and grade.auto_score is None
        assert gradebook.find_grade("test_scale", "ps1", ASSIGNMENT, ann).auto_score == 3
        assert (RunFolder(out).formgrade_dir / "autograded" / ann / ASSIGNMENT / "ps1.ipynb").exists()
        # what the formgrader's Manual Grading page writes (tests/browser does it through the page)
        grade.manual_score = 1.5
        gradebook.find_comment("written_why", "ps1", ASSIGNMENT, ann).manual_comment = "right, but why 2?"
        gradebook.db.commit()
    again = grade_class(graded["subs"], out, root, "--force")
    assert again.returncode == 0, again.stderr[-2000:]
    ann = grades(out)["ann"]
    assert (ann["status"], float(ann["score"]), ann["written_why"]) == ("graded", 5.5, "1.5")
    assert ann["overrides"] == "written_why: unscored -> 1.5 by formgrader (right, but why 2?)"
    made_again = page(out, "ann")   # with the formgrader's grade and comment
    assert '<a href="#written_why">Written response</a> (Score: 1.5 / 2.0)' in made_again
    assert "<b>Comments:</b> <p>right, but why 2?</p>" in made_again and "Waits for a hand grade" not in made_again
    prepared_again = run("formgrade", ASSIGNMENT, "--grades-dir", str(out), "--prepare-only", cwd=root)
    assert prepared_again.returncode == 0, prepared_again.stderr
    with Gradebook(gradebook_url, COURSE_ID) as gradebook:
        assert gradebook.find_grade("written_why", "ps1", ASSIGNMENT, safe_id("ann")).manual_score == 1.5, \
            "preparing again keeps the hand grade"


def test_formgrade_hands_what_follows_the_double_dash_to_jupyter_lab(graded):
    """Without --prepare-only the command becomes `jupyter lab` in the prepared folder; `--version`
    makes that lab print its version and exit."""
    done = run("formgrade", ASSIGNMENT, "--grades-dir", str(graded["out"]), "--", "--version", cwd=graded["root"])
    assert done.returncode == 0, done.stderr
    assert "written answers to grade" in done.stdout and done.stdout.strip().splitlines()[-1][0].isdigit()


SECRET = "pw-Qx7-not-in-any-file"  # the gradebook server's password: it asks for it on every connection


@pytest.fixture(scope="module")
def gradebook_server():
    with servers.postgres(password=SECRET) as url:
        yield url


@pytest.fixture
def no_password_left():
    """The password `GradingSettings(db_url=...)` moves into this process's environment, removed after."""
    yield
    os.environ.pop("PGPASSWORD", None)


def formgrader_saves(url: str, student: str, points: float, comment: str, both_open: threading.Barrier) -> None:
    """What one grader's formgrader does on the Manual Grading page, in a gradebook session of its own:
    it loads the answer's grade and comment, then saves them as nbgrader's GradeHandler.put and
    CommentHandler.put do (server_extensions/formgrader/apihandlers.py)."""
    with Gradebook(url, COURSE_ID) as gradebook:
        grade = gradebook.find_grade("written_why", "ps1", ASSIGNMENT, safe_id(student))
        note = gradebook.find_comment("written_why", "ps1", ASSIGNMENT, safe_id(student))
        assert (grade.needs_manual_grade, grade.auto_score, grade.manual_score) == (True, None, None), student
        both_open.wait(30)   # both pages are open before either grader saves
        grade.manual_score = points
        grade.needs_manual_grade = False
        gradebook.db.commit()
        note.manual_comment = comment
        gradebook.db.commit()


@pytest.mark.cluster
@pytest.mark.filterwarnings(NBGRADER_AUTOFLUSH)
def test_two_graders_on_the_shared_postgres_gradebook_both_keep_their_grades_through_force(graded, gradebook_server,
                                                                                           tmp_path, monkeypatch,
                                                                                           capsys, no_password_left):
    """`autograder formgrade --db` prepares the class in the shared gradebook (the URL as docs/cluster.md
    writes it, with the server's password); two graders, each in a formgrader of their own, grade ann's
    and cy's written answers at the same moment; both grades are read back, and a `--force` re-grade
    into that gradebook (ann and cy again, on two workers) keeps both there and in grades.csv. The class
    is this module's, its run folder copied without its SQLite formgrader. The password reaches the
    workers (they grade) but no file of the run folder, no log line, and not the student's kernel (cy's
    answer prints what its environment says)."""
    url = servers.create_database(gradebook_server, "formgrade")
    as_documented = url.replace("postgresql+psycopg2://", "postgresql://")
    assert f":{SECRET}@" in as_documented
    out, subs = tmp_path / "out", tmp_path / "submissions"
    shutil.copytree(graded["out"], out, ignore=shutil.ignore_patterns("formgrade"))
    for student in ("ann", "cy"):
        shutil.copytree(graded["subs"] / student, subs / student)
    peeking = nbformat.read(subs / "cy" / "ps1.ipynb", as_version=4)
    answer = next(cell for cell in peeking.cells if cell.metadata.get("nbgrader", {}).get("grade_id") == "scale")
    answer.source = 'import os\nprint("the kernel sees", os.environ.get("PGPASSWORD"))\n' + answer.source
    nbformat.write(peeking, subs / "cy" / "ps1.ipynb")
    monkeypatch.setenv("COURSE_ROOT", str(graded["root"]))   # the command, in this process
    assert cli.main(["formgrade", ASSIGNMENT, "--grades-dir", str(out), "--db", as_documented, "--prepare-only"]) == 0
    said = capsys.readouterr()
    assert "2 written answers to grade (the shared gradebook)" in said.out
    folder = RunFolder(out).formgrade_dir
    assert not (folder / "gradebook.db").exists()
    without = url.replace(f":{SECRET}@", "@")
    assert f"CourseDirectory.db_url = {without!r}" in (folder / "nbgrader_config.py").read_text(), \
        "the formgrader in that folder opens the shared gradebook, with the driver the lock ships"

    both_open = threading.Barrier(2)
    with ThreadPoolExecutor(2) as graders:
        saved = [graders.submit(formgrader_saves, url, "ann", 1.5, "right, but why 2?", both_open),
                 graders.submit(formgrader_saves, url, "cy", 1.0, "which factor?", both_open)]
        for grader in saved:
            grader.result(timeout=60)
    settings = GradingSettings(db_url=as_documented)
    by_hand = {(override.student_id, override.cell): (override.points, override.comment)
               for override in formgrade.hand_grades(RunFolder(out), ASSIGNMENT, settings)}
    assert by_hand == {("ann", "written_why"): (1.5, "right, but why 2?"),
                       ("cy", "written_why"): (1.0, "which factor?")}

    forced = GradingSettings(db_url=as_documented, force=True, workers=2, timeout=60)
    result = pipeline.grade_class(ASSIGNMENT, graded["root"] / "source" / ASSIGNMENT, subs, out, settings=forced,
                                  progress=lambda line: None)
    rows = {row.student_id: row for row in result.rows}
    assert not any(row.reused for row in rows.values()), "both were graded again"
    assert (rows["ann"].status, rows["ann"].score, rows["ann"].cells["written_why"]) == ("graded", 5.5, 1.5)
    assert rows["ann"].overrides == ["written_why: unscored -> 1.5 by formgrader (right, but why 2?)"], \
        "the row is the autograde's, the hand grade applied after it"
    assert (rows["cy"].status, rows["cy"].score, rows["cy"].overrides) == \
        ("graded", 5.0, ["written_why: unscored -> 1 by formgrader (which factor?)"])
    said = [said.out, said.err, *capsys.readouterr()]
    assert "the kernel sees None" in rows["cy"].feedback.read_text(encoding="utf-8"), "cy's answer ran"
    leaks = [path for path in out.rglob("*") if path.is_file() and SECRET.encode() in path.read_bytes()]
    assert not leaks and not any(SECRET in text for text in said), leaks
    with Gradebook(url, COURSE_ID) as gradebook:
        for student, kept in {"ann": (1.5, "right, but why 2?"), "cy": (1.0, "which factor?")}.items():
            grade = gradebook.find_grade("written_why", "ps1", ASSIGNMENT, safe_id(student))
            note = gradebook.find_comment("written_why", "ps1", ASSIGNMENT, safe_id(student))
            assert (grade.manual_score, note.manual_comment) == kept, student
            assert grade.auto_score is None, "the forced autograde wrote its own score beside the hand grade"
            assert grade.needs_manual_grade, "nbgrader marks a hand grade for review after an autograde"
