"""Feedback that says which written answers wait for a hand grade.

nbgrader's feedback template shows every graded cell's points as `Score: <score> / <points>`, and the
gradebook's score of an answer nobody has graded yet is 0 (`nbgrader.api.Grade.score`: neither an
automatic nor a manual score), so a page made before the hand grade shows a written answer as
"Score: 0.0 / 2.0", which a student reads as a zero. This preprocessor (the last of `GenerateFeedback`'s,
after nbgrader's `GetGrades`) finds in the gradebook the manually graded answer cells (grade and
solution) that still need their manual grade and, through what the template reads:
- shows each such answer without points (its cell's `grade` set to false: the template then heads it
  "Student's answer", as an answer that is not graded; nbgrader's template leaves it out of the list of
  scores at the top, grading's `course_feedback` lists it as waiting, from the cell's
  `waits_for_hand_grade`) and puts a note above it: "Waits for a hand grade (2 points): not graded when this page was
  made ...". The hand grade reaches grades.csv and the LMS's import (`autograder export`), and every
  `autograder grade` after it makes the page again with the grade in the gradebook, where this step
  no longer marks the answer (`autograder.grading.feedback_pages`: a local run on the course's own
  gradebooks); a page of a run on a shared PostgreSQL gradebook or a cluster is not made again, so
  the note says what held when the page was made;
- adds "without the 2 points graded by hand" to the page's heading and title, which the template
  writes from the notebook's name (`resources['nbgrader']['notebook']`) before the total. It runs last
  so that every other step sees the notebook's own name; nbgrader names the output file by
  `resources['unique_key']`, which it leaves alone.
"""

from __future__ import annotations

from nbformat.v4 import new_markdown_cell
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution


WAITS = "waits_for_hand_grade"   # the cell metadata that marks a waiting answer for the feedback template


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def waiting_note(points: float) -> str:
    return (f"**Waits for a hand grade** ({_points(points)}): not graded when this page was made, so the score "
            "at the top leaves it out; the grade given by hand goes to the course's gradebook.")


def mark_waiting(nb, resources: dict, waiting: dict[str, float]):
    """`nb` (after GetGrades) with every answer cell whose grade id is in `waiting` (grade id -> points)
    shown without points and with a note above it, and the page's heading saying its total leaves them out."""
    cells, points = [], []
    for cell in nb.cells:
        cell.metadata.pop(WAITS, None)   # only this step says an answer waits (a student's own metadata does not)
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if is_grade(cell) and is_solution(cell) and grade_id in waiting:
            points.append(waiting[grade_id])
            cells.append(new_markdown_cell(waiting_note(waiting[grade_id])))
            cell.metadata.nbgrader["grade"] = False
            # the list of scores at the top names it (templates/feedback/course_feedback.html.j2)
            cell.metadata[WAITS] = {"kind": "Written response" if cell.cell_type == "markdown" else "Coding free-response",
                                    "points": _points(waiting[grade_id])}
        cells.append(cell)
    if points:
        nb.cells = cells
        info = resources["nbgrader"]
        info["notebook"] = f"{info['notebook']}, without the {_points(sum(points))} graded by hand"
    return nb, resources


class MarkWaitingAnswers(NbGraderPreprocessor):
    """The answers still waiting for a hand grade, from the gradebook GetGrades read; `mark_waiting`."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            submitted = gradebook.find_submission_notebook(info["notebook"], info["assignment"], info["student"])
            waiting = {grade.name: float(grade.max_score or 0) for grade in submitted.grades
                       if grade.needs_manual_grade and grade.manual_score is None}
        return mark_waiting(nb, resources, waiting)
