"""The two CLIs: argument mapping with the library mocked, and end to end in a subprocess."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import cli as autograder_cli
from autograder.settings import GradingSettings, Limits
from course import cli as course_cli
from tests import notebooks

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _env(**extra):
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra)
    env.pop("COURSE_ROOT", None)
    return env


def test_a_demanded_sandbox_that_cannot_start_exits_2(monkeypatch, tmp_path, capsys):
    from autograder.execution import sandbox
    monkeypatch.setattr(sandbox, "probe", lambda: "bwrap cannot create namespaces here: denied")
    monkeypatch.setenv("COURSE_ROOT", str(tmp_path))
    assert autograder_cli.main(["grade", "00_gpu_setup", "--submissions", str(tmp_path), "--sandbox", "bwrap"]) == 2
    assert "bwrap cannot create namespaces here" in capsys.readouterr().err


@pytest.fixture
def graded_with(monkeypatch, tmp_path):
    """Run `autograder grade ARGS` with the library mocked; return what it was called with."""
    seen = {}

    def fake_grade_class(assignment, source_dir, submissions, out, *, settings, progress):
        seen.update(assignment=assignment, source_dir=source_dir, submissions=submissions, out=out,
                    settings=settings.trait_values(config=True))
        from autograder.grading.results import ClassResult
        return ClassResult(assignment, [], [], 0.0, out)

    import autograder.grading.pipeline
    monkeypatch.setattr(autograder.grading.pipeline, "grade_class", fake_grade_class)
    monkeypatch.setenv("COURSE_ROOT", str(tmp_path))
    (tmp_path / "source" / "00_gpu_setup").mkdir(parents=True)

    def run(*args: str) -> dict:
        seen.clear()
        seen["code"] = autograder_cli.main(["grade", "00_gpu_setup", "--submissions", "subs",
                                            "--out", str(tmp_path / "o"), *args])
        return seen
    return run


def settings(**values) -> dict:
    return GradingSettings(**values).trait_values(config=True)


def test_grade_maps_arguments_to_the_library(graded_with, tmp_path):
    seen = graded_with("--profile", "ci", "--timeout", "42", "--workers", "3", "--memory-limit", "1.5", "--force")
    assert seen == {"code": 0, "assignment": "00_gpu_setup", "source_dir": tmp_path / "source" / "00_gpu_setup",
                    "submissions": Path("subs").resolve(), "out": tmp_path / "o",
                    "settings": settings(profile="ci", workers=3, timeout=42.0, memory_limit=1.5, force=True)}


def test_defaults_are_the_documented_ones(graded_with):
    assert graded_with()["settings"] == settings()
    assert settings() | {"profile": "grade", "workers": None, "timeout": 600.0, "cell_timeout": None,
                         "memory_limit": 6.0, "force": False} == settings()


def test_the_wall_clock_and_the_cell_timeout_are_two_options(graded_with):
    seen = graded_with("--timeout", "900", "--cell-timeout", "120")["settings"]
    assert (seen["timeout"], seen["cell_timeout"]) == (900.0, 120)
    assert graded_with("--timeout", "900")["settings"]["cell_timeout"] is None, "the course's Execute.timeout stands"


def test_the_courses_nbgrader_config_sets_grading_settings_and_the_options_win(graded_with, tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.GradingSettings.timeout = 77\n"
                                                 "c.GradingSettings.task_limit = 99\n")
    assert (graded_with()["settings"]["timeout"], graded_with()["settings"]["task_limit"]) == (77.0, 99)
    assert graded_with("--timeout", "5")["settings"]["timeout"] == 5.0


def test_cluster_and_database_options_reach_the_library(graded_with):
    seen = graded_with("--scheduler", "tcp://head:8786", "--db", "postgresql://grader@db/gradebook")["settings"]
    # as nbgrader's documentation writes it; SQLAlchemy would pick psycopg 3 for it, the lock ships psycopg2
    assert (seen["scheduler"], seen["db_url"]) == ("tcp://head:8786", "postgresql+psycopg2://grader@db/gradebook")


def test_formgrade_on_an_unreachable_database_exits_2_with_the_reason(monkeypatch, tmp_path, capsys):
    """`formgrade --db` checks the connection first, with the URL as docs/cluster.md writes it (read as
    psycopg2's: psycopg 3, which the lock does not ship, would fail to load instead)."""
    from tests import servers

    monkeypatch.setenv("COURSE_ROOT", str(tmp_path))
    url = f"postgresql://grader@127.0.0.1:{servers.free_port()}/gradebook"
    assert autograder_cli.main(["formgrade", "00_gpu_setup", "--db", url, "--prepare-only"]) == 2
    assert "cannot connect to the gradebook database" in capsys.readouterr().err
    assert not (tmp_path / "build").exists(), "nothing prepared"


def test_local_workers_and_a_scheduler_together_are_refused(graded_with, capsys):
    assert graded_with("--scheduler", "tcp://head:8786", "--workers", "2")["code"] == 2
    assert "--workers" in capsys.readouterr().err


def test_the_sandbox_and_its_limits_reach_the_library(graded_with):
    seen = graded_with("--sandbox", "none", "--disk-limit", "0.5", "--task-limit", "64", "--cpu-limit", "90")["settings"]
    assert (seen["sandbox"], GradingSettings(**seen).limits) == ("none", Limits(disk_bytes=2**29, tasks=64,
                                                                                 cpu_seconds=90))
    assert GradingSettings(**graded_with()["settings"]).limits == Limits(), "the defaults are the library's"


def test_logs_have_levels_verbose_and_quiet(graded_with, capsys):
    graded_with("--quiet")
    assert "kernel sandbox" not in capsys.readouterr().err, "INFO is not shown with --quiet"
    graded_with()
    assert "INFO autograder: kernel sandbox" in capsys.readouterr().err
    graded_with("--verbose")
    assert logging.getLogger("autograder").getEffectiveLevel() == logging.DEBUG


@pytest.mark.parametrize("flag, value", [("--workers", "0"), ("--timeout", "-1"), ("--memory-limit", "lots"),
                                         ("--sandbox", "chroot"), ("--task-limit", "0"), ("--cell-timeout", "0"),
                                         ("--profile", "fast")])
def test_unusable_options_are_refused(flag, value, capsys):
    with pytest.raises(SystemExit) as stop:
        autograder_cli.parser().parse_args(["grade", "00_gpu_setup", "--submissions", "s", flag, value])
    assert stop.value.code == 2


@pytest.mark.parametrize("command", [["grade", "99_nope", "--submissions", "."], ["release", "99_nope"],
                                     ["demo-class", "99_nope", "--out", "demo"], ["solutions", "99_nope"]])
def test_unknown_assignment_exits_2_with_a_message(command, monkeypatch, tmp_path, capsys):
    """A mistyped assignment id names the assignments there are, whatever the command (no traceback)."""
    (tmp_path / "source" / "00_gpu_setup").mkdir(parents=True)
    monkeypatch.setenv("COURSE_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert autograder_cli.main(command) == 2
    error = capsys.readouterr().err
    assert "unknown assignment '99_nope'" in error and "00_gpu_setup" in error and "Traceback" not in error


def test_missing_submissions_folder_exits_2(tmp_path, capsys):
    course = tmp_path / "course"
    (course / "source" / "00_gpu_setup").mkdir(parents=True)
    nbformat.write(notebooks.tiny_assignment(), course / "source" / "00_gpu_setup" / "00_gpu_setup.ipynb")
    os.environ["COURSE_ROOT"] = str(course)
    try:
        code = autograder_cli.main(["grade", "00_gpu_setup", "--submissions", str(tmp_path / "nope"),
                                    "--out", str(tmp_path / "out")])
    finally:
        del os.environ["COURSE_ROOT"]
    assert code == 2 and "does not exist" in capsys.readouterr().err


@pytest.mark.grading
def test_autograder_grade_end_to_end(tmp_path):
    course = tmp_path / "course"
    (course / "source" / "00_gpu_setup").mkdir(parents=True)
    shutil.copyfile(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    nbformat.write(notebooks.tiny_assignment(), course / "source" / "00_gpu_setup" / "00_gpu_setup.ipynb")
    submissions = tmp_path / "submissions" / "solo"
    submissions.mkdir(parents=True)
    nbformat.write(notebooks.tiny_assignment(), submissions / "00_gpu_setup.ipynb")
    done = subprocess.run([str(BIN / "autograder"), "grade", "00_gpu_setup", "--submissions", str(submissions.parent)],
                          cwd=course, capture_output=True, text=True, timeout=600, env=_env())
    assert done.returncode == 0, done.stdout + done.stderr
    grades = (course / "build" / "grading" / "00_gpu_setup" / "grades.csv").read_text()
    assert "solo,,,00_gpu_setup,00_gpu_setup.ipynb,,,,6,0,6,6,graded" in grades, grades
    assert "1 submissions, 1 graded" in done.stdout


@pytest.mark.tensorflow
def test_course_doctor_json_end_to_end():
    done = subprocess.run([str(BIN / "course"), "doctor", "--json"], capture_output=True, text=True,
                          timeout=300, env=_env(), cwd=ROOT)
    diagnosis = json.loads(done.stdout)
    names = [check["name"] for check in diagnosis["checks"]]
    assert {"python", "import tensorflow", "gpu", "kernel", "LD_LIBRARY_PATH", "cpu", "loader tools"} <= set(names)
    assert done.returncode == (0 if diagnosis["ok"] else 1)
    # TensorFlow's C++ log lines (`E0000 ... failed call to cuInit`) became facts, not terminal noise
    assert not re.search(r"^[IWEF]\d{4} ", done.stderr, flags=re.M), done.stderr[-2000:]
    gpu = next(check for check in diagnosis["checks"] if check["name"] == "gpu")
    if gpu["status"] != "OK":  # no GPU here: what TensorFlow logged about the driver is in the diagnosis
        assert any("cuInit" in line or "cuda drivers" in line for line in diagnosis["facts"]["tensorflow_log"])
        assert "driver" in gpu["detail"], gpu


def test_course_list_names_every_assignment(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert course_cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("00_gpu_setup", "05_tf_trt"))


def test_course_run_rejects_an_unknown_profile(capsys):
    with pytest.raises(SystemExit):
        course_cli.main(["run", "--profile", "fast"])
