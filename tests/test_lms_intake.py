"""Canvas's and Moodle's bulk downloads of submissions, built here to the names their own code writes
(autograder.lms.downloads cites it): student ids, the LATE marker, renames, stray files, re-upload names."""

from __future__ import annotations

import zipfile

import nbformat
import pytest

from autograder.grading import intake
from autograder.lms import downloads
from tests import notebooks

NAME = "00_gpu_setup.ipynb"


@pytest.fixture
def valid_bytes():
    return nbformat.writes(notebooks.tiny_assignment()).encode()


@pytest.mark.parametrize("path, expected", [
    ("doejane_12345_678_00_gpu_setup.ipynb", ("12345", "doejane", "00_gpu_setup.ipynb", False, "doejane_12345_678_")),
    ("doejane_LATE_12345_678_00_gpu_setup-1.ipynb",
     ("12345", "doejane", "00_gpu_setup-1.ipynb", True, "doejane_LATE_12345_678_")),
    ("o_brienann_77_9_notes.txt", ("77", "o_brienann", "notes.txt", False, "o_brienann_77_9_")),
    ("zoëängström_5_6_hw.ipynb", ("5", "zoëängström", "hw.ipynb", False, "zoëängström_5_6_")),
    ("anon_Xy12z_678_00_gpu_setup.ipynb", ("anon_Xy12z", "", "00_gpu_setup.ipynb", False, "anon_Xy12z_678_")),
])
def test_canvas_names(path, expected):
    entry = downloads.canvas(path)
    assert (entry.student_id, entry.name, entry.file_name, entry.late, entry.reupload) == expected


@pytest.mark.parametrize("path", ["README.txt", "doejane_12345_hw.ipynb", "12345_678_hw.ipynb",
                                  "doejane_12345_678_", "folder/doejane_12345_678_hw.ipynb"])
def test_names_canvas_never_writes(path):
    assert downloads.canvas(path) is None


@pytest.mark.parametrize("path, expected", [
    ("Jane Doe_123456_assignsubmission_file/00_gpu_setup.ipynb",
     ("123456", "Jane Doe", "00_gpu_setup.ipynb", "Jane Doe_123456_assignsubmission_file/")),
    ("Jane Doe_123456_assignsubmission_file/sub/dir/x.ipynb",
     ("123456", "Jane Doe", "x.ipynb", "Jane Doe_123456_assignsubmission_file/")),
    ("Jane Doe_123456_assignsubmission_file_/00_gpu_setup.ipynb",      # before Moodle 4.1: a trailing _
     ("123456", "Jane Doe", "00_gpu_setup.ipynb", "Jane Doe_123456_assignsubmission_file_/")),
    ("Jane Doe_123456_assignsubmission_file_00_gpu_setup.ipynb",       # not in folders
     ("123456", "Jane Doe", "00_gpu_setup.ipynb", "Jane Doe_123456_assignsubmission_file_")),
    ("Participant_99_assignsubmission_onlinetext/onlinetext.html",
     ("99", "Participant", "onlinetext.html", "Participant_99_assignsubmission_onlinetext/")),
])
def test_moodle_names(path, expected):
    entry = downloads.moodle(path)
    assert (entry.student_id, entry.name, entry.file_name, entry.reupload) == expected


@pytest.mark.parametrize("path", ["notes.txt", "Jane Doe_x_assignsubmission_file/a.ipynb",
                                  "Jane Doe_1_assignfeedback_file/a.ipynb", "Jane Doe_1_assignsubmission_file/"])
def test_names_moodle_never_writes(path):
    assert downloads.moodle(path) is None


# A team assignment's students in no group: mod/assign/classes/downloader.php's get_student_prefix gives
# their (one, shared) submission the prefix get_string('defaultteam') without an id, in the language of
# whoever downloads; the plugin's part follows as for a student.
@pytest.mark.parametrize("path, expected", [
    ("Default group_assignsubmission_file/00_gpu_setup.ipynb",
     ("Default group", "00_gpu_setup.ipynb", "Default group_assignsubmission_file/")),
    ("Standard-Gruppe_assignsubmission_file/sub/00_gpu_setup.ipynb",
     ("Standard-Gruppe", "00_gpu_setup.ipynb", "Standard-Gruppe_assignsubmission_file/")),
    ("Standard-Gruppe_assignsubmission_onlinetext/onlinetext.html",
     ("Standard-Gruppe", "onlinetext.html", "Standard-Gruppe_assignsubmission_onlinetext/")),
    ("Groupe par défaut_assignsubmission_file_00_gpu_setup.ipynb",            # not in folders
     ("Groupe par défaut", "00_gpu_setup.ipynb", "Groupe par défaut_assignsubmission_file_")),
    ("Groupe par de\u0301faut_assignsubmission_file/00_gpu_setup.ipynb",      # unpacked on a Mac (NFD)
     ("Groupe par défaut", "00_gpu_setup.ipynb", "Groupe par de\u0301faut_assignsubmission_file/")),
])
def test_moodle_default_group_folder_names_the_default_group(path, expected):
    entry = downloads.moodle(path)
    assert (entry.student_id, entry.file_name, entry.reupload) == expected
    assert entry.name == entry.student_id and downloads.default_group("moodle", entry.student_id)
    assert not downloads.default_group("canvas", entry.student_id)


def test_every_languages_default_group_folder_is_read():
    from autograder.lms import moodle_strings
    for language, strings in moodle_strings.TEAM.items():
        entry = downloads.moodle(f"{strings.default_group}_assignsubmission_file/{NAME}")
        assert entry is not None and entry.student_id == strings.default_group, language


@pytest.mark.parametrize("path", ["Team Red_assignsubmission_file/a.ipynb",          # a group's folder has its id
                                  "Default group_assignfeedback_file/a.ipynb", "Default group_assignsubmission_file/",
                                  "Default group/a.ipynb", "Default group_assignsubmission/a.ipynb"])
def test_default_group_names_moodle_never_writes(path):
    assert downloads.moodle(path) is None


def _canvas_class(valid_bytes) -> dict[str, bytes]:
    return {
        "doejane_12345_900_00_gpu_setup.ipynb": valid_bytes,
        "doejane_12345_901_scratch.py": b"print(1)",                 # a second file of the same student
        "smithjohn_LATE_23456_902_00_gpu_setup.ipynb": valid_bytes,  # late by Canvas's due date
        "leeann_34567_903_00_gpu_setup-1.ipynb": valid_bytes,        # uploaded again: Canvas renamed it
        "kimbo_45678_904_homework.zip": _zip_bytes({"work/00_gpu_setup.ipynb": valid_bytes}),
        "parkmin_56789_905_00_gpu_setup.ipynb": b'{"cells": [',      # broken
        "notes from TA.txt": b"stray",                                # follows no rule
        ".DS_Store": b"",                                             # hidden: not part of the class
    }


def _zip_bytes(files: dict[str, bytes]) -> bytes:
    import io
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in files.items():
            bundle.writestr(name, data)
    return buffer.getvalue()


def _by_id(found):
    return {submission.student_id: submission for submission in found}


@pytest.mark.parametrize("as_zip", [True, False], ids=["zip", "unpacked"])
def test_a_canvas_download(tmp_path, valid_bytes, as_zip):
    files = _canvas_class(valid_bytes)
    if as_zip:
        source = tmp_path / "course-hw submissions.zip"
        source.write_bytes(_zip_bytes(files))
    else:
        source = tmp_path / "submissions"
        source.mkdir()
        for name, data in files.items():
            (source / name).write_bytes(data)
    found = _by_id(intake.read_class(source, NAME))
    assert set(found) == {"12345", "23456", "34567", "45678", "56789", "notes from TA.txt"}
    assert all(found[s].ok for s in ("12345", "23456", "34567", "45678")), {k: v.problem for k, v in found.items()}
    assert found["12345"].notebook_bytes == valid_bytes and found["12345"].name == "doejane"
    assert found["23456"].late_marked and not found["12345"].late_marked
    assert found["34567"].origin.endswith("leeann_34567_903_00_gpu_setup-1.ipynb")
    assert found["45678"].reupload == "kimbo_45678_904_"
    assert "not a valid notebook" in found["56789"].problem
    stray = found["notes from TA.txt"]
    assert not stray.ok and "follows no Canvas rule" in stray.problem
    assert {s.lms for s in found.values()} == {"canvas"}


def test_a_moodle_download(tmp_path, valid_bytes):
    source = tmp_path / "CS101-Homework 1-77.zip"
    source.write_bytes(_zip_bytes({
        "Jane Doe_1001_assignsubmission_file/00_gpu_setup.ipynb": valid_bytes,
        "Jane Doe_1001_assignsubmission_onlinetext/onlinetext.html": b"<p>hi</p>",
        "John Smith_1002_assignsubmission_file/00_gpu_setup (1).ipynb": valid_bytes,
        "Ann Lee_1003_assignsubmission_file/report.pdf": b"%PDF",
        "Ann Lee_1003_assignsubmission_file/old/00_gpu_setup.ipynb": valid_bytes,
        "grading worksheet.csv": b"Identifier\n",
        "__MACOSX/._x": b"",
    }))
    found = _by_id(intake.read_class(source, NAME))
    assert set(found) == {"1001", "1002", "1003", "grading worksheet.csv"}
    assert all(found[s].ok for s in ("1001", "1002", "1003"))
    assert found["1001"].name == "Jane Doe" and found["1001"].reupload == "Jane Doe_1001_assignsubmission_file/"
    assert "follows no Moodle rule" in found["grading worksheet.csv"].problem


@pytest.mark.parametrize("default", ["Default group", "Standard-Gruppe"], ids=["en", "de"])
def test_a_moodle_team_download_reads_the_default_group_folder_under_its_name(tmp_path, valid_bytes, default):
    """An English and a German site's download of a team assignment: a group's folder by its id, the
    default group's under its name (only the group roster says whose it is: tests/test_groups.py)."""
    source = tmp_path / "CS101-Homework 1-77.zip"
    source.write_bytes(_zip_bytes({
        f"Team Red_12_assignsubmission_file/{NAME}": valid_bytes,
        f"{default}_assignsubmission_file/{NAME}": valid_bytes,
        f"{default}_assignsubmission_onlinetext/onlinetext.html": b"<p>hi</p>",
    }))
    found = _by_id(intake.read_class(source, NAME))
    assert set(found) == {"12", default}
    assert found[default].ok and found[default].notebook_bytes == valid_bytes
    assert (found[default].name, found[default].reupload) == (default, f"{default}_assignsubmission_file/")
    refused = _by_id(intake.without_group_roster(list(found.values())))
    assert refused["12"] == found["12"], "a group's folder is graded under its id, as before"
    assert not refused[default].ok and refused[default].notebook_bytes is None
    assert f"{default}_assignsubmission_file/{NAME}: Moodle's default group folder" in refused[default].problem
    assert "grade with --groups and the assignment's grading worksheet" in refused[default].problem


def test_a_zip_that_is_no_lms_download_is_an_error_of_the_run(tmp_path, valid_bytes):
    source = tmp_path / "class.zip"
    source.write_bytes(_zip_bytes({"ada/00_gpu_setup.ipynb": valid_bytes}))
    with pytest.raises(intake.IntakeError, match="neither Canvas's naming"):
        intake.read_class(source, NAME)
