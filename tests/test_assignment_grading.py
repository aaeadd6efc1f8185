"""Every written assignment through the real grading pipeline (nbgrader + the course's preprocessors):
the solutions typed into the release get every automatically graded point (their written answers wait
for a hand grade), the untouched release gets zero, and the
feedback shows no hidden test. TensorFlow's log lines must not cost the solution a single point. The
pages the run writes pass axe-core in Chromium (tests/browser/accessibility.py), on one assignment. One run per assignment answers
every question (these are the suite's heaviest tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.authoring import demo, release
from autograder.grading import report
from autograder.grading.cache import safe_id
from autograder.grading.pipeline import grade_class
from autograder.settings import GradingSettings
from course import runner
from course.layout import Layout
from tests import notebooks
from tests.browser.accessibility import pages
from tests.test_notebooks import nbgrader_meta, released, source

LAYOUT = Layout(Path(__file__).resolve().parent.parent)
ACCESSIBILITY_SAMPLE = "01_session_vs_eager"  # figures, tracebacks on the blank, links in its text


@pytest.mark.grading
@pytest.mark.parametrize("assignment_id", [pytest.param(assignment_id, marks=pytest.mark.browser)
                                           if assignment_id == ACCESSIBILITY_SAMPLE else assignment_id
                                           for assignment_id in release.present(LAYOUT)])
def test_solution_full_marks_blank_zero_feedback_without_hidden_tests(assignment_id, tmp_path):
    demo.write_class(LAYOUT.source_notebook(assignment_id), LAYOUT.release_notebook(assignment_id), tmp_path / "class")
    result = grade_class(assignment_id, LAYOUT.source / assignment_id, tmp_path / "class", tmp_path / "out",
                         settings=GradingSettings(workers=1))  # one worker: xdist runs the rest
    rows = {row.student_id: row for row in result.rows}
    solution, blank = rows["solution"], rows["blank"]
    lost = {cell: score for cell, score in solution.cells.items() if score == 0}
    written = {nbgrader_meta(cell)["grade_id"]: float(nbgrader_meta(cell)["points"])
               for cell in source(assignment_id).cells if nbgrader_meta(cell).get("grade") and nbgrader_meta(cell).get("solution")}
    assert set(solution.answers_to_grade) == set(written), "the model answers typed in wait for a hand grade"
    assert solution.status == ("needs_manual_grade" if written else "graded"), solution.reason
    assert solution.score + sum(written.values()) == solution.max_score == result.max_score > 0, \
        f"solution: {solution.status} {solution.score}/{solution.max_score} {solution.reason}; zero in {lost}"
    assert blank.status == "graded" and blank.score == 0, f"blank release scored {blank.score}: {blank.cells}"
    # report.html's pass rates: the solution's written answers wait (not a 0), the blank's left-as-released ones score 0
    rates = report.pass_rates(result)
    assert {cell: str(rates[cell]) for cell in written} == {cell: "0% (1 waits for a hand grade)" for cell in written}
    # what `nbgrader validate --invert` asks of the release (no test cell at its full points), on the
    # same run: every automatically graded cell of the source is there and scored 0 (the student's
    # Validate button, nbgrader's validate, is pressed in tests/browser/test_student_lab.py)
    tests = {nbgrader_meta(cell)["grade_id"] for cell in source(assignment_id).cells
             if nbgrader_meta(cell).get("grade") and not nbgrader_meta(cell).get("solution")}
    assert tests and tests <= set(blank.cells), f"test cells missing from the blank's row: {tests - set(blank.cells)}"
    passing = {cell: blank.cells[cell] for cell in tests if blank.cells[cell] != 0}
    assert not passing, f"test cells that did not fail on the blank release: {passing}"
    hidden = [chunk for cell in source(assignment_id).cells
              if nbgrader_meta(cell).get("grade") and not nbgrader_meta(cell).get("solution")
              for chunk in notebooks.secret_chunks(cell.source)]
    public = notebooks.squash("".join(cell.source for cell in released(assignment_id).cells))
    # every figure the solution draws carries its description into the feedback page (nbconvert writes
    # its own placeholder for an image without one)
    assert "No description has been provided" not in solution.feedback.read_text(encoding="utf-8")
    for row in (solution, blank):
        page = notebooks.squashed_text(row.feedback.read_text(encoding="utf-8"))
        found = notebooks.leaked(hidden, page, public)
        assert not found, f"feedback of {row.student_id} shows hidden tests: {found[:2]}"
    # the pages read by everyone, on one assignment with figures, tracebacks on the blank and links in its
    # text: no serious or critical accessibility violation on the report, the solution's feedback page
    # (hidden tests removed, written answers waiting, figures) and the blank's executed notebook as
    # `make run` writes it (course/templates/course_lab: failing tests' tracebacks). The pages of the
    # other assignments, and the blank's feedback page, come from the same templates: axe needs seconds
    # a page under load, and checking every one made the suite minutes longer.
    if assignment_id == ACCESSIBILITY_SAMPLE:
        autograded = next((tmp_path / "out").glob(f"course-*/autograded/{safe_id('blank')}/{assignment_id}/*.ipynb"),
                          None)
        assert autograded, "the blank's executed notebook"
        checked = [tmp_path / "out" / "report.html", solution.feedback, runner.write_html(autograded)]
        with pages() as check:
            found = [line for page in checked for line in check(page)]
        assert not found, "\n".join(found)
