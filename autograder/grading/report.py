"""The grading report: report.html (score histogram, pass rate of every test, similar submissions) and a
terminal summary."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from autograder import pages
from autograder.grading import similarity
from autograder.grading.results import ClassResult


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


def load_plotting():
    """matplotlib's pyplot, on the Agg backend (its import takes a second or two: grading calls this
    while the notebooks run)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def _histogram_png(result: ClassResult) -> str:
    pyplot = load_plotting()

    figure, axes = pyplot.subplots(figsize=(6, 3))
    scores = list(student_totals(result).values())
    axes.hist(scores, bins=max(1, int(result.max_score) + 1), range=(0, max(result.max_score, 1) + 1),
              align="left", rwidth=0.8)
    axes.set_title(f"{result.assignment}: scores of {len(scores)} students")
    axes.set_xlabel(f"score (points, out of {result.max_score:g})")
    axes.set_ylabel("students")
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=90)
    pyplot.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def write_html(result: ClassResult, path: Path | None = None) -> Path:
    path = path or result.run.report_html
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pages.render("grading_report.html", result=result, histogram=_histogram_png(result),
                                 rows=sorted(result.rows, key=lambda row: (row.student_id, row.notebook)),
                                 several=len(result.notebooks) > 1,
                                 rates=pass_rates(result), threshold=similarity.THRESHOLD,
                                 min_shared=similarity.MIN_SHARED, top=similarity.TOP), encoding="utf-8")
    return path
