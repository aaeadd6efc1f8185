"""The locks are installable as-is and environment.yml agrees with them.

requirements.lock is the CPU environment (CI, students without a GPU); requirements-gpu.lock the GPU
one (the GPU runner, students with an NVIDIA GPU): the same pins except ONNX Runtime's distribution
and TensorFlow's CUDA wheels, all of one CUDA major. hub/ngshare/requirements.lock is the ngshare
service's own environment: the course's pins but SQLAlchemy's and alembic's. The conflicts the locks
make on purpose (lock-overrides.txt) are the only ones scripts/pip-check accepts."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
REQUIRED = ("tensorflow", "keras-hub", "tensorflow-text", "tensorboard", "nbgrader", "papermill", "nbval",
            "jupyterlab", "ipykernel", "matplotlib", "scikit-learn", "tf2onnx", "onnxruntime", "pytest", "pyelftools")
# pip's index options and local locations, spelled in pieces so this file names none of them itself
_OPTIONS = ["index" + "-url", "extra-" + "index" + "-url", "find" + "-links"]
FORBIDDEN = re.compile("|".join(["--" + option for option in _OPTIONS] +
                                [r"-f ", "fi" + "le:", r"https?" + "://", "/o" + "pt/", "/ro" + "ot/", "/ho" + "me/"]))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


LOCKS = ("requirements.lock", "requirements-gpu.lock")
NGSHARE_LOCK = "hub/ngshare/requirements.lock"
# distributions that install the same import package: a lock may hold one of each group at most
SAME_IMPORT = {"onnxruntime": {"onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-openvino",
                               "onnxruntime-training"},
               "tensorflow": {"tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly"},
               "nvidia/cudnn": {"nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"}}
# onnxruntime-gpu releases on PyPI built for CUDA 12 (their capi/build_and_package_info.py says
# cuda_version 12.x; 1.26.0: 12.8); from 1.27 on they are CUDA 13 builds
ORT_GPU_FOR_CUDA_12 = SpecifierSet(">=1.19,<1.27")
# what onnxruntime-gpu[symbolic] 1.26 needs beyond the CPU lock: its onnxruntime.quantization imports
# the symbolic shape inference, which imports sympy (onnxruntime 1.32's does not)
GPU_ONLY_PYTHON = {"onnxruntime-gpu", "sympy", "mpmath"}


def lock_pins(name: str = "requirements.lock") -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s\\;]+)", line)
        if match:
            pins[_normal(match.group(1))] = match.group(2)
    return pins


def conda_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.match(r"^\s+- ([A-Za-z0-9_.-]+)==(\S+)\s*$", line)
        if match:
            pins[_normal(match.group(1))] = match.group(2)
    return pins


def test_lock_pins_every_required_package():
    pins = lock_pins()
    missing = [name for name in REQUIRED if name not in pins]
    assert not missing, f"requirements.lock lacks {missing}"
    assert pins["tensorflow"].startswith("2.21."), pins["tensorflow"]
    assert "tensorflow-cpu" not in pins, "the lock must use the `tensorflow` wheel, not tensorflow-cpu"


@pytest.mark.parametrize("lock", (*LOCKS, NGSHARE_LOCK))
def test_lock_is_hash_pinned_and_names_no_index_or_path(lock):
    text = (ROOT / lock).read_text()
    requirements = [line for line in text.splitlines() if re.match(r"^[A-Za-z0-9]", line)]
    assert requirements and all("==" in line for line in requirements)
    assert text.count("--hash=sha256:") >= len(requirements)
    bad = [line for line in text.splitlines() if FORBIDDEN.search(line)]
    assert not bad, f"{lock} names an index, host or path: {bad[:3]}"
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.strip())
    unhashed = [entry.split()[0] for entry in entries if "--hash=sha256:" not in entry]
    assert not unhashed, f"{lock}: pins without a hash: {unhashed}"


def test_environment_yml_has_the_same_pins_as_the_lock():
    lock, conda = lock_pins(), conda_pins()
    assert conda, "environment.yml pins nothing"
    disagree = {name: (version, lock.get(name)) for name, version in conda.items() if lock.get(name) != version}
    assert not disagree, f"environment.yml vs requirements.lock (name: (yml, lock)): {disagree}"
    assert set(REQUIRED) <= set(conda), f"environment.yml lacks {sorted(set(REQUIRED) - set(conda))}"


def test_pyproject_dependencies_are_all_locked():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for lock, extra in (("requirements.lock", "cpu"), ("requirements-gpu.lock", "gpu")):
        names = [_normal(Requirement(dep).name) for dep in project["dependencies"] + extras[extra]]
        missing = [name for name in names if name not in lock_pins(lock)]
        assert not missing, f"in pyproject.toml but not in {lock}: {missing} (run `make lock`)"
    assert {"course", "autograder"} <= set(project["scripts"])
    assert any(dep.startswith("tensorflow[and-cuda]") for dep in extras["gpu"])
    assert any(dep.startswith("onnxruntime-gpu") for dep in extras["gpu"])
    assert not any(_normal(Requirement(dep).name).startswith("onnxruntime") for dep in project["dependencies"]), \
        "ONNX Runtime belongs to the cpu or gpu extra, never both"


@pytest.mark.parametrize("lock", LOCKS)
def test_no_two_distributions_install_the_same_package(lock):
    pins = lock_pins(lock)
    for package, distributions in SAME_IMPORT.items():
        present = sorted(distributions & set(pins))
        assert len(present) <= 1, f"{lock}: {present} all install {package}/"
    assert "onnxruntime" in pins if lock == "requirements.lock" else "onnxruntime-gpu" in pins


def test_the_gpu_lock_is_the_cpu_lock_plus_cuda():
    cpu, gpu = lock_pins("requirements.lock"), lock_pins("requirements-gpu.lock")
    shared = set(cpu) & set(gpu)
    assert {name: (cpu[name], gpu[name]) for name in shared if cpu[name] != gpu[name]} == {}
    assert set(cpu) - set(gpu) == {"onnxruntime"}
    added = set(gpu) - set(cpu)
    assert "onnxruntime-gpu" in added and all(name.startswith("nvidia-") for name in added - GPU_ONLY_PYTHON), \
        sorted(added - GPU_ONLY_PYTHON)


def test_the_gpu_lock_has_one_cuda_major_and_an_onnxruntime_built_for_it():
    pins = lock_pins("requirements-gpu.lock")
    cuda = {name: version for name, version in pins.items() if name.startswith("nvidia-")}
    assert cuda, "the GPU lock has no CUDA wheels"
    suffixes = {re.search(r"-cu(\d+)$", name).group(1) if re.search(r"-cu(\d+)$", name) else None for name in cuda}
    assert suffixes == {"12"}, f"CUDA wheels of more than one major (or unsuffixed CUDA 13 names): {sorted(cuda)}"
    assert pins["nvidia-cuda-runtime-cu12"].startswith("12."), pins["nvidia-cuda-runtime-cu12"]
    assert pins["nvidia-cudnn-cu12"].startswith("9."), "TensorFlow 2.21 and onnxruntime-gpu 1.26 need cuDNN 9"
    assert pins["onnxruntime-gpu"] in ORT_GPU_FOR_CUDA_12, f"onnxruntime-gpu {pins['onnxruntime-gpu']} is no CUDA 12 build"


def test_the_gpu_lock_satisfies_tensorflows_own_and_cuda_requirements():
    """The installed TensorFlow is the locked one; its METADATA says what `and-cuda` asks for."""
    pins = lock_pins("requirements-gpu.lock")
    assert metadata.version("tensorflow") == pins["tensorflow"]
    asked = [Requirement(text) for text in metadata.requires("tensorflow") or []]
    asked = [requirement for requirement in asked
             if requirement.marker is not None and requirement.marker.evaluate({"extra": "and-cuda"})
             and not requirement.marker.evaluate({"extra": ""})]
    assert len(asked) >= 10, f"tensorflow's and-cuda extra asks for {len(asked)} packages"
    wrong = {requirement.name: pins.get(_normal(requirement.name)) for requirement in asked
             if pins.get(_normal(requirement.name)) not in requirement.specifier}
    assert not wrong, f"the GPU lock's pins miss tensorflow[and-cuda]'s requirements: {wrong}"


def test_every_gpu_install_instruction_uses_the_hashed_gpu_lock():
    """No install line builds the GPU environment from the extra on top of the CPU lock (pip refuses
    an editable install under hash checking, and it would bring onnxruntime back beside onnxruntime-gpu)."""
    from autograder.authoring.bundle import README as STUDENT_README

    for path in (ROOT / "README.md", STUDENT_README, ROOT / "Makefile", ROOT / ".github/workflows/gpu.yml"):
        text = path.read_text()
        assert ".[gpu]" not in text, f"{path.name} still installs the [gpu] extra directly"
    for path in (ROOT / "README.md", STUDENT_README):
        assert re.search(r"--require-hashes --no-deps -r requirements-gpu\.lock", path.read_text()), path.name


def test_what_the_lock_leaves_out_is_left_out_by_make_lock_and_the_bundle():
    """rfc3987-syntax: every process that imports nbformat would build its parser (the Makefile's `lock`)."""
    from autograder.authoring.bundle import LEFT_OUT_OF_LOCK

    makefile = (ROOT / "Makefile").read_text()
    for name in LEFT_OUT_OF_LOCK:
        assert name not in lock_pins()
        assert f"--no-emit-package {name}" in makefile


def _imported_top_level_names() -> dict[str, str]:
    """Every module name imported at the top level of a statement in the project's Python files and
    source notebooks' code cells: {name: a file that imports it}."""
    import ast
    import json
    import sys

    sources: dict[str, str] = {}
    for folder in ("autograder", "course", "tests", "scripts", "hub"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix == ".py" or (path.parent.name == "scripts" and path.is_file() and
                                        path.read_bytes()[:40].startswith(b"#!") and b"python" in path.read_bytes()[:40]):
                sources[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    for path in (ROOT / "source").rglob("*.ipynb"):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")
        sources[str(path.relative_to(ROOT))] = "\n".join(line for line in code.splitlines()
                                                          if not line.lstrip().startswith(("%", "!")))
    names: dict[str, str] = {}
    for where, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                found = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found = [node.module.split(".")[0]]
            else:
                continue
            for name in found:
                if name not in sys.stdlib_module_names and name not in ("autograder", "course", "tests", "course_hub",
                                                                         "__future__"):
                    names.setdefault(name, where)
    return names


def test_every_imported_third_party_package_is_declared():
    """An import the project relies on is a dependency it names, not one that another package happens
    to bring (import names map to distributions through importlib.metadata.packages_distributions)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_normal(Requirement(text).name) for text in project["dependencies"]}
    for extra in project.get("optional-dependencies", {}).values():
        declared |= {_normal(Requirement(text).name) for text in extra}
    providers = metadata.packages_distributions()
    undeclared = {name: where for name, where in _imported_top_level_names().items()
                  if not {_normal(dist) for dist in providers.get(name, [name])} & declared}
    assert not undeclared, f"imported but not declared in pyproject.toml: {undeclared}"
    used = set(_imported_top_level_names())
    provided = {_normal(dist) for name in used for dist in providers.get(name, [])}
    tools = {"tensorflow-text", "tensorboard", "papermill", "nbval", "jupyterlab", "ipykernel", "nbconvert",
             "pytest-xdist", "psycopg2-binary", "uv", "mypy", "onnxruntime-gpu", "alembic",
             "configurable-http-proxy", "jupyterhub-idle-culler", "jupyterhub",
             "jupyterhub-ltiauthenticator", "jupyterhub-systemdspawner",
             "ngshare-exchange",  # programs, or plugins the hub names (hub/course_hub.py's exchange configuration)
             "sphinx", "myst-parser", "furo"}  # `make docs`, and the extension and theme docs/conf.py names
    unused = declared - provided - tools
    assert not unused, f"declared but imported nowhere (and not a tool the Makefile or a test runs): {sorted(unused)}"


def test_the_ngshare_service_has_the_course_pins_but_sqlalchemys_and_alembics():
    """ngshare 0.6.0 needs SQLAlchemy 1.4 (hub/ngshare/requirements.in says why); everything else it
    shares with the course's environment is pinned alike, so the two install from the same wheels."""
    course, service = lock_pins(), lock_pins(NGSHARE_LOCK)
    assert service["ngshare"].startswith("0.6.") and service["sqlalchemy"].startswith("1.4.")
    differ = {name: (version, course[name]) for name, version in service.items()
              if name in course and course[name] != version}
    assert set(differ) == {"sqlalchemy", "alembic"}, differ
    assert set(service) - set(course) == {"ngshare"}, sorted(set(service) - set(course))


def _pip_check():
    import importlib.util
    from importlib.machinery import SourceFileLoader

    loader = SourceFileLoader("pip_check", str(ROOT / "scripts" / "pip-check"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("pip_check", loader))
    loader.exec_module(module)
    return module


def test_pip_check_accepts_only_the_conflicts_overrides_txt_names(tmp_path):
    pip_check = _pip_check()
    accepted = pip_check.accepted_conflicts(ROOT / "lock-overrides.txt")
    assert [(package, requirement, str(override)) for (package, requirement), override in accepted.items()] == \
        [("ngshare-exchange", "jupyter-core<4.11.2", "jupyter-core>=5")]
    named = "The package `ngshare-exchange` requires `jupyter-core<4.11.2`, but `5.9.1` is installed"
    report = (f"Checked 221 packages in 2ms\nFound 4 incompatibilities\n{named}\n"
              # the same package's requirement from another package, another requirement, below the override
              "The package `nbgrader` requires `jupyter-core>=6`, but `5.9.1` is installed\n"
              "The package `ngshare-exchange` requires `jupyter-core<4`, but `5.9.1` is installed\n"
              "The package `ngshare-exchange` requires `jupyter-core<4.11.2`, but `4.12.0` is installed\n")
    taken, refused = pip_check.unexplained(report, accepted)
    assert taken == [named] and len(refused) == 3, (taken, refused)
    # a line of another shape is never taken for an accepted one
    assert pip_check.unexplained("The package `x` is broken\n", accepted) == ([], ["The package `x` is broken"])
    stray = tmp_path / "lock-overrides.txt"
    stray.write_text("# accepts: a requires b<2\nc>=1\n")
    with pytest.raises(SystemExit, match="is not about c>=1"):
        pip_check.accepted_conflicts(stray)


def test_every_override_is_one_the_course_lock_needs():
    """Each accepted conflict of lock-overrides.txt still exists in the lock (the locked version of the
    required package is outside the requiring package's own range) and the override admits that version:
    an override nothing calls for is stale."""
    pins = lock_pins()
    for (package, requirement), override in _pip_check().accepted_conflicts(ROOT / "lock-overrides.txt").items():
        required = Requirement(requirement)
        assert package in pins and _normal(required.name) in pins, (package, requirement)
        own = [Requirement(text) for text in metadata.distribution(package).requires or []
               if _normal(Requirement(text).name) == _normal(required.name)]
        assert [str(item.specifier) for item in own] == [str(required.specifier)], (package, own)
        assert not required.specifier.contains(pins[_normal(required.name)]), f"{package}'s {requirement} is met: stale"
        assert override.specifier.contains(pins[_normal(required.name)])
