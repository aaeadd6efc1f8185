"""Due dates, extensions and late penalties (fast: no grading)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import nbformat
import pytest
from nbgrader.plugins import LateSubmissionPlugin

from autograder.grading import lateness
from autograder.grading.lateness import Policy, TermError

DUE = "2027-01-15T23:59:00+01:00"


@pytest.mark.parametrize("method, late, score, expected", [
    ("none", 10 * 86400, 8.0, 0.0),
    ("zero", 1, 8.0, 8.0),
    ("zero", 0, 8.0, 0.0),                   # on time: no penalty whatever the method
    ("per_day", 1, 8.0, 0.8),                # a started day counts as a day
    ("per_day", 86400, 8.0, 0.8),
    ("per_day", 86401, 8.0, 1.6),
    ("per_day", 30 * 86400, 8.0, 4.0),       # capped at 50 %
])
def test_the_penalty_of_each_method(method, late, score, expected):
    assert Policy(method, percent_per_day=10, cap_percent=50).penalty(score, late) == pytest.approx(expected)


def test_a_term_file_gives_due_dates_and_the_policy(tmp_path):
    path = tmp_path / "term.toml"
    path.write_text(f'[due]\nps1 = "{DUE}"\n[penalty]\nmethod = "per_day"\npercent_per_day = 10\ncap_percent = 50\n')
    term = lateness.read_term(path)
    assert term.due == {"ps1": datetime(2027, 1, 15, 23, 59, tzinfo=timezone(timedelta(hours=1)))}
    assert term.policy == Policy("per_day", 10, 50)
    assert lateness.read_term(None).policy.method == "none"


@pytest.mark.parametrize("text, message", [
    ('[due]\nps1 = "2027-01-15"\n', "has no UTC offset"),
    ('[due]\nps1 = "next friday"\n', "not an ISO 8601 date"),
    ('[penalty]\nmethod = "half"\n', "not one of none, zero, per_day"),
    ('[penalty]\nmethod = "per_day"\n', "needs percent_per_day > 0"),
    ('[dues]\nps1 = 1\n', "unknown section(s) dues"),
    ('[due\n', "term.toml"),
])
def test_a_bad_term_file_says_where_and_why(tmp_path, text, message):
    path = tmp_path / "term.toml"
    path.write_text(text)
    with pytest.raises(TermError, match=message.replace("(", r"\(").replace(")", r"\)")):
        lateness.read_term(path)


def test_extensions_and_times_decide_how_late_each_student_is(tmp_path):
    term = lateness.Term(due={"ps1": lateness.parse_time(DUE, "t"), "ps2": lateness.parse_time(DUE, "t")})
    (tmp_path / "ext.csv").write_text(f"student_id,assignment,due\nbob,ps1,2027-01-20T23:59:00+01:00\n"
                                      f"dana,ps2,2027-01-20T23:59:00+01:00\n")
    (tmp_path / "times.csv").write_text("student_id,submitted_at\nann,2027-01-17T00:00:00+01:00\n"
                                        "bob,2027-01-17T00:00:00+01:00\n")
    lateness.add_extensions(term, tmp_path / "ext.csv", "ps1", {"ann", "bob", "cy"})
    lateness.add_times(term, tmp_path / "times.csv", {"ann", "bob", "cy"})
    assert term.late_seconds("ann", "ps1") == 86400 + 60, "one day and a minute late"
    assert term.late_seconds("bob", "ps1") == 0, "his extension runs to the 20th"
    assert term.late_seconds("cy", "ps1") == 0, "no time given: on time"


@pytest.mark.parametrize("extensions, times, message", [
    ("student_id,assignment,due\nzed,ps1,2027-01-20T23:59:00Z\n", None, "line 2: student 'zed' has no submission"),
    ("student_id,assignment,due\nann,ps7,2027-01-20T23:59:00Z\n", None, "unknown assignment 'ps7'"),
    ("student_id,assignment,due\nann,ps1,2027-01-20T23:59:00Z\nann,ps1,2027-01-21T23:59:00Z\n", None,
     "line 3: a second extension"),
    ("student,due\n", None, "expected the columns student_id, assignment, due"),
    (None, "student_id,submitted_at\nann,yesterday\n", "line 2: 'yesterday' is not an ISO 8601"),
    (None, "student_id,submitted_at\nzed,2027-01-17T00:00:00Z\n", "student 'zed' has no submission"),
])
def test_a_bad_extensions_or_times_file_says_where_and_why(tmp_path, extensions, times, message):
    term = lateness.Term(due={"ps1": lateness.parse_time(DUE, "t")})
    with pytest.raises(TermError, match=message):
        if extensions is not None:
            (tmp_path / "ext.csv").write_text(extensions)
            lateness.add_extensions(term, tmp_path / "ext.csv", "ps1", {"ann"})
        else:
            (tmp_path / "times.csv").write_text(times)
            lateness.add_times(term, tmp_path / "times.csv", {"ann"})


def test_grading_stops_before_any_work_on_a_bad_times_file(tmp_path):
    """The whole class waits for a corrected file rather than being graded half right (fast: the check
    comes before nbgrader generates anything)."""
    import nbformat

    from autograder.grading.pipeline import grade_class
    from autograder.settings import GradingSettings
    from tests import notebooks

    source = tmp_path / "source" / "ps1"
    source.mkdir(parents=True)
    nbformat.write(notebooks.tiny_assignment(), source / "ps1.ipynb")
    (tmp_path / "subs" / "ann").mkdir(parents=True)
    nbformat.write(notebooks.tiny_assignment(), tmp_path / "subs" / "ann" / "ps1.ipynb")
    (tmp_path / "times.csv").write_text("student_id,submitted_at\nann,2027-01-17 noon\n")
    with pytest.raises(TermError, match="times.csv line 2"):
        grade_class("ps1", source, tmp_path / "subs", tmp_path / "out",
                    settings=GradingSettings(submitted_at=str(tmp_path / "times.csv")), progress=lambda line: None)
    assert not (tmp_path / "out" / "course-0").exists()


def test_the_lms_late_marker_without_a_time_charges_one_started_day():
    Term = lateness.Term
    term = Term(policy=Policy("per_day", 10, 50), marked_late={"ann", "bob"})
    term.submitted["bob"] = lateness.parse_time("2027-01-01T00:00:00+00:00", "t")
    assert term.charged_by_marker("ann")
    assert not term.charged_by_marker("bob")        # a given time wins over the marker
    assert not term.charged_by_marker("cy")
    assert not Term(marked_late={"ann"}).charged_by_marker("ann")   # no policy: no charge
    assert term.policy.penalty(8.0, 1) == pytest.approx(0.8)


def test_nbgrader_autograde_by_hand_charges_the_term_s_penalty(tmp_path, monkeypatch):
    """The course's nbgrader configuration makes nbgrader's AssignLatePenalties use the term's policy
    (fast: the preprocessor's plugin, built as nbgrader builds it, asked as nbgrader asks it)."""
    from nbgrader.preprocessors import AssignLatePenalties
    from traitlets.config import Config

    from autograder.grading.lateness import TermPenalty
    from autograder.nbgrader_setup.config import configure

    (tmp_path / "term.toml").write_text('[due]\nps1 = "2027-01-15T23:59:00+01:00"\n'
                                        '[penalty]\nmethod = "per_day"\npercent_per_day = 10\ncap_percent = 50\n')
    monkeypatch.chdir(tmp_path)   # nbgrader runs in the course root
    preprocessor = AssignLatePenalties(config=configure(Config()))
    preprocessor.init_plugin()
    assert isinstance(preprocessor.plugin_inst, TermPenalty)
    ask = preprocessor.plugin_inst.late_submission_penalty
    assert ask("ann", 8.0, 1.5 * 86400) == pytest.approx(1.6)   # two started days: 20 %
    assert ask("ann", 8.0, 30 * 86400) == pytest.approx(4.0)    # the cap: 50 %
    assert ask("ann", 8.0, 0) == 0.0
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text('[penalty]\nmethod = "zero"\n')
    config = configure(Config())
    config.GradingSettings.term = str(elsewhere)   # c.GradingSettings.term names the file
    preprocessor = AssignLatePenalties(config=config)
    preprocessor.init_plugin()
    assert preprocessor.plugin_inst.late_submission_penalty("ann", 8.0, 60) == 8.0


class PerStartedHour(LateSubmissionPlugin):
    """A course's own policy (1 % of the score per started hour late), as an instructor would write it."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return score * 0.01 * -(-total_seconds_late // 3600)


def test_a_course_s_own_late_penalty_plugin_is_what_autograder_grade_charges(tmp_path):
    """c.AssignLatePenalties.plugin_class in the course's nbgrader_config.py (nbgrader's extension point)
    decides grades.csv's penalty too, asked only for a late submission (fast: read and settle, no kernel)."""
    from autograder.grading import pipeline
    from autograder.grading.results import Row
    from autograder.runfolder import RunFolder, Status
    from autograder.settings import GradingSettings
    from tests import notebooks

    source = tmp_path / "source" / "ps1"
    source.mkdir(parents=True)
    nbformat.write(notebooks.tiny_assignment(), source / "ps1.ipynb")
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\nc.AssignLatePenalties.plugin_class = 'tests.test_lateness.PerStartedHour'\n")
    (tmp_path / "term.toml").write_text('[due]\nps1 = "2027-01-15T12:00:00+00:00"\n')   # no [penalty]: none
    (tmp_path / "times.csv").write_text("student_id,submitted_at\nann,2027-01-15T13:30:00+00:00\n"
                                        "bob,2027-01-15T11:00:00+00:00\n")
    submissions = tmp_path / "class"
    for student in ("ann", "bob"):
        (submissions / student).mkdir(parents=True)
        nbformat.write(notebooks.tiny_assignment(), submissions / student / "ps1.ipynb")
    settings = GradingSettings(term=str(tmp_path / "term.toml"), submitted_at=str(tmp_path / "times.csv"))
    the_class = pipeline.read("ps1", source, [source / "ps1.ipynb"], RunFolder(tmp_path / "out"), submissions, settings)
    rows = [Row(student, "ps1", notebook="ps1.ipynb", score=4.0, max_score=4.0, status=Status.GRADED)
            for student in ("ann", "bob")]
    settled = {row.student_id: (row.penalty, row.score) for row in pipeline.settle(the_class, rows)}
    assert settled == {"ann": (pytest.approx(0.08), pytest.approx(3.92)), "bob": (0.0, 4.0)}   # two started hours
