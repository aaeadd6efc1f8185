"""Points set by hand (fast: no grading): what an overrides file may say, and how a row takes it."""

from __future__ import annotations

import pytest

from autograder.grading import overrides
from autograder.grading.overrides import OverrideError
from autograder.grading.results import Row
from autograder.grading.status import Status

CELLS = {"test_scale": 3.0, "test_parameters": 1.0}
HEADER = "student_id,cell,points,comment,grader\n"


def read(tmp_path, body: str, header: str = HEADER):
    path = tmp_path / "overrides.csv"
    path.write_text(header + body, encoding="utf-8")
    return overrides.read(path, CELLS, {"ann", "bob"})


def test_a_good_file_gives_one_override_per_line(tmp_path):
    assert read(tmp_path, "ann,test_scale,2.5,appeal,TA Kim\nbob,test_parameters,0,,Prof. Ng\n") == [
        overrides.Override("ann", "test_scale", 2.5, "appeal", "TA Kim"),
        overrides.Override("bob", "test_parameters", 0.0, "", "Prof. Ng")]


@pytest.mark.parametrize("body, message", [
    ("cy,test_scale,1,,TA\n", "line 2: student 'cy' has no submission"),
    ("ann,test_nope,1,,TA\n", "line 2: unknown cell 'test_nope' (the graded cells: test_scale, test_parameters)"),
    ("ann,test_scale,three,,TA\n", "line 2: points 'three' is not a number"),
    ("ann,test_scale,4,,TA\n", "line 2: 4 points for test_scale, which is worth 3"),
    ("ann,test_scale,-1,,TA\n", "line 2: -1 points for test_scale"),
    ("ann,test_scale,1,,\n", "line 2: no grader"),
    ("ann,test_scale,1,,TA\nann,test_scale,2,,TA\n", "line 3: ann test_scale was already overridden on line 2"),
])
def test_a_bad_line_says_where_and_why(tmp_path, body, message):
    with pytest.raises(OverrideError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read(tmp_path, body)


def test_a_file_without_the_columns_names_them(tmp_path):
    with pytest.raises(OverrideError, match="expected the columns student_id, cell, points, comment, grader"):
        read(tmp_path, "ann,test_scale,1\n", header="student_id,cell,points\n")


def test_apply_changes_the_cell_and_the_score_and_records_who_and_why():
    row = Row("ann", "ps1", notebook="ps1.ipynb", score=3.0, cells={"test_scale": 3.0, "test_parameters": 0.0})
    rules = [overrides.Override("ann", "test_parameters", 1.0, "appeal", "TA Kim"),
             overrides.Override("ann", "other:test_scale", 3.0, "", "TA Kim"),   # another notebook's cell
             overrides.Override("bob", "test_scale", 0.0, "", "TA Kim")]         # another student
    overrides.apply(row, rules, set(CELLS))
    assert row.score == 4.0 and row.cells == {"test_scale": 3.0, "test_parameters": 1.0}
    assert row.overrides == ["test_parameters: 0 -> 1 by TA Kim (appeal)"]


def test_a_cell_the_run_never_scored_is_set_from_nothing():
    row = Row("ann", "ps1", notebook="ps1.ipynb", status=Status.TIMEOUT)
    overrides.apply(row, [overrides.Override("ann", "test_scale", 2.0, "", "Prof. Ng")], set(CELLS))
    assert row.score == 2.0 and row.overrides == ["test_scale: unscored -> 2 by Prof. Ng"]
