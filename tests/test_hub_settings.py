"""hub/course_hub.py without a hub: the class's settings file, the roster, LTI roles to nbgrader's
groups, the nonce store that refuses a replayed launch, and the folders a student's server cannot reach."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hub"))
import course_hub  # noqa: E402

LTI = """
[lti]
issuer = "https://lms.test"
client_id = "client"
authorize_url = "https://lms.test/authorize"
jwks_endpoint = "https://lms.test/jwks"
"""


def settings(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "class.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_example_settings_read_as_they_are_documented():
    example = course_hub.ClassSettings.read(ROOT / "hub" / "class.example.toml")
    assert example.course_id == "tf-internals" and example.lti.username_key == "custom_canvas_user_id"
    assert example.graders_group == "formgrade-tf-internals" and example.students_group == "nbgrader-tf-internals"
    assert example.state_dir == Path("/srv/tf-course-hub") and example.roster is None
    assert example.course_dir == Path("/srv/tf-course") and example.grader_user == "grader-tf-internals"


@pytest.mark.parametrize("text, message", [
    ('course_id = "c"\nstate_dir = "s"\ncolour = "red"\n' + LTI, "unknown settings ['colour']"),
    ('state_dir = "s"\n' + LTI, "missing ['course_id']"),
    ('course_id = "c"\nstate_dir = "s"\n', "exactly one of [lti]"),
    ('course_id = "c"\nstate_dir = "s"\nroster = "r.txt"\n' + LTI, "exactly one of [lti]"),
])
def test_a_settings_file_that_says_too_much_or_too_little_is_refused_by_name(tmp_path, text, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        course_hub.ClassSettings.read(settings(tmp_path, text))


def test_relative_paths_are_relative_to_the_settings_file(tmp_path):
    (tmp_path / "roster.txt").write_text("ann  # first\n\nben\n", encoding="utf-8")
    read = course_hub.ClassSettings.read(settings(tmp_path, 'course_id = "c"\nstate_dir = "state"\nroster = "roster.txt"\n'))
    assert read.state_dir == tmp_path / "state" and read.exchange == tmp_path / "state" / "exchange"
    assert course_hub.roster_names(read.roster) == {"ann", "ben"}


def test_a_roster_line_that_cannot_be_a_unix_user_is_refused_with_its_line(tmp_path):
    roster = tmp_path / "roster.txt"
    roster.write_text("ann\nBen Smith\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"roster.txt:2: 'Ben Smith' is not a Unix user name"):
        course_hub.roster_names(roster)


@pytest.mark.parametrize("roles, graders", [
    (["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"], True),
    (["http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"], True),
    (["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"], False),
    (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor",
      "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"], False),  # an instructor elsewhere, a student here
    ([], False),
])
def test_lti_roles_become_nbgrader_groups(tmp_path, roles, graders):
    read = course_hub.ClassSettings.read(settings(tmp_path, 'course_id = "tf"\nstate_dir = "s"\n' + LTI))
    groups = course_hub.launch_groups(roles, read)
    assert groups == ["nbgrader-tf"] + (["formgrade-tf"] if graders else [])


def test_a_nonce_is_accepted_once_until_its_token_expires(tmp_path):
    store = course_hub.NonceStore(tmp_path / "nonces.sqlite")
    later = time.time() + 300
    assert store.first_use("https://lms.test", "n1", later)
    assert not store.first_use("https://lms.test", "n1", later), "a replay was accepted"
    assert store.first_use("https://other.test", "n1", later), "nonces are per issuer"
    again = course_hub.NonceStore(tmp_path / "nonces.sqlite")  # a restarted hub remembers
    assert not again.first_use("https://lms.test", "n1", later)
    assert again.first_use("https://lms.test", "old", time.time() - 1)
    assert again.first_use("https://lms.test", "new", later)  # the expired one is dropped on the way


def test_folders_closed_to_other_users_are_found_on_the_way_to_a_program(tmp_path):
    closed = tmp_path / "closed"
    program = closed / "bin" / "python"
    program.parent.mkdir(parents=True)
    program.write_text("", encoding="utf-8")
    closed.chmod(0o700)
    assert closed in course_hub.closed_folders(program)  # (pytest's own tmp folders are mode 700 too)
    closed.chmod(0o711)
    assert closed not in course_hub.closed_folders(program)
    assert course_hub.closed_folders(Path("/usr/bin/env")) == []


def test_the_spawner_is_systemds_where_systemd_runs_and_enforces_the_limits(tmp_path):
    read = course_hub.ClassSettings.read(settings(tmp_path, 'course_id = "tf"\nstate_dir = "s"\nmem_limit = "4G"\n' + LTI))
    name, traits = course_hub.spawner(read, systemd=True)
    module, _, cls = name.rpartition(".")
    spawner_class = getattr(__import__(module, fromlist=[cls]), cls)
    for trait, value in traits.items():
        assert spawner_class.class_traits()[trait].default_value is not None  # a trait of that spawner
        assert trait in spawner_class.class_trait_names(), trait
    assert traits["isolate_devices"] is False and traits["username_template"] == "{USERNAME}"
    assert course_hub.spawner(read, systemd=False) == ("jupyterhub.spawner.LocalProcessSpawner", {})
