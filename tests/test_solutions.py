"""`autograder solutions`: the reference notebooks, hidden tests removed and model answers kept, for the
students past their due date (or extension), under the LMS's upload names; never a hidden test's line.
Fast: no kernel, no TensorFlow; run folders are written here."""

from __future__ import annotations

import json
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from autograder import cli
from autograder.authoring import solutions
from autograder.grading import grades_csv, lateness
from autograder.grading.lateness import Term, parse_time
from autograder.grading.results import ClassResult, Row
from autograder.grading.status import Status
from tests import notebooks

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2027, 2, 1, tzinfo=timezone.utc)
PAST, FUTURE = parse_time("2027-01-15T23:59:00+01:00", "t"), parse_time("2027-03-01T23:59:00+01:00", "t")
MODEL_ANSWER = "**Model answer.** Doubling is linear: twice the sum is the sum of the doubles."
INTAKE_HEADER = "student_id,notebook,lms,name,late_marked,origin,reupload,problem\n"


def ps1_source(root: Path) -> Path:
    """`root/source/ps1/ps1.ipynb`: the tiny assignment with a written answer graded by hand."""
    source = root / "source" / "ps1"
    source.mkdir(parents=True)
    nb = notebooks.tiny_assignment()
    answer = v4.new_markdown_cell(f"### BEGIN SOLUTION\n{MODEL_ANSWER}\n### END SOLUTION", id="written")
    answer.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "task": False, "points": 2,
                                   "grade_id": "written", "schema_version": 3}
    nb.cells.append(answer)
    nbformat.write(nb, source / "ps1.ipynb")
    return source


def run_folder(out: Path, assignment: str, notebook_names: list[str], students=("ann", "bob", "cy")) -> Path:
    """What `autograder grade` leaves that solutions read: grades.csv (cy's submission was unreadable)."""
    rows = [Row(student, assignment, notebook=name, max_score=5,
                status=Status.INVALID if student == "cy" else Status.GRADED)
            for name in notebook_names for student in students]
    result = ClassResult(assignment, rows, [], 5.0 * len(notebook_names), out,
                         notebooks={name: 5.0 for name in notebook_names})
    grades_csv.write_csv(result)
    grades_csv.write_max_points(result)
    return out


def build(out: Path, source: Path, term: Term, assignment: str = "ps1") -> solutions.Released:
    students = {line.student_id for line in grades_csv_lines(out)}
    return solutions.build(out, assignment, source, due=lateness.due_dates(term, assignment, students), now=NOW)


def grades_csv_lines(out: Path):
    from autograder.runfolder import RunFolder, read_grades
    return read_grades(RunFolder(out).grades_csv)


def test_students_past_their_due_date_get_the_reference_notebook_with_model_answers_and_no_hidden_test(tmp_path):
    source, out = ps1_source(tmp_path), run_folder(tmp_path / "run", "ps1", ["ps1.ipynb"])
    released = build(out, source, Term(due={"ps1": PAST}))
    assert released.given == ["ann", "bob", "cy"] and released.withheld == []
    archive = zipfile.ZipFile(out / "solutions.zip")
    assert sorted(archive.namelist()) == ["ann/ps1-solution.ipynb", "bob/ps1-solution.ipynb", "cy/ps1-solution.ipynb"]
    nb = nbformat.reads(archive.read("bob/ps1-solution.ipynb").decode(), as_version=4)
    assert nbformat.reads(archive.read("bob/ps1-solution.ipynb").decode(), 4) == \
        nbformat.read(out / "solutions" / "bob" / "ps1.ipynb", 4)
    text = "\n".join(cell.source for cell in nb.cells)
    assert "return 2 * value" in text and MODEL_ANSWER in text, "the reference solution and the model answer"
    assert "double(2) == 4" in text, "the visible tests stay"
    assert "double(-7)" not in text and "HIDDEN" not in text and "SOLUTION" not in text
    assert not any("nbgrader" in cell.metadata for cell in nb.cells), "a plain notebook"
    assert not any(cell.get("outputs") for cell in nb.cells)


def test_a_student_whose_extension_runs_on_is_named_with_the_date_and_gets_nothing(tmp_path):
    source, out = ps1_source(tmp_path), run_folder(tmp_path / "run", "ps1", ["ps1.ipynb"])
    released = build(out, source, Term(due={"ps1": PAST}, extensions={("bob", "ps1"): FUTURE}))
    assert released.given == ["ann", "cy"]
    assert released.withheld == [f"bob (due {FUTURE.isoformat()})"]
    assert "bob/ps1-solution.ipynb" not in zipfile.ZipFile(out / "solutions.zip").namelist()
    assert not (out / "solutions" / "bob").exists()


def test_before_the_due_date_nobody_gets_solutions_and_a_stale_copy_is_removed(tmp_path):
    source, out = ps1_source(tmp_path), run_folder(tmp_path / "run", "ps1", ["ps1.ipynb"])
    build(out, source, Term(due={"ps1": PAST}))
    released = build(out, source, Term(due={"ps1": FUTURE}))     # the due date moved later: nothing stays out
    assert released.given == [] and len(released.withheld) == 3
    assert zipfile.ZipFile(out / "solutions.zip").namelist() == [] and not (out / "solutions").exists()


def test_an_extension_that_has_passed_releases_too(tmp_path):
    source, out = ps1_source(tmp_path), run_folder(tmp_path / "run", "ps1", ["ps1.ipynb"])
    released = build(out, source, Term(due={"ps1": FUTURE}, extensions={("ann", "ps1"): PAST}))
    assert released.given == ["ann"] and len(released.withheld) == 2


def test_without_a_due_date_solutions_are_refused(tmp_path):
    source, out = ps1_source(tmp_path), run_folder(tmp_path / "run", "ps1", ["ps1.ipynb"])
    with pytest.raises(solutions.SolutionsError, match="no due date for ps1"):
        build(out, source, Term())
    assert not (out / "solutions.zip").exists()


def test_the_zip_uses_the_lms_upload_names_of_the_feedback_zip_and_leaves_stray_files_out(tmp_path):
    source, out = ps1_source(tmp_path), run_folder(tmp_path / "run", "ps1", ["ps1.ipynb"],
                                                   students=("12345", "1002", "notes.txt"))
    (out / "intake.csv").write_text(
        INTAKE_HEADER
        + "12345,ps1.ipynb,canvas,annlee,yes,annlee_LATE_12345_678_ps1.ipynb,annlee_LATE_12345_678_,\n"
        + "1002,ps1.ipynb,moodle,Bob Ray,,x,Bob Ray_1002_assignsubmission_file/,\n"
        + "notes.txt,ps1.ipynb,canvas,,,notes.txt,,notes.txt: its name follows no Canvas rule\n")
    released = build(out, source, Term(due={"ps1": PAST}))
    names = sorted(zipfile.ZipFile(out / "solutions.zip").namelist())
    assert names == ["Bob Ray_1002_assignsubmission_file/ps1-solution.ipynb", "annlee_LATE_12345_678_ps1-solution.ipynb"]
    # the same rule as the feedback zip's pages: only the kind and the suffix differ
    from autograder.lms import feedback_zip
    assert names[1] == feedback_zip.archive_name("annlee_LATE_12345_678_", "12345", "ps1.ipynb", "solution", ".ipynb")
    assert feedback_zip.archive_name("annlee_LATE_12345_678_", "12345", "ps1.ipynb", "feedback") == \
        "annlee_LATE_12345_678_ps1-feedback.html"
    assert [part for part in names[1].split("_") if part.isdigit()][:2] == ["12345", "678"], "Canvas's ids"
    assert released.left_out == ["notes.txt (a file of the download that names no student)"]


def test_several_notebooks_give_each_student_each_solution(tmp_path):
    source = tmp_path / "source" / "ps2"
    source.mkdir(parents=True)
    for name in ("part1", "part2"):
        nbformat.write(notebooks.tiny_assignment(), source / f"{name}.ipynb")
    out = run_folder(tmp_path / "run", "ps2", ["part1.ipynb", "part2.ipynb"], students=("ann",))
    build(out, source, Term(due={"ps2": PAST}), assignment="ps2")
    assert sorted(zipfile.ZipFile(out / "solutions.zip").namelist()) == ["ann/part1-solution.ipynb",
                                                                          "ann/part2-solution.ipynb"]


def test_a_hidden_test_region_without_its_end_stops_with_nbgraders_message(tmp_path):
    source, out = ps1_source(tmp_path), run_folder(tmp_path / "run", "ps1", ["ps1.ipynb"])
    nb = nbformat.read(source / "ps1.ipynb", 4)
    nb.cells[3].source = nb.cells[3].source.replace("### END HIDDEN TESTS", "")
    nbformat.write(nb, source / "ps1.ipynb")
    with pytest.raises(solutions.SolutionsError, match="No end hidden tests statement found"):
        build(out, source, Term(due={"ps1": PAST}))


# --- no hidden line goes out: every written file and every zip member, for every source notebook ---

def hidden_lines(notebook_path: Path) -> tuple[set[str], str]:
    """Every line of every `### BEGIN HIDDEN TESTS ... ### END HIDDEN TESTS` block (stripped, not blank)
    that is not also a line outside such blocks (an `else:` or `continue` is no secret), and the text
    outside the blocks (what may go out)."""
    hidden, public, text = set(), set(), []
    for cell in nbformat.read(notebook_path, 4).cells:
        inside = False
        for line in cell.source.split("\n"):
            if "### BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "### END HIDDEN TESTS" in line:
                inside = False
            else:
                (hidden if inside else public).add(line.strip())
                if not inside:
                    text.append(line)
    return hidden - public - {""}, "\n".join(text)


def found(secrets: set[str], public: str, name: str, data: bytes) -> list[str]:
    """The secret lines in a file: as a line of a notebook's cells (decoded from JSON) or of any other
    file, or anywhere in its text when the line is not part of a longer public line."""
    text = data.decode("utf-8", errors="replace")
    lines = {line.strip() for line in text.split("\n")} if not name.endswith(".ipynb") else set()
    if name.endswith(".ipynb"):
        for cell in json.loads(text)["cells"]:
            lines |= {line.strip() for line in "".join(cell["source"]).split("\n")}
            lines |= {line.strip() for line in json.dumps(cell.get("outputs", [])).split("\\n")}
    return sorted(secret for secret in secrets if secret in lines or (secret not in public and secret in text))


def every_output(out: Path) -> list[tuple[str, bytes]]:
    files = [(str(path), path.read_bytes()) for path in sorted((out / "solutions").rglob("*")) if path.is_file()]
    with zipfile.ZipFile(out / "solutions.zip") as archive:
        files += [(f"solutions.zip:{member}", archive.read(member)) for member in archive.namelist()]
    return files + [(str(out / "solutions.zip"), (out / "solutions.zip").read_bytes())]


ASSIGNMENTS = sorted(path.name for path in (ROOT / "source").iterdir() if path.is_dir())


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_line_of_any_hidden_test_is_in_any_file_written_or_zipped(tmp_path, assignment):
    source = ROOT / "source" / assignment
    names = [path.name for path in sorted(source.glob("*.ipynb"))]
    found_in_source = [hidden_lines(source / name) for name in names]
    secrets = set().union(*(lines for lines, _ in found_in_source))
    public = "\n".join(text for _, text in found_in_source)
    assert len(secrets) > 20, "the course's notebooks have hidden tests to keep"
    out = run_folder(tmp_path / "run", assignment, names, students=("ann", "12345", "1002"))
    (out / "intake.csv").write_text(
        INTAKE_HEADER + "".join(f"12345,{name},canvas,annlee,,x,annlee_12345_678_,\n"
                                f"1002,{name},moodle,Bob Ray,,x,Bob Ray_1002_assignsubmission_file/,\n" for name in names))
    released = build(out, source, Term(due={assignment: PAST}), assignment=assignment)
    assert released.given == ["1002", "12345", "ann"]
    outputs = every_output(out)
    assert len(outputs) == 2 * 3 * len(names) + 1
    assert {name: found(secrets, public, name, data) for name, data in outputs} == {name: [] for name, _ in outputs}
    # the search finds them where they are: in the source notebook itself
    assert found(secrets, public, "source.ipynb", json.dumps(nbformat.read(source / names[0], 4)).encode()) \
        == sorted(hidden_lines(source / names[0])[0])
    # and every solution went out whole, the written answers' model answers included
    given = nbformat.reads(outputs[0][1].decode(), 4)
    reference = [cell for cell in nbformat.read(source / names[0], 4).cells
                 if cell.metadata.get("nbgrader", {}).get("solution")]
    assert any(cell.cell_type == "markdown" for cell in reference), "a written answer graded by hand"
    for cell in reference:
        kept = "\n".join(line for line in cell.source.split("\n") if "### BEGIN SOLUTION" not in line
                         and "### END SOLUTION" not in line)
        assert kept in [one.source for one in given.cells]


# --- the command line ---

@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course root with source/ps1, a graded run of ann, bob and cy, and a term with ps1's due date."""
    monkeypatch.setenv("COURSE_ROOT", str(tmp_path))
    ps1_source(tmp_path)
    run_folder(tmp_path / "build" / "grading" / "ps1", "ps1", ["ps1.ipynb"])
    (tmp_path / "term.toml").write_text('[due]\nps1 = "2027-01-15T23:59:00+01:00"\n')
    return tmp_path


def test_the_command_releases_past_due_students_and_names_the_others(course, capsys):
    (course / "ext.csv").write_text("student_id,assignment,due\nbob,ps1,2027-03-01T23:59:00+01:00\n")
    assert cli.main(["solutions", "ps1", "--extensions", str(course / "ext.csv"), "--now", "2027-02-01T00:00:00Z"]) == 0
    said = capsys.readouterr().out
    assert "the solutions of 2 of 3 students" in said
    assert "withheld, not yet due: bob (due 2027-03-01T23:59:00+01:00)" in said
    run = course / "build" / "grading" / "ps1"
    assert sorted(zipfile.ZipFile(run / "solutions.zip").namelist()) == ["ann/ps1-solution.ipynb",
                                                                          "cy/ps1-solution.ipynb"]


def test_the_course_configuration_s_extensions_reach_the_command_as_they_reach_grade(course, capsys):
    """c.GradingSettings.extensions in the course's nbgrader_config.py, no option: the same record as
    `autograder grade` reads, so bob's extension holds here too."""
    (course / "ext.csv").write_text("student_id,assignment,due\nbob,ps1,2027-03-01T23:59:00+01:00\n")
    (course / "nbgrader_config.py").write_text(f"c = get_config()\nc.GradingSettings.extensions = {str(course / 'ext.csv')!r}\n")
    assert cli.main(["solutions", "ps1", "--now", "2027-02-01T00:00:00Z"]) == 0
    assert "withheld, not yet due: bob" in capsys.readouterr().out


def test_now_defaults_to_the_current_time(course, capsys):
    (course / "term.toml").write_text('[due]\nps1 = "2999-01-01T00:00:00Z"\n')
    assert cli.main(["solutions", "ps1"]) == 0
    assert "the solutions of 0 of 3 students" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["solutions", "ps1", "--term", "none.toml"], "none.toml"),
    (["solutions", "ps9"], "unknown assignment 'ps9'"),
    (["solutions", "ps1", "--now", "2027-02-01"], "has no UTC offset"),
    (["solutions", "ps1", "--extensions", "EXT"], "student 'dan' has no submission in this class"),
])
def test_bad_input_exits_2_with_a_message(course, capsys, args, message):
    (course / "ext.csv").write_text("student_id,assignment,due\ndan,ps1,2027-03-01T23:59:00+01:00\n")
    args = [str(course / "ext.csv") if arg == "EXT" else arg for arg in args]
    assert cli.main(args) == 2
    assert message in capsys.readouterr().err


def test_no_due_date_exits_2_and_writes_nothing(course, capsys):
    (course / "term.toml").unlink()
    assert cli.main(["solutions", "ps1", "--now", "2027-02-01T00:00:00Z"]) == 2
    assert "no due date for ps1" in capsys.readouterr().err
    assert not (course / "build" / "grading" / "ps1" / "solutions.zip").exists()
