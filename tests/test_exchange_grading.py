"""`autograder grade <assignment> --submissions <course>/submitted` on what `nbgrader collect` gathered
(made by nbgrader's own ExchangeSubmit and ExchangeCollect, tests/test_exchange_intake.py): the
assignment's notebooks graded, timestamp.txt as submitted_at and the late penalty, another assignment's
folder ignored, a broken timestamp and a stray file reported, the submitted folder left as it was."""

from __future__ import annotations

import shutil

import nbformat
import pytest

from autograder.nbgrader_setup.workspace import Workspace
from tests import notebooks
from tests.test_any_assignment import part
from tests.test_exchange_intake import Exchange, at_utc, snapshot
from tests.test_manual_grading import ROOT, grades, run

pytestmark = pytest.mark.grading
ASSIGNMENT, OTHER = "ps1", "ps0"


def test_grading_the_submitted_folder_of_nbgrader_collect(tmp_path, monkeypatch):
    exchange = Exchange(tmp_path, monkeypatch)
    root = exchange.course
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    nbformat.write(part(2), root / "source" / ASSIGNMENT / "ps1.ipynb")
    releaser = Workspace(tmp_path / "release-ws", ASSIGNMENT)
    releaser.create(root / "source" / ASSIGNMENT)
    released = (releaser.release_dir() / "ps1.ipynb").read_bytes()
    right = nbformat.writes(notebooks.answered(nbformat.reads(released.decode(), as_version=4),
                                               "def scale(value):\n    return 2 * value\n")).encode()
    (root / "term.toml").write_text('[due]\nps1 = "2027-01-15T23:59:00+01:00"\n'
                                    '[penalty]\nmethod = "per_day"\npercent_per_day = 10\ncap_percent = 50\n')
    exchange.release(ASSIGNMENT, released)
    exchange.release(OTHER, released)
    exchange.submit("ada", ASSIGNMENT, {"ps1.ipynb": right}, at_utc(2027, 1, 15, 22, 0))
    exchange.submit("bob", ASSIGNMENT, {"ps1.ipynb": right}, at_utc(2027, 1, 17, 9, 30))    # 2 started days late
    exchange.submit("carol", OTHER, {"ps1.ipynb": right}, at_utc(2027, 1, 1, 9, 0))          # another assignment
    (exchange.submit("cy", ASSIGNMENT, {"ps1.ipynb": right}, at_utc(2027, 1, 20, 9, 0)) / "timestamp.txt"
     ).write_text("whenever")
    exchange.submit("dee", ASSIGNMENT, {"ps1.ipynb": b"{not json"}, at_utc(2027, 1, 15, 22, 0))
    exchange.collect(OTHER)
    submitted = exchange.collect(ASSIGNMENT)
    (submitted / "notes.txt").write_text("grading notes")
    before = snapshot(submitted)

    done = run("grade", ASSIGNMENT, "--submissions", str(submitted), "--out", str(tmp_path / "out"),
               "--workers", "2", "--timeout", "60", cwd=root)

    assert done.returncode == 0, done.stderr[-3000:]
    assert snapshot(submitted) == before
    rows = grades(tmp_path / "out")
    assert sorted(rows) == ["ada", "bob", "cy", "dee", "notes.txt"], "carol did not hand in ps1"
    assert rows["ada"]["submitted_at"] == "2027-01-15T22:00:00+00:00"
    assert float(rows["ada"]["late_by"]) == float(rows["ada"]["penalty"]) == 0
    assert rows["bob"]["submitted_at"] == "2027-01-17T09:30:00+00:00" and float(rows["bob"]["late_by"]) == 124260.0
    assert float(rows["bob"]["score"]) == pytest.approx(0.8 * float(rows["bob"]["raw_score"]))
    assert float(rows["ada"]["score"]) == float(rows["ada"]["raw_score"]) > 0
    assert rows["cy"]["submitted_at"] == "" and float(rows["cy"]["score"]) > 0
    assert "cy/ps1/timestamp.txt: 'whenever' is not a time nbgrader writes" in done.stderr
    assert "'whenever' is not a time nbgrader writes" in rows["cy"]["reason"], "the row says why it has no time"
    assert rows["cy"]["status"] == "graded" and rows["ada"]["reason"] == ""
    assert rows["dee"]["status"] == "invalid" and "not a valid notebook" in rows["dee"]["reason"]
    assert rows["notes.txt"]["status"] == "invalid" and "not a student's folder" in rows["notes.txt"]["reason"]
