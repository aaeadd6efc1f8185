"""The grading report: report.html (score histogram, pass rate of every test, similar submissions) and a
terminal summary. The histogram is drawn by the page's template as SVG (`Histogram`), so writing the
report loads no plotting library. Written answers are shown as their markdown renders (`written_html`):
nbconvert's markdown, then the feedback pages' sanitising, so nothing a student wrote runs; the page
loads no script, so math stays as the student typed it (`$t$`), as text."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from nbconvert.filters.markdown_mistune import markdown2html_mistune

from autograder import pages
from autograder.grading import similarity
from autograder.grading.results import ClassResult
from autograder.nbgrader_setup.sanitize import clean_html


def summary_lines(result: ClassResult) -> list[str]:
    several = len(result.notebooks) > 1
    lines = [f"{'student':<24} " + ("notebook".ljust(24) + " " if several else "") + f"{'status':<8} {'score':>11}  reason"]
    for row in sorted(result.rows, key=lambda r: (r.student_id, r.notebook)):
        lines.append(f"{row.student_id:<24} " + (f"{row.notebook:<24} " if several else "")
                     + f"{row.status:<8} {row.score:>5g}/{row.max_score:<5g}  {row.reason}")
    graded = [row for row in result.rows if row.status.scored]
    waiting = sum(len(row.answers_to_grade) for row in result.rows)
    similar = sum(len(comparison.pairs) for comparison in result.similarity)
    lines.append(f"{len(result.rows)} submissions, {len(graded)} graded, "
                 f"{len(result.rows) - len(graded)} not graded"
                 + (f"; {waiting} written answers to grade by hand (report.html)" if waiting else "")
                 + (f"; {similar} pairs of similar submissions to look at (report.html, similarity.csv)"
                    if similar else ""))
    return lines


def pass_rates(result: ClassResult) -> dict[str, float]:
    """Per cell column: the share of the rows that scored that cell's notebook with points in it."""
    rates = {}
    for cell in result.grade_cells:
        scored = [row for row in result.rows if cell in row.cells]
        if scored:
            rates[cell] = sum(1 for row in scored if row.cells[cell] > 0) / len(scored)
    return rates


def student_totals(result: ClassResult) -> dict[str, float]:
    """Each student's score over all the assignment's notebooks."""
    totals: dict[str, float] = {}
    for row in result.rows:
        totals[row.student_id] = totals.get(row.student_id, 0.0) + row.score
    return totals


@dataclass(frozen=True)
class Histogram:
    """The class's total scores in bins of one point (a student with 7.5 of 10 counts under 7), as the
    report draws them (an SVG in the page: no plotting library, nothing to load)."""
    title: str
    x_label: str
    counts: list[int]              # students per bin, bin k = [k, k + 1) points; the last holds the full score

    @property
    def x_step(self) -> int:
        """Every how many bins the x axis is labelled (at most about 20 labels)."""
        return max(1, math.ceil(len(self.counts) / 20))

    @property
    def y_ticks(self) -> list[int]:
        top = max(self.counts, default=0)
        step = max(1, math.ceil(top / 5))
        return list(range(0, top + step, step))


def histogram(result: ClassResult) -> Histogram:
    totals = list(student_totals(result).values())
    bins = int(result.max_score) + 1
    counts = [0] * bins
    for total in totals:
        counts[min(bins - 1, max(0, int(total)))] += 1
    return Histogram(f"{result.assignment}: scores of {len(totals)} students",
                     f"score (points, out of {result.max_score:g})", counts)


def _similarity_options(result: ClassResult) -> dict:
    """What the class's pairs were listed by (the same for every notebook of a run). `pairs_shown`, not
    `top`: the template's histogram sets a `top` of its own (its margin)."""
    first = result.similarity[0] if result.similarity else similarity.Comparison("", 0)
    return dict(threshold=first.threshold, min_shared=first.min_shared, pairs_shown=first.top)


def written_html(answer: str) -> str:
    """A written answer (a markdown cell's source) as HTML to read, with every active part of it escaped
    or dropped (`sanitize.clean_html`, as on the feedback pages): the template marks it safe."""
    return clean_html(markdown2html_mistune(answer))


def write_html(result: ClassResult, path: Path | None = None) -> Path:
    path = path or result.run.report_html
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pages.render("grading_report.html", result=result, histogram=histogram(result),
                                 rows=sorted(result.rows, key=lambda row: (row.student_id, row.notebook)),
                                 several=len(result.notebooks) > 1,
                                 rates=pass_rates(result), written_html=written_html,
                                 **_similarity_options(result)), encoding="utf-8")
    return path
