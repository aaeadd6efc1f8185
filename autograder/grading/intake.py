"""Read a class of submissions without changing it: a folder of students, or an LMS's bulk download.

    DIR/<student_id>/<notebook>.ipynb     a folder per student
    DIR/<student_id>.zip                  or a zip per student
    canvas-submissions.zip, or DIR        Canvas's or Moodle's "download all submissions" zip, or the
                                          folder it unpacks to (autograder.lms.downloads: the names
                                          give the student id, Canvas's LATE marker and the name under
                                          which feedback goes back)
    <course>/submitted                    what `nbgrader collect <assignment>` gathered from the exchange:
                                          <student_id>/<assignment_id>/<notebook>.ipynb and timestamp.txt
                                          (autograder.lms.exchange)

Each student becomes a `Submission`: either a notebook to grade (read into memory) or a rejection
with the reason, so the rest of the class is still graded. A file of an LMS download whose name follows
none of the LMS's rules becomes a rejection of its own: nothing is dropped. Moodle's default group
folder (a team assignment's students in no group) is read under the default group's name: only the
group roster says whose it is (`autograder.lms.groups`); graded without one it is a rejection
(`without_group_roster`).

nbgrader's submitted folder is read for one assignment (`assignment_id`): a student's folder of another
assignment is not looked at, and a student without the assignment's folder has not handed it in (no
Submission). Its `timestamp.txt` is the submission's time (`submitted_at`, for the late penalty); one that
gives no time leaves the time empty and says why (`time_problem`), the notebook graded all the same. A
file where nbgrader puts a student's folder becomes a rejection of its own.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import logging
import re
import zipfile
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Callable

import nbformat

from autograder.errors import AutograderError
from autograder.lms import downloads, exchange, groups
from autograder.runfolder import INTAKE_COLUMNS, IntakeLine, record_cells

log = logging.getLogger(__name__)

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_ZIP_ENTRIES = 1000             # in one student's zip
MAX_DOWNLOAD_ENTRIES = 50000       # in a whole class's download


class IntakeError(AutograderError):
    """The submissions cannot be read as a class at all: no such folder, or a zip that is no LMS download."""


@dataclass(frozen=True)
class Submission:
    student_id: str
    origin: str                 # the file or folder it came from, relative to DIR
    notebook_bytes: bytes | None = None
    problem: str = ""           # why it cannot be graded; empty when it can
    lms: str = ""               # "canvas" or "moodle" when it came from that LMS's download
    name: str = ""              # the student's name as the LMS wrote it
    late_marked: bool = False   # the LMS marked it late (Canvas's LATE)
    reupload: str = ""          # the start of a feedback file's name that the LMS takes back to this student
    submitted_at: datetime | None = None   # nbgrader's timestamp.txt, in UTC, when it came from `nbgrader collect`
    time_problem: str = ""      # why its timestamp.txt gave no time; the notebook is graded all the same

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.notebook_bytes or b"").hexdigest()


def read_class(submissions: Path, notebook_name: str, assignment_id: str = "",
               timestamp_zone: str | None = None) -> list[Submission]:
    """Every student in `submissions` (a folder, or an LMS download's zip), in the order of their entries;
    in nbgrader's submitted folder, those who handed in `assignment_id` (a timestamp.txt without a zone read
    in `timestamp_zone`, if given)."""
    if submissions.is_file() and submissions.suffix.lower() == ".zip":
        return _from_download_zip(submissions, notebook_name)
    if not submissions.is_dir():
        raise IntakeError(f"submissions {submissions} does not exist or is neither a folder nor a zip file")
    files = _files_below(submissions)
    lms = downloads.detect(list(files))
    if lms:
        return _from_download(lms, files, notebook_name, origin="")
    if collected(submissions):
        if not assignment_id:
            raise IntakeError(f"{submissions} is what nbgrader collect gathered ({exchange.COLLECTED_RULE}): "
                              "it is read for one assignment, and none was given")
        return _from_collected(submissions, notebook_name, assignment_id, timestamp_zone)
    found = []
    for entry in sorted(submissions.iterdir(), key=lambda path: path.name):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            found.append(Submission(_student_id(entry), entry.name, problem="is a symbolic link: not followed"))
        elif entry.is_dir():
            found.append(_from_folder(entry, notebook_name))
        elif entry.suffix.lower() == ".zip":
            found.append(_from_zip(entry, notebook_name))
    return found


def _student_id(entry: Path) -> str:
    return entry.stem if entry.suffix.lower() == ".zip" else entry.name


def _matches(name: str, notebook_name: str) -> bool:
    """`00_gpu_setup.ipynb`, or the same name as an LMS renames it: `00_gpu_setup (1).ipynb`, `00_gpu_setup-2.ipynb`."""
    stem = re.escape(PurePosixPath(notebook_name).stem)
    return re.fullmatch(rf"{stem}(?:\s*\(\d+\)|[-_ ]\d+)?\.ipynb", name) is not None


def _pick(paths: list[str], notebook_name: str) -> tuple[str | None, str]:
    if notebook_name in paths:
        return notebook_name, ""
    candidates = [name for name in paths if _matches(PurePosixPath(name).name, notebook_name)]
    if len(candidates) == 1:
        return candidates[0], ""
    if not candidates:
        return None, f"no {notebook_name} in the submission (found: {', '.join(sorted(paths)) or 'nothing'})"
    return None, f"several candidates for {notebook_name}: {', '.join(sorted(candidates))}"


def _from_folder(folder: Path, notebook_name: str, student_id: str = "", origin: str = "") -> Submission:
    student_id, origin = student_id or folder.name, origin or folder.name
    files = {path.relative_to(folder).as_posix(): path for path in folder.rglob("*.ipynb")
             if ".ipynb_checkpoints" not in path.parts}
    chosen, problem = _pick(sorted(files), notebook_name)
    if not chosen:
        return Submission(student_id, origin, problem=problem)
    path = files[chosen]
    origin = f"{origin}/{chosen}"
    if path.is_symlink():
        return Submission(student_id, origin, problem="the notebook is a symbolic link: not followed")
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return _too_big(student_id, origin)
    return _validated(student_id, origin, path.read_bytes())


def _from_zip(archive: Path | io.BytesIO, notebook_name: str, student_id: str = "", origin: str = "") -> Submission:
    if not (student_id and origin):
        assert isinstance(archive, Path), "only a zip on disk comes unnamed (_from_entries names one in memory)"
        student_id, origin = student_id or archive.stem, origin or archive.name
    try:
        with zipfile.ZipFile(archive) as bundle:
            infos = bundle.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                return Submission(student_id, origin, problem=f"the zip has more than {MAX_ZIP_ENTRIES} entries")
            for info in infos:
                if _escapes(info.filename):
                    return Submission(student_id, origin,
                                      problem=f"zip entry {info.filename!r} would land outside the extraction folder")
            notebooks = [info.filename for info in infos if not info.is_dir()
                     and info.filename.endswith(".ipynb") and "__MACOSX" not in info.filename
                     and ".ipynb_checkpoints" not in info.filename]
            by_name = {PurePosixPath(name).name: name for name in notebooks}
            chosen, problem = _pick(sorted(by_name), notebook_name)
            if not chosen:
                return Submission(student_id, origin, problem=problem)
            info = bundle.getinfo(by_name[chosen])
            if info.file_size > MAX_NOTEBOOK_BYTES:
                return _too_big(student_id, origin)
            data = bundle.read(info)
    except (zipfile.BadZipFile, OSError) as error:
        return Submission(student_id, origin, problem=f"not a readable zip file: {error}")
    return _validated(student_id, f"{origin}:{by_name[chosen]}", data)


@dataclass(frozen=True)
class _File:
    size: int
    read: Callable[[], bytes]
    problem: str = ""


def _files_below(folder: Path) -> dict[str, _File]:
    """Every file under `folder` by its relative path; symbolic links are listed, never followed."""
    files: dict[str, _File] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            files[relative] = _File(0, bytes, "is a symbolic link: not followed")
        elif path.is_file():       # rglob does not descend into linked folders
            files[relative] = _File(path.stat().st_size, path.read_bytes)
        if len(files) > MAX_DOWNLOAD_ENTRIES:
            break
    return files


def _from_download_zip(archive: Path, notebook_name: str) -> list[Submission]:
    try:
        with zipfile.ZipFile(archive) as bundle:
            infos = [info for info in bundle.infolist() if not info.is_dir()]
            if len(infos) > MAX_DOWNLOAD_ENTRIES:
                raise IntakeError(f"{archive}: more than {MAX_DOWNLOAD_ENTRIES} files: not a class's download")
            files = {info.filename: _File(info.file_size, functools.partial(_member, archive, info.filename),
                                          "would land outside the extraction folder" if _escapes(info.filename) else "")
                     for info in infos}
    except (zipfile.BadZipFile, OSError) as error:
        raise IntakeError(f"{archive}: not a readable zip file: {error}") from None
    lms = downloads.detect(list(files))
    if lms is None:
        raise IntakeError(f"{archive}: its files follow neither Canvas's naming ({downloads.CANVAS_RULE}) "
                                 f"nor Moodle's ({downloads.MOODLE_RULE}); unpack a folder of students instead")
    return _from_download(lms, files, notebook_name, origin=f"{archive.name}:")


def _member(archive: Path, name: str) -> bytes:
    with zipfile.ZipFile(archive) as bundle:
        return bundle.read(name)


def _from_download(lms: str, files: dict[str, _File], notebook_name: str, origin: str) -> list[Submission]:
    """An LMS download: every file attributed to a student by the LMS's rule, one Submission per student
    and one rejection per file that follows no rule."""
    by_student: dict[str, list[downloads.Entry]] = {}
    found: list[Submission] = []
    for path, file in files.items():
        if downloads.hidden(path):
            continue
        entry = downloads.parse(lms, path)
        if entry is None or file.problem:
            reason = file.problem or f"its name follows no {lms.capitalize()} rule ({downloads.rule(lms)})"
            found.append(Submission(path, origin + path, problem=f"{path}: {reason}", lms=lms))
        else:
            by_student.setdefault(entry.student_id, []).append(entry)
    for student_id, entries in by_student.items():
        found.append(_from_entries(lms, student_id, entries, files, notebook_name, origin))
    return found


def _from_entries(lms: str, student_id: str, entries: list[downloads.Entry], files: dict[str, _File],
                  notebook_name: str, origin: str) -> Submission:
    by_name = {entry.file_name: entry for entry in entries}
    chosen, problem = _pick(sorted(by_name), notebook_name)
    entry = by_name[chosen] if chosen else entries[0]
    zips = [one for one in entries if one.file_name.lower().endswith(".zip")]
    if not chosen and len(zips) == 1 and problem.startswith("no "):   # a notebook uploaded inside a zip
        entry = zips[0]
        found = _from_zip(io.BytesIO(files[entry.path].read()), notebook_name, student_id, origin + entry.path)
    elif not chosen:
        found = Submission(student_id, origin + entry.path, problem=problem)
    elif files[entry.path].size > MAX_NOTEBOOK_BYTES:
        found = _too_big(student_id, origin + entry.path)
    else:
        found = _validated(student_id, origin + entry.path, files[entry.path].read())
    return replace(found, lms=lms, name=entries[0].name, late_marked=any(one.late for one in entries),
                   reupload=entry.reupload)


def collected(folder: Path) -> bool:
    """Whether `folder` is nbgrader's submitted folder: some student's folder holds an assignment's folder
    with the timestamp.txt that `nbgrader submit` writes and `nbgrader collect` copies."""
    return any(not student.name.startswith(".") and student.is_dir() and not student.is_symlink()
               and any((assignment / exchange.TIMESTAMP_FILE).is_file() for assignment in student.iterdir()
                       if assignment.is_dir() and not assignment.is_symlink())
               for student in folder.iterdir())


def _from_collected(submissions: Path, notebook_name: str, assignment_id: str,
                    timestamp_zone: str | None) -> list[Submission]:
    """nbgrader's submitted folder: a Submission per student with a folder for `assignment_id`, a rejection
    per entry that is no student's folder."""
    found = []
    for entry in sorted(submissions.iterdir(), key=lambda path: path.name):
        folder, origin = entry / assignment_id, f"{entry.name}/{assignment_id}"
        if entry.name.startswith("."):
            continue
        if entry.is_symlink() or not entry.is_dir():
            kind = "a symbolic link (not followed)" if entry.is_symlink() else "a file"
            found.append(Submission(entry.name, entry.name, problem=(
                f"{entry.name} is {kind}, not a student's folder as nbgrader collect writes them "
                f"({exchange.COLLECTED_RULE})")))
        elif folder.is_symlink():
            found.append(Submission(entry.name, origin, problem="is a symbolic link: not followed"))
        elif folder.is_dir():
            submission = _from_folder(folder, notebook_name, entry.name, origin)
            found.append(replace(submission, **_collected_time(folder / exchange.TIMESTAMP_FILE,
                                                               f"{origin}/{exchange.TIMESTAMP_FILE}", timestamp_zone)))
        elif folder.exists():
            found.append(Submission(entry.name, origin, problem=f"{origin} is a file, not the assignment's folder"))
    return found


def _collected_time(path: Path, origin: str, timestamp_zone: str | None) -> dict:
    """`submitted_at` from the timestamp.txt at `path`, or `time_problem` (logged) when it gives no time."""
    try:
        if path.is_symlink():
            raise exchange.TimestampProblem("is a symbolic link: not followed")
        if not path.is_file():
            raise exchange.TimestampProblem("is missing (nbgrader submit always writes one)")
        if path.stat().st_size > exchange.MAX_TIMESTAMP_BYTES:
            raise exchange.TimestampProblem(f"is larger than {exchange.MAX_TIMESTAMP_BYTES} bytes: not a time")
        return {"submitted_at": exchange.timestamp(path.read_bytes().decode("utf-8"), timestamp_zone)}
    except (exchange.TimestampProblem, UnicodeDecodeError, OSError) as error:
        reason = (f"{origin}: {'is not UTF-8 text' if isinstance(error, UnicodeDecodeError) else error}: "
                  "no submission time (on time, unless --submitted-at gives one)")
        log.warning("%s", reason)
        return {"time_problem": reason}


def without_group_roster(submissions: list[Submission]) -> list[Submission]:
    """The class as graded without a group roster: Moodle's default group folder, which names no student,
    a rejection that says so (graded, its row would be no student's)."""
    return [replace(submission, notebook_bytes=None, problem=(
                f"{submission.origin}: Moodle's default group folder ({submission.student_id!r}: the submission "
                "of a team assignment's students in no group) names no student: grade with --groups and the "
                "assignment's grading worksheet, which says who is in the default group"))
            if downloads.default_group(submission.lms, submission.student_id) else submission
            for submission in submissions]


def _too_big(student_id: str, origin: str) -> Submission:
    return Submission(student_id, origin, problem=f"the notebook is larger than the limit of {MAX_NOTEBOOK_BYTES:,} bytes")


def _escapes(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", name) is not None


def _validated(student_id: str, origin: str, data: bytes) -> Submission:
    try:
        notebook = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(notebook)
    except UnicodeDecodeError:
        return Submission(student_id, origin, problem="not a notebook: the file is not UTF-8 text")
    except Exception as error:  # nbformat raises several types for broken JSON or schema
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return Submission(student_id, origin, problem=f"not a valid notebook: {message[:200]}")
    return Submission(student_id, origin, notebook_bytes=data)


def as_notebook(submission: Submission):
    assert submission.notebook_bytes is not None, "only a readable (ok) submission is read: _validated's bytes"
    return nbformat.read(io.BytesIO(submission.notebook_bytes), as_version=4)


def write_csv(path: Path, students: dict[str, list[Submission]], placed: dict[str, groups.Group]) -> None:
    """What intake read, one line per student and notebook: where each came from in the download, the
    LMS's name and late marker, and the name a feedback file goes back under (autograder feedback). A
    group's submission has a line per member, under the member's id and upload name."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(INTAKE_COLUMNS)
        for name, submissions in students.items():
            for s in submissions:
                group = placed.get(s.student_id)
                for student in group.members if group else [s.student_id]:
                    writer.writerow(record_cells(IntakeLine(
                        student, name, s.lms, group.names.get(student, group.name) if group else s.name,
                        s.late_marked, s.origin,
                        groups.upload_name(s.lms, s.reupload, group, student) if group else s.reupload, s.problem)))
