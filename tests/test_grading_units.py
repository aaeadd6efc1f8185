"""Fast unit tests of the grader's pure parts (no kernel, no nbgrader run): the tamper scan, the output
cap, the feedback's hidden-test removal and its note on answers that wait for a hand grade, the feedback
pages that keep their words where they cannot be made again with the hand grades. The end-to-end runs
(hostile class, nbgrader fixtures) test the same parts through the pipeline."""

from __future__ import annotations

import os

import nbformat
import pytest

from autograder.grading import tamper
from autograder.nbgrader_setup.preprocessors import HideHiddenTests, LimitOutputSize


@pytest.mark.parametrize("code, found", [
    ("import numpy as np\nnp.allclose = lambda *a, **k: True", "assigns to np.allclose"),
    ("import builtins\nbuiltins.isinstance = lambda *args: True", "assigns to builtins.isinstance"),
    ("import sys\nsys.modules['numpy'] = None", "assigns to sys.modules['numpy']"),
    ("from course import grading\ngrading.Checks.score = lambda self: 3", "assigns to grading.Checks.score"),
    ("import numpy\nsetattr(numpy, 'allclose', print)", "setattr() on numpy"),
    ("import os\ndel os.environ", "assigns to os.environ"),
    ("open('../../gradebook.db').read()", "touches course files"),
    ("path = 'x/site-packages/autograder/grading/pipeline.py'", "touches course files"),
])
def test_scan_code_flags_what_reaches_outside_the_exercise(code, found):
    problems = tamper.scan_code(code)
    assert any(found in problem for problem in problems), problems


@pytest.mark.parametrize("code", [
    "import numpy as np\nvalues = np.zeros(3)\nvalues[0] = 1",      # a local array, not the module
    "class Box:\n    pass\nbox = Box()\nbox.size = 3",               # an object of the student's own
    "def f(:\n    pass",                                              # a syntax error fails when it runs
    "%matplotlib inline\nresult = 1",                                  # magics are skipped, not parsed
])
def test_scan_code_leaves_ordinary_code_alone(code):
    assert tamper.scan_code(code) == []


def test_scan_code_knows_modules_imported_in_earlier_cells():
    assert tamper.scan_code("np.allclose = None") == []
    assert tamper.scan_code("np.allclose = None", imported={"np"}) == ["line 1: assigns to np.allclose"]


def _code_cell(outputs, **nbgrader):
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.from_dict(output) for output in outputs]
    if nbgrader:
        cell.metadata["nbgrader"] = {"grade_id": "t", "schema_version": 3, **nbgrader}
    return cell


def test_limit_output_size_cuts_each_output_and_keeps_a_score():
    cap = LimitOutputSize(max_characters=10, max_rich_bytes=20)
    cell = _code_cell([
        {"output_type": "stream", "name": "stdout", "text": "x" * 25},
        {"output_type": "display_data", "data": {"image/png": "A" * 30}, "metadata": {}},
        {"output_type": "execute_result", "data": {"text/plain": "2.4"}, "metadata": {}, "execution_count": 1},
        {"output_type": "error", "ename": "E", "evalue": "y" * 12, "traceback": ["t"] * 150},
    ])
    cell, _ = cap.preprocess_cell(cell, {}, 0)
    stream, image, score, error = cell.outputs
    assert stream["text"].startswith("x" * 10) and "15 more characters" in stream["text"]
    assert "image/png" not in image["data"] and "30 characters removed" in image["data"]["text/plain"]
    assert score["data"]["text/plain"] == "2.4", "a partial-credit score passes untouched"
    assert len(error["traceback"]) == 100 and "2 more characters" in error["evalue"]


def test_hide_hidden_tests_cuts_test_cells_only_and_shortens_their_tracebacks():
    hidden = "assert visible\n### BEGIN HIDDEN TESTS\nassert secret == 42\n### END HIDDEN TESTS\nchecks.score()"
    test = _code_cell([{"output_type": "error", "ename": "AssertionError", "evalue": "expected 3, got 2",
                        "traceback": ["File cell, line 3", "assert secret == 42", "AssertionError: ..."]}],
                      grade=True, solution=False, points=3)
    test.source = hidden
    own = _code_cell([], grade=False, solution=True)
    own.source = hidden  # a student's own cell with the markers is theirs
    hide = HideHiddenTests()
    test, _ = hide.preprocess_cell(test, {}, 0)
    own, _ = hide.preprocess_cell(own, {}, 1)
    assert "secret" not in test.source and "checks.score()" in test.source
    assert test.outputs[0]["traceback"] == ["AssertionError: expected 3, got 2"]
    assert own.source == hidden


def test_mark_waiting_answers_says_an_answer_waits_instead_of_showing_0_points():
    """The feedback step after GetGrades (fast: the gradebook's answer given as a dict): a written answer
    without its hand grade loses its points line and gets a note; the page's heading says the total is
    not final. A graded answer, a test cell and a page with nothing waiting stay as they were."""
    from autograder.nbgrader_setup.preprocessors.mark_waiting_answers import mark_waiting

    def answer(grade_id: str, score):
        cell = nbformat.v4.new_markdown_cell(f"my answer to {grade_id}")
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "grade": True, "solution": True, "points": 2.0,
                                     "score": score, "schema_version": 3}
        return cell

    test = _code_cell([], grade=True, solution=False, points=3, score=0.0)
    nb = nbformat.v4.new_notebook(cells=[answer("why", 0.0), answer("how", 1.5), test])
    resources = {"nbgrader": {"notebook": "ps1", "score": 4.5, "max_score": 7.0}}
    nb, resources = mark_waiting(nb, resources, {"why": 2.0, "t": 3.0})
    note, why, how, test_after = nb.cells
    assert note.cell_type == "markdown" and note.source.startswith("**Waits for a hand grade** (2 points)")
    assert why.metadata.nbgrader["grade"] is False and why.source == "my answer to why"
    assert how.metadata.nbgrader["grade"] is True, "graded by hand: its score stands"
    assert test_after.metadata.nbgrader["grade"] is True, "a test cell is never an answer to grade by hand"
    assert resources["nbgrader"]["notebook"] == "ps1, without the 2 points graded by hand"
    assert resources["nbgrader"]["score"] == 4.5
    assert why.metadata["waits_for_hand_grade"] == {"kind": "Written response", "points": "2 points"}
    assert "waits_for_hand_grade" not in how.metadata and "waits_for_hand_grade" not in test_after.metadata
    untouched = nbformat.v4.new_notebook(cells=[answer("why", 2.0)])
    # a student's own cell metadata cannot say an answer waits: only this step does
    untouched.cells[0].metadata["waits_for_hand_grade"] = {"kind": "Written response", "points": "50 points"}
    _, same = mark_waiting(untouched, {"nbgrader": {"notebook": "ps1"}}, {})
    assert len(untouched.cells) == 1 and same["nbgrader"]["notebook"] == "ps1"
    assert "waits_for_hand_grade" not in untouched.cells[0].metadata


def test_the_status_is_decided_in_one_place_from_the_run_and_the_tamper_findings():
    """autograder.grading.status.decide (fast: no kernel): each run outcome gives its status and whether the
    row keeps nbgrader's points; a tamper finding wins over all of them and keeps the run's reason."""
    from autograder.grading import tamper
    from autograder.execution.jobs import Outcome
    from autograder.execution.protocol import WorkerResult
    from autograder.grading.status import Status, decide

    clean, flagged = tamper.Findings(notes=["n"]), tamper.Findings(flags=["line 2: assigns builtins.isinstance"])
    cases = [
        (Outcome(3.0, result=WorkerResult(score=2, max_score=3)), Status.GRADED, "", True),
        (Outcome(30.0, timed_out=True), Status.TIMEOUT, "the notebook ran longer than 25 s", False),
        (Outcome(9.0, memory_exceeded=True), Status.ERROR, "memory limit exceeded: more than 1.5 GB", False),
        (Outcome(4.0, tasks_exceeded=True), Status.ERROR, "process limit exceeded: more than 64 processes", False),
        (Outcome(1.0, crash="Killed"), Status.ERROR, "grading crashed: Killed", False),
        (Outcome(2.0, result=WorkerResult(nbgrader_failure="cell 3: SyntaxError")), Status.ERROR,
         "cell 3: SyntaxError", False),
        (Outcome(2.0, result=WorkerResult(timed_out_cell="abc")), Status.TIMEOUT, "cell abc ran past the time limit", False),
        # nothing the worker met is swallowed: a gradebook failure fails the row, a feedback failure is its reason
        (Outcome(2.0, result=WorkerResult(gradebook_failure="the gradebook failed: OperationalError: gone")),
         Status.ERROR, "the gradebook failed: OperationalError: gone", False),
        (Outcome(2.0, result=WorkerResult(score=3, max_score=3, feedback_failure="TemplateNotFound: index.html.j2")),
         Status.GRADED, "no feedback page: TemplateNotFound: index.html.j2", True),
    ]
    for outcome, status, reason, keeps in cases:
        decision = decide(outcome, clean, 25, 1.5, 64)
        assert (decision.status, decision.keeps_points) == (status, keeps) and decision.reason.startswith(reason), decision
        tampered = decide(outcome, flagged, 25, 1.5, 64)
        assert tampered.status == Status.FLAGGED and tampered.keeps_points == keeps, tampered
        expected = "line 2: assigns builtins.isinstance" + ("" if keeps else f"; then {status}: {decision.reason}")
        assert tampered.reason == expected, tampered


def test_grading_report_escapes_every_value_and_shows_each_row(tmp_path):
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row

    rows = [Row("<b>mallory</b>", "00", score=1.5, max_score=3, status="flagged",
                reason="line 1: assigns builtins.len & <script>", cells={"test_a": 1.5}),
            Row("alice", "00", score=3, max_score=3, cells={"test_a": 3.0})]
    page = report.write_html(ClassResult("00", rows, ["test_a"], 3.0, tmp_path)).read_text(encoding="utf-8")
    assert "<b>mallory" not in page and "&lt;b&gt;mallory&lt;/b&gt;" in page
    assert "&amp; &lt;script&gt;" in page and "<script>" not in page
    assert "<td>1.5 / 3</td>" in page and "<td>test_a</td><td>100%</td>" in page
    assert page.startswith("<!doctype html>") and "border-collapse" in page


def test_the_pass_rate_of_a_written_answer_counts_only_the_graded_and_says_how_many_wait(tmp_path):
    """A written answer waiting for its hand grade has 0 in the gradebook, which is no grade: the report's
    pass-rate table counts the rows that graded the cell and says how many wait."""
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row
    from autograder.runfolder import Status

    waiting = dict(status=Status.NEEDS_MANUAL_GRADE, answers_to_grade={"why": "because"})
    # as the pipeline writes them: a waiting answer has no score among the row's cells
    rows = [Row("101", "00", score=1, max_score=4, cells={"test_a": 1.0}, **waiting),
            Row("102", "00", score=1, max_score=4, cells={"test_a": 0.0}, **waiting),
            Row("103", "00", score=3, max_score=4, cells={"test_a": 1.0, "why": 2.0})]
    rates = report.pass_rates(ClassResult("00", rows, ["test_a", "why"], 4.0, tmp_path))
    assert {cell: str(rate) for cell, rate in rates.items()} == {"test_a": "67%", "why": "100% (2 wait for a hand grade)"}
    page = report.write_html(ClassResult("00", rows[:2], ["test_a", "why"], 4.0, tmp_path)).read_text(encoding="utf-8")
    assert "<td>why</td><td>2 wait for a hand grade</td>" in page and "<td>test_a</td><td>50%</td>" in page


def test_the_report_shows_names_and_renders_written_answers_without_running_them(tmp_path):
    """report.html: the students' names beside their ids; a written answer rendered as the student wrote it
    to be read (markdown, math drawn), its active markup dropped or shown as text."""
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row
    from autograder.runfolder import Status

    answer = ("The step takes **bold** time $t$ when $a<b$.\n\n<img src=x onerror=alert(1)>\n\n"
              "<script>alert(2)</script> [link](javascript:alert(3))")
    rows = [Row("101", "00", name="Lovelace, Ada", score=1, max_score=3, status=Status.NEEDS_MANUAL_GRADE,
                cells={"test_a": 1.0}, answers_to_grade={"why": answer}),
            Row("102", "00", score=1, max_score=3, cells={"test_a": 1.0})]
    page = report.write_html(ClassResult("00", rows, ["test_a"], 3.0, tmp_path)).read_text(encoding="utf-8")
    assert "<td>101</td><td>Lovelace, Ada</td>" in page and "<td>102</td><td></td>" in page
    assert "<td>101</td><td>Lovelace, Ada</td><td>why</td>" in page, "the written answers' table names them too"
    assert "<th>group</th>" not in page, "no group column without a group"
    assert "<strong>bold</strong>" in page and 'alt="$t$"' in page and 'alt="$a&lt;b$"' in page
    assert '<img src="x">' in page and "onerror" not in page
    assert "<script>" not in page and "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert 'href="javascript' not in page


def _images(page: str) -> list[tuple[str, str]]:
    """Each <img> of a page: its src's kind (up to the comma of a data URL) and its alt."""
    import re

    return [(found[1].partition(",")[0], found[2]) for found in re.finditer(r'<img src="([^"]*)"(?: alt="([^"]*)")?', page)]


def test_a_written_answers_math_is_drawn_as_images_and_nothing_of_it_runs():
    """Math in a written answer (recognised as nbconvert does) becomes an SVG image drawn by mathtext,
    its TeX only in the escaped alt text; markdown never sees it (`_` and `*` stay TeX); an escaped
    dollar is a dollar; a span mathtext cannot parse is its source as code; the student's own markup
    beside math is sanitised as without it."""
    import base64
    import re

    from autograder.grading import report

    svg = "data:image/svg+xml;base64"
    page = report.written_html(r"**bold** and $\alpha_1 + x^2$ and $a*b*c$")
    assert "<strong>bold</strong>" in page and "<em>" not in page
    assert _images(page) == [(svg, r"$\alpha_1 + x^2$"), (svg, "$a*b*c$")]
    drawn = base64.b64decode(re.search(r'base64,([^"]*)"', page)[1]).decode()
    assert drawn.lstrip().startswith("<?xml") and "<svg" in drawn and "<script" not in drawn

    display = report.written_html("The sum:\n\n$$\\sum_i\n x_i$$\n\nand \\\\[x_{1}\\\\] too")
    assert _images(display) == [(svg, "$$\\sum_i\n x_i$$"), (svg, r"\\[x_{1}\\]")]
    assert display.count("display: block") == 2

    assert report.written_html(r"It costs \$5, or \$6 with tax.") == "<p>It costs $5, or $6 with tax.</p>\n"
    assert report.written_html("`$x$` in code\n\n```\n$$y$$\n```\n") == \
        "<p><code>$x$</code> in code</p>\n<pre><code>$$y$$\n</code></pre>\n"

    rejected = report.written_html(r"Then $\frac{1}{<b>$ and $\nosuchcommand$ follow $x$.")
    assert r"<code>$\frac{1}{&lt;b&gt;$</code>" in rejected and r"<code>$\nosuchcommand$</code>" in rejected
    assert _images(rejected) == [(svg, "$x$")]

    hostile = report.written_html('<img src=x onerror=alert(1)> $x$ <script>alert(2)</script> '
                                  '[$y$](javascript:alert(3)) <a title="a>$z$">t</a>')
    assert "onerror" not in hostile and "<script" not in hostile and "javascript:" not in hostile
    assert _images(hostile) == [("x", None), (svg, "$x$"), (svg, "$y$")]
    assert '<a title="a>$z$">t</a>' in hostile, "math in an attribute (after a > there) stays as typed"


def test_writing_a_report_without_math_loads_no_plotting_library():
    import subprocess
    import sys

    code = ("import sys; from autograder.grading import report; report.written_html('**x** costs \\\\$5'); "
            "assert not [name for name in sys.modules if name.startswith('matplotlib')], 'loaded'; "
            "report.written_html('$x$'); assert 'matplotlib.mathtext' in sys.modules; "
            "assert 'matplotlib.pyplot' not in sys.modules")
    environment = {key: value for key, value in __import__("os").environ.items() if key != "MPLBACKEND"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment)
    assert done.returncode == 0, done.stderr



def test_a_matplotlib_that_cannot_load_leaves_the_math_as_typed():
    """An unusable matplotlib setting (here MPLBACKEND) shows the span as code: the report still writes."""
    import subprocess
    import sys

    code = "from autograder.grading import report; print(report.written_html('x $a^2$'))"
    environment = dict(__import__("os").environ, MPLBACKEND="nonsense")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment)
    assert done.returncode == 0 and "<code>$a^2$</code>" in done.stdout, done.stderr

def test_the_summary_and_the_report_name_the_students_and_show_their_groups(tmp_path):
    """The terminal summary names each student beside the id (a name column only when a name is known);
    report.html's submissions table has a group column when a row has a group."""
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row

    rows = [Row("1001", "00", name="Jane Doe", group="Team <Red>", score=2, max_score=3),
            Row("1003", "00", score=1, max_score=3)]
    result = ClassResult("00", rows, [], 3.0, tmp_path)
    lines = report.summary_lines(result)
    assert lines[0].split()[:3] == ["student", "name", "status"]
    assert lines[1].startswith(f"{'1001':<24} {'Jane Doe':<24} graded") and lines[2].startswith(f"{'1003':<48}  graded")
    assert report.summary_lines(ClassResult("00", rows[1:], [], 3.0, tmp_path))[0].split()[:2] == ["student", "status"]
    page = report.write_html(result).read_text(encoding="utf-8")
    assert "<th>name</th><th>group</th><th>status</th>" in page
    assert "<td>1001</td><td>Jane Doe</td><td>Team &lt;Red&gt;</td><td>graded</td>" in page
    assert "<td>1003</td><td></td><td></td><td>graded</td>" in page



def test_a_groups_written_answer_is_listed_once_with_every_member(tmp_path):
    """A group's answer is graded once (a hand grade for any member reaches the group's row): the report
    and the summary list it once, with the members and their names, an individual's answer on its own."""
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row

    rows = [Row(student, "ps1", notebook="ps1.ipynb", name=name, group=group, score=4, max_score=6,
                answers_to_grade={"why": "Because **2**." if group else "Twice."})
            for student, name, group in (("ann", "Ann Lee", "Team A"), ("bob", "", ""), ("dan", "Dan Ko", "Team A"))]
    result = ClassResult("ps1", rows, [], 6.0, tmp_path)
    found = report.written_answers(result)
    assert [(one.students, one.names, one.group) for one in found] == [
        (("ann", "dan"), ("Ann Lee", "Dan Ko"), "Team A"), (("bob",), ("",), "")]
    assert "; 2 written answers to grade by hand" in report.summary_lines(result)[-1]
    page = report.write_html(result).read_text(encoding="utf-8")
    assert "<td>ann, dan</td><td>Ann Lee, Dan Ko</td><td>Team A</td><td>why</td>" in page
    assert page.count("<strong>2</strong>") == 1, "the group's answer once"

def test_inject_profile_puts_the_profile_after_the_parameters_cell_and_drops_a_students_own(tmp_path):
    """Fast: the preprocessor alone on a notebook whose student tagged a cell `injected-parameters`
    before the parameters cell (papermill alone would replace that cell in place)."""
    import nbformat

    from autograder.nbgrader_setup.preprocessors import InjectProfile
    from autograder.settings import GradingSettings
    from course import syllabus

    assignment_id = "00_gpu_setup"
    profile = syllabus.get(assignment_id).parameters("grade")
    trap = nbformat.v4.new_code_cell("REPEATS = 10**9")
    trap.metadata["tags"] = ["injected-parameters"]
    parameters = nbformat.v4.new_code_cell("REPEATS = 10**9\nMATMUL_SIZE = 10**5")
    parameters.metadata["tags"] = ["parameters"]
    notebook = nbformat.v4.new_notebook(cells=[trap, nbformat.v4.new_markdown_cell("text"), parameters,
                                               nbformat.v4.new_code_cell("print(REPEATS)")])
    notebook.metadata["kernelspec"] = {"name": "tf-course", "language": "python", "display_name": "x"}
    settings = GradingSettings(profile="grade").as_config()
    done, _ = InjectProfile(config=settings).preprocess(notebook, {"nbgrader": {"assignment": assignment_id}})
    tags = [cell.metadata.get("tags", []) for cell in done.cells]
    assert tags == [[], ["parameters"], ["injected-parameters"], []], tags
    injected = done.cells[2].source
    assert "profile: grade" in injected
    namespace: dict = {}
    exec(done.cells[1].source + "\n" + injected, namespace)
    assert {name: namespace[name] for name in profile} == profile


def test_the_cache_key_changes_with_the_submission_the_source_and_the_settings(tmp_path):
    """A row is reused only for the same submission bytes, source and settings (fast: no grading)."""
    from autograder.grading import intake
    from autograder.grading.cache import Cache
    from autograder.grading.results import Row

    def submission(data: bytes) -> intake.Submission:
        return intake.Submission("ann", "ann", notebook_bytes=data)

    cache = Cache(tmp_path / "rows", "source", ["grade", 600])
    first = submission(b"one")
    cache.put(first, Row("ann", "00", score=3.0))
    assert cache.get(submission(b"one")).score == 3.0
    assert cache.get(submission(b"two")) is None, "another submission"
    assert Cache(tmp_path / "rows", "source v2", ["grade", 600]).get(first) is None, "another source"
    assert Cache(tmp_path / "rows", "source", ["ci", 600]).get(first) is None, "other settings"


def test_the_report_draws_the_score_histogram_itself(tmp_path):
    """One bar per point, a student's total over the notebooks in the bin of its whole points, the full
    score in the last bin; drawn as SVG in the page (no plotting library), its texts escaped."""
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row

    rows = [Row("ann", "<ps1>", notebook="a.ipynb", score=1.5, max_score=2), Row("ann", "<ps1>", notebook="b.ipynb",
            score=2, max_score=2), Row("bob", "<ps1>", notebook="a.ipynb", score=0, max_score=2),
            Row("cy", "<ps1>", notebook="a.ipynb", score=4, max_score=2)]
    result = ClassResult("<ps1>", rows, [], 4.0, tmp_path, notebooks={"a.ipynb": 2.0, "b.ipynb": 2.0})
    drawn = report.histogram(result)
    assert drawn.counts == [1, 0, 0, 1, 1] and drawn.y_ticks == [0, 1]
    assert drawn.x_label == "score (points, out of 4)"
    page = report.write_html(result).read_text(encoding="utf-8")
    assert page.count("<rect") == 5 and "&lt;ps1&gt;: scores of 3 students" in page and "<ps1>" not in page


def test_a_cluster_is_given_up_on_after_the_bound_without_a_worker():
    """autograder.execution.executors.WorkerlessWatch (fast: no cluster): the time without a worker
    counts from the first count of none, and a worker seen starts it again."""
    from autograder.execution.executors import WorkerlessWatch

    watch = WorkerlessWatch(bound=120)
    assert watch.saw(2, now=0) is None
    assert watch.saw(0, now=10) is None          # the workers are gone from here
    assert watch.saw(0, now=129) is None         # 119 s without one
    assert watch.saw(1, now=131) is None         # one joined: it starts again
    assert watch.saw(0, now=140) is None
    assert watch.saw(0, now=259) is None
    assert watch.saw(0, now=260) == 120


def test_a_row_the_grader_never_ran_is_not_cached_and_a_stopped_cluster_still_gives_every_row(tmp_path):
    """autograder.grading.pipeline.execute and cache.Cache (fast: a stand-in executor, no Dask, no kernel):
    the rows that ran (graded, error) are kept for the next run; a job the cluster could not run (lost,
    or given up on before it ran) gets an error row that says why, which is not kept, so a plain re-run
    grades exactly those; the ClusterError comes back beside the rows, for grade_class to raise once
    grades.csv is written."""
    from autograder.execution import executors
    from autograder.execution.jobs import Job, Outcome
    from autograder.execution.protocol import WorkerResult
    from autograder.grading import intake, lateness, pipeline
    from autograder.grading.cache import Cache, safe_id
    from autograder.runfolder import RunFolder, Status
    from autograder.settings import GradingSettings

    name = "ps1.ipynb"
    students = [intake.Submission(student, f"{student}/{name}", f"{student}'s notebook".encode())
                for student in ("ada", "bo", "chen", "dora")]
    run = RunFolder(tmp_path / "out")
    cache = Cache(run.rows_of(name), "source", {"profile": "cpu"})
    notebook = pipeline._Notebook(tmp_path / name, {"t": 2.0}, students, cache)
    graded = pipeline._Class("ps1", tmp_path, run, {name: notebook}, lateness.Term(), [])
    plan = pipeline._Plan([], [], {}, {})
    for submission in students:
        plan.in_flight[safe_id(submission.student_id), name] = (submission, tamper.Findings())
        plan.batch.append(Job(safe_id(submission.student_id), submission.student_id, "ps1", name,
                              submission.notebook_bytes))
    stop = executors.ClusterError("the Dask scheduler at tcp://x:8786 has had no worker for 120 s")

    class StoppingExecutor:
        """ada graded, bo crashed, chen's task lost; then the cluster stops before dora's outcome."""
        def run_all(self, batch, workspaces):
            ada, bo, chen, _dora = batch
            yield ada, Outcome(1.0, result=WorkerResult(score=2.0, max_score=2.0, cells={"t": 2.0}))
            yield bo, Outcome(1.0, crash="Killed")
            yield chen, executors.not_run("KilledWorker: lost")
            raise stop

    rows, stopped = pipeline.execute(graded, plan, StoppingExecutor(), [], GradingSettings(), progress=lambda _: None)
    assert stopped is stop
    by_student = {row.student_id: row for row in rows}
    assert [(student, by_student[student].status, by_student[student].not_run) for student in sorted(by_student)] == [
        ("ada", Status.GRADED, False), ("bo", Status.ERROR, False), ("chen", Status.ERROR, True),
        ("dora", Status.ERROR, True)]
    assert "the cluster could not run it: KilledWorker: lost" in by_student["chen"].reason
    assert f"the cluster could not run it: {stop}" in by_student["dora"].reason
    # the next run: the rows that ran are reused, the two never run are graded (no row to reuse)
    again = Cache(run.rows_of(name), "source", {"profile": "cpu"})
    assert {submission.student_id: getattr(again.get(submission), "status", None) for submission in students} == {
        "ada": Status.GRADED, "bo": Status.ERROR, "chen": None, "dora": None}
    assert again.get(students[0]).reused and not again.get(students[0]).not_run
    # a never-run row does not replace the row kept for the same submission either
    again.put(students[0], by_student["dora"])
    assert again.get(students[0]).status == Status.GRADED


def test_a_feedback_page_is_kept_where_it_cannot_be_made_again_with_the_hand_grades(tmp_path, caplog):
    """No hand grade: not a word. A shared gradebook, a cluster, no page, no local autograded notebook:
    the page stays as it is and the log says why (nbgrader is not run for any of them). A page that
    cannot be made again stays as it is, with a warning."""
    import logging
    from dataclasses import replace

    from autograder.grading import feedback_pages
    from autograder.grading.cache import safe_id
    from autograder.grading.overrides import Override
    from autograder.grading.results import Row
    from autograder.nbgrader_setup.workspace import Workspace
    from autograder.runfolder import RunFolder
    from autograder.settings import GradingSettings

    run = RunFolder(tmp_path)
    made = run.feedback_page("ann", "ps1.ipynb")
    made.parent.mkdir()
    made.write_text("made when graded", encoding="utf-8")
    hand = [Override("ann", "written_why", 2.0, "names the factor", "TA Kim")]
    cells = {"written_why": "written_why"}
    cases = [(hand, made, GradingSettings(db_url="postgresql://grader@db/gradebook"), "shared gradebook"),
             (hand, made, GradingSettings(scheduler="tcp://head:8786"), "cluster"),
             (hand, None, GradingSettings(), "no page"),
             (hand, made, GradingSettings(), "no local workspace holds its autograded notebook"),
             ([replace(hand[0], student_id="bo")], made, GradingSettings(), None)]
    for by_hand, feedback, settings, why in cases:
        caplog.clear()
        row = Row("ann", "ps1", notebook="ps1.ipynb", feedback=feedback)
        with caplog.at_level(logging.DEBUG, logger=feedback_pages.__name__):
            feedback_pages.show_hand_grades(run, row, by_hand, cells, settings)
        said = [record.getMessage() for record in caplog.records]
        assert (said == []) if why is None else (len(said) == 1 and why in said[0]), (why, said)
        assert made.read_text(encoding="utf-8") == "made when graded"
    notebook = Workspace(run.workspace(0), "ps1").autograded_dir(safe_id("ann")) / "ps1.ipynb"
    notebook.parent.mkdir(parents=True)
    notebook.write_text("{}", encoding="utf-8")   # a workspace whose gradebook does not know the notebook
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=feedback_pages.__name__):
        feedback_pages.show_hand_grades(run, Row("ann", "ps1", notebook="ps1.ipynb", feedback=made), hand, cells,
                                        GradingSettings())
    kept = "the feedback page of ann is kept as it was made, without the hand grades (they are in grades.csv)"
    assert [(record.levelname, record.getMessage().split(":")[0]) for record in caplog.records] == [("WARNING", kept)]
    assert made.read_text(encoding="utf-8") == "made when graded"


def test_every_file_the_grading_workspace_is_made_from_changes_the_key_of_kept_rows(tmp_path):
    """A kept row is keyed on the hash the workspace is generated from (fast: no grading): the source
    notebook, a data file beside it, the course's nbgrader_config.py (its Execute.timeout, its filters),
    the autotests' templates and the header notebook it names all change it; a file elsewhere does not."""
    from autograder.grading.assignment import source_hash
    from autograder.settings import GradingSettings

    course = tmp_path / "course"
    source = course / "source" / "ps1"
    source.mkdir(parents=True)
    (source / "ps1.ipynb").write_text("{}", encoding="utf-8")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.IncludeHeaderFooter.header = 'header.ipynb'\n", encoding="utf-8")
    (course / "header.ipynb").write_text("{}", encoding="utf-8")
    (course / "autotests.yml").write_text("python: {}\n", encoding="utf-8")
    settings = GradingSettings()
    keys = [source_hash(source, course, settings)]
    for path, text in ((source / "ps1.ipynb", '{"cells": []}'), (source / "data.csv", "x\n1\n"),
                       (course / "nbgrader_config.py", (course / "nbgrader_config.py").read_text()
                        + "c.Execute.timeout = 61\n"),
                       (course / "autotests.yml", "python: {setup: 'import numpy'}\n"),
                       (course / "header.ipynb", '{"cells": []}')):
        path.write_text(text, encoding="utf-8")
        keys.append(source_hash(source, course, settings))
    assert len(set(keys)) == len(keys), "a change left the key as it was"
    (course / "notes.txt").write_text("not read by nbgrader", encoding="utf-8")
    (course / "source" / "ps2").mkdir()
    (course / "source" / "ps2" / "ps2.ipynb").write_text("{}", encoding="utf-8")
    assert source_hash(source, course, settings) == keys[-1], "a file grading does not read changed the key"


def test_the_settings_that_decide_a_grade_are_in_the_key_and_no_other():
    """Each trait tagged grade_key changes GradingSettings.key(); the others (where the class is read
    from, how many workers, the late-penalty files) do not."""
    from autograder.settings import GradingSettings

    base = GradingSettings().key()
    changed = {"profile": "ci", "timeout": 30.0, "cell_timeout": 7, "memory_limit": 2.0, "sandbox": "none",
               "disk_limit": 0.5, "task_limit": 64, "cpu_limit": 5.0}
    assert sorted(base) == sorted(changed)
    for name, value in changed.items():
        assert GradingSettings(**{name: value}).key() != base, name
    for name, value in {"workers": 3, "force": True, "term": "term.toml", "roster": "roster.csv"}.items():
        assert GradingSettings(**{name: value}).key() == base, name


def test_a_database_password_leaves_the_url_for_the_environment(monkeypatch):
    """The settings keep the URL without its password, which goes to PGPASSWORD (fast: no database);
    a password in a URL libpq does not read is refused."""
    from autograder.settings import GradingSettings

    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSWORD", "placeholder")  # so that monkeypatch removes what the settings set
    settings = GradingSettings(db_url="postgresql://grader:s%40cret@db:5433/gradebook?sslmode=require")
    assert settings.db_url == "postgresql+psycopg2://grader@db:5433/gradebook?sslmode=require"
    assert os.environ["PGPASSWORD"] == "s@cret"
    assert "s@cret" not in repr(settings.as_config()) and "cret" not in settings.db_url
    with pytest.raises(Exception, match="only PostgreSQL's"):
        GradingSettings(db_url="mysql://grader:secret@db/gradebook")


def test_every_grades_csv_column_is_written_and_read_back_from_the_one_record(tmp_path):
    """Each column of runfolder.GradesLine, given a value other than its default, goes through the writer
    (from a grading Row's attribute of the same name) and back through the reader unchanged (fast)."""
    import dataclasses

    from autograder.grading import grades_csv
    from autograder.grading.results import ClassResult, Row
    from autograder.runfolder import GRADES_COLUMNS, GradesLine, Status, read_grades

    samples = {"str": "x y", "bool": True, "float | None": 90.5, "float": 2.5, "Status": Status.TIMEOUT}
    given = {column.name: samples[str(column.type)] for column in dataclasses.fields(GradesLine)
             if column.name != "cells"}
    assert tuple(given) == GRADES_COLUMNS
    row = Row(**{**given, "overrides": ["a: 1 -> 0 by TA", "b: 2 -> 1 by TA"]}, cells={"test_a": 1.5})
    result = ClassResult("x y", [row], ["test_a", "test_b"], 4.0, tmp_path)
    read = read_grades(grades_csv.write_csv(result))
    assert read == [GradesLine(**{**given, "overrides": "a: 1 -> 0 by TA; b: 2 -> 1 by TA"},
                               cells={"test_a": 1.5, "test_b": None})]


def test_executors_are_found_by_entry_point_and_a_new_one_plugs_in(monkeypatch, tmp_path):
    """`local` and `dask` are registered under autograder.executors; a plug-in's name reaches its
    factory with the settings and the run folder; an unknown name is refused with the registered ones
    (fast: no worker starts)."""
    from importlib.metadata import EntryPoint, entry_points

    from autograder.execution import executors
    from autograder.runfolder import RunFolder
    from autograder.settings import GradingSettings

    registered = {point.name: point.value for point in entry_points(group=executors.ENTRY_POINTS)}
    assert registered == {"local": "autograder.execution.executors:local",
                          "dask": "autograder.execution.executors:dask"}
    made = []

    def slurm(settings, run):
        made.append((settings.executor, run.root))
        return "a slurm executor"

    monkeypatch.setattr(executors, "slurm", slurm, raising=False)
    plugin = EntryPoint("slurm", "autograder.execution.executors:slurm", executors.ENTRY_POINTS)
    monkeypatch.setattr(executors, "entry_points", lambda group: [plugin] if group == executors.ENTRY_POINTS else [])
    run = RunFolder(tmp_path)
    assert executors.open_executor(GradingSettings(executor="slurm"), run) == "a slurm executor"
    assert made == [("slurm", tmp_path)]
    with pytest.raises(executors.ExecutorError, match="no executor 'local': the registered ones are slurm"):
        executors.open_executor(GradingSettings(), run)
