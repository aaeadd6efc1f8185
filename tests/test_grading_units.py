"""Fast unit tests of the grader's pure parts (no kernel, no nbgrader run): the tamper scan, the output
cap and the feedback's hidden-test removal. The end-to-end runs (hostile class, nbgrader fixtures)
test the same parts through the pipeline."""

from __future__ import annotations

import nbformat
import pytest

from autograder import tamper
from autograder.preprocessors import HideHiddenTests, LimitOutputSize


@pytest.mark.parametrize("code, found", [
    ("import numpy as np\nnp.allclose = lambda *a, **k: True", "assigns to np.allclose"),
    ("import builtins\nbuiltins.isinstance = lambda *args: True", "assigns to builtins.isinstance"),
    ("import sys\nsys.modules['numpy'] = None", "assigns to sys.modules['numpy']"),
    ("from course import grading\ngrading.Checks.score = lambda self: 3", "assigns to grading.Checks.score"),
    ("import numpy\nsetattr(numpy, 'allclose', print)", "setattr() on numpy"),
    ("import os\ndel os.environ", "assigns to os.environ"),
    ("open('../../gradebook.db').read()", "touches course files"),
    ("path = 'x/site-packages/autograder/grade.py'", "touches course files"),
])
def test_scan_code_flags_what_reaches_outside_the_exercise(code, found):
    problems = tamper.scan_code(code)
    assert any(found in problem for problem in problems), problems


@pytest.mark.parametrize("code", [
    "import numpy as np\nvalues = np.zeros(3)\nvalues[0] = 1",      # a local array, not the module
    "class Box:\n    pass\nbox = Box()\nbox.size = 3",               # an object of the student's own
    "def f(:\n    pass",                                              # a syntax error fails when it runs
    "%matplotlib inline\nresult = 1",                                  # magics are skipped, not parsed
])
def test_scan_code_leaves_ordinary_code_alone(code):
    assert tamper.scan_code(code) == []


def test_scan_code_knows_modules_imported_in_earlier_cells():
    assert tamper.scan_code("np.allclose = None") == []
    assert tamper.scan_code("np.allclose = None", imported={"np"}) == ["line 1: assigns to np.allclose"]


def _code_cell(outputs, **nbgrader):
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.from_dict(output) for output in outputs]
    if nbgrader:
        cell.metadata["nbgrader"] = {"grade_id": "t", "schema_version": 3, **nbgrader}
    return cell


def test_limit_output_size_cuts_each_output_and_keeps_a_score():
    cap = LimitOutputSize(max_characters=10, max_rich_bytes=20)
    cell = _code_cell([
        {"output_type": "stream", "name": "stdout", "text": "x" * 25},
        {"output_type": "display_data", "data": {"image/png": "A" * 30}, "metadata": {}},
        {"output_type": "execute_result", "data": {"text/plain": "2.4"}, "metadata": {}, "execution_count": 1},
        {"output_type": "error", "ename": "E", "evalue": "y" * 12, "traceback": ["t"] * 150},
    ])
    cell, _ = cap.preprocess_cell(cell, {}, 0)
    stream, image, score, error = cell.outputs
    assert stream["text"].startswith("x" * 10) and "15 more characters" in stream["text"]
    assert "image/png" not in image["data"] and "30 characters removed" in image["data"]["text/plain"]
    assert score["data"]["text/plain"] == "2.4", "a partial-credit score passes untouched"
    assert len(error["traceback"]) == 100 and "2 more characters" in error["evalue"]


def test_hide_hidden_tests_cuts_test_cells_only_and_shortens_their_tracebacks():
    hidden = "assert visible\n### BEGIN HIDDEN TESTS\nassert secret == 42\n### END HIDDEN TESTS\nchecks.score()"
    test = _code_cell([{"output_type": "error", "ename": "AssertionError", "evalue": "expected 3, got 2",
                        "traceback": ["File cell, line 3", "assert secret == 42", "AssertionError: ..."]}],
                      grade=True, solution=False, points=3)
    test.source = hidden
    own = _code_cell([], grade=False, solution=True)
    own.source = hidden  # a student's own cell with the markers is theirs
    hide = HideHiddenTests()
    test, _ = hide.preprocess_cell(test, {}, 0)
    own, _ = hide.preprocess_cell(own, {}, 1)
    assert "secret" not in test.source and "checks.score()" in test.source
    assert test.outputs[0]["traceback"] == ["AssertionError: expected 3, got 2"]
    assert own.source == hidden
