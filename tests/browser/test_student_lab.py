"""A student in JupyterLab: runs the untouched release, then solves one exercise and validates.

JupyterLab serves a copy of release/ (ci profile) with no nbgrader_config.py, as on a student's
machine; nbgrader's Validate button and the `tf-course` kernel come from the venv.
"""

from __future__ import annotations

import ast

import nbformat
import pytest

from autograder.authoring.demo import type_in_solutions
from tests.browser import lab_ui
from tests.browser.courses import LAYOUT, student_copy
from tests.browser.server import LabServer

pytestmark = pytest.mark.browser

ASSIGNMENT = "00_gpu_setup"
NOTEBOOK = f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
SOLVED = "check_build"  # the exercise the Validate test solves (its test cell is test_check_build)


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _prints(source: str) -> bool:
    """Does the cell call print() outside the functions and classes it defines?"""
    for statement in ast.parse(source).body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print" for node in ast.walk(statement)):
            return True
    return False


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with LabServer(tmp_path_factory.mktemp("student-course"), tmp_path_factory.mktemp("student-jupyter")) as server:
        yield server


@pytest.fixture
def notebook(lab):
    """A fresh ci-profile copy of the release notebook, and no kernel left from an earlier test."""
    lab.shut_down_kernels()
    student_copy(lab.root, [ASSIGNMENT])
    return lab.root / NOTEBOOK


def test_run_all_on_the_release_stops_only_at_the_unsolved_exercises(lab, notebook, page):
    lab_ui.open_notebook(page, lab.page_url(NOTEBOOK))
    lab_ui.menu(page, "Run", "Run All Cells")
    cells = nbformat.read(notebook, as_version=4).cells
    stops, start = [], 0
    while start < len(cells):
        state = lab_ui.wait_run_finished(page, start)
        cells = lab_ui.save_and_read(page, notebook, lab_ui.ran(state)).cells
        failed = [index for index in range(start, len(cells)) if lab_ui.error_text(cells[index])]
        if not failed:
            break
        stops.append(failed[0])
        start = failed[0] + 1
        if start < len(cells):  # what a student does next: run on from the cell below the error
            lab_ui.select_cell(page, start)
            lab_ui.menu(page, "Run", "Run Selected Cell and All Below")

    code = [(index, cell) for index, cell in enumerate(cells) if cell.cell_type == "code"]
    test_cells = [index for index, cell in code if _nbgrader(cell).get("grade")]
    assert stops == test_cells, (
        f"Run All should stop exactly at the graded test cells {test_cells} (every exercise is unsolved), "
        f"it stopped at {stops}: " + "; ".join(f"cell {index}: {lab_ui.error_text(cells[index])}" for index in stops))
    for index in test_cells:
        assert "NotImplementedError" in lab_ui.error_text(cells[index]), (
            f"test cell {_nbgrader(cells[index])['grade_id']} should fail on the exercise's NotImplementedError, "
            f"got {lab_ui.error_text(cells[index])!r}")
    for index, cell in code:
        kind = "exercise" if _nbgrader(cell).get("solution") else "walk-through"
        assert cell.execution_count, f"{kind} cell {index} ({cell.id}) never ran:\n{cell.source[:300]}"
        if index not in test_cells:
            assert not lab_ui.error_text(cell), f"{kind} cell {index} ({cell.id}) raised {lab_ui.error_text(cell)}"
        if kind == "walk-through" and _prints(cell.source):
            assert cell.outputs, f"walk-through cell {index} ({cell.id}) prints but showed no output"
    shown = lab_ui.wait_visible(page, page.locator(".jp-OutputArea-output", has_text="NotImplementedError"),
                                "a NotImplementedError in the notebook's outputs")
    shown.first.scroll_into_view_if_needed()  # the screenshot shows what the student reads


def test_validate_after_solving_one_exercise_reports_only_the_others(lab, notebook, page):
    source_nb = nbformat.read(LAYOUT.source_notebook(ASSIGNMENT), as_version=4)
    release_nb = nbformat.read(notebook, as_version=4)
    typed = type_in_solutions(release_nb, source_nb)
    index = next(i for i, cell in enumerate(typed.cells) if _nbgrader(cell).get("grade_id") == SOLVED)
    answer = typed.cells[index].source

    lab_ui.open_notebook(page, lab.page_url(NOTEBOOK))
    lab_ui.type_into_cell(page, index, answer)
    page.keyboard.press("Shift+Enter")
    state = lab_ui.wait_run_finished(page, index)
    saved = lab_ui.save_and_read(page, notebook, lab_ui.ran(state)).cells[index]
    assert saved.source == answer, f"the cell holds what was typed:\n{saved.source}"
    assert saved.execution_count and not lab_ui.error_text(saved), f"the solution ran: {saved.outputs}"

    validate = page.locator(".jp-NotebookPanel-toolbar .jp-ToolbarButton", has_text="Validate")
    lab_ui.wait_visible(page, validate, "nbgrader's Validate button in the notebook toolbar").first.click()
    # nbgrader shows its dialog only once the server's validate call answered (titled "Validation
    # Results", or "Validation failed" when the call itself failed)
    dialog = lab_ui.wait_visible(page, page.locator(".jp-Dialog-content", has_text="Validation"),
                                 "nbgrader's validation dialog", timeout=lab_ui.KERNEL_TIMEOUT)
    text = dialog.first.inner_text()
    unsolved = [cell for cell in typed.cells if _nbgrader(cell).get("grade") and
                _nbgrader(cell)["grade_id"] != f"test_{SOLVED}"]
    assert text.startswith("Validation Results"), text[:3000]
    assert f"check_build(" not in text, f"the solved exercise's test still fails:\n{text[:3000]}"
    assert text.count("The following cell failed") == len(unsolved), text[:3000]
