"""The reference data of course/tables.py: well-formed rows and the facts the course relies on."""

from __future__ import annotations

import inspect
import json
import re
from importlib import resources

import pytest

from course import tables

BUILD_KEYS = {"tensorflow", "python_min", "python_max", "compiler", "bazel", "cudnn", "cuda"}
VERSION = re.compile(r"^\d+(\.\d+)*$")


def numbers(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def build_row(version: str) -> dict[str, str]:
    rows = [row for row in tables.tested_builds() if row["tensorflow"] == version]
    assert len(rows) == 1, f"expected exactly one row for TensorFlow {version}, found {len(rows)}"
    return rows[0]


# --- tested build configurations ------------------------------------------------------------------

def test_every_build_row_has_the_same_keys_and_string_versions():
    for row in tables.tested_builds():
        assert set(row) == BUILD_KEYS, f"row {row} has keys {sorted(row)}, expected {sorted(BUILD_KEYS)}"
        for key in BUILD_KEYS - {"compiler"}:
            assert isinstance(row[key], str) and VERSION.match(row[key]), \
                f"{key}={row[key]!r} in row {row['tensorflow']} is not a dotted version string"
        assert re.match(r"^(GCC|Clang) \d+(\.\d+)*$", row["compiler"]), \
            f"compiler {row['compiler']!r} in row {row['tensorflow']} is not 'GCC x.y.z' or 'Clang x.y.z'"


def test_every_minor_release_from_2_6_to_2_21_appears_once():
    minors = [numbers(row["tensorflow"])[:2] for row in tables.tested_builds()]
    expected = [(2, minor) for minor in range(6, 22)]
    assert sorted(minors) == expected, f"minor releases {sorted(minors)}, expected {expected}"


def test_rows_are_newest_first_as_on_the_tensorflow_page():
    versions = [numbers(row["tensorflow"]) for row in tables.tested_builds()]
    assert versions == sorted(versions, reverse=True)


def test_python_ranges_are_ordered_numerically():
    for row in tables.tested_builds():
        assert numbers(row["python_min"]) <= numbers(row["python_max"]), row


@pytest.mark.parametrize("version, expected", [
    ("2.21.0", {"python_min": "3.10", "python_max": "3.13", "compiler": "Clang 18.1.8",
                "bazel": "7.4.1", "cudnn": "9.3", "cuda": "12.5"}),
    ("2.17.0", {"python_min": "3.9", "python_max": "3.12", "compiler": "Clang 17.0.6",
                "bazel": "6.5.0", "cudnn": "8.9", "cuda": "12.3"}),
    ("2.16.1", {"python_min": "3.9", "python_max": "3.12", "compiler": "Clang 17.0.6",
                "bazel": "6.5.0", "cudnn": "8.9", "cuda": "12.3"}),
    ("2.15.0", {"python_min": "3.9", "python_max": "3.11", "bazel": "6.1.0", "cudnn": "8.9",
                "cuda": "12.2"}),
    ("2.12.0", {"python_min": "3.8", "python_max": "3.11", "compiler": "GCC 9.3.1",
                "bazel": "5.3.0", "cudnn": "8.6", "cuda": "11.8"}),
    ("2.6.0", {"python_min": "3.6", "python_max": "3.9", "compiler": "GCC 7.3.1",
               "bazel": "3.7.2", "cudnn": "8.1", "cuda": "11.2"}),
])
def test_facts_from_tf_notes(version, expected):
    row = build_row(version)
    for key, value in expected.items():
        assert row[key] == value, f"TensorFlow {version}: {key} is {row[key]!r}, expected {value!r}"


def test_2_15_was_built_with_clang_16():
    assert build_row("2.15.0")["compiler"].startswith("Clang 16")


def test_2_21_row_agrees_with_the_wheels_build_info():
    """tf.sysconfig.get_build_info() of the 2.21 wheel says CUDA 12.5.1 and cuDNN 9 (TF-NOTES)."""
    row = build_row("2.21.0")
    assert "12.5.1".startswith(row["cuda"]) and row["cudnn"].split(".")[0] == "9"


# --- CUDA architectures ---------------------------------------------------------------------------

def test_architecture_keys_and_values_are_versions_sorted_without_duplicates():
    for cuda, capabilities in tables.cuda_architectures().items():
        assert VERSION.match(cuda), cuda
        parsed = [numbers(capability) for capability in capabilities]
        assert all(len(capability) == 2 for capability in parsed), (cuda, capabilities)
        assert parsed == sorted(set(parsed)), f"CUDA {cuda}: {capabilities} not sorted or has duplicates"


def test_cuda_versions_are_listed_in_increasing_order():
    versions = [numbers(cuda) for cuda in tables.cuda_architectures()]
    assert versions == sorted(versions)


def test_2021_build_fact_cuda_11_0_cannot_target_sm_86_but_11_1_can():
    architectures = tables.cuda_architectures()
    assert "8.6" not in architectures["11.0"] and "8.0" in architectures["11.0"]
    assert "8.6" in architectures["11.1"] and "8.6" in architectures["11.3"]


@pytest.mark.parametrize("cuda, present, absent", [
    ("10.2", ["3.0", "7.5"], ["8.0"]),
    ("11.0", ["3.5", "8.0"], ["3.0", "3.2"]),
    ("11.4", ["8.7"], ["8.9"]),
    ("11.8", ["3.5", "8.9", "9.0"], []),
    ("12.0", ["5.0", "9.0"], ["3.5", "3.7"]),
    ("12.8", ["10.0", "12.0"], ["10.3"]),
    ("13.0", ["7.5", "11.0", "12.1"], ["7.0", "7.2", "6.1", "10.1"]),
])
def test_architectures_added_and_dropped(cuda, present, absent):
    capabilities = tables.cuda_architectures()[cuda]
    for capability in present:
        assert capability in capabilities, f"CUDA {cuda} should list {capability}"
    for capability in absent:
        assert capability not in capabilities, f"CUDA {cuda} should not list {capability}"


def test_every_tested_builds_cuda_version_has_an_architecture_row():
    architectures = tables.cuda_architectures()
    for row in tables.tested_builds():
        assert row["cuda"] in architectures, f"no architecture row for CUDA {row['cuda']}"


# --- import errors --------------------------------------------------------------------------------

REQUIRED_ERROR_KEYS = {"illegal_instruction", "numpy_abi", "libcudart_missing", "libcudnn_missing",
                       "cuda_library_missing", "cuda_driver_missing", "pywrap_internal", "unknown"}


def test_import_error_catalogue_has_the_classic_causes_once_each():
    keys = [entry["key"] for entry in tables.import_errors()]
    assert len(keys) == len(set(keys)), f"duplicate keys in {keys}"
    assert set(keys) == REQUIRED_ERROR_KEYS
    assert keys[-1] == "unknown"


def test_import_error_entries_are_complete():
    for entry in tables.import_errors():
        assert set(entry) == {"key", "title", "example", "description", "fix"}, entry["key"]
        for field in ("title", "description", "fix"):
            assert entry[field].strip(), f"{entry['key']}: empty {field}"
        if entry["key"] != "unknown":
            assert entry["example"].strip(), f"{entry['key']}: no example message"


def test_the_windows_error_is_the_pywrap_example():
    entry = {entry["key"]: entry for entry in tables.import_errors()}["pywrap_internal"]
    assert "No module named '_pywrap_tensorflow_internal'" in entry["example"]


# --- the module itself ----------------------------------------------------------------------------

def test_every_table_names_its_source():
    for name, source in tables.sources().items():
        assert len(source) > 40, f"{name}: source too short: {source!r}"
    for name in (tables.TESTED_BUILDS, tables.CUDA_ARCHITECTURES, tables.IMPORT_ERRORS):
        text = resources.files("course").joinpath("data").joinpath(name).read_text(encoding="utf-8")
        assert json.loads(text)["source"], name


def test_loaders_return_fresh_copies():
    tables.tested_builds()[0]["cuda"] = "changed"
    tables.cuda_architectures()["11.0"].append("8.6")
    tables.import_errors().clear()
    assert tables.tested_builds()[0]["cuda"] != "changed"
    assert "8.6" not in tables.cuda_architectures()["11.0"]
    assert tables.import_errors()


def test_module_holds_loaders_only():
    """course/ ships to students: no function here may solve an exercise."""
    public = {name for name, value in inspect.getmembers(tables, inspect.isfunction)
              if not name.startswith("_") and value.__module__ == tables.__name__}
    assert public == {"tested_builds", "cuda_architectures", "import_errors", "sources"}
