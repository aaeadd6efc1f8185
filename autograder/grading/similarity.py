"""Similar submissions: which students' own code in the solution regions looks alike (copydetect).

    comparison = compare_class("01_session_vs_eager.ipynb", {"alice": notebook, ...}, release, source)
    comparison.pairs   # every pair above the threshold, most similar first: similarity.csv (write_csv)
    comparison.shown   # the `top` of them, with the shared code marked: report.html

Only a notebook's solution regions count: its code cells whose nbgrader metadata says `solution: true`.
From each, the starter code (the release's text of that cell) is taken out line by line, and what the
release hands out (every code cell of it) and the reference solution (the source's solution cells) are
copydetect's boilerplate: a fingerprint found in them is no evidence of anything, so a class that all
typed in the reference, or kept the starter, does not flag itself. Each region is compared with the same
region of the other student (a k-gram across two regions would otherwise be shared by everyone who typed
in the reference of both); a student's similarity is their shared code over all their own code.

copydetect (MOSS's winnowing) tokenises the code with Pygments and replaces every variable, attribute and
function name by one letter, strings by another, and drops comments and white space, so renaming
variables or re-spacing the code changes nothing. Its fingerprints are the k-grams of that text; here
k = 25 characters (copydetect's noise threshold) and every k-gram is kept (the guarantee threshold
equals the noise threshold, a winnowing window of 1): the pairs do not depend on Python's string hash
seed, and the code is small enough that the full set is cheap.

The result flags pairs for a person to read; it never changes a score or a status.
"""

from __future__ import annotations

import csv
import difflib
import io
from dataclasses import dataclass, field
from pathlib import Path

from autograder import settings

# copydetect's default noise threshold: the shortest match, in filtered characters (`V=V.V(V,V=1)` is 12),
# that counts. Guarantee threshold = noise threshold: every fingerprint is compared (window 1).
NOISE = 25
# A pair is listed when at least this share of one student's own code (the solution regions less the
# starter and the reference) is found in the other's. Measured on answers to 01's `prune` written for the
# purpose (not a real class): three independent ones share 0 % with each other, one copied with every
# variable renamed 100 %. Half sits in that gap, above copydetect's own display default (0.33, for whole
# files): what remains here after the reference is gone can be small, and a small own code is quickly
# half made of the k-grams around a change to the reference that another student made at the same place.
THRESHOLD = settings.SIMILARITY_THRESHOLD   # `autograder grade --similarity-threshold`
# ... and the shared code is at least this long, in filtered characters (about eight lines of code): a
# student whose own code is a few changed lines of the reference shares, with anyone who changed the same
# place, the k-grams that straddle the change; one or two such places must not list a pair at 100 %.
MIN_SHARED = settings.SIMILARITY_MIN_SHARED   # 4 * NOISE; `--similarity-min-shared`
TOP = settings.SIMILARITY_TOP   # the pairs report.html shows per notebook; similarity.csv has all
# A student's own code past this many characters in a notebook is not compared: copydetect's tokeniser
# takes about a second per 100,000 characters, and the longest reference solution of the course (05's
# solution regions) is about 14,000. A notebook of 20 MB of code must not hold up the report.
MAX_OWN_CODE = 40_000


@dataclass
class Pair:
    student_a: str                  # the smaller id of the two
    student_b: str
    notebook: str
    similarity_a: float             # the share of a's own code found in b's
    similarity_b: float             # the share of b's own code found in a's
    shared: int                     # the length of the shared code, in filtered characters
    code_a: list[tuple[str, bool]] = field(default_factory=list)   # a's own code: (text, shared with b)
    code_b: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def similarity(self) -> float:
        return max(self.similarity_a, self.similarity_b)


@dataclass
class Comparison:
    """One notebook of the assignment over the class."""
    notebook: str
    students: int                   # readable submissions compared
    pairs: list[Pair] = field(default_factory=list)   # every pair above the threshold, most similar first
    problem: str = ""               # why it could not be computed (the grades stand either way)
    threshold: float = THRESHOLD    # what the pairs were listed by (the grading settings' similarity_*)
    min_shared: int = MIN_SHARED
    top: int = TOP                  # how many the report shows

    @property
    def shown(self) -> list[Pair]:
        """The pairs the report shows: the `top` most similar."""
        return self.pairs[:self.top]


def _solution_cells(notebook) -> dict[str, str]:
    """grade id -> source of the notebook's solution regions (code cells with `solution: true`), in order."""
    cells: dict[str, str] = {}
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution") and meta.get("grade_id"):
            cells.setdefault(meta["grade_id"], cell.source)
    return cells


def _without_starter(code: str, starter: str) -> str:
    """The lines of a student's cell that are not the release's text of it (their order kept)."""
    mine, given = code.splitlines(), starter.splitlines()
    matcher = difflib.SequenceMatcher(None, given, mine, autojunk=False)
    kept = [line for tag, _, _, start, end in matcher.get_opcodes() if tag in ("replace", "insert")
            for line in mine[start:end]]
    return "\n".join(kept)


def own_code(notebook, release, source, limit: int = MAX_OWN_CODE) -> dict[str, str]:
    """A student's own code in a notebook: grade id -> each solution region of the source as the student
    left it, less the release's starter lines; regions with nothing of theirs are left out, and what
    comes after the first `limit` characters is cut."""
    theirs, starters = _solution_cells(notebook), _solution_cells(release)
    regions = {}
    for grade_id in _solution_cells(source):
        starter = starters.get(grade_id, "")
        code = _without_starter(theirs.get(grade_id, "")[:limit + len(starter)], starter)[:limit]
        if code.strip():
            regions[grade_id] = code
            limit -= len(code)
        if limit <= 0:
            break
    return regions


def boilerplate_code(release, source) -> list[str]:
    """What no student is credited with: every code cell of the release, every solution cell of the source."""
    return ([cell.source for cell in release.cells if cell.cell_type == "code"]
            + list(_solution_cells(source).values()))


def _fingerprint(name: str, code: str, boilerplate=None):
    from copydetect import CodeFingerprint

    return CodeFingerprint(name, NOISE, 1, boilerplate=boilerplate, filter=True, language="python",
                           fp=io.StringIO(code))


def _segments(code: str, slices) -> list[tuple[str, bool]]:
    """The code cut at copydetect's slices (starts, ends in the original text): (text, shared) pieces."""
    pieces, at = [], 0
    starts, ends = (slices[0], slices[1]) if len(slices) == 2 else ([], [])   # no overlap: one empty array
    for start, end in sorted(zip((int(value) for value in starts), (int(value) for value in ends))):
        start, end = max(at, min(start, len(code))), min(end, len(code))
        if end <= start:
            continue
        if start > at:
            pieces.append((code[at:start], False))
        pieces.append((code[start:end], True))
        at = end
    if at < len(code):
        pieces.append((code[at:], False))
    return pieces


def _shown(regions: dict[str, str], slices: dict[str, object]) -> list[tuple[str, bool]]:
    """A student's regions one after the other, each under a comment line naming its cell."""
    pieces = []
    for grade_id, code in regions.items():
        pieces.append((f"# {grade_id}\n", False))
        pieces.extend(_segments(code, slices.get(grade_id, [])))
        pieces.append(("\n\n", False))
    return pieces


def compare(codes: dict[str, dict[str, str]], boilerplate: list[str], notebook: str = "", *,
            threshold: float = THRESHOLD, min_shared: int = MIN_SHARED, top: int | None = None) -> list[Pair]:
    """Every pair of students (their own code by id, a region per grade id), with copydetect, region by
    region (a region against the same region of the other: a k-gram that spans two regions would be
    shared by everyone who typed in the reference of both). A student's similarity is the shared part
    of all their regions over all of them. Every pair (or the `top` most similar) where one shares at
    least `threshold` of their code, and `min_shared` filtered characters or more, with the other."""
    import numpy
    from copydetect import compare_files

    hashes = set()
    for text in boilerplate:
        hashes |= _fingerprint("boilerplate.py", text).hashes
    given = numpy.array(sorted(hashes), dtype=numpy.int64)
    prints = {}
    for student, regions in sorted(codes.items()):
        found = {grade_id: _fingerprint(f"{student}.py", code, given) for grade_id, code in regions.items()}
        found = {grade_id: fingerprint for grade_id, fingerprint in found.items() if fingerprint.hashes}
        if found:
            prints[student] = found
    coverage = {student: float(sum(fingerprint.token_coverage for fingerprint in found.values()))
                for student, found in prints.items()}
    students = sorted(prints)
    pairs = []
    for i, a in enumerate(students):
        for b in students[i + 1:]:
            shared_a = shared_b = 0   # filtered characters; similarity_b * coverage is b's count back
            slices_a, slices_b = {}, {}
            for grade_id, first in prints[a].items():
                second = prints[b].get(grade_id)
                if second is None or not first.hashes & second.hashes:
                    continue
                overlap, (similarity_a, similarity_b), (slices_a[grade_id], slices_b[grade_id]) = \
                    compare_files(first, second)
                shared_a += int(overlap)
                shared_b += round(float(similarity_b) * float(second.token_coverage))
            similarity_a, similarity_b = min(1.0, shared_a / coverage[a]), min(1.0, shared_b / coverage[b])
            if max(shared_a, shared_b) >= min_shared and max(similarity_a, similarity_b) >= threshold:
                pairs.append(Pair(a, b, notebook, similarity_a, similarity_b, max(shared_a, shared_b),
                                  _shown(codes[a], slices_a), _shown(codes[b], slices_b)))
    pairs.sort(key=lambda pair: (-pair.similarity, -min(pair.similarity_a, pair.similarity_b), -pair.shared,
                                 pair.student_a, pair.student_b))
    return pairs if top is None else pairs[:top]


def compare_class(notebook: str, submitted: dict, release, source, *, threshold: float = THRESHOLD,
                  min_shared: int = MIN_SHARED, top: int = TOP) -> Comparison:
    """One notebook over the class: `submitted` maps each student with a readable submission to it
    (an nbformat notebook); `release` and `source` are the assignment's notebooks of that name. Every
    pair above the threshold is kept (`pairs`); the report shows the `top` (`shown`)."""
    comparison = Comparison(notebook, len(submitted), threshold=threshold, min_shared=min_shared, top=top)
    if len(submitted) >= 2:
        codes = {student: own_code(nb, release, source) for student, nb in submitted.items()}
        comparison.pairs = compare(codes, boilerplate_code(release, source), notebook, threshold=threshold,
                                   min_shared=min_shared)
    return comparison


COLUMNS = ("student_a", "student_b", "notebook", "similarity_a", "similarity_b")


def write_csv(path: Path, comparisons: list[Comparison]) -> Path:
    """similarity.csv: every pair above the threshold of every notebook, most similar first (shares as 0
    to 1); the report shows only the top of them."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for comparison in comparisons:
            for pair in comparison.pairs:
                writer.writerow([pair.student_a, pair.student_b, pair.notebook, f"{pair.similarity_a:.3f}",
                                 f"{pair.similarity_b:.3f}"])
    return path
