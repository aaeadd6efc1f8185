"""Every source and release notebook follows the course's rules (DESIGN §2-§3, §6; STYLE.md)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from autograder.authoring import release
from course import kernel, syllabus
from course.layout import Layout
from tests import notebooks

LAYOUT = Layout(Path(__file__).resolve().parent.parent)
PRESENT = release.present(LAYOUT)
SECTIONS = ["## Overview", "## Setup", "## Summary", "## Further reading"]
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")


def nbgrader_meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def source(assignment_id):
    return nbformat.read(LAYOUT.source_notebook(assignment_id), as_version=4)


def released(assignment_id):
    return nbformat.read(LAYOUT.release_notebook(assignment_id), as_version=4)


def test_at_least_the_first_assignment_exists():
    assert "00_gpu_setup" in PRESENT


def test_missing_assignments_are_reported_not_faked():
    missing = [aid for aid in syllabus.ids() if aid not in PRESENT]
    for assignment_id in missing:
        assert not (LAYOUT.release / assignment_id).exists(), f"release/{assignment_id} without a source"


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_notebooks_are_committed_without_outputs(assignment_id):
    for notebook in (source(assignment_id), released(assignment_id)):
        dirty = [cell.get("id") for cell in notebook.cells if cell.cell_type == "code"
                 and (cell.outputs or cell.execution_count is not None)]
        assert not dirty, f"{assignment_id}: cells with outputs {dirty}"


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_exactly_one_parameters_cell_with_every_profile_name(assignment_id):
    notebook = source(assignment_id)
    cells = [cell for cell in notebook.cells if "parameters" in cell.metadata.get("tags", [])]
    assert len(cells) == 1, f"{assignment_id}: {len(cells)} cells tagged parameters"
    defined = set(re.findall(r"^([A-Z_][A-Z0-9_]*)\s*=", cells[0].source, flags=re.M))
    for profile in syllabus.PROFILES:
        unknown = set(syllabus.get(assignment_id).parameters(profile)) - defined
        assert not unknown, f"{assignment_id}: profile {profile} sets {unknown}, not in the parameters cell"
    assert "REQUIRE_GPU" in defined


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_course_kernel(assignment_id):
    for notebook in (source(assignment_id), released(assignment_id)):
        assert notebook.metadata["kernelspec"]["name"] == kernel.KERNEL_NAME


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_header_and_section_order(assignment_id):
    notebook = source(assignment_id)
    header = notebook.cells[0]
    assert header.cell_type == "markdown" and header.source.startswith(f"# {assignment_id[:2]} ·"), header.source[:80]
    for field in ("**Needs:**", "**Runtime:**", "**Time:**", "**Learning objectives**"):
        assert field in header.source, f"{assignment_id}: header lacks {field}"
    headings = [line.strip() for cell in notebook.cells if cell.cell_type == "markdown"
                for line in cell.source.splitlines() if line.startswith("## ")]
    positions = [headings.index(section) if section in headings else -1 for section in SECTIONS]
    assert -1 not in positions, f"{assignment_id}: missing sections {[s for s, p in zip(SECTIONS, positions) if p < 0]}"
    assert positions == sorted(positions), f"{assignment_id}: sections out of order: {headings}"


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_every_exercise_has_visible_and_hidden_tests(assignment_id):
    notebook = source(assignment_id)
    solutions = [cell for cell in notebook.cells if nbgrader_meta(cell).get("solution")]
    tests = [cell for cell in notebook.cells if nbgrader_meta(cell).get("grade") and not nbgrader_meta(cell).get("solution")]
    assert len(solutions) >= 5 and len(tests) >= 5, f"{assignment_id}: {len(solutions)} exercises, {len(tests)} tests"
    for cell in solutions:  # a written answer (a manually graded markdown cell) keeps its model answer there too
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source, nbgrader_meta(cell)["grade_id"]
    for cell in tests:
        visible = cell.source.split("### BEGIN HIDDEN TESTS")[0]
        assert "assert" in visible or "raises" in visible, f"{nbgrader_meta(cell)['grade_id']}: no visible test"
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{nbgrader_meta(cell)['grade_id']}: no hidden test"
        assert nbgrader_meta(cell).get("points", 0) > 0 and nbgrader_meta(cell).get("locked")


EXERCISE = re.compile(r"^### Exercise (?P<number>\d+)(?P<part>[a-z]?)\b.*?\((?P<points>\d+) points?\)", re.M)


def _exercises(notebook) -> list[tuple[str, int, float]]:
    """(heading number, points the heading states, points of the grade cells up to the next heading).
    Grade cells are the test cells and the written answers (nbgrader's manually graded answer cells,
    `grade` and `solution` both set)."""
    found: list[list] = []
    for cell in notebook.cells:
        match = EXERCISE.search(cell.source) if cell.cell_type == "markdown" else None
        if match:
            found.append([match["number"] + match["part"], int(match["points"]), 0.0])
        meta = nbgrader_meta(cell)
        if meta.get("grade") and found:
            found[-1][2] += float(meta.get("points", 0))
    return [tuple(entry) for entry in found]


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_exercises_are_numbered_in_order_and_state_their_points(assignment_id):
    notebook = source(assignment_id)
    exercises = _exercises(notebook)
    graded = sum(float(nbgrader_meta(cell).get("points", 0)) for cell in notebook.cells if nbgrader_meta(cell).get("grade"))
    assert exercises, f"{assignment_id}: no '### Exercise N ... (P points)' heading"
    numbers = [int(re.match(r"\d+", label).group()) for label, _, _ in exercises]
    assert numbers == sorted(numbers) and sorted(set(numbers)) == list(range(1, max(numbers) + 1)), (
        f"{assignment_id}: exercises appear as {[label for label, _, _ in exercises]}")
    for label, stated, counted in exercises:
        assert stated == counted, f"{assignment_id}: exercise {label} says {stated} points, its test cells give {counted:g}"
    assert sum(counted for _, _, counted in exercises) == graded, f"{assignment_id}: a graded cell has no exercise heading"


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_test_cells_print_when_they_pass_and_give_partial_credit_from_three_points(assignment_id):
    """Every visible test part prints one line on success; a cell worth 3 points or more scores groups
    of cases (course.grading.Checks) and ends with its score, which nbgrader takes as partial credit."""
    for cell in source(assignment_id).cells:
        meta = nbgrader_meta(cell)
        if not meta.get("grade") or meta.get("solution"):
            continue
        visible = cell.source.split("### BEGIN HIDDEN TESTS")[0]
        last_line = cell.source.strip().splitlines()[-1]
        if meta["points"] >= 3:
            assert "grading.Checks(" in visible and ".group(" in visible, f"{meta['grade_id']}: no groups of checks"
            assert re.fullmatch(r"\w+\.score\(\)", last_line), f"{meta['grade_id']}: ends with {last_line!r}, not the score"
        else:
            assert "print(" in visible or "grading.Checks(" in visible, f"{meta['grade_id']}: prints nothing when it passes"


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_release_holds_no_solution_and_no_hidden_test(assignment_id):
    text = LAYOUT.release_notebook(assignment_id).read_text(encoding="utf-8")
    for marker in MARKERS:
        assert marker not in text, f"release/{assignment_id} contains {marker!r}"
    public = notebooks.squash("".join(cell.source for cell in released(assignment_id).cells))
    for cell in source(assignment_id).cells:
        found = notebooks.leaked(notebooks.secret_chunks(cell.source), public)
        assert not found, f"release/{assignment_id} reveals {nbgrader_meta(cell).get('grade_id')}: {found[:2]}"


def test_course_package_reveals_no_solution_or_hidden_test():
    shipped = notebooks.squash("\n".join(path.read_text(encoding="utf-8")
                                          for path in (LAYOUT.root / "course").rglob("*.py")))
    for assignment_id in PRESENT:
        release_exists = LAYOUT.release_notebook(assignment_id).exists()  # a missing release fails elsewhere
        public = notebooks.squash("".join(cell.source for cell in released(assignment_id).cells)) if release_exists else ""
        for cell in source(assignment_id).cells:
            found = notebooks.leaked(notebooks.secret_chunks(cell.source), shipped, public)
            assert not found, f"course/ reveals {nbgrader_meta(cell).get('grade_id')}: {found[:2]}"


def test_release_is_in_sync_with_source():
    problems = release.drift(LAYOUT)
    assert not problems, "\n".join(problems)


TF_LINK = re.compile(r"https?://github\.com/tensorflow/tensorflow(?P<rest>[^\s)\]\"'>]*)")
PINNED = re.compile(r"^/(?:(?:blob|tree)/v\d+\.\d+\.\d+(?:[/#]|$)|(?:issues|pull)/\d+)")


def _course_texts() -> dict[str, str]:
    """Every text a student reads: the source notebooks' cells and the course package's files."""
    texts = {}
    for assignment_id in PRESENT:
        for index, cell in enumerate(source(assignment_id).cells):
            texts[f"source/{assignment_id} cell {index} ({cell.get('id')})"] = cell.source
    for path in sorted((LAYOUT.root / "course").rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json", ".txt", ".md"):
            texts[str(path.relative_to(LAYOUT.root))] = path.read_text(encoding="utf-8")
    return texts


def test_every_tensorflow_source_link_is_pinned_to_a_tag():
    """A link into tensorflow/tensorflow names a release tag (the file as the claim read it), an issue or a PR."""
    unpinned = [f"{where}: github.com/tensorflow/tensorflow{match.group('rest')}"
                for where, text in _course_texts().items() for match in TF_LINK.finditer(text)
                if not PINNED.match(match.group("rest"))]
    assert not unpinned, "links not pinned to a tag:\n" + "\n".join(unpinned[:20])


# "seed" in the sense of the articles the course grew from, which students never saw (a random
# seed, `SEED = 0`, "the same seed gives the same data", is another word and stays)
ARTICLE_SEED = re.compile(r"(?i)\bseed(?:\s+article|\s+build|['’]s)|\bSEED_[A-Z]")


def test_no_text_calls_an_article_the_seed():
    found = [f"{where}: ...{text[max(0, match.start() - 40):match.end() + 40]}..."
             for where, text in _course_texts().items() for match in ARTICLE_SEED.finditer(text)]
    assert not found, "say what the source is (\"a typical 2021 source build\"), not \"the seed\":\n" + "\n".join(found[:20])


@pytest.mark.parametrize("assignment_id", PRESENT)
def test_a_written_answer_is_a_manually_graded_markdown_cell_released_as_nbgraders_stub(assignment_id):
    """Each notebook asks one written question: an nbgrader manually graded answer cell (markdown, `grade`
    and `solution` set, unlocked) whose model answer and marking guide stay in source/; the release shows
    nbgrader's text stub in its place."""
    written = [cell for cell in source(assignment_id).cells
               if nbgrader_meta(cell).get("grade") and nbgrader_meta(cell).get("solution")]
    assert written, f"{assignment_id}: no written answer (a manually graded answer cell)"
    released_cells = {nbgrader_meta(cell).get("grade_id"): cell for cell in released(assignment_id).cells}
    for cell in written:
        meta = nbgrader_meta(cell)
        assert cell.cell_type == "markdown" and not meta.get("locked") and meta.get("points", 0) > 0, meta
        assert "**Marking guide**" in cell.source, f"{meta['grade_id']}: no marking guide beside the model answer"
        assert released_cells[meta["grade_id"]].source == "YOUR ANSWER HERE", (
            f"release/{assignment_id} {meta['grade_id']}: {released_cells[meta['grade_id']].source[:80]!r}")
