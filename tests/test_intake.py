"""Reading a class of submissions: folders, zips, LMS renames, and rejections with reasons."""

from __future__ import annotations

import zipfile

import nbformat
import pytest

from autograder.grading import intake
from tests import notebooks

NAME = "00_gpu_setup.ipynb"


@pytest.fixture
def valid_bytes():
    return nbformat.writes(notebooks.tiny_assignment()).encode()


def _student(root, student_id, files):
    folder = root / student_id
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def by_id(found):
    return {submission.student_id: submission for submission in found}


def test_folders_zips_renames_and_unicode_ids(tmp_path, valid_bytes):
    _student(tmp_path, "ada", {NAME: valid_bytes})
    _student(tmp_path, "Zoë Ängström", {"00_gpu_setup (1).ipynb": valid_bytes})
    with zipfile.ZipFile(tmp_path / "grace.zip", "w") as bundle:
        bundle.writestr(f"grace/{NAME}", valid_bytes)
        bundle.writestr("__MACOSX/._x.ipynb", b"junk")
    found = by_id(intake.read_class(tmp_path, NAME))
    assert all(s.ok for s in found.values()), {k: s.problem for k, s in found.items()}
    assert set(found) == {"ada", "Zoë Ängström", "grace"}
    assert found["grace"].notebook_bytes == valid_bytes


@pytest.mark.parametrize("data, reason", [
    (b'{"cells": [', "not a valid notebook"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
    (b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "extra": 1}', "not a valid notebook"),
])
def test_broken_notebooks_are_rejected_with_a_reason(tmp_path, data, reason):
    _student(tmp_path, "bob", {NAME: data})
    (submission,) = intake.read_class(tmp_path, NAME)
    assert not submission.ok and reason in submission.problem


def test_missing_and_ambiguous_notebooks(tmp_path, valid_bytes):
    _student(tmp_path, "empty", {"notes.txt": b"hi"})
    _student(tmp_path, "twice", {"00_gpu_setup (1).ipynb": valid_bytes, "00_gpu_setup (2).ipynb": valid_bytes})
    found = by_id(intake.read_class(tmp_path, NAME))
    assert "no 00_gpu_setup.ipynb" in found["empty"].problem
    assert "several candidates" in found["twice"].problem


def test_path_traversal_zip_and_symlinks_are_rejected(tmp_path, valid_bytes):
    with zipfile.ZipFile(tmp_path / "mallory.zip", "w") as bundle:
        bundle.writestr(f"../../{NAME}", valid_bytes)
    outside = tmp_path.parent / "outside"
    outside.mkdir(exist_ok=True)
    (tmp_path / "eve").symlink_to(outside)
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    found = by_id(intake.read_class(tmp_path, NAME))
    assert "outside the extraction folder" in found["mallory"].problem
    assert "symbolic link" in found["eve"].problem
    assert "not a readable zip" in found["junk"].problem


def test_oversize_notebook_is_rejected(tmp_path, monkeypatch, valid_bytes):
    monkeypatch.setattr(intake, "MAX_NOTEBOOK_BYTES", 100)
    _student(tmp_path, "big", {NAME: valid_bytes})
    (submission,) = intake.read_class(tmp_path, NAME)
    assert "larger than" in submission.problem


def test_missing_folder_is_an_error_of_the_run(tmp_path):
    with pytest.raises(intake.IntakeError, match="does not exist"):
        intake.read_class(tmp_path / "nope", NAME)
