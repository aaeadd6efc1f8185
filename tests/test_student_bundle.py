"""The student bundle: everything a student needs, nothing of the instructor's, and it installs.

The leak check takes its secrets from the source notebooks themselves (every solution region and
every hidden-test region), and is shown to catch a secret planted in a bundle.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement

from autograder.authoring import bundle
from course import syllabus
from course.layout import Layout
from tests import notebooks

LAYOUT = Layout(Path(__file__).resolve().parent.parent)
PRESENT = [aid for aid in syllabus.ids() if LAYOUT.source_notebook(aid).exists()]
INSTRUCTOR_PARTS = ("source", "autograder", "tests", "nbgrader_config.py", "gradebook.db")
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\;]+)", re.M)


def source_cells():
    for assignment_id in PRESENT:
        yield from nbformat.read(LAYOUT.source_notebook(assignment_id), as_version=4).cells


def release_sources(assignment_id: str) -> list[str]:
    return [cell.source for cell in nbformat.read(LAYOUT.release_notebook(assignment_id), as_version=4).cells]


def read_zip(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def readable_text(name: str, data: bytes) -> str:
    """The text a file shows to a reader: for a notebook every string of its JSON unescaped
    (sources, outputs, metadata), since the file itself escapes quotes and newlines."""
    text = data.decode("utf-8", errors="replace")
    if name.endswith(".ipynb"):
        return "\n".join(_strings(json.loads(text)))
    return text


def problems(entries: dict[str, bytes]) -> list[str]:
    """What makes a bundle unfit to hand out: an instructor's file, a copy of a file of source/, or
    the text of a solution or hidden test that the committed release does not already show."""
    found = [f"{name}: an instructor's file" for name in entries
             if set(Path(name).parts) & set(INSTRUCTOR_PARTS)]
    source_files = {path.read_bytes(): path for path in LAYOUT.source.rglob("*") if path.is_file()}
    found += [f"{name}: a copy of {source_files[data].relative_to(LAYOUT.root)}"
              for name, data in entries.items() if data in source_files]
    shipped = notebooks.squash("\n".join(readable_text(name, data) for name, data in entries.items()))
    public = notebooks.squash("".join(source for aid in PRESENT for source in release_sources(aid)))
    for cell in source_cells():
        leaks = notebooks.leaked(notebooks.secret_chunks(cell.source), shipped, public)
        if leaks:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", cell.get("id"))
            found.append(f"reveals {grade_id}: {leaks[0][:80]}")
    return found


@pytest.fixture(scope="module")
def bundle_path(tmp_path_factory) -> Path:
    return bundle.build_bundle(LAYOUT, tmp_path_factory.mktemp("bundle") / "student-bundle.zip")


@pytest.fixture(scope="module")
def entries(bundle_path) -> dict[str, bytes]:
    return read_zip(bundle_path)


def test_bundle_holds_nothing_of_the_instructor(entries):
    assert not problems(entries), "\n".join(problems(entries))


def _secret_region(kind: str) -> str:
    """The longest region of one kind ("SOLUTION" or "HIDDEN TESTS") in the source notebooks."""
    regions = [region for cell in source_cells() if f"### BEGIN {kind}" in cell.source
               for region in notebooks.secret_regions(cell.source)]
    assert regions, f"no source cell has a {kind} region"
    return "\n".join(max(regions, key=len))


def _planted_notebook(entries: dict[str, bytes], text: str) -> bytes:
    notebook = nbformat.reads(entries[f"release/{PRESENT[0]}/{PRESENT[0]}.ipynb"].decode(), as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(text))
    return nbformat.writes(notebook).encode()


@pytest.mark.parametrize("plant", ["solution in course/", "hidden test in a notebook", "source notebook",
                                   "instructor package"])
def test_the_check_finds_a_planted_secret(entries, plant):
    planted = dict(entries)
    if plant == "solution in course/":
        planted["course/notes.py"] = _secret_region("SOLUTION").encode()
    elif plant == "hidden test in a notebook":
        planted[f"release/{PRESENT[0]}/{PRESENT[0]}.ipynb"] = _planted_notebook(entries, _secret_region("HIDDEN TESTS"))
    elif plant == "source notebook":
        planted["extra/notebook.ipynb"] = LAYOUT.source_notebook(PRESENT[0]).read_bytes()
    else:
        planted["autograder/nbgrader_setup/config.py"] = b"COURSE_ID = 'x'\n"
    assert problems(planted), f"a bundle with a planted {plant} passed the check"


def test_bundle_holds_every_release_notebook_and_the_course_package(entries):
    for assignment_id in PRESENT:
        name = f"release/{assignment_id}/{assignment_id}.ipynb"
        assert name in entries, f"{name} is missing from the bundle"
        notebook = nbformat.reads(entries[name].decode(), as_version=4)
        assert [cell.source for cell in notebook.cells] == release_sources(assignment_id), f"{name} differs from release/"
        assert not any(cell.get("outputs") for cell in notebook.cells), f"{name} has outputs"
    course_files = {path.relative_to(LAYOUT.root).as_posix() for path in (LAYOUT.root / "course").rglob("*")
                    if path.is_file() and "__pycache__" not in path.parts}
    assert course_files <= set(entries), f"missing from the bundle: {sorted(course_files - set(entries))}"
    assert {"README.md", "pyproject.toml", "requirements.lock", "environment.yml"} <= set(entries)
    assert not [name for name in entries if "__pycache__" in name or ".ipynb_checkpoints" in name]


def test_bundle_is_deterministic(bundle_path, tmp_path):
    again = bundle.build_bundle(LAYOUT, tmp_path / "again.zip")
    assert again.read_bytes() == bundle_path.read_bytes()


def test_the_bundle_lock_pins_what_the_student_package_needs_and_no_instructor_tool(entries):
    pins = {bundle.normal(name): version for name, version in PIN.findall(entries["requirements.lock"].decode())}
    project = tomllib.loads(entries["pyproject.toml"].decode())
    for text in project["project"]["dependencies"] + project["build-system"]["requires"]:
        assert bundle.normal(Requirement(text).name) in pins, f"{text} is not pinned in the bundle's lock"
    for name in pins:  # closed: every pinned distribution finds what it requires pinned too
        for text in metadata.distribution(name).requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                assert bundle.normal(requirement.name) in pins, f"{name} needs {requirement.name}, not pinned"
    assert not set(pins) & set(bundle.INSTRUCTOR_ONLY), sorted(set(pins) & set(bundle.INSTRUCTOR_ONLY))
    conda = {bundle.normal(name): version for name, version in PIN.findall(
        re.sub(r"^\s+- ", "", entries["environment.yml"].decode(), flags=re.M))}
    assert conda and all(pins.get(name) == version for name, version in conda.items()), \
        {name: (version, pins.get(name)) for name, version in conda.items() if pins.get(name) != version}


def test_the_student_package_builds_from_the_bundle_alone(bundle_path, tmp_path):
    unpacked = tmp_path / "bundle"
    with zipfile.ZipFile(bundle_path) as archive:
        archive.extractall(unpacked)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                            "--no-build-isolation", "--wheel-dir", str(tmp_path / "wheels"), str(unpacked)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(n).decode() for n in names if n.endswith("entry_points.txt"))
        requires = [line for line in next(archive.read(n).decode() for n in names if n.endswith("METADATA")).splitlines()
                    if line.startswith("Requires-Dist:")]
    assert "course/cli.py" in names and "course/data/tested_builds.json" in names, names
    assert not [name for name in names if name.startswith("autograder")], names
    assert "course = course.cli:main" in entry_points and "autograder" not in entry_points, entry_points
    assert not [line for line in requires if bundle.normal(Requirement(line.split(":", 1)[1]).name)
                in bundle.INSTRUCTOR_ONLY], requires


def test_cli_writes_the_bundle(tmp_path, capsys):
    from autograder import cli

    assert cli.main(["student-bundle", "--out", str(tmp_path / "b.zip")]) == 0
    assert zipfile.is_zipfile(tmp_path / "b.zip") and "student bundle:" in capsys.readouterr().out


def test_the_bundle_gpu_lock_is_its_cpu_lock_with_onnxruntime_gpu_and_cuda(entries):
    cpu = {bundle.normal(name): version for name, version in PIN.findall(entries["requirements.lock"].decode())}
    gpu = {bundle.normal(name): version for name, version in PIN.findall(entries["requirements-gpu.lock"].decode())}
    assert set(cpu) - set(gpu) == {"onnxruntime"}
    added = set(gpu) - set(cpu)
    assert "onnxruntime-gpu" in added and "nvidia-cudnn-cu12" in added
    assert all(name.startswith("nvidia-") for name in added - {"onnxruntime-gpu", "sympy", "mpmath"}), sorted(added)
    assert all(cpu[name] == gpu[name] for name in set(cpu) & set(gpu))
    assert entries["requirements-gpu.lock"].decode().count("--hash=sha256:") >= len(gpu)
