"""Similar submissions (autograder.grading.similarity, copydetect): fast, no kernel runs. A class of
notebooks built here: two students share code of their own (one renamed every variable), two typed in
the reference solution, one wrote an unrelated answer, one left the release as it was."""

from __future__ import annotations

import logging

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.grading import similarity
from tests import notebooks

ROOT = Path(__file__).resolve().parent.parent
NAME = "ps.ipynb"

STARTER_ORDER = '''def topological_order(edges):
    """The nodes of a DAG given as (producer, consumer) pairs, every producer before its consumers."""
    # YOUR CODE HERE
    raise NotImplementedError()'''
REFERENCE_ORDER = '''def topological_order(edges):
    """The nodes of a DAG given as (producer, consumer) pairs, every producer before its consumers."""
    ### BEGIN SOLUTION
    nodes = sorted({node for edge in edges for node in edge})
    waiting = {node: sum(1 for _, consumer in edges if consumer == node) for node in nodes}
    ready = [node for node in nodes if waiting[node] == 0]
    order = []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for producer, consumer in edges:
            if producer == node:
                waiting[consumer] -= 1
                if waiting[consumer] == 0:
                    ready.append(consumer)
    return order
    ### END SOLUTION'''
STARTER_MEAN = '''def moving_mean(values, window):
    """The mean of every `window` consecutive values."""
    # YOUR CODE HERE
    raise NotImplementedError()'''
REFERENCE_MEAN = '''def moving_mean(values, window):
    """The mean of every `window` consecutive values."""
    ### BEGIN SOLUTION
    sums = [0.0]
    for value in values:
        sums.append(sums[-1] + value)
    return [(sums[end] - sums[end - window]) / window for end in range(window, len(sums))]
    ### END SOLUTION'''

# Alice's own answers (not the reference): a depth-first order, a loop over windows
ALICE_ORDER = '''def topological_order(edges):
    """The nodes of a DAG given as (producer, consumer) pairs, every producer before its consumers."""
    children = {}
    for parent, child in edges:
        children.setdefault(parent, []).append(child)
        children.setdefault(child, [])
    visited, postorder = set(), []

    def visit(current):
        if current in visited:
            return
        visited.add(current)
        for nxt in sorted(children[current]):
            visit(nxt)
        postorder.append(current)

    for start in sorted(children):
        visit(start)
    return list(reversed(postorder))'''
ALICE_MEAN = '''def moving_mean(values, window):
    """The mean of every `window` consecutive values."""
    result = []
    for first in range(0, len(values) - window + 1):
        chunk = values[first:first + window]
        result.append(sum(chunk) / float(window))
    return result'''


def renamed(code: str) -> str:
    """Alice's code as Bob hands it in: every variable and the inner function renamed, comments added,
    the spacing changed."""
    for old, new in [("children", "kids"), ("parent", "src"), ("child", "dst"), ("visited", "done"),
                     ("postorder", "finished"), ("visit", "walk"), ("current", "here"), ("nxt", "following"),
                     ("start", "root"), ("result", "means"), ("first", "i"), ("chunk", "part")]:
        code = code.replace(old, new)
    return re.sub(r"^( *)return", r"\1# all done\n\1return", code, flags=re.M).replace(" = ", "  =  ")


# Erin's unrelated answers: Kahn's algorithm with a heap, numpy's convolution
ERIN_ORDER = '''def topological_order(edges):
    """The nodes of a DAG given as (producer, consumer) pairs, every producer before its consumers."""
    import heapq
    indegree, successors = {}, {}
    for a, b in edges:
        indegree[b] = indegree.get(b, 0) + 1
        indegree.setdefault(a, 0)
        successors.setdefault(a, set()).add(b)
    heap = [n for n, d in indegree.items() if not d]
    heapq.heapify(heap)
    out = []
    while heap:
        n = heapq.heappop(heap)
        out += [n]
        for m in successors.get(n, ()):
            indegree[m] -= 1
            if not indegree[m]:
                heapq.heappush(heap, m)
    return out'''
ERIN_MEAN = '''def moving_mean(values, window):
    """The mean of every `window` consecutive values."""
    import numpy as np
    kernel = np.ones(window) / window
    return np.convolve(np.asarray(values, dtype=float), kernel, mode="valid").tolist()'''


def assignment(order: str, mean: str) -> nbformat.NotebookNode:
    return notebooks.notebook([
        nbformat.v4.new_markdown_cell("# A problem set", id="intro"),
        notebooks.code("import math", "setup"),
        notebooks.solution(order, "order"),
        notebooks.test_cell("assert topological_order([(1, 2)]) == [1, 2]", "test_order"),
        notebooks.solution(mean, "mean"),
        notebooks.test_cell("assert moving_mean([1, 3], 2) == [2.0]", "test_mean"),
    ])


SOURCE = assignment(REFERENCE_ORDER, REFERENCE_MEAN)
RELEASE = assignment(STARTER_ORDER, STARTER_MEAN)
REFERENCE_TYPED = (REFERENCE_ORDER.replace("    ### BEGIN SOLUTION\n", "").replace("\n    ### END SOLUTION", ""),
                   REFERENCE_MEAN.replace("    ### BEGIN SOLUTION\n", "").replace("\n    ### END SOLUTION", ""))


def the_class() -> dict[str, nbformat.NotebookNode]:
    def reference_renamed(code: str) -> str:
        for old, new in [("waiting", "pending"), ("ready", "queue"), ("order", "seq"), ("sums", "prefix"),
                         ("node", "vertex"), ("value", "x")]:
            code = code.replace(old, new)
        return code.replace("topological_seq", "topological_order")

    return {"alice": assignment(ALICE_ORDER, ALICE_MEAN),
            "bob": assignment(renamed(ALICE_ORDER), renamed(ALICE_MEAN)),
            "carol": assignment(*REFERENCE_TYPED),
            "dave": assignment(*(reference_renamed(code) for code in REFERENCE_TYPED)),
            "erin": assignment(ERIN_ORDER, ERIN_MEAN),
            "frank": assignment(STARTER_ORDER, STARTER_MEAN)}


def test_own_code_is_the_solution_regions_without_the_starter():
    regions = similarity.own_code(the_class()["alice"], RELEASE, SOURCE)
    assert list(regions) == ["order", "mean"]
    assert "def topological_order" not in regions["order"] and "producer before" not in regions["order"]
    assert "children = {}" in regions["order"] and "import math" not in "".join(regions.values())
    assert similarity.own_code(the_class()["frank"], RELEASE, SOURCE) == {}, "the untouched release has no code of its own"


def test_own_code_past_the_limit_is_not_compared():
    huge = assignment(ALICE_ORDER + "\n    x = [1, 2, 3]" * 100_000, ALICE_MEAN)
    regions = similarity.own_code(huge, RELEASE, SOURCE)
    assert list(regions) == ["order"] and len(regions["order"]) == similarity.MAX_OWN_CODE
    assert regions["order"].startswith(ALICE_ORDER.splitlines()[2])


def test_shared_own_code_flags_even_renamed_and_the_reference_or_unrelated_code_does_not():
    comparison = similarity.compare_class(NAME, the_class(), RELEASE, SOURCE)
    assert comparison.students == 6
    assert [(pair.student_a, pair.student_b) for pair in comparison.pairs] == [("alice", "bob")]
    pair = comparison.pairs[0]
    # copydetect replaces every name by one letter: the renamed copy is all shared
    assert pair.similarity_a == pair.similarity_b == 1.0 and pair.notebook == NAME, pair
    assert pair.shared >= similarity.MIN_SHARED
    marked_a = "".join(text for text, shared in pair.code_a if shared)
    marked_b = "".join(text for text, shared in pair.code_b if shared)
    assert "visited.add(current)" in marked_a and "done.add(here)" in marked_b
    assert "".join(text for text, _ in pair.code_a).startswith("# order\n")


def test_every_pair_but_the_copy_stays_below_the_threshold():
    codes = {student: similarity.own_code(nb, RELEASE, SOURCE) for student, nb in the_class().items()}
    pairs = similarity.compare(codes, similarity.boilerplate_code(RELEASE, SOURCE), threshold=0.0, min_shared=0, top=100)
    scores = {(pair.student_a, pair.student_b): pair.similarity for pair in pairs}
    assert scores.pop(("alice", "bob")) == 1.0
    assert max(scores.values()) < similarity.THRESHOLD, scores
    # the two who typed in the reference have nothing of their own left to compare, frank nothing at all
    assert not {"carol", "dave", "frank"} & {student for pair in scores for student in pair}


def test_without_the_reference_as_boilerplate_the_reference_typists_would_flag():
    """The boilerplate is what keeps carol and dave apart (the test above is not passing by accident)."""
    codes = {student: similarity.own_code(nb, RELEASE, SOURCE) for student, nb in the_class().items()}
    pairs = similarity.compare(codes, [], top=100)
    assert ("carol", "dave") in [(pair.student_a, pair.student_b) for pair in pairs]


def test_fewer_than_two_readable_submissions_compare_nothing():
    alone = similarity.compare_class(NAME, {"alice": the_class()["alice"]}, RELEASE, SOURCE)
    assert (alone.students, alone.pairs, alone.problem) == (1, [], "")
    assert similarity.compare_class(NAME, {}, RELEASE, SOURCE).students == 0


def test_top_keeps_the_most_similar_pairs_in_a_fixed_order():
    many = {f"s{number}": assignment(ALICE_ORDER, ALICE_MEAN) for number in range(5)}
    comparison = similarity.compare_class(NAME, many, RELEASE, SOURCE, top=3)
    assert [(pair.student_a, pair.student_b) for pair in comparison.shown] == [("s0", "s1"), ("s0", "s2"), ("s0", "s3")]
    assert len(comparison.pairs) == 10, "every pair of the five is kept for similarity.csv"


def test_the_thresholds_decide_which_pairs_are_listed():
    """alice and bob share all their own code; the reference typists and the unrelated answer share
    none of theirs beyond the reference. A threshold of 0 with no minimum lists more pairs; a minimum
    above what alice and bob share lists none."""
    default = similarity.compare_class(NAME, the_class(), RELEASE, SOURCE)
    assert [(pair.student_a, pair.student_b) for pair in default.pairs] == [("alice", "bob")]
    shared = default.pairs[0].shared
    assert similarity.compare_class(NAME, the_class(), RELEASE, SOURCE, min_shared=shared + 1).pairs == []
    assert similarity.compare_class(NAME, the_class(), RELEASE, SOURCE, min_shared=shared).pairs
    loose = similarity.compare_class(NAME, the_class(), RELEASE, SOURCE, threshold=0.0, min_shared=0)
    assert len(loose.pairs) > 1 and (loose.threshold, loose.min_shared) == (0.0, 0)


def test_the_thresholds_are_grading_settings_and_options_of_grade(tmp_path):
    from autograder import cli
    from autograder.settings import GradingSettings
    from traitlets.config import Config

    settings = GradingSettings()
    assert (settings.similarity_threshold, settings.similarity_min_shared, settings.similarity_top) == \
        (similarity.THRESHOLD, similarity.MIN_SHARED, similarity.TOP) == (0.5, 100, 10)
    config = Config()
    config.GradingSettings.similarity_top = 3
    assert GradingSettings(config=config).similarity_top == 3, "c.GradingSettings.similarity_top in nbgrader_config.py"
    for bad in (dict(similarity_threshold=1.5), dict(similarity_threshold=-0.1), dict(similarity_top=0),
                dict(similarity_min_shared=-1)):
        with pytest.raises(Exception):
            GradingSettings(**bad)
    out = subprocess.run([sys.executable, "-m", "autograder.cli", "grade", "--help"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    for flag in ("--similarity-threshold SHARE", "--similarity-min-shared CHARS", "--similarity-top N"):
        assert flag in out
    assert "similarity.csv lists every pair" in " ".join(out.split())


def test_the_pairs_do_not_depend_on_pythons_hash_seed():
    """copydetect hashes k-grams with Python's hash(); with every k-gram kept the result is the same."""
    script = ("import json, sys\nfrom tests.test_similarity import the_class, RELEASE, SOURCE, NAME\n"
              "from autograder.grading import similarity\n"
              "c = similarity.compare_class(NAME, the_class(), RELEASE, SOURCE)\n"
              "codes = {s: similarity.own_code(nb, RELEASE, SOURCE) for s, nb in the_class().items()}\n"
              "every = similarity.compare(codes, similarity.boilerplate_code(RELEASE, SOURCE), threshold=0, min_shared=0, top=99)\n"
              "json.dump([[p.student_a, p.student_b, p.similarity_a, p.similarity_b, p.shared, p.code_a] "
              "for p in c.pairs + every], sys.stdout)\n")
    runs = [subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert runs[0] == runs[1] and json.loads(runs[0])


def test_similarity_csv_has_a_line_per_listed_pair(tmp_path):
    comparisons = [similarity.compare_class(NAME, the_class(), RELEASE, SOURCE),
                   similarity.Comparison("other.ipynb", 1)]
    path = similarity.write_csv(tmp_path / "similarity.csv", comparisons)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows == [list(similarity.COLUMNS), ["alice", "bob", NAME, "1.000", "1.000"]]


def test_similarity_csv_lists_every_pair_and_the_report_the_top(tmp_path):
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row

    many = {f"s{number}": assignment(ALICE_ORDER, ALICE_MEAN) for number in range(5)}
    comparison = similarity.compare_class(NAME, many, RELEASE, SOURCE, top=3)
    path = similarity.write_csv(tmp_path / "similarity.csv", [comparison])
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:]
    assert len(rows) == 10 and {(row[0], row[1]) for row in rows} == \
        {(f"s{a}", f"s{b}") for a in range(5) for b in range(a + 1, 5)}
    result = ClassResult("00", [Row(student, "00", score=1, max_score=1) for student in many], [], 1.0, tmp_path,
                         similarity=[comparison])
    page = report.write_html(result).read_text(encoding="utf-8")
    assert page.count("<details>") == 3 and "the 3 most similar per notebook are shown here" in " ".join(page.split())
    assert "7 more pairs above the threshold in <code>similarity.csv</code>" in page
    assert "10 pairs of similar submissions" in report.summary_lines(result)[-1]


def _submission(student: str, notebook) -> "object":
    from autograder.grading.intake import Submission

    return Submission(student, f"{student}/{NAME}", notebook_bytes=nbformat.writes(notebook).encode())


def test_the_pipeline_compares_readable_submissions_and_a_failure_changes_nothing(monkeypatch, tmp_path, caplog):
    from autograder.grading import lateness, pipeline
    from autograder.grading.intake import Submission
    from autograder.runfolder import RunFolder

    students = [_submission(student, nb) for student, nb in the_class().items()]
    students.append(Submission("mallory", "mallory.zip", problem="not a valid notebook: broken"))
    nbformat.write(SOURCE, tmp_path / NAME)
    notebook = pipeline._Notebook(tmp_path / NAME, {}, students, None)
    graded = pipeline._Class("ps1", tmp_path, RunFolder(tmp_path), {NAME: notebook}, lateness.Term(), [])
    with caplog.at_level(logging.INFO, logger="autograder"):
        found = pipeline._similar(graded, {NAME: RELEASE})
    assert len(found) == 1 and found[0].students == 6, "mallory's unreadable submission is not compared"
    assert [(pair.student_a, pair.student_b) for pair in found[0].pairs] == [("alice", "bob")]
    assert [record.getMessage() for record in caplog.records] == ["similarity: 1 similar pairs among 6 readable submissions"]

    from autograder.settings import GradingSettings

    strict = pipeline._similar(graded, {NAME: RELEASE}, GradingSettings(similarity_min_shared=10**6, similarity_top=3))
    assert (strict[0].pairs, strict[0].min_shared, strict[0].top) == ([], 10**6, 3), "the run's settings decide"

    def broken(*args, **kwargs):
        raise ValueError("copydetect fell over")

    monkeypatch.setattr(similarity, "compare_class", broken)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="autograder"):
        failed = pipeline._similar(graded, {NAME: RELEASE})
    assert (failed[0].students, failed[0].pairs, failed[0].problem) == (6, [], "ValueError: copydetect fell over")
    assert caplog.records[0].levelname == "WARNING" and "not computed" in caplog.records[0].getMessage()


def test_the_report_shows_the_pairs_escaped_and_says_when_there_is_nothing_to_compare(tmp_path):
    from autograder.grading import report
    from autograder.grading.results import ClassResult, Row

    rows = [Row("<b>eve</b>", "00", score=3, max_score=3), Row("zed", "00", name="Zed <Z>", score=1, max_score=3)]
    pair = similarity.Pair("<b>eve</b>", "zed", NAME, 0.75, 1.0, 120,
                           code_a=[("# order\n", False), ("x = '<script>alert(1)</script>'", True), ("\n", False)],
                           code_b=[("y = '&'", True)])
    result = ClassResult("00", rows, [], 3.0, tmp_path, similarity=[similarity.Comparison(NAME, 2, [pair])])
    page = report.write_html(result).read_text(encoding="utf-8")
    assert "<h2>Similar submissions</h2>" in page and "no score or status changes" in page
    assert "<script>" not in page and "<b>eve" not in page
    assert "<mark>x = &#39;&lt;script&gt;alert(1)&lt;/script&gt;&#39;</mark>" in page
    assert "<mark>y = &#39;&amp;&#39;</mark>" in page
    assert "<td>&lt;b&gt;eve&lt;/b&gt;</td><td>zed (Zed &lt;Z&gt;)</td><td>75%</td><td>100%</td>" in page, \
        "a pair's students named beside their ids where known"
    assert "<th>&lt;b&gt;eve&lt;/b&gt;</th><th>zed (Zed &lt;Z&gt;)</th>" in page
    assert "1 pairs of similar submissions" in report.summary_lines(result)[-1]

    for comparisons, said in (([similarity.Comparison(NAME, 1)], "Fewer than two readable submissions"),
                              ([], "Fewer than two readable submissions"),
                              ([similarity.Comparison(NAME, 5)], "No pair among the 5 readable submissions"),
                              ([similarity.Comparison(NAME, 5, problem="boom <i>")], "could not be computed: boom &lt;i&gt;")):
        page = report.write_html(ClassResult("00", rows, [], 3.0, tmp_path, similarity=comparisons)).read_text(encoding="utf-8")
        assert "<h2>Similar submissions</h2>" in page and said in page, said


@pytest.mark.parametrize("students", [6, 200])
def test_a_whole_class_is_compared_and_the_top_pairs_kept(students):
    """Behaviour only: how long a class takes is a benchmark's question, not a test's (a test that
    fails on a slow or busy machine is not allowed here)."""
    alike = the_class()
    many = {f"{name}{number:03d}": nb for number in range(students // len(alike) + 1) for name, nb in alike.items()}
    many = dict(list(many.items())[:students])
    comparison = similarity.compare_class(NAME, many, RELEASE, SOURCE)
    # every alice and bob copy pairs with every other: more than TOP pairs, of which TOP are listed
    assert comparison.students == students and len(comparison.shown) == (1 if students == 6 else similarity.TOP)
    copiers = sorted(name for name in many if name.startswith(("alice", "bob")))
    listed = {(pair.student_a, pair.student_b) for pair in comparison.pairs}
    every = {(a, b) for i, a in enumerate(copiers) for b in copiers[i + 1:]}
    assert every <= listed and len(listed) == len(comparison.pairs), "similarity.csv gets every pair, once"
