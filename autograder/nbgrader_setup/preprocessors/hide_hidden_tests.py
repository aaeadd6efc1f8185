"""Feedback without hidden tests.

nbgrader's feedback renders the autograded notebook, whose test cells were restored from the
gradebook with their hidden tests, and whose tracebacks quote the failing line. This preprocessor
(run in `GenerateFeedback`) removes the hidden-test region from every test cell's source, as the
release does, and cuts the traceback of a failing test cell down to its last line: the exception
and the message the test wrote for the student.
"""

from __future__ import annotations

from nbgrader.preprocessors import ClearHiddenTests
from nbgrader.utils import is_grade, is_solution


class HideHiddenTests(ClearHiddenTests):
    def preprocess_cell(self, cell, resources, index):
        # Only test cells: a student's own cell that happens to contain the markers is theirs.
        if cell.cell_type == "code" and is_grade(cell) and not is_solution(cell):
            cell, resources = super().preprocess_cell(cell, resources, index)
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources
