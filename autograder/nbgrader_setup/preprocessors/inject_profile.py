"""Inject a profile's parameters over whatever the student left in the parameters cell.

The same thing papermill does for `make run`, with papermill's own `parameterize_notebook`: a cell
tagged `injected-parameters` goes right after the cell tagged `parameters`. Students can change
their parameters cell while they work; grading always runs with the profile's sizes and seeds, so
they can neither slow grading down nor change what it measures. Any cell a student tagged
`injected-parameters` is dropped first: papermill would replace such a cell where it stands (before
the parameters cell, say, whose values would then win).
"""

from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor
from papermill.parameterize import parameterize_notebook
from traitlets import Bool

from autograder.settings import GradingSettings
from course import syllabus

TAG = "injected-parameters"


class InjectProfile(NbGraderPreprocessor):
    enabled = Bool(True).tag(config=True)

    @property
    def profile(self) -> str:
        return GradingSettings(parent=self).profile

    def preprocess(self, nb, resources):
        assignment_id = resources.get("nbgrader", {}).get("assignment") or resources.get("assignment_id")
        profile = self.profile
        try:
            parameters = syllabus.get(assignment_id).parameters(profile)
        except syllabus.UnknownAssignmentError:
            # Not a course assignment (nbgrader's own fixtures, say): nothing to inject.
            self.log.info("no profile for assignment %r: parameters left as submitted", assignment_id)
            return nb, resources
        nb.cells = [cell for cell in nb.cells if TAG not in cell.get("metadata", {}).get("tags", [])]
        if parameters:
            # what papermill's execute_notebook prepares before it parameterizes (prepare_notebook_metadata)
            for cell in nb.cells:
                cell.metadata.setdefault("tags", [])
            nb.metadata.setdefault("papermill", {})
            nb = parameterize_notebook(nb, parameters, comment=f"Parameters injected by the autograder "
                                                               f"(profile: {profile})")
        return nb, resources
