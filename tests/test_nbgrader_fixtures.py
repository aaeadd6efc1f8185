"""An autograder built on nbgrader must give nbgrader's own scores for any nbgrader assignment.

The fixtures are nbgrader's (tests/fixtures/nbgrader, BSD-3-Clause), used by its test
`test_showtraceback_exploit`; with submitted-unchanged.ipynb as the source of ps1/p1 nbgrader grades
them 1, 2, 1 and 1 out of 7. The two cheat attempts must also be flagged by the tamper scan.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.grading.pipeline import grade_class
from autograder.settings import GradingSettings

pytestmark = pytest.mark.grading

FIXTURES = Path(__file__).parent / "fixtures" / "nbgrader"
EXPECTED = {"unchanged": 1, "changed": 2, "cheat-attempt": 1, "cheat-attempt-alternative": 1}


def test_scores_match_nbgrader(tmp_path):
    source = tmp_path / "source" / "ps1"
    source.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "submitted-unchanged.ipynb", source / "p1.ipynb")
    submissions = tmp_path / "submissions"
    for student in EXPECTED:
        (submissions / student).mkdir(parents=True)
        shutil.copyfile(FIXTURES / f"submitted-{student}.ipynb", submissions / student / "p1.ipynb")
    result = grade_class("ps1", source, submissions, tmp_path / "out", settings=GradingSettings(timeout=120, workers=2))
    scores = {row.student_id: (row.score, row.max_score) for row in result.rows}
    assert scores == {student: (points, 7) for student, points in EXPECTED.items()}
    statuses = {row.student_id: row.status for row in result.rows}
    # the cheat attempts patch IPython's showtraceback: same score as nbgrader gives, and flagged;
    # "changed" answered the fixture's manually graded cells, which nbgrader leaves to a hand grade
    assert statuses == {"unchanged": "graded", "changed": "needs_manual_grade",
                        "cheat-attempt": "flagged", "cheat-attempt-alternative": "flagged"}
    flagged = {row.student_id: row.reason for row in result.rows if row.status == "flagged"}
    assert all("showtraceback" in reason for reason in flagged.values()), flagged
