"""Feedback pages carry no live student markup (autograder.nbgrader_setup.sanitize).

A tiny submission whose outputs and written answer hold active markup goes through nbgrader's own
autograde and generate_feedback with the course's configuration, as `autograder grade` runs them; the
course directory's nbgrader_config.py (an instructor's layer) only leaves the outputs as submitted
and runs no kernel, so the test takes seconds. Its attempt to turn the sanitising off is overridden.
Its written answer waits for a hand grade, which the page says instead of showing 0 points.
`make_page` is shared with the browser test (tests/browser/test_feedback_markup.py), which opens the
page in Chromium and finds that nothing ran.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbformat import v4

from autograder.nbgrader_setup.workspace import Workspace
from tests import notebooks

ASSIGNMENT = "ps_markup"
NAME = "markup.ipynb"
STUDENT = "eve"
# A 1x1 PNG: what a plot's output is made of.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
# Each would record that it ran: in document.title and in window.ran.
RAN = "document.title='ran-{0}';window.ran=(window.ran||[]).concat('{0}')"
HOSTILE_OUTPUTS = [
    f'<img src=x onerror="{RAN.format("html-output")}">',
    f"<script>{RAN.format('script-output')}</script>",
    f'<a href="javascript:{RAN.format("link-output")}" id="link-output">click</a>',
]
WRITTEN = ("Trade-off:\n\n| profile | seconds |\n| --- | --- |\n| grade | 12 |\n\n"
           "The answer holds when $a<b$ and **fast** is *true*.\n\n"
           f'<img src=x onerror="{RAN.format("written")}">\n\n'
           f'<a href="javascript:{RAN.format("written-link")}" id="written-link">raw link</a> and '
           f'[markdown link](javascript:{RAN.format("md-link")})\n\n'
           f'<div onmouseover="{RAN.format("mouseover")}" id="hover">hover here</div>')

CONFIG = '''from autograder.nbgrader_setup.config import configure
from nbgrader.converters import Autograde
from nbgrader.preprocessors import ClearOutput, Execute
from autograder.nbgrader_setup.preprocessors import InjectProfile

c = get_config()
configure(c)
# the test's own layer: keep the submitted outputs, run no kernel
c.Autograde.sanitize_preprocessors = [step for step in Autograde.class_traits()["sanitize_preprocessors"].make_dynamic_default()
                                      if step is not ClearOutput]
c.Autograde.autograde_preprocessors = [step for step in c.Autograde.autograde_preprocessors
                                       if step not in (Execute, InjectProfile)]
# an instructor's attempt to turn the sanitising off does not reach autograder's pages
c.HTMLExporter.sanitize_html = False
'''


def source() -> nbformat.NotebookNode:
    written = v4.new_markdown_cell("YOUR ANSWER HERE", id="why")
    written.metadata.update(notebooks._meta("why", grade=True, solution=True, locked=False, points=2))
    return notebooks.notebook([
        v4.new_markdown_cell("# Markup", id="header"),
        notebooks.solution("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", "f"),
        notebooks.test_cell("assert f() == 1", "test_f", points=1),
        written,
    ])


def submission(released: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == "f":
            cell.source = "from IPython.display import HTML, display\ndef f():\n    return 1\n"
            cell.outputs = [v4.new_output("display_data", {"text/html": html, "text/plain": "<HTML>"})
                            for html in HOSTILE_OUTPUTS]
            cell.outputs.append(v4.new_output("display_data", {"application/javascript": RAN.format("js-output")}))
            cell.outputs.append(v4.new_output("display_data", {"image/png": PNG, "text/plain": "<Figure>"}))
            cell.outputs.append(v4.new_output("stream", name="stdout", text="plain text printed by the student\n"))
        elif grade_id == "why":
            cell.source = WRITTEN
    return nb


def make_page(base: Path) -> Path:
    """The feedback page nbgrader writes for the hostile submission, with the course's configuration."""
    course = base / "course"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    nbformat.write(source(), course / "source" / ASSIGNMENT / NAME)
    workspace = Workspace(base / "ws", ASSIGNMENT)
    workspace.create(course / "source" / ASSIGNMENT, course)
    released = nbformat.read(workspace.release_dir() / NAME, as_version=4)
    submitted = workspace.submitted_dir(STUDENT)
    submitted.mkdir(parents=True)
    nbformat.write(submission(released), submitted / NAME)
    workspace.autograde(STUDENT)
    workspace.generate_feedback(STUDENT)
    return workspace.feedback_dir(STUDENT) / f"{Path(NAME).stem}.html"


def test_a_feedback_page_keeps_no_active_student_markup_and_keeps_what_a_student_reads(tmp_path):
    page = make_page(tmp_path).read_text(encoding="utf-8")
    body = page[page.index("<body"):]
    assert "ran-" in body, "the student's markup is still on the page, as text"
    assert not re.search(r"<img[^>]*onerror", body, re.I) and not re.search(r"<div[^>]*onmouseover", body, re.I)
    assert "<script>document.title" not in body and not re.search(r"<script[^>]*>[^<]*ran-", body)
    assert not re.search(r"href=[\"']?\s*javascript:", body, re.I)
    assert len(re.findall(r'<img [^>]*src="x"', body)) == 2, "an allowed tag stays, without its handler"
    assert re.search(r'<a id="written-link">raw link</a>', body) and '<a id="link-output">click</a>' in body
    assert "&lt;script&gt;" in body, "a <script> output shows as text"
    # what a student needs to read stays
    assert f'src="data:image/png;base64,{PNG}"' in body, "the plot"
    assert re.search(r"<table>\s*<thead>\s*<tr>\s*<th>profile</th>", body), "the markdown table"
    assert "<strong>fast</strong>" in body and "<em>true</em>" in body and "Trade-off:" in body
    assert "$a&lt;b$" in body, "the math, as text for MathJax"
    assert "plain text printed by the student" in body
    assert "hover here" in body
    # the written answer waits for its hand grade: the page says so instead of 0 points (MarkWaitingAnswers)
    assert "<strong>Waits for a hand grade</strong> (2 points)" in body and "Score: 0.0 / 2.0" not in page
    assert "<h4>markup, without the 2 points graded by hand (Score: 1.0 / 3.0)</h4>" in body
    # ...and so does the list of scores at the top (nbgrader's own template leaves the answer out)
    toc = body[body.index('<div id="toc">'):body.index("</ol>")]
    assert "<li>Written response (waits for a hand grade: 2 points)</li>" in toc, toc
    assert body.count('<div id="toc">') == 1 and body.count("plain text printed by the student") == 1, "the page once"


def test_the_allowlist_escapes_active_markup_and_keeps_images_and_tables():
    from autograder.nbgrader_setup.sanitize import clean_html

    assert clean_html('<a href="data:text/html,<script>x</script>">d</a>') == "<a>d</a>"
    assert clean_html('<a href="da\tta:text/html,x">d</a>') == "<a>d</a>", "normalised as browsers read URLs"
    assert clean_html(f'<img src="data:image/png;base64,{PNG}">') == f'<img src="data:image/png;base64,{PNG}">'
    assert clean_html('<img src="data:text/html,x">') == "<img>"
    assert clean_html("<svg onload=alert(1)><circle/></svg>").startswith("&lt;svg")
    assert clean_html("<style>body{display:none}</style>").startswith("&lt;style&gt;")
    assert clean_html('<p style="color: red; background: url(https://x)">1</p>') == '<p style="color: red;">1</p>'
    assert clean_html('<iframe src="https://x"></iframe>').startswith("&lt;iframe")
    table = "<table><thead><tr><th colspan=\"2\">h</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
    assert clean_html(table) == table


def test_every_html_exporter_of_the_course_configuration_sanitises(tmp_path):
    """The formgrader builds `HTMLExporter(config=...)` from the course's configuration, as feedback does;
    a course configuration that turns sanitize_html off does not reach autograder's grading."""
    from nbconvert.exporters import HTMLExporter
    from traitlets.config import Config

    from autograder.nbgrader_setup import config as course_config
    from autograder.nbgrader_setup.sanitize import SanitizedMarkdown, clean_html
    from autograder.settings import GradingSettings

    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.HTMLExporter.sanitize_html = False\n"
                                                 "c.HTMLExporter.filters = {'shout': 'textwrap.dedent'}\n", encoding="utf-8")
    for config in (course_config.configure(Config()), course_config.grading_config(tmp_path, GradingSettings())):
        exporter = HTMLExporter(config=config)
        assert exporter.sanitize_html
        filters = exporter.environment.filters
        assert filters["clean_html"] is clean_html and isinstance(filters["markdown2html"], SanitizedMarkdown)
    assert "shout" in exporter.environment.filters, "the course's own filters stay"
