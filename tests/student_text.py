"""What a student reads in a notebook, measured (DESIGN.md section 7).

    .venv/bin/python -m tests.student_text [release|source]   # the measures per notebook
    .venv/bin/python -m tests.student_text syllabus           # rewrite both READMEs' syllabus tables

Words are whitespace-separated tokens of a markdown cell's source. The core path is every cell that
is not in a deep dive; a deep dive is a section whose heading starts with `Deep dive:` and whose
cells carry the cell tag `deep-dive`. An exercise statement is the markdown from an exercise heading
(`### Exercise N ...`) to its answer cell (the next cell nbgrader marks `solution`), plus that cell's
docstring.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
DEEP_DIVE_TAG = "deep-dive"
DEEP_DIVE_HEADING = re.compile(r"^(#{2,4}) Deep dive: ", re.M)
HEADING = re.compile(r"^(#{1,6}) ", re.M)
EXERCISE_HEADING = re.compile(r"^#{2,4} Exercise \d+[a-z]?\b", re.M)

CORE_WORDS = 4000
CELL_WORDS = 250
STATEMENT_WORDS = 400


def words(text: str) -> int:
    return len(text.split())


def tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def in_deep_dive(cell) -> bool:
    return DEEP_DIVE_TAG in tags(cell)


def docstring(source: str) -> str:
    """The docstrings of the functions and classes an answer cell defines (empty when none parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    return "\n".join(ast.get_docstring(node) or "" for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


@dataclass(frozen=True)
class Statement:
    heading: str
    words: int


@dataclass(frozen=True)
class Measure:
    core_words: int
    deep_dive_words: int
    long_core_cells: list[tuple[int, int, str]]   # (cell index, words, first line)
    statements: list[Statement]

    @property
    def longest_core_cell(self) -> int:
        return max((count for _, count, _ in self.long_core_cells), default=0)


def statements(notebook) -> list[Statement]:
    found = []
    current: tuple[str, int] | None = None
    for cell in notebook.cells:
        match = EXERCISE_HEADING.search(cell.source) if cell.cell_type == "markdown" else None
        if match:
            # the statement starts at the exercise heading, even inside a longer cell
            current = (cell.source[match.start():].splitlines()[0], words(cell.source[match.start():]))
            continue
        if current is None:
            continue
        if nbgrader(cell).get("solution"):
            extra = words(docstring(cell.source)) if cell.cell_type == "code" else 0
            found.append(Statement(current[0], current[1] + extra))
            current = None
        elif cell.cell_type == "markdown":
            current = (current[0], current[1] + words(cell.source))
    return found


def measure(notebook, cell_limit: int = CELL_WORDS) -> Measure:
    core = deep = 0
    long_cells = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        count = words(cell.source)
        if in_deep_dive(cell):
            deep += count
            continue
        core += count
        if count > cell_limit:
            long_cells.append((index, count, cell.source.splitlines()[0][:70] if cell.source else ""))
    return Measure(core, deep, long_cells, statements(notebook))


def deep_dive_problems(notebook) -> list[str]:
    """Every cell of a `Deep dive:` section carries the tag, every tagged cell sits in one, and no
    graded cell (answer, test, written answer) is in a deep dive."""
    problems = []
    level = None   # heading level of the deep dive we are in, or None
    for index, cell in enumerate(notebook.cells):
        heading = HEADING.search(cell.source) if cell.cell_type == "markdown" else None
        if heading and cell.source.lstrip().startswith("#"):
            depth = len(heading.group(1))
            dive = DEEP_DIVE_HEADING.match(cell.source.lstrip())
            if dive:
                level = len(dive.group(1))
            elif level is not None and depth <= level:
                level = None
        tagged = in_deep_dive(cell)
        if level is not None and not tagged:
            problems.append(f"cell {index} is inside a 'Deep dive:' section without the '{DEEP_DIVE_TAG}' tag")
        if tagged and level is None:
            problems.append(f"cell {index} carries the '{DEEP_DIVE_TAG}' tag outside a 'Deep dive:' section")
        meta = nbgrader(cell)
        if tagged and (meta.get("grade") or meta.get("solution")):
            problems.append(f"cell {index} ({meta.get('grade_id')}) is graded and sits in a deep dive")
    return problems


TIME_LINE = re.compile(r"\*\*Time:\*\* core path about (?P<core>\d+(?:\.5)?) h, deep dives about "
                       r"(?P<deep>\d+(?:\.5)?) h")
SYLLABUS_START = "<!-- syllabus table: one row per notebook, its times from the notebook's header -->"
SYLLABUS_END = "<!-- end syllabus-table -->"


def header_times(notebook) -> tuple[str, str] | None:
    """(core hours, deep-dive hours) as the header states them."""
    match = TIME_LINE.search(notebook.cells[0].source)
    return (match["core"], match["deep"]) if match else None


def syllabus_table() -> str:
    """The syllabus table of the student README and the course README, from the release headers."""
    from course import syllabus

    rows = [SYLLABUS_START, "| # | assignment | you learn | points | core path | deep dives |",
            "| --- | --- | --- | --- | --- | --- |"]
    total_core = total_deep = 0.0
    for assignment in syllabus.ASSIGNMENTS:
        path = ROOT / "release" / assignment.id / f"{assignment.id}.ipynb"
        if not path.exists():
            continue
        notebook = nbformat.read(path, as_version=4)
        points = sum(float(nbgrader(cell).get("points", 0)) for cell in notebook.cells if nbgrader(cell).get("grade"))
        core, deep = header_times(notebook) or ("?", "?")
        total_core += float(core) if core != "?" else 0
        total_deep += float(deep) if deep != "?" else 0
        rows.append(f"| {assignment.id[:2]} | `{assignment.id}`: {assignment.title} | {assignment.teaches} | "
                    f"{points:g} | {core} h | {deep} h |")
    rows.append(f"| | **total** | | | **{total_core:g} h** | **{total_deep:g} h** |")
    rows.append(SYLLABUS_END)
    return "\n".join(rows)


def syllabus_table_in(text: str) -> str | None:
    if SYLLABUS_START not in text or SYLLABUS_END not in text:
        return None
    return text[text.index(SYLLABUS_START):text.index(SYLLABUS_END) + len(SYLLABUS_END)]


def write_syllabus_tables() -> None:
    """Put the generated table in both READMEs, between the markers."""
    for path in (ROOT / "README.md", ROOT / "autograder" / "authoring" / "student_readme.md"):
        text = path.read_text(encoding="utf-8")
        current = syllabus_table_in(text)
        if current is not None:
            path.write_text(text.replace(current, syllabus_table()), encoding="utf-8")


def table(folder: str = "release") -> str:
    from course import syllabus

    lines = [f"{'notebook':22} {'core':>6} {'deep':>6} {'longest':>8} {'>250':>5} {'longest statement':>18}"]
    for assignment_id in syllabus.ids():
        path = ROOT / folder / assignment_id / f"{assignment_id}.ipynb"
        if not path.exists():
            continue
        found = measure(nbformat.read(path, as_version=4))
        longest = max((s.words for s in found.statements), default=0)
        lines.append(f"{assignment_id:22} {found.core_words:>6} {found.deep_dive_words:>6} "
                     f"{found.longest_core_cell:>8} {len(found.long_core_cells):>5} {longest:>18}")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["syllabus"]:
        write_syllabus_tables()
        print(syllabus_table())
    else:
        print(table(sys.argv[1] if len(sys.argv) > 1 else "release"))
