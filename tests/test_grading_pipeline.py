"""The grading chain on a tiny assignment: nbgrader's own sanitize/restore/execute, plus the course's
profile injection, log-noise filter and leak-free feedback."""

from __future__ import annotations

import csv

import nbformat
import pytest

from autograder.authoring import demo
from autograder.grading import grades_csv
from autograder.grading.pipeline import grade_class
from autograder.runfolder import GRADES_COLUMNS
from autograder.settings import GradingSettings
from tests import notebooks

pytestmark = pytest.mark.grading

ASSIGNMENT = "00_gpu_setup"  # a syllabus id, so the grade profile is injected


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    source, release_nb = notebooks.tiny_course(root, ASSIGNMENT)
    submissions = root / "submissions"
    demo.write_class(source / f"{ASSIGNMENT}.ipynb", release_nb, submissions)
    # a student who edits the parameters cell to make grading slow
    edited = nbformat.read(submissions / "solution" / f"{ASSIGNMENT}.ipynb", as_version=4)
    edited.cells[1].source = "MATMUL_SIZE = 100000\nREPEATS = 1000"
    (submissions / "slowpoke").mkdir()
    nbformat.write(edited, submissions / "slowpoke" / f"{ASSIGNMENT}.ipynb")
    (submissions / "broken").mkdir()
    (submissions / "broken" / f"{ASSIGNMENT}.ipynb").write_text('{"cells": [', encoding="utf-8")
    before = {p: p.read_bytes() for p in submissions.rglob("*") if p.is_file()}
    result = grade_class(ASSIGNMENT, source, submissions, root / "out", settings=GradingSettings(timeout=120, workers=2))
    grades_csv.write_csv(result)
    after = {p: p.read_bytes() for p in submissions.rglob("*") if p.is_file()}
    return {"result": result, "rows": {row.student_id: row for row in result.rows},
            "unchanged": before == after, "out": root / "out"}


def test_solution_gets_full_marks_despite_log_noise(graded):
    row = graded["rows"]["solution"]
    assert (row.status, row.score, row.max_score) == ("graded", 6, 6), row


def test_blank_release_gets_zero(graded):
    row = graded["rows"]["blank"]
    assert (row.status, row.score) == ("graded", 0), row


def test_profile_is_injected_over_the_students_parameters(graded):
    row = graded["rows"]["slowpoke"]
    assert row.cells["test_profile"] == 2 and row.score == 6, row


def test_broken_notebook_is_invalid_with_a_reason_and_the_rest_is_graded(graded):
    row = graded["rows"]["broken"]
    assert row.status == "invalid" and "not a valid notebook" in row.reason, row
    assert len(graded["rows"]) == 4


def test_submissions_folder_is_not_modified(graded):
    assert graded["unchanged"]


def test_grades_csv_has_the_columns_and_a_row_per_student(graded):
    with (graded["out"] / "grades.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["student_id"] for row in rows] == ["blank", "broken", "slowpoke", "solution"]
    assert set(GRADES_COLUMNS) <= set(rows[0]) and {"test_double", "test_profile", "test_noise"} <= set(rows[0])


def test_feedback_has_no_hidden_test(graded):
    feedback = graded["out"] / "feedback"
    pages = {path.stem: notebooks.squashed_text(path.read_text(encoding="utf-8")) for path in feedback.glob("*.html")}
    assert {"solution", "blank", "slowpoke"} <= set(pages)
    for page in pages.values():
        assert "double(2)==4" in page, "the visible test should be in the feedback"
        assert "double(-7)" not in page and "HIDDENTESTS" not in page


def test_similarity_is_computed_after_grading_and_the_class_that_typed_the_reference_has_no_pair(graded):
    """solution and slowpoke hand in the reference, blank the release: nothing of their own is shared."""
    comparison, = graded["result"].similarity
    assert (comparison.students, comparison.pairs, comparison.problem) == (3, [], ""), comparison
    lines = (graded["out"] / "similarity.csv").read_text(encoding="utf-8").splitlines()
    assert lines == ["student_a,student_b,notebook,similarity_a,similarity_b"]


def test_a_kernel_without_a_sandbox_exits_by_itself_so_its_exit_handlers_run(tmp_path):
    """Without a sandbox nothing dies with the kernel (no private /tmp), so it is shut down gracefully
    and its exit handlers run: TensorFlow's autograph removes its files from the machine's /tmp that
    way (a sandboxed kernel is killed once its last cell answers: `shutdown_kernel` in
    autograder.nbgrader_setup.config). Here the handler writes into the kernel's working folder."""
    source, release_nb = notebooks.tiny_course(tmp_path, ASSIGNMENT)
    submissions = tmp_path / "submissions"
    answer = ("import atexit, pathlib\nMARK = pathlib.Path('exited').resolve()\n"
              "atexit.register(MARK.write_text, 'exit handlers ran')\n"
              "def double(value):\n    return 2 * value\n")
    (submissions / "ann").mkdir(parents=True)
    nbformat.write(notebooks.answered(nbformat.read(release_nb, as_version=4), answer),
                   submissions / "ann" / f"{ASSIGNMENT}.ipynb")
    result = grade_class(ASSIGNMENT, source, submissions, tmp_path / "out", progress=lambda line: None,
                         settings=GradingSettings(sandbox="none", workers=1))
    row, = result.rows
    assert row.score == row.max_score, (row.status, row.reason)
    marks = list((tmp_path / "out").rglob("exited"))   # nbgrader copies the autograded folder to feedback/
    assert marks and {path.read_text() for path in marks} == {"exit handlers ran"}, marks
