"""Tamper scan: solution code that reaches outside the exercise.

A submission is flagged (still scored, with the reason) when a solution cell
- assigns to an attribute of an imported module or of builtins (`np.allclose = ...`,
  `builtins.len = ...`, `setattr(tf, ...)`, `sys.modules[...] = ...`, `__builtins__[...] = ...`), the
  classic way to make a test pass without solving it;
- touches the course's own files: names `gradebook`, `source/`, `autograded`, `release/`,
  `nbgrader_config`, or the course's installed packages in a string.

nbgrader itself restores locked cells (tests, points, cell types) from the gradebook, so edited or
deleted tests cannot change a score; the scan reports those edits too, as notes, without flagging.
The scan reads the code (ast); it runs nothing.
"""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass, field

COURSE_PATHS = re.compile(r"gradebook|(^|[/\\])source[/\\]|autograded|(^|[/\\])release[/\\]|nbgrader_config"
                          r"|site-packages[/\\](course|autograder|nbgrader)", re.I)
PATCH_CALLS = {"setattr", "delattr"}
# CPython 3.11's ast.parse is not safe to run in several threads at once ("AST constructor
# recursion depth mismatch"); the driver scans from its worker threads.
_PARSE_LOCK = threading.Lock()


def _parse(code: str) -> ast.AST:
    with _PARSE_LOCK:
        return ast.parse(_strip_magics(code))


@dataclass
class Findings:
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    def reason(self) -> str:
        return "; ".join(self.flags)


def _imported_names(tree: ast.AST) -> set[str]:
    modules = {"builtins", "__builtins__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.update(alias.asname or alias.name for alias in node.names)
    return modules


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def scan_code(code: str, imported: set[str] | None = None) -> list[str]:
    """Problems in one cell's code. `imported` adds module names imported in earlier cells."""
    try:
        tree = _parse(code)
    except SyntaxError:
        return []  # it will fail when it runs; not a tamper
    modules = _imported_names(tree) | (imported or set())
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if isinstance(target, (ast.Attribute, ast.Subscript)):
                    root = _root_name(target)
                    if root in modules or (root == "sys" and "modules" in ast.unparse(target)):
                        problems.append(f"line {node.lineno}: assigns to {ast.unparse(target)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PATCH_CALLS:
            if node.args and _root_name(node.args[0]) in modules:
                problems.append(f"line {node.lineno}: {node.func.id}() on {ast.unparse(node.args[0])}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and COURSE_PATHS.search(node.value):
            problems.append(f"line {node.lineno}: touches course files ({node.value[:60]!r})")
    return problems


def _strip_magics(code: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())


def scan(submitted, release) -> Findings:
    """Scan a submitted notebook against the release it came from (both nbformat nodes)."""
    findings = Findings()
    imported: set[str] = set()
    release_cells = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell for cell in release.cells
                     if cell.metadata.get("nbgrader", {}).get("grade_id")}
    seen = set()
    for cell in submitted.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        seen.add(grade_id)
        if cell.cell_type == "code":
            try:
                imported |= _imported_names(_parse(cell.source))
            except SyntaxError:
                pass
        original = release_cells.get(grade_id)
        is_test = original is not None and original.metadata["nbgrader"].get("grade") and \
            not original.metadata["nbgrader"].get("solution")
        if is_test:
            assert original is not None, "is_test holds only for a cell of the release"
            if cell.cell_type != original.cell_type:
                findings.notes.append(f"test cell {grade_id} turned into {cell.cell_type} (restored)")
            elif cell.source != original.source:
                findings.notes.append(f"test cell {grade_id} edited (restored)")
            if meta.get("points") != original.metadata["nbgrader"].get("points"):
                findings.notes.append(f"points of {grade_id} changed (restored)")
            continue
        if original is not None and not original.metadata["nbgrader"].get("solution"):
            continue  # a locked, read-only cell: nbgrader restores it
        if cell.cell_type == "code":
            label = grade_id or f"cell {cell.get('id', '?')}"
            findings.flags += [f"{label} {problem}" for problem in scan_code(cell.source, imported)]
    missing = [gid for gid, cell in release_cells.items() if gid not in seen
               and cell.metadata["nbgrader"].get("grade") and not cell.metadata["nbgrader"].get("solution")]
    findings.notes += [f"test cell {gid} deleted (restored)" for gid in missing]
    return findings
