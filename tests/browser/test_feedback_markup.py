"""A feedback page made from a submission full of active markup (tests/test_feedback_markup.py's, through
nbgrader's autograde and generate_feedback with the course's configuration) is opened in Chromium:
none of the student's handlers, scripts or javascript: links runs, while the same markup put live
on a page in the same browser does (so the check can see a run)."""

from __future__ import annotations

import re

import pytest

from tests.test_feedback_markup import HOSTILE_OUTPUTS, make_page

pytestmark = pytest.mark.browser

RAN = "() => [document.title, window.ran || []]"


def _offline(page) -> None:
    """The page asks a CDN for MathJax; nothing outside is reached (the machine has no network anyway)."""
    page.route(re.compile(r"^https?://"), lambda route: route.abort())


def test_nothing_a_student_put_in_a_feedback_page_runs_when_it_is_opened(tmp_path, page):
    _offline(page)
    # the control: the same markup, live, runs in this browser
    page.set_content("<title>control</title>" + "".join(HOSTILE_OUTPUTS))
    page.wait_for_function("() => (window.ran || []).length >= 2")
    assert sorted(page.evaluate(RAN)[1]) == ["html-output", "script-output"]

    feedback = make_page(tmp_path)
    page.goto(feedback.as_uri())
    page.wait_for_load_state("load")   # every image has loaded or failed: an onerror would have run
    for target in ("#hover", "#written-link", "#link-output"):
        page.locator(target).first.hover()
        page.locator(target).first.click()
    page.wait_for_timeout(500)
    title, ran = page.evaluate(RAN)
    assert ran == [] and not title.startswith("ran-"), (title, ran)
    assert page.url == feedback.as_uri(), "no link took the page anywhere"
    # what the student reads is there: the table, the plot, the text
    assert page.locator("th", has_text="profile").count() == 1
    assert page.locator('img[src^="data:image/png"]').count() == 1
    assert page.get_by_text("plain text printed by the student").count() == 1
