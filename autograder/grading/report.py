"""The grading report: report.html (score histogram, pass rate of every test, similar submissions, the
written answers to grade by hand) and a terminal summary, each student named beside the id where the
name is known. The histogram is drawn by the page's template as SVG (`Histogram`). Written answers are
shown as their markdown renders (`written_html`): nbconvert's markdown, then the feedback pages'
sanitising, so nothing a student wrote runs; the page loads no script and works offline, so their math
(`$...$`, `$$...$$`, `\\(...\\)`, `\\[...\\]`, `\\begin{...}...\\end{...}`, recognised as nbconvert does) is
drawn here, by matplotlib's mathtext, as SVG images in the page (`MathSpans`). Matplotlib is imported only
for an answer with math: writing a report without any loads no plotting library."""

from __future__ import annotations

import base64
import html
import io
import math
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from nbconvert.filters.markdown_mistune import markdown2html_mistune

from autograder import pages
from autograder.grading import similarity
from autograder.grading.results import ClassResult
from autograder.nbgrader_setup.sanitize import clean_html


def summary_lines(result: ClassResult) -> list[str]:
    """A line per row (its student's name beside the id, where any row has a name), then the class's."""
    several = len(result.notebooks) > 1
    named = any(row.name for row in result.rows)
    lines = [f"{'student':<24} " + (f"{'name':<24} " if named else "") + ("notebook".ljust(24) + " " if several else "")
             + f"{'status':<8} {'score':>11}  reason"]
    for row in sorted(result.rows, key=lambda r: (r.student_id, r.notebook)):
        lines.append(f"{row.student_id:<24} " + (f"{row.name:<24} " if named else "")
                     + (f"{row.notebook:<24} " if several else "")
                     + f"{row.status:<8} {row.score:>5g}/{row.max_score:<5g}  {row.reason}")
    graded = [row for row in result.rows if row.status.scored]
    waiting = len(written_answers(result))
    similar = sum(len(comparison.pairs) for comparison in result.similarity)
    lines.append(f"{len(result.rows)} submissions, {len(graded)} graded, "
                 f"{len(result.rows) - len(graded)} not graded"
                 + (f"; {waiting} written answers to grade by hand (report.html)" if waiting else "")
                 + (f"; {similar} pairs of similar submissions to look at (report.html, similarity.csv)"
                    if similar else ""))
    return lines


@dataclass(frozen=True)
class WrittenAnswer:
    """An answer waiting for a hand grade, once per submission: a group's answer is graded once, for
    every member (an override or a formgrader grade given to any member reaches the group's row)."""
    students: tuple[str, ...]      # the student, or the group's members
    names: tuple[str, ...]         # their names, where known ("" where not)
    group: str                     # the group's name; empty for an individual's answer
    cell: str
    answer: str


def written_answers(result: ClassResult) -> list[WrittenAnswer]:
    """Every answer waiting for a hand grade, a group's once with all its members, in student order."""
    found: dict[tuple[str, str, str], list] = {}
    for row in sorted(result.rows, key=lambda r: (r.student_id, r.notebook)):
        for cell, answer in row.answers_to_grade.items():
            entry = found.setdefault((row.group or row.student_id, row.notebook, cell), [[], [], row, answer])
            entry[0].append(row.student_id)
            entry[1].append(row.name)
    return [WrittenAnswer(tuple(students), tuple(names), row.group, cell, answer)
            for (_, _, cell), (students, names, row, answer) in found.items()]


@dataclass(frozen=True)
class PassRate:
    """One cell column of the report's pass-rate table."""
    share: float | None   # of the rows that graded the cell, those with points in it; None: none graded it
    waiting: int          # rows whose answer in the cell waits for a hand grade (not counted in `share`)

    def __str__(self) -> str:
        waits = f"{self.waiting} {'waits' if self.waiting == 1 else 'wait'} for a hand grade"
        if self.share is None:
            return waits
        return f"{self.share:.0%}" + (f" ({waits})" if self.waiting else "")


def pass_rates(result: ClassResult) -> dict[str, PassRate]:
    """Per cell column: the share of the rows that graded that cell with points in it; a written answer
    that waits for its hand grade is counted apart (its 0 in the gradebook is no grade)."""
    rates = {}
    for cell in result.grade_cells:
        # a waiting answer has no score in its row's cells (the grader leaves it out until it is graded)
        graded = [row for row in result.rows if cell in row.cells and cell not in row.answers_to_grade]
        waiting = sum(1 for row in result.rows if cell in row.answers_to_grade)
        if graded or waiting:
            rates[cell] = PassRate(sum(1 for row in graded if row.cells[cell] > 0) / len(graded) if graded else None,
                                   waiting)
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


# Where a written answer's math is, in its markdown source, recognised with nbconvert's delimiters
# (nbconvert.filters.markdown_mistune's MathBlockParser and MathInlineParser): display `$$...$$`, `\\[...\\]`
# and `\begin{name}...\end{name}`, inline `$...$` (not empty) and `\\(...\\)`; a delimiter after a
# backslash is none (`\$5` is a dollar sign). nbconvert wants `\\[` and `\\(` typed with two backslashes,
# as Jupyter does; one is taken too. Inline math stays within its paragraph (nbconvert's runs after
# the paragraphs are split). Code (fenced blocks and backtick spans) is skipped: a `$` there is code.
_MATH = re.compile(r"""
    (?P<code>^[ ]{0,3}(?P<fence>`{3,}|~{3,}).*?(?:^[ ]{0,3}(?P=fence)|\Z) | (?P<ticks>`+).+?(?<!`)(?P=ticks)(?!`))
  | (?<!\\)\$\$(?P<display_tex>.*?)(?<!\\)\$\$
  | (?<!\\)\\{1,2}\[(?P<display_latex>.*?)(?<!\\)\\{1,2}\]
  | (?<![$\\])\$(?P<inline_tex>(?:(?!\n[ \t]*\n).)+?)(?<![$\\])\$
  | (?<!\\)\\{1,2}\((?P<inline_latex>(?:(?!\n[ \t]*\n).)*?)(?<!\\)\\{1,2}\)
  | \\begin\{(?P<name>[a-z]*\*?)\}(?P<environment>.*?)\\end\{(?P=name)\}
""", re.VERBOSE | re.DOTALL | re.MULTILINE)
# A tag of bleach's output: its attribute values always quoted with ", a " in them written &quot;.
_TAG = r'<(?:[^>"]|"[^"]*")*>'
MATH_POINTS = 12   # the size math is drawn at (the page's text: a browser's default 16 px)


@dataclass
class MathSpans:
    """A written answer's math, taken out of its markdown source before the markdown renders (so `_` and
    `*` in it stay TeX) and drawn into the sanitised HTML after: each span is a placeholder, a word of
    letters and digits that markdown and the sanitising keep, unguessable by the student."""
    sources: list[str] = field(default_factory=list)     # each span as typed, delimiters included
    tex: list[str] = field(default_factory=list)         # its TeX, for mathtext
    display: list[bool] = field(default_factory=list)    # drawn on a line of its own
    token: str = field(default_factory=lambda: "math" + secrets.token_hex(8))

    def take_out(self, markdown: str) -> str:
        """`markdown` with every math span a placeholder."""
        def placeholder(found: re.Match) -> str:
            if found["code"]:
                return found[0]
            inline = found["inline_tex"] if found["inline_tex"] is not None else found["inline_latex"]
            self.sources.append(found[0])
            self.tex.append(next(body for body in (found["display_tex"], found["display_latex"], inline,
                                                   found["environment"]) if body is not None))
            self.display.append(inline is None)
            return f"{self.token}{len(self.sources) - 1}x"
        return _MATH.sub(placeholder, markdown)

    def put_back(self, sanitised: str) -> str:
        """The HTML with each placeholder in its text drawn (`image`), and each in an attribute (a link's
        target, an image's alt) the span as typed, escaped."""
        spans = re.compile(f"{self.token}(\\d+)x")

        def drawn(found: re.Match) -> str:
            if found[1] is None:
                return spans.sub(lambda span: html.escape(self.sources[int(span[1])]), found[0])
            return self.image(int(found[1]))
        return re.sub(f"{_TAG}|{spans.pattern}", drawn, sanitised)

    def image(self, index: int) -> str:
        """Span `index` as an <img> of the SVG mathtext draws (a script in an SVG shown as an image never
        runs; the TeX is only its escaped alt text), or as its source in <code> where mathtext cannot
        parse it. Only `math_to_image`: no pyplot, no backend chosen, no setting changed."""
        source = html.escape(self.sources[index])
        svg = io.BytesIO()
        try:   # mathtext takes one line; TeX reads a line break as a space
            from matplotlib import mathtext   # here: an unusable matplotlib setup (MPLBACKEND) fails its import
            from matplotlib.font_manager import FontProperties

            depth = mathtext.math_to_image(f"${' '.join(self.tex[index].split())}$", svg, format="svg",
                                           prop=FontProperties(size=MATH_POINTS))
        except (ImportError, ValueError, RecursionError):   # a report never fails on a student's math
            return f"<code>{source}</code>"
        style = "display: block; margin: 0.5em auto" if self.display[index] else f"vertical-align: -{depth:g}pt"
        return (f'<img src="data:image/svg+xml;base64,{base64.b64encode(svg.getvalue()).decode()}" '
                f'alt="{source}" style="{style}">')


def written_html(answer: str) -> str:
    """A written answer (a markdown cell's source) as HTML to read, with every active part of it escaped
    or dropped (`sanitize.clean_html`, as on the feedback pages) and its math drawn (`MathSpans`): the
    template marks it safe."""
    math_spans = MathSpans()
    sanitised = clean_html(markdown2html_mistune(math_spans.take_out(answer)))
    return math_spans.put_back(sanitised) if math_spans.sources else sanitised


def write_html(result: ClassResult, path: Path | None = None) -> Path:
    path = path or result.run_folder.report_html
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pages.render("grading_report.html", result=result, histogram=histogram(result),
                                 rows=sorted(result.rows, key=lambda row: (row.student_id, row.notebook)),
                                 several=len(result.notebooks) > 1, grouped=any(row.group for row in result.rows),
                                 names={row.student_id: row.name for row in result.rows if row.name},
                                 rates=pass_rates(result), written=written_answers(result), written_html=written_html,
                                 **_similarity_options(result)), encoding="utf-8")
    return path
