"""The student release: generated from source/ by nbgrader, committed, and checked for drift.

`generate` runs nbgrader's GenerateAssignment in a throw-away course directory, so the repository
gets no gradebook and the result depends on source/ alone. `drift` regenerates and compares byte
for byte with what is committed in release/.
"""

from __future__ import annotations

import filecmp
import shutil
import tempfile
from pathlib import Path

from course import syllabus
from course.layout import Layout
from autograder.nbgrader_setup.workspace import Workspace


def present(layout: Layout) -> list[str]:
    """Assignments (in syllabus order) that have a source notebook."""
    return [aid for aid in syllabus.ids() if layout.source_notebook(aid).exists()]


def generate(layout: Layout, assignment_id: str, destination: Path) -> Path:
    """Write the student version of `assignment_id` to `destination/<assignment_id>/`."""
    with tempfile.TemporaryDirectory(prefix="release-") as scratch:
        workspace = Workspace(Path(scratch), assignment_id)
        workspace.create(layout.source / assignment_id)
        target = destination / assignment_id
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(workspace.release_dir(), target)
    return target


def drift(layout: Layout) -> list[str]:
    """What differs between release/ and a fresh generation; empty when in sync."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="release-check-") as scratch:
        for assignment_id in present(layout):
            fresh = generate(layout, assignment_id, Path(scratch))
            committed = layout.release / assignment_id
            if not committed.exists():
                problems.append(f"release/{assignment_id} is missing: run `make release`")
                continue
            problems += [f"release/{assignment_id}/{name}: {why}" for name, why in _compare(fresh, committed)]
    return problems


def _compare(fresh: Path, committed: Path) -> list[tuple[str, str]]:
    fresh_files = {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()}
    committed_files = {p.relative_to(committed).as_posix() for p in committed.rglob("*") if p.is_file()}
    differences = [(name, "missing (run `make release`)") for name in sorted(fresh_files - committed_files)]
    differences += [(name, "not generated from source/ (stale?)") for name in sorted(committed_files - fresh_files)]
    for name in sorted(fresh_files & committed_files):
        if not filecmp.cmp(fresh / name, committed / name, shallow=False):
            differences.append((name, "differs from what source/ generates (run `make release`)"))
    return differences
