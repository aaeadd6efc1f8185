"""The lock is installable as-is and environment.yml agrees with it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIRED = ("tensorflow", "keras-hub", "tensorflow-text", "tensorboard", "nbgrader", "papermill", "nbval",
            "jupyterlab", "ipykernel", "matplotlib", "scikit-learn", "tf2onnx", "onnxruntime", "pytest", "tqdm")
# pip's index options and local locations, spelled in pieces so this file names none of them itself
_OPTIONS = ["index" + "-url", "extra-" + "index" + "-url", "find" + "-links"]
FORBIDDEN = re.compile("|".join(["--" + option for option in _OPTIONS] +
                                [r"-f ", "fi" + "le:", r"https?" + "://", "/o" + "pt/", "/ro" + "ot/", "/ho" + "me/"]))


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
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


def test_lock_is_hash_pinned_and_names_no_index_or_path():
    text = (ROOT / "requirements.lock").read_text()
    requirements = [line for line in text.splitlines() if re.match(r"^[A-Za-z0-9]", line)]
    assert requirements and all("==" in line for line in requirements)
    assert text.count("--hash=sha256:") >= len(requirements)
    bad = [line for line in text.splitlines() if FORBIDDEN.search(line)]
    assert not bad, f"requirements.lock names an index, host or path: {bad[:3]}"


def test_environment_yml_has_the_same_pins_as_the_lock():
    lock, conda = lock_pins(), conda_pins()
    assert conda, "environment.yml pins nothing"
    disagree = {name: (version, lock.get(name)) for name, version in conda.items() if lock.get(name) != version}
    assert not disagree, f"environment.yml vs requirements.lock (name: (yml, lock)): {disagree}"
    assert set(REQUIRED) <= set(conda), f"environment.yml lacks {sorted(set(REQUIRED) - set(conda))}"


def test_pyproject_dependencies_are_all_locked():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [_normal(re.split(r"[<>=!~\[ ;]", dep, maxsplit=1)[0]) for dep in project["dependencies"]]
    missing = [name for name in names if name not in lock_pins()]
    assert not missing, f"in pyproject.toml but not in requirements.lock: {missing} (run `make lock`)"
    assert {"course", "autograder"} <= set(project["scripts"])
    assert any(dep.startswith("tensorflow[and-cuda]") for dep in project["optional-dependencies"]["gpu"])
    assert any(dep.startswith("onnxruntime-gpu") for dep in project["optional-dependencies"]["gpu"])


def test_what_the_lock_leaves_out_is_left_out_by_make_lock_and_the_bundle():
    """rfc3987-syntax: every process that imports nbformat would build its parser (the Makefile's `lock`)."""
    from autograder.bundle import LEFT_OUT_OF_LOCK

    makefile = (ROOT / "Makefile").read_text()
    for name in LEFT_OUT_OF_LOCK:
        assert name not in lock_pins()
        assert f"--no-emit-package {name}" in makefile
