"""Read a folder of submissions, as an LMS download gives it, without changing it.

    DIR/<student_id>/<notebook>.ipynb     a folder per student
    DIR/<student_id>.zip                  or a zip per student

Each entry becomes a `Submission`: either a notebook to grade (read into memory) or a rejection
with the reason, so the rest of the class is still graded.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import nbformat

MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_ZIP_ENTRIES = 1000


@dataclass(frozen=True)
class Submission:
    student_id: str
    origin: str                 # the file or folder it came from, relative to DIR
    notebook_bytes: bytes | None = None
    problem: str = ""           # why it cannot be graded; empty when it can

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.notebook_bytes or b"").hexdigest()


def read_class(submissions: Path, notebook_name: str) -> list[Submission]:
    """Every student in `submissions`, sorted by student id."""
    if not submissions.is_dir():
        raise NotADirectoryError(f"submissions folder {submissions} does not exist or is not a folder")
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


def _pick(names: list[str], notebook_name: str) -> tuple[str | None, str]:
    if notebook_name in names:
        return notebook_name, ""
    candidates = [name for name in names if _matches(PurePosixPath(name).name, notebook_name)]
    if len(candidates) == 1:
        return candidates[0], ""
    if not candidates:
        return None, f"no {notebook_name} in the submission (found: {', '.join(sorted(names)) or 'nothing'})"
    return None, f"several candidates for {notebook_name}: {', '.join(sorted(candidates))}"


def _from_folder(folder: Path, notebook_name: str) -> Submission:
    student_id = folder.name
    files = {path.relative_to(folder).as_posix(): path for path in folder.rglob("*.ipynb")
             if ".ipynb_checkpoints" not in path.parts}
    chosen, problem = _pick(sorted(files), notebook_name)
    if not chosen:
        return Submission(student_id, folder.name, problem=problem)
    path = files[chosen]
    origin = f"{folder.name}/{chosen}"
    if path.is_symlink():
        return Submission(student_id, origin, problem="the notebook is a symbolic link: not followed")
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        return Submission(student_id, origin, problem=f"the notebook is larger than the limit of {MAX_NOTEBOOK_BYTES:,} bytes")
    return _validated(student_id, origin, path.read_bytes())


def _from_zip(archive: Path, notebook_name: str) -> Submission:
    student_id = archive.stem
    try:
        with zipfile.ZipFile(archive) as bundle:
            infos = bundle.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                return Submission(student_id, archive.name, problem=f"the zip has more than {MAX_ZIP_ENTRIES} entries")
            for info in infos:
                if _escapes(info.filename):
                    return Submission(student_id, archive.name,
                                      problem=f"zip entry {info.filename!r} would land outside the extraction folder")
            names = [info.filename for info in infos if not info.is_dir()
                     and info.filename.endswith(".ipynb") and "__MACOSX" not in info.filename
                     and ".ipynb_checkpoints" not in info.filename]
            by_name = {PurePosixPath(name).name: name for name in names}
            chosen, problem = _pick(sorted(by_name), notebook_name)
            if not chosen:
                return Submission(student_id, archive.name, problem=problem)
            info = bundle.getinfo(by_name[chosen])
            if info.file_size > MAX_NOTEBOOK_BYTES:
                return Submission(student_id, archive.name,
                                  problem=f"the notebook is larger than the limit of {MAX_NOTEBOOK_BYTES:,} bytes")
            data = bundle.read(info)
    except (zipfile.BadZipFile, OSError) as error:
        return Submission(student_id, archive.name, problem=f"not a readable zip file: {error}")
    return _validated(student_id, f"{archive.name}:{by_name[chosen]}", data)


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
    return nbformat.read(io.BytesIO(submission.notebook_bytes), as_version=4)
