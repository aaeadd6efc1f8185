"""An instructor in JupyterLab: nbgrader's formgrader, opened from the Nbgrader menu, lists the
assignments of the course directory (a throwaway copy of source/ and nbgrader_config.py)."""

from __future__ import annotations

import pytest

from tests.browser import lab_ui
from tests.browser.courses import LAYOUT, instructor_copy
from tests.browser.server import LabServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with LabServer(instructor_copy(tmp_path_factory.mktemp("instructor-course")),
                   tmp_path_factory.mktemp("instructor-jupyter")) as server:
        yield server


def test_formgrader_lists_every_source_assignment(lab, page):
    assignments = sorted(path.parent.name for path in LAYOUT.source.glob("*/*.ipynb"))
    assert assignments, "the repository has no source notebook"

    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    lab_ui.wait_visible(page, page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"), "the Nbgrader menu", 60)
    lab_ui.menu(page, "Nbgrader", "Formgrader")
    formgrader = page.frame_locator("iframe").first
    lab_ui.wait_visible(page, formgrader.get_by_text("Manage Assignments").first, "the formgrader's Manage Assignments")
    # the first list waits for the formgrader to create its gradebook and read source/: on a busy
    # machine that alone took more than 30 s
    for assignment_id in assignments:
        lab_ui.wait_visible(page, formgrader.locator("td", has_text=assignment_id),
                            f"assignment {assignment_id} in the formgrader's list", timeout=lab_ui.KERNEL_TIMEOUT)
