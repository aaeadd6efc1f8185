"""The student bundle: one zip with everything a student needs and nothing of the instructor's.

    build_bundle(Layout.find(), Path("build/student-bundle.zip"))

It holds `release/` (notebooks with outputs cleared), the `course` package, a student
`pyproject.toml`, `requirements.lock`, `requirements-gpu.lock` and `environment.yml`, and `README.md` (from
`autograder/authoring/student_readme.md`). Never `source/`, `autograder/`, `nbgrader_config.py` or tests.

The student's pyproject is the repository's without `autograder` and without the dependencies
only instructors use (`INSTRUCTOR_ONLY`: testing, cluster grading, browser tests, installing with uv, writing
this bundle). The lock and
environment.yml keep just the pins those dependencies need: their closure, read from the metadata
of the installed distributions (the venv installed from the very same lock).

The zip is deterministic: entries in sorted order, fixed timestamps and permissions, so the same
tree gives the same bytes.
"""

from __future__ import annotations

import re
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import nbformat
import tomli_w
import yaml
from packaging.requirements import Requirement

from autograder.errors import AutograderError
from course.layout import Layout

INSTRUCTOR_ONLY = ("nbval", "pytest", "pytest-xdist", "distributed", "psycopg2-binary", "playwright", "axe-playwright-python",
                   "uv", "tomli-w")
# left out of requirements.lock by `make lock` (--no-emit-package; the Makefile says why), though an
# installed package's extra asks for them: jsonschema[format-nongpl] of jupyter-events
LEFT_OUT_OF_LOCK = ("rfc3987-syntax",)
SHIPPED_FOLDERS = ("release", "course")
SKIPPED_PARTS = ("__pycache__", ".ipynb_checkpoints")
SKIPPED_SUFFIXES = (".pyc", ".pyo")
README = Path(__file__).with_name("student_readme.md")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class BundleError(AutograderError):
    pass


def normal(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def student_requirements(project: dict) -> list[str]:
    """The repository's dependencies without the instructor-only ones."""
    return [text for text in project["project"]["dependencies"]
            if normal(Requirement(text).name) not in INSTRUCTOR_ONLY]


def closure(requirements: list[str]) -> set[str]:
    """Normalised names of `requirements` and everything they need, from installed metadata
    (less what the lock leaves out)."""
    needed: set[str] = set()
    seen: set[tuple[str, frozenset]] = set()
    todo = [Requirement(text) for text in requirements]
    while todo:
        requirement = todo.pop()
        key = (normal(requirement.name), frozenset(requirement.extras))
        if key in seen or key[0] in LEFT_OUT_OF_LOCK:
            continue
        seen.add(key)
        needed.add(key[0])
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            raise BundleError(f"{requirement.name} is not installed: build the bundle from the course's venv "
                              "(make venv), whose metadata gives the student lock") from None
        for text in distribution.requires or []:
            dependency = Requirement(text)
            extras = requirement.extras or {""}
            if dependency.marker is None or any(dependency.marker.evaluate({"extra": extra}) for extra in extras):
                todo.append(dependency)
    return needed


def lock_subset(lock_text: str, packages: set[str]) -> str:
    """The entries of a hash-pinned lock (`name==version \\` plus indented hash lines) for `packages`."""
    entries, current = [], []
    for line in lock_text.splitlines():
        if line and not line[0].isspace():
            current = [line]
            entries.append(current)
        elif current:
            current.append(line)
    kept = [entry for entry in entries if normal(re.split(r"[=<>!~;\s\[]", entry[0], maxsplit=1)[0]) in packages]
    return "".join("\n".join(entry) + "\n" for entry in kept)


def environment_subset(environment_text: str, packages: set[str]) -> str:
    """environment.yml without the pip pins of packages outside `packages` (its leading comments kept)."""
    environment = yaml.safe_load(environment_text)
    for dependency in environment["dependencies"]:
        if isinstance(dependency, dict) and "pip" in dependency:
            dependency["pip"] = [pin for pin in dependency["pip"]
                                 if "==" not in pin or normal(Requirement(pin).name) in packages]
    comments = "".join(line + "\n" for line in environment_text.splitlines() if line.startswith("#"))
    return comments + yaml.safe_dump(environment, sort_keys=False, default_flow_style=False)


def student_pyproject(project: dict) -> str:
    """pyproject.toml of the bundle: the `course` package, its command, the student dependencies."""
    info = project["project"]
    return tomli_w.dumps({
        "build-system": project["build-system"],
        "project": {"name": f"{info['name']}-student", "version": info["version"],
                    "description": info["description"], "readme": "README.md",
                    "requires-python": info["requires-python"], "license": info["license"],
                    "dependencies": student_requirements(project),
                    "optional-dependencies": info.get("optional-dependencies", {}),
                    "scripts": {"course": info["scripts"]["course"]}},
        "tool": {"setuptools": {"packages": {"find": {"include": ["course*"]}},
                                "package-data": {"course": project["tool"]["setuptools"]["package-data"]["course"]}}},
    })


def shipped_files(layout: Layout) -> dict[str, Path]:
    """Bundle path -> repository file, for release/ and course/ (no caches or checkpoints)."""
    files = {}
    for folder in SHIPPED_FOLDERS:
        for path in sorted((layout.root / folder).rglob("*")):
            relative = path.relative_to(layout.root)
            if path.is_file() and not set(relative.parts) & set(SKIPPED_PARTS) and path.suffix not in SKIPPED_SUFFIXES:
                files[relative.as_posix()] = path
    return files


def _without_outputs(path: Path) -> bytes:
    """A notebook as a student receives it, whatever someone ran and saved in release/."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return (nbformat.writes(notebook) + "\n").encode()


def lock_names(lock_text: str) -> set[str]:
    """Normalised names of the distributions a hash-pinned lock pins."""
    return {normal(match) for match in re.findall(r"^([A-Za-z0-9_.-]+)==", lock_text, re.M)}


def gpu_lock_names(student_names: set[str], cpu_lock: str, gpu_lock: str) -> set[str]:
    """What the student's GPU lock keeps: the student's CPU closure less the distributions only the
    CPU lock has (onnxruntime), plus those only the GPU lock has (onnxruntime-gpu, the CUDA wheels).
    The GPU extra is not installed here, so its closure cannot be read from installed metadata."""
    cpu_only, gpu_only = lock_names(cpu_lock) - lock_names(gpu_lock), lock_names(gpu_lock) - lock_names(cpu_lock)
    return (student_names - cpu_only) | gpu_only


def contents(layout: Layout) -> dict[str, bytes]:
    """Every entry of the bundle, by its path inside the zip."""
    project = tomllib.loads((layout.root / "pyproject.toml").read_text(encoding="utf-8"))
    packages = closure(student_requirements(project) + project["project"]["optional-dependencies"]["cpu"]
                    + project["build-system"]["requires"])
    cpu_lock = (layout.root / "requirements.lock").read_text()
    gpu_lock = (layout.root / "requirements-gpu.lock").read_text()
    entries = {name: _without_outputs(path) if path.suffix == ".ipynb" else path.read_bytes()
               for name, path in shipped_files(layout).items()}
    entries["pyproject.toml"] = student_pyproject(project).encode()
    entries["requirements.lock"] = lock_subset(cpu_lock, packages).encode()
    entries["requirements-gpu.lock"] = lock_subset(gpu_lock, gpu_lock_names(packages, cpu_lock, gpu_lock)).encode()
    entries["environment.yml"] = environment_subset((layout.root / "environment.yml").read_text(), packages).encode()
    entries["README.md"] = README.read_bytes()
    return entries


def build_bundle(layout: Layout, out: Path) -> Path:
    """Write the bundle zip to `out` (folders created) and return its path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, data in sorted(contents(layout).items()):
            entry = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(entry, data)
    return out
