"""The pages the course writes besides a graded class's (whose report, feedback pages and executed
notebook tests/test_assignment_grading.py checks on one assignment): `make run`'s report, the test
results an LMS hands a student, and the documentation site, through axe-core in Chromium
(tests/browser/accessibility.py: no serious or critical violation, headings in order, focus visible)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from autograder.authoring import course_run
from autograder.grading.lateness import Term
from tests.browser.accessibility import pages
from tests.test_docs import DOCS, sphinx_build
from tests.test_feedback_zip import PAST, build, run_folder

pytestmark = pytest.mark.browser


def test_make_runs_report_and_the_lms_test_results_pass_axe(tmp_path):
    executed = tmp_path / "executed" / "ci"
    executed.mkdir(parents=True)
    lines = [course_run.Line("00_gpu_setup", "ok", 9.2, 8, 8, "17/19 (+2 by hand)", "0/19",
                             kernel_log=executed / "00_gpu_setup.kernel.log"),
             course_run.Line("01_session_vs_eager", "failed", 3.0, problems=["ValueError: broken on purpose"],
                             kernel_log=executed / "01_session_vs_eager.kernel.log")]
    for line in lines:
        line.kernel_log.write_text("log")
    report = course_run.write_report(lines, tmp_path / "report.html", "ci")
    _, archive = build(run_folder(tmp_path / "run", ["ps1.ipynb"]), Term(due={"ps1": PAST}))
    results = tmp_path / "bob-test-results.html"
    results.write_bytes(zipfile.ZipFile(archive.filename).read("bob/ps1-test-results.html"))
    with pages() as check:
        found = check(report) + check(results)
    assert not found, "\n".join(found)


def test_every_page_of_the_documentation_site_passes_axe(tmp_path):
    built = sphinx_build(DOCS, tmp_path / "html")
    assert built.returncode == 0, built.stderr
    site = sorted((tmp_path / "html").glob("*.html"))
    assert len(site) >= len(list(DOCS.glob("*.md")))
    with pages() as check:
        found = [line for page in site for line in check(page)]
    assert not found, "\n".join(found)
