"""Inject a profile's parameters over whatever the student left in the parameters cell.

The same thing papermill does for `make run`: a cell tagged `injected-parameters` goes right after
the cell tagged `parameters`. Students can change their parameters cell while they work; grading
always runs with the profile's sizes and seeds, so they can neither slow grading down nor change
what it measures.
"""

from __future__ import annotations

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Unicode

from course import syllabus

TAG = "injected-parameters"


class InjectProfile(NbGraderPreprocessor):
    enabled = Bool(True).tag(config=True)
    profile = Unicode("grade", help="Name of the course profile to inject").tag(config=True)

    def preprocess(self, nb, resources):
        assignment_id = resources.get("nbgrader", {}).get("assignment") or resources.get("assignment_id")
        try:
            parameters = syllabus.get(assignment_id).parameters(self.profile)
        except syllabus.UnknownAssignmentError:
            # Not a course assignment (nbgrader's own fixtures, say): nothing to inject.
            self.log.info("no profile for assignment %r: parameters left as submitted", assignment_id)
            return nb, resources
        nb.cells = [cell for cell in nb.cells if TAG not in cell.get("metadata", {}).get("tags", [])]
        if parameters:
            position = parameters_position(nb)
            nb.cells.insert(position, injected_cell(parameters, self.profile))
        return nb, resources


def parameters_position(nb) -> int:
    """Index right after the first cell tagged `parameters` (0 when there is none)."""
    for index, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            return index + 1
    return 0


def injected_cell(parameters: dict, profile: str):
    lines = [f"# Parameters injected by the autograder (profile: {profile})"]
    lines += [f"{name} = {value!r}" for name, value in parameters.items()]
    cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata["tags"] = [TAG]
    cell.id = TAG
    return cell
