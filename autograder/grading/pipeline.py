"""Grade a class: intake, then nbgrader's autograde for each student by a long-lived worker process
that gives every student's kernel a sandbox of its own, on this machine or on a Dask cluster
(`autograder.execution.executors`).

    result = grade_class("00_gpu_setup", Path("source/00_gpu_setup"), Path("downloads"),
                         Path("build/grading/00_gpu_setup"), settings=GradingSettings(workers=2))

Every student gets a row whatever they submitted. `grade_class` runs seven named steps:
- `read`:    the assignment's notebooks, the class (intake), the students' names, the term, the points
             set by hand;
- `plan`:    the workspaces (nbgrader course directories) generated, the rows already known (an
             unreadable submission, an unchanged one graded before) and the jobs left to run;
- `execute`: the jobs on the executor, each outcome becoming a row as it arrives;
- `settle`:  the points set by hand, the status they settle and the late penalties applied to every
             row (no file written);
- `show_hand_grades`: the feedback pages of the rows with hand grades made again with them;
- `spread`:  a group's row given to every member of the group, with a copy of its feedback page
             (`--groups`, autograder.lms.groups), and every row named;
- `write`:   grades.csv, max_points.csv, similarity.csv and report.html in the run folder.
A cluster that stops taking jobs (`executors.ClusterError` from `run_all`) still gets its class
written: every submission it did not run has an error row that says why, and the error is raised
after `write`. Such a row (`Row.not_run`) is not cached, so a plain re-run grades exactly those.
Local workers start first, so they import nbgrader while the driver reads the class; the similarity
of the submissions is computed beside the grading (it reads the submissions, never the grades).
The run writes only under `out` (`autograder.runfolder.RunFolder` names every file). Workers never
share a gradebook file, so a parallel run gives exactly the rows of a serial one; with the settings'
`db_url` they share one gradebook server (PostgreSQL), which takes concurrent writers.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, TypedDict

import nbformat
from nbgrader.plugins import LateSubmissionPlugin

from autograder import __version__
from autograder.execution import executors, jobs, sandbox
from autograder.grading import (feedback_pages, formgrade, grades_csv, intake, lateness, overrides, report,
                                similarity, tamper)
from autograder.grading.assignment import GradingError, cell_points, source_hash, source_notebooks
from autograder.grading.cache import Cache, safe_id
from autograder.grading.results import ClassResult, Row
from autograder.grading.status import Status, after_hand_grades, decide
from autograder.lms import groups, roster
from autograder.nbgrader_setup import config as course_config
from autograder.nbgrader_setup.gradebook import database_problem
from autograder.nbgrader_setup.workspace import Workspace
from autograder.runfolder import RunFolder
from autograder.settings import PASSWORD_VARIABLE, GradingSettings

log = logging.getLogger(__name__)
STAMP = ".generated-from"


@dataclass
class _Notebook:
    """One notebook of the assignment, as the run grades it."""
    path: Path                     # its source
    points: dict[str, float]       # its graded cells' ids and points, in notebook order
    students: list[intake.Submission]
    cache: Cache

    @property
    def max_score(self) -> float:
        return sum(self.points.values())


@dataclass
class _Class:
    """What `read` found: the class to grade and everything that decides its rows but the run itself."""
    assignment_id: str
    source_dir: Path
    run_folder: RunFolder
    notebooks: dict[str, _Notebook]
    term: lateness.Term
    by_hand: list[overrides.Override]
    groups: dict[str, groups.Group] = field(default_factory=dict)   # a group's submission's id -> the group
    names: dict[str, str] = field(default_factory=dict)   # student id -> name: the roster's, else the LMS download's
    generated_from: str = ""   # source_hash: what the workspace is generated from, part of every kept row's key
    penalty_plugin: LateSubmissionPlugin | None = None   # the course's own late-penalty plugin, if it names one

    @property
    def columns(self) -> dict[str, float]:
        """grades.csv's cell columns and their points, in notebook order."""
        return {self.run_folder.column(name, cell): points for name, notebook in self.notebooks.items()
                for cell, points in notebook.points.items()}

    def columns_of(self, name: str) -> dict[str, str]:
        """The cell columns of notebook `name` and their grade ids."""
        return {self.run_folder.column(name, cell): cell for cell in self.notebooks[name].points}


@dataclass
class _Plan:
    """What `plan` decided: the rows known without running anything, and the jobs to run."""
    rows: list[Row]
    batch: list[jobs.Job]
    in_flight: dict[tuple[str, str], tuple[intake.Submission, tamper.Findings]]   # (safe id, notebook) -> ...
    releases: dict[str, nbformat.NotebookNode]


def grade_class(assignment_id: str, source_dir: Path, submissions: Path, out: Path, *,
                settings: GradingSettings | None = None, progress: Callable[[str], None] = print) -> ClassResult:
    """Grade every notebook of the assignment for every student: one row per student and notebook.
    `progress` gets one line per row as it is known.

    Returns the class's result; writes the run folder `out` (nothing else: the submissions are only read).
    Raises, before any grading: `GradingError` (no source, an unreachable gradebook), `SandboxUnavailable`
    (no sandbox, none asked for), the readers' errors (term, extensions, times, overrides, roster,
    groups, intake: each an `AutograderError` naming its file and line); after the rows are written:
    `ClusterError` when the cluster stopped taking jobs."""
    settings = settings or GradingSettings()
    sandbox_mode = _check(settings)
    paths = source_notebooks(assignment_id, source_dir)
    run_folder = RunFolder(out, several=len(paths) > 1)
    executor = executors.open_executor(settings, run_folder)   # local workers start (and import nbgrader) at once
    try:
        the_class = read(assignment_id, source_dir, paths, run_folder, submissions, settings)
        workspaces = _workspaces(the_class, settings, executor.workspaces)
        plan = _plan(the_class, workspaces, settings)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as aside:   # flags, not grades: meanwhile
            similar = aside.submit(_similar, the_class, plan.releases, settings)
            rows, stopped = execute(the_class, plan, executor, workspaces, settings, progress)
            similar_pairs = similar.result()
    finally:
        executor.close()
    rows = settle(the_class, rows)
    show_hand_grades(the_class, rows, settings)
    rows = spread(the_class, rows)
    result = write(the_class, rows, similar_pairs, settings, sandbox_mode)
    if stopped is not None:
        raise stopped   # grades.csv holds the rows done and the reason of each not run
    return result


def _check(settings: GradingSettings) -> str:
    """What must hold before any work: a reachable gradebook server, a kernel sandbox that starts (or
    none, asked for). Returns the sandbox the kernels get ('bwrap' or 'none'); every kernel's
    provisioner decides the same from the same setting."""
    if settings.db_url and (problem := database_problem(settings.db_url)):
        raise GradingError(problem)
    if settings.db_url and settings.scheduler and os.environ.get(PASSWORD_VARIABLE):
        log.warning("the gradebook's password (%s here) is not sent to the cluster's workers: give them %s or a "
                    "~/.pgpass of their own", PASSWORD_VARIABLE, PASSWORD_VARIABLE)
    return sandbox.mode(settings.sandbox)


def read(assignment_id: str, source_dir: Path, paths: list[Path], run_folder: RunFolder, submissions: Path,
         settings: GradingSettings) -> _Class:
    """The assignment's notebooks (`paths`) with their students, their names, their groups, the term and
    the points set by hand; intake.csv. A group's member may stand for the group's submission in the
    term's files and the overrides: the group's row, and so every member's, gets the line. Writes
    intake.csv only; raises the readers' errors (`AutograderError`s naming the file and line)."""
    run_folder.root.mkdir(parents=True, exist_ok=True)
    # one hash of what the workspace is generated from, for the workspace and for the rows kept
    generated_from = source_hash(source_dir, source_dir.resolve().parent.parent, settings)
    key = settings.key()
    notebooks = {path.name: _Notebook(path, cell_points(nbformat.read(path, as_version=4)),
                                      intake.read_class(submissions, path.name, assignment_id, settings.timestamp_zone),
                                      Cache(run_folder.rows_of(path.name), generated_from, key))
                 for path in paths}
    class_list = roster.names(Path(settings.roster)) if settings.roster else None
    placed = groups.read(Path(settings.groups), class_list, settings.roster).check(
        [(submission.student_id, submission.lms, submission.name, submission.origin)
         for notebook in notebooks.values() for submission in notebook.students]) if settings.groups else {}
    if not settings.groups:   # Moodle's default group folder: only a group roster says whose it is
        for notebook in notebooks.values():
            notebook.students = intake.without_group_roster(notebook.students)
    intake.write_csv(run_folder.intake_csv, {name: notebook.students for name, notebook in notebooks.items()}, placed)
    students = {submission.student_id for notebook in notebooks.values() for submission in notebook.students}
    submission_of = {member: student for student, group in placed.items() for member in group.members}
    term = lateness.class_term(settings, assignment_id, students | set(submission_of), submission_of)
    lateness.add_collected_times(term, {submission.student_id: submission.submitted_at
                                        for notebook in notebooks.values() for submission in notebook.students
                                        if submission.submitted_at})
    term.marked_late = {submission.student_id for notebook in notebooks.values()
                        for submission in notebook.students if submission.late_marked}
    term.time_problems = {submission.student_id: submission.time_problem for notebook in notebooks.values()
                          for submission in notebook.students if submission.time_problem}
    names = {submission.student_id: submission.name for notebook in notebooks.values()
             for submission in notebook.students if submission.name}
    for group in placed.values():   # a group's submission is named after the group; its members by the roster
        names |= group.names
    if class_list is not None:   # the instructor's class list wins over the names an LMS download carries
        names |= class_list
    the_class = _Class(assignment_id, source_dir, run_folder, notebooks, term, [], placed, names, generated_from,
                    lateness.penalty_plugin(course_config.grading_config(source_dir.resolve().parent.parent, settings)))
    by_file = overrides.read(Path(settings.overrides), the_class.columns, students | set(submission_of)) \
        if settings.overrides else []
    # the formgrader's first, the file's last
    the_class.by_hand = (formgrade.hand_grades(run_folder, assignment_id, settings)
                         + [replace(line, student_id=submission_of.get(line.student_id, line.student_id))
                            for line in by_file])
    if placed:
        log.info("groups: %d group submissions graded once each for their %d members", len(set(placed)),
                 len(submission_of))
    return the_class


def _plan(the_class: _Class, workspaces: list[Workspace], settings: GradingSettings) -> _Plan:
    """For every submission either its row (unreadable, or unchanged since the last run) or a job with
    its tamper findings. Returns the plan; reads the release notebooks in `workspaces[0]`; writes nothing."""
    plan = _Plan([], [], {}, {})
    for name, notebook in the_class.notebooks.items():
        release = plan.releases[name] = nbformat.read(workspaces[0].release_dir() / name, as_version=4)
        for submission in notebook.students:
            if not submission.ok:
                plan.rows.append(Row(submission.student_id, the_class.assignment_id, notebook=name,
                                     max_score=notebook.max_score, status=Status.INVALID, reason=submission.problem))
            elif not settings.force and (row := notebook.cache.get(submission)) is not None:
                plan.rows.append(row)
            else:
                assert submission.notebook_bytes is not None, "an ok submission holds its notebook (_validated)"
                inside = safe_id(submission.student_id)
                plan.in_flight[inside, name] = (submission, tamper.scan(intake.as_notebook(submission), release))
                plan.batch.append(jobs.Job(inside, submission.student_id, the_class.assignment_id, name,
                                           submission.notebook_bytes))
    return plan


def execute(the_class: _Class, plan: _Plan, executor, workspaces: list[Workspace], settings: GradingSettings,
            progress: Callable[[str], None]) -> tuple[list[Row], executors.ClusterError | None]:
    """Every job run on `executor` in the workspaces `workspaces`; each outcome a row (its
    feedback page written, its cache entry kept unless it never ran) as it arrives. When the cluster
    stops taking jobs (a `ClusterError`), every job without an outcome gets a row that says why it was
    not run, and the error comes back beside the rows for `grade_class` to raise once they are written.

    Returns (the rows, the cluster's error or None); writes each job's feedback page and kept row; calls
    `progress` once per row; raises what the executor raises other than a `ClusterError`."""
    rows: list[Row] = []
    total = len(plan.rows) + len(plan.batch)

    def finish(row: Row) -> None:
        row.max_score = row.max_score or the_class.notebooks[row.notebook].max_score
        rows.append(row)
        progress(f"[{len(rows)}/{total}] {_progress(row, the_class.run_folder.several, bool(settings.scheduler))}")

    for row in plan.rows:
        finish(row)
    the_class.run_folder.feedback_dir.mkdir(exist_ok=True)
    left = {(job.safe_id, job.notebook_name): job for job in plan.batch}

    def take(job: jobs.Job, outcome: jobs.Outcome) -> None:
        del left[job.safe_id, job.notebook_name]
        submission, findings = plan.in_flight[job.safe_id, job.notebook_name]
        row = _row(submission, the_class, job.notebook_name, outcome, findings, settings)
        if outcome.feedback_html is not None:
            row.feedback = the_class.run_folder.feedback_page(submission.student_id, job.notebook_name)
            row.feedback.parent.mkdir(parents=True, exist_ok=True)
            row.feedback.write_text(outcome.feedback_html, encoding="utf-8")
        the_class.notebooks[job.notebook_name].cache.put(submission, row)   # not when it never ran
        finish(row)

    try:
        for job, outcome in executor.run_all(plan.batch, workspaces):
            take(job, outcome)
    except executors.ClusterError as error:
        for job in list(left.values()):   # none when the executor gave each an outcome before raising
            take(job, executors.not_run(str(error)))
        return rows, error
    return rows, None


def settle(the_class: _Class, rows: list[Row]) -> list[Row]:
    """After the cache took the rows: the points set by hand, the status they settle and the late
    penalty (a new override, due date or policy needs no re-grade).

    Returns the rows it is given, changed (points, status, lateness); writes no file; raises nothing of
    its own (a course's own late-penalty plugin's error passes through)."""
    for row in rows:
        overrides.apply(row, the_class.by_hand, set(the_class.columns_of(row.notebook)))
        row.status, row.reason = after_hand_grades(row.status, row.reason, row.answers_to_grade)
        row.raw_score = row.score
        lateness.apply(row, the_class.term, the_class.penalty_plugin)
    return rows


def show_hand_grades(the_class: _Class, rows: list[Row], settings: GradingSettings) -> None:
    """The feedback page of every row with hand grades made again with them (`feedback_pages`).

    Writes those pages; raises nothing (a page that cannot be made again stays as it was, with a warning)."""
    for row in rows:
        feedback_pages.show_hand_grades(the_class.run_folder, row, the_class.by_hand, the_class.columns_of(row.notebook),
                                        settings)


def spread(the_class: _Class, rows: list[Row]) -> list[Row]:
    """The rows of the class: a group's row once per member, with the group's feedback page copied to
    the member's (a new roster needs no re-grade), each row named.

    Returns the class's rows; writes the members' copies of the pages; raises nothing of its own."""
    rows = groups.spread(rows, lambda row: the_class.groups.get(row.student_id),
                         lambda row, group, member: _member_row(the_class.run_folder, row, group, member))
    for row in rows:
        row.name = the_class.names.get(row.student_id, "")
    return rows


def _member_row(run_folder: RunFolder, row: Row, group: groups.Group, member: str) -> Row:
    """A group's row as one member's (`groups.as_member`), with a copy of the group's feedback page as theirs."""
    feedback = row.feedback
    if row.feedback is not None and row.feedback.exists():
        feedback = run_folder.feedback_page(member, row.notebook)
        if feedback != row.feedback:
            feedback.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(row.feedback, feedback)
    return replace(groups.as_member(row, group, member), feedback=feedback)


def write(the_class: _Class, rows: list[Row], similar: list[similarity.Comparison], settings: GradingSettings,
          sandbox_mode: str = "") -> ClassResult:
    """The class's result, with grades.csv, max_points.csv, similarity.csv, report.html and the run's
    manifest (run.json) written; `sandbox_mode` is the sandbox the kernels got (`_check`)."""
    similarity.write_csv(the_class.run_folder.similarity_csv, similar)
    result = ClassResult(the_class.assignment_id, sorted(rows, key=lambda row: (row.student_id, row.notebook)),
                         list(the_class.columns), sum(notebook.max_score for notebook in the_class.notebooks.values()),
                         the_class.run_folder.root, notebooks={name: notebook.max_score
                                                     for name, notebook in the_class.notebooks.items()},
                         cell_points=the_class.columns, similarity=similar, sandbox=sandbox_mode)
    the_class.run_folder.manifest.write_text(json.dumps({
        "assignment": the_class.assignment_id, "notebooks": result.notebooks, "sandbox": sandbox_mode,
        "settings": settings.key(), "generated_from": the_class.generated_from, "autograder": __version__,
    }, indent=2) + "\n", encoding="utf-8")
    grades_csv.write_csv(result)
    grades_csv.write_max_points(result)
    report.write_html(result)
    return result


def _progress(row: Row, several: bool, cluster: bool) -> str:
    return (f"{row.student_id}" + (f" {row.notebook}" if several else "")
            + f": {row.status} {row.score:g}/{row.max_score:g}"
            + (" (unchanged, not re-graded)" if row.reused else f" in {row.seconds:g} s")
            + (f" on {row.host}" if cluster and not row.reused and row.host else "")
            + (f" - {row.reason}" if row.reason else ""))


def _workspaces(the_class: _Class, settings: GradingSettings, count: int) -> list[Workspace]:
    """One nbgrader course directory per worker. nbgrader generates the first from the source and the
    course's files, and only when they changed since the last run (a stamp holds their hash); the
    others are copies. A shared gradebook (`db_url`) is generated into every time: it is not in the folder."""
    course_root = the_class.source_dir.resolve().parent.parent
    wanted = the_class.generated_from
    workspaces = []
    for number in range(count):
        root = the_class.run_folder.workspace(number)
        stamp = root / STAMP
        if settings.db_url or not stamp.exists() or stamp.read_text(encoding="utf-8") != wanted:
            if root.exists():
                shutil.rmtree(root)
            if number == 0:
                Workspace(root, the_class.assignment_id, settings).create(the_class.source_dir, course_root)
                stamp.write_text(wanted, encoding="utf-8")
            else:
                shutil.copytree(the_class.run_folder.workspace(0), root)
        workspaces.append(Workspace(root, the_class.assignment_id, settings))
    return workspaces


def _row(submission: intake.Submission, the_class: _Class, notebook: str, outcome: jobs.Outcome,
         findings: tamper.Findings, settings: GradingSettings) -> Row:
    decision = decide(outcome, findings, settings.timeout, settings.memory_limit, settings.task_limit)
    row = Row(submission.student_id, the_class.assignment_id, notebook=notebook, seconds=outcome.seconds,
              host=outcome.host, status=decision.status, reason=decision.reason, notes=findings.notes,
              not_run=outcome.not_run)
    if outcome.result is not None:
        row.max_score = outcome.result.max_score
        if decision.keeps_points:
            row.score = outcome.result.score
            row.cells = {the_class.run_folder.column(notebook, cell): points
                         for cell, points in outcome.result.cells.items()}
            row.answers_to_grade = {the_class.run_folder.column(notebook, cell): answer
                                    for cell, answer in outcome.result.answers_to_grade.items()}
    return row


class _SimilarityOptions(TypedDict):
    """The similarity settings, as `similarity.compare_class`'s and `Comparison`'s keywords."""
    threshold: float
    min_shared: int
    top: int


def _similar(the_class: _Class, releases: dict[str, nbformat.NotebookNode],
             settings: GradingSettings | None = None) -> list[similarity.Comparison]:
    """Per notebook, beside the grading: the pairs of readable submissions whose own code looks alike
    (by the settings' similarity_threshold, _min_shared and _top). It reads the submissions only; a
    failure here is reported and leaves the grades as they are."""
    settings = settings or GradingSettings()
    options = _SimilarityOptions(threshold=settings.similarity_threshold, min_shared=settings.similarity_min_shared,
                                 top=settings.similarity_top)
    found = []
    for name, notebook in the_class.notebooks.items():
        readable = [submission for submission in notebook.students if submission.ok]
        try:
            comparison = similarity.compare_class(
                name, {submission.student_id: intake.as_notebook(submission) for submission in readable},
                releases[name], nbformat.read(notebook.path, as_version=4), **options)
        except Exception as error:  # a flag that could not be computed must not stop a graded class
            comparison = similarity.Comparison(name, len(readable), problem=f"{type(error).__name__}: {error}",
                                               **options)
        found.append(comparison)
        where = f" of {name}" if len(the_class.notebooks) > 1 else ""
        if comparison.problem:
            log.warning("similarity%s: not computed (%s)", where, comparison.problem)
        else:
            log.info("similarity%s: %d similar pairs among %d readable submissions", where, len(comparison.pairs),
                     comparison.students)
    return found
