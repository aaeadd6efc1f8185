"""Any nbgrader assignment in source/ is graded through the CLI: an id the syllabus does not know, two
notebooks with the same grade ids, one row per student and notebook, max_points.csv beside grades.csv."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from autograder.nbgrader_setup.workspace import Workspace
from tests import notebooks

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ASSIGNMENT = "ps1"  # not in the syllabus: no profile, so nothing is injected

pytestmark = pytest.mark.grading


def part(factor: int) -> nbformat.NotebookNode:
    """A small notebook: `scale(value)` multiplies by `factor`; the parameters must stay as written."""
    return notebooks.notebook([
        v4.new_markdown_cell(f"# Part: scale by {factor}", id="header"),
        notebooks.parameters("SIZE = 999"),
        notebooks.solution(f"def scale(value):\n    ### BEGIN SOLUTION\n    return {factor} * value\n"
                           "    ### END SOLUTION", "scale"),
        notebooks.test_cell(f"assert scale(2) == {2 * factor}\n### BEGIN HIDDEN TESTS\n"
                            f"assert scale(-3) == {-3 * factor}\n### END HIDDEN TESTS", "test_scale", points=3),
        notebooks.test_cell("assert SIZE == 999, SIZE", "test_parameters", points=1),
    ])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("any")
    course = base / "course"
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    shutil.copyfile(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    nbformat.write(part(2), source / "part1.ipynb")
    nbformat.write(part(5), source / "part2.ipynb")
    releaser = Workspace(base / "release-ws", ASSIGNMENT)
    releaser.create(source)
    released = {name: nbformat.read(releaser.release_dir() / name, as_version=4) for name in ("part1.ipynb", "part2.ipynb")}
    subs = base / "submissions"
    for student, answers in {"ann": {"part1.ipynb": "2 * value", "part2.ipynb": "5 * value"},
                             "bob": {"part1.ipynb": "2 * value", "part2.ipynb": "value + 4"},
                             "cy": {"part1.ipynb": "value * 2"}}.items():
        (subs / student).mkdir(parents=True)
        for name, answer in answers.items():
            nbformat.write(notebooks.answered(released[name], f"def scale(value):\n    return {answer}\n"),
                           subs / student / name)
    # ann on time; bob two days late (10 % of his score per started day); cy late, within his extension
    (course / "term.toml").write_text('[due]\nps1 = "2027-01-15T23:59:00+01:00"\n'
                                      '[penalty]\nmethod = "per_day"\npercent_per_day = 10\ncap_percent = 50\n')
    (base / "extensions.csv").write_text("student_id,assignment,due\ncy,ps1,2027-01-20T23:59:00+01:00\n")
    (base / "times.csv").write_text("student_id,submitted_at\nann,2027-01-15T22:00:00+01:00\n"
                                    "bob,2027-01-17T12:00:00+01:00\ncy,2027-01-17T12:00:00+01:00\n")
    # read from overrides/ps1.csv in the course root without an option: an appeal lowers bob's part 1
    (course / "overrides").mkdir()
    (course / "overrides" / "ps1.csv").write_text(
        "student_id,cell,points,comment,grader\nbob,part1:test_parameters,0,changed SIZE by hand,TA Kim\n")
    done = grade(subs, base / "out", course, "--extensions", str(base / "extensions.csv"),
                 "--submitted-at", str(base / "times.csv"))
    with (base / "out" / "max_points.csv").open(newline="", encoding="utf-8") as handle:
        maxima = {row["column"]: row["max_points"] for row in csv.DictReader(handle)}
    return {"done": done, "rows": grades(base / "out"), "maxima": maxima, "out": base / "out", "course": course,
            "submissions": subs, "base": base}


def grade(subs: Path, out: Path, course: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "autograder"), "grade", ASSIGNMENT, "--submissions", str(subs), "--out",
                           str(out), "--workers", "2", "--timeout", "60", *options],
                          cwd=course, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"))


def grades(out: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (out / "grades.csv").open(newline="", encoding="utf-8") as handle:
        return {(row["student_id"], row["notebook"]): row for row in csv.DictReader(handle)}


def test_an_assignment_the_syllabus_does_not_know_is_graded_and_the_run_says_so(graded):
    done = graded["done"]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "WARNING autograder: no profile for 'ps1' in the syllabus" in done.stderr, "a log line, with its level"
    # the run says which sandbox the kernels had: the log's first line, the report, the manifest
    assert "INFO autograder: kernel sandbox: bwrap" in done.stderr
    assert "ran in a bubblewrap sandbox of its own" in (graded["out"] / "report.html").read_text(encoding="utf-8")
    manifest = json.loads((graded["out"] / "run.json").read_text(encoding="utf-8"))
    assert (manifest["assignment"], manifest["sandbox"], manifest["notebooks"]) == \
        ("ps1", "bwrap", {"part1.ipynb": 4.0, "part2.ipynb": 4.0})


def test_one_row_per_student_and_notebook(graded):
    rows = graded["rows"]
    scores = {key: (row["status"], float(row["raw_score"]), float(row["max_score"])) for key, row in rows.items()}
    assert scores == {
        ("ann", "part1.ipynb"): ("graded", 4, 4), ("ann", "part2.ipynb"): ("graded", 4, 4),
        ("bob", "part1.ipynb"): ("graded", 3, 4), ("bob", "part2.ipynb"): ("graded", 1, 4),  # 3: overridden
        ("cy", "part1.ipynb"): ("graded", 4, 4), ("cy", "part2.ipynb"): ("invalid", 0, 4)}
    assert "no part2.ipynb in the submission" in rows["cy", "part2.ipynb"]["reason"]


def test_the_late_penalty_follows_the_term_file_the_extensions_and_the_times(graded):
    """term.toml in the course root is read without --term; bob is 1.5 days late: two started days."""
    rows = graded["rows"]
    late = {key: (row["submitted_at"], float(row["late_by"]), float(row["penalty"]), float(row["score"]))
            for key, row in rows.items() if key[1] == "part1.ipynb"}
    assert late == {("ann", "part1.ipynb"): ("2027-01-15T22:00:00+01:00", 0, 0, 4),
                    ("bob", "part1.ipynb"): ("2027-01-17T12:00:00+01:00", 129660, 0.6, 2.4),  # 20 % of 3
                    ("cy", "part1.ipynb"): ("2027-01-17T12:00:00+01:00", 0, 0, 4)}
    assert (float(rows["bob", "part2.ipynb"]["penalty"]), float(rows["bob", "part2.ipynb"]["score"])) == (0.2, 0.8)


def test_the_same_grade_id_in_two_notebooks_gets_a_column_each(graded):
    rows = graded["rows"]
    assert rows["bob", "part1.ipynb"]["part1:test_scale"] == "3" and rows["bob", "part1.ipynb"]["part2:test_scale"] == ""
    assert rows["bob", "part2.ipynb"]["part2:test_scale"] == "0" and rows["bob", "part2.ipynb"]["part2:test_parameters"] == "1"


def test_an_override_sets_the_cell_says_who_and_why_and_survives_a_forced_regrade(graded):
    row = graded["rows"]["bob", "part1.ipynb"]
    assert row["part1:test_parameters"] == "0"
    assert row["overrides"] == "part1:test_parameters: 1 -> 0 by TA Kim (changed SIZE by hand)"
    report = (graded["out"] / "report.html").read_text(encoding="utf-8")
    assert "part1:test_parameters: 1 -&gt; 0 by TA Kim (changed SIZE by hand)" in report
    again = grade(graded["submissions"], graded["out"], graded["course"], "--force", "--extensions",
                  str(graded["base"] / "extensions.csv"), "--submitted-at", str(graded["base"] / "times.csv"))
    assert again.returncode == 0, again.stderr[-2000:]
    assert "(unchanged, not re-graded)" not in again.stdout, "--force re-ran every notebook"
    def timeless(rows):
        return {key: {column: value for column, value in row.items() if column != "seconds"} for key, row in rows.items()}

    assert timeless(grades(graded["out"])) == timeless(graded["rows"])


def test_an_override_for_an_unknown_cell_stops_the_run_before_grading(graded, tmp_path):
    bad = tmp_path / "overrides.csv"
    bad.write_text("student_id,cell,points,comment,grader\nann,test_scale,1,,TA Kim\n")
    done = grade(graded["submissions"], tmp_path / "out", graded["course"], "--overrides", str(bad))
    assert done.returncode == 2
    assert f"{bad} line 2: unknown cell 'test_scale'" in done.stderr and "part1:test_scale" in done.stderr
    assert not (tmp_path / "out" / "course-0").exists() and not list((tmp_path / "out").glob("jobs/*/*/job.json")), \
        "nothing was generated or graded (the idle workers that had started are gone)"


def test_max_points_lists_every_column_of_grades_csv(graded):
    assert graded["maxima"] == {"score (part1.ipynb)": "4", "score (part2.ipynb)": "4", "part1:test_scale": "3",
                                "part1:test_parameters": "1", "part2:test_scale": "3", "part2:test_parameters": "1"}
    with (graded["out"] / "grades.csv").open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert [column for column in header if ":" in column] == [column for column in graded["maxima"] if ":" in column]


def test_each_notebook_has_its_own_feedback_page(graded):
    feedback = graded["out"] / "feedback"
    assert sorted(path.relative_to(feedback).as_posix() for path in feedback.rglob("*.html")) == [
        "ann/part1.html", "ann/part2.html", "bob/part1.html", "bob/part2.html", "cy/part1.html"]
    page = notebooks.squashed_text((feedback / "bob" / "part2.html").read_text(encoding="utf-8"))
    assert "scale(2)==10" in page and "scale(-3)" not in page, "visible test shown, hidden one not"


def test_an_assignment_without_a_source_folder_is_refused_with_the_known_ones(graded):
    done = subprocess.run([str(BIN / "autograder"), "grade", "ps9", "--submissions", str(graded["out"])],
                          cwd=graded["course"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "unknown assignment 'ps9'" in done.stderr and "ps1" in done.stderr, done.stderr


def test_a_rerun_reuses_the_rows_until_the_course_configuration_changes(graded):
    """Last in this module (it re-grades the class): a plain re-run reuses every row it can; after the
    course's nbgrader_config.py changes (here nbgrader's cell timeout), the same command grades every
    notebook again, with the same grades."""
    options = ("--extensions", str(graded["base"] / "extensions.csv"),
               "--submitted-at", str(graded["base"] / "times.csv"))
    before = grades(graded["out"])
    again = grade(graded["submissions"], graded["out"], graded["course"], *options)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.count("(unchanged, not re-graded)") == 5, again.stdout  # cy's missing part2 is read again
    config = graded["course"] / "nbgrader_config.py"
    original = config.read_text(encoding="utf-8")
    config.write_text(original + "\nc.Execute.timeout = 61\n", encoding="utf-8")
    try:
        changed = grade(graded["submissions"], graded["out"], graded["course"], *options)
    finally:
        config.write_text(original, encoding="utf-8")
    assert changed.returncode == 0, changed.stderr[-2000:]
    assert "(unchanged, not re-graded)" not in changed.stdout, changed.stdout

    def timeless(rows):
        return {key: {column: value for column, value in row.items() if column != "seconds"} for key, row in rows.items()}

    assert timeless(grades(graded["out"])) == timeless(before)
