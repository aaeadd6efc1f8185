"""The file names of an LMS's bulk download of submissions, read by the rules the LMS itself uses.

Canvas, "Download Submissions" (`ContentZipper#add_submission`, instructure/canvas-lms
lib/content_zipper.rb): one flat file per uploaded file,

    <sortable name>[_LATE]_<user id>_<attachment id>_<file name>      doejane_LATE_12345_678_hw1-1.ipynb
    anon_<anonymous id>_<attachment id>_<file name>                   anonymous grading

The name is the student's "Last, First" lower-cased with everything but letters, digits and `_`
removed; `LATE` is Canvas's own late marker (its due date, not the term file's); only the newest
attempt is in the zip, and a file uploaded again under the same name is renamed `hw1-1.ipynb`.
Canvas takes feedback files back ("Upload Submissions" in the gradebook) by the first two all-digit
parts of a name, the user id and the attachment id (`Assignment#infer_comment_context_from_filename`,
app/models/assignment.rb), so a feedback file named `<the same prefix>_<anything>` reaches the student.

Moodle, "Download all submissions" (mod/assign/classes/downloader.php, moodle/moodle): a folder per
student and submission plugin (the default since Moodle 3.1), or flat names (before 3.1, or with
"Download submissions in folders" off),

    <full name>_<participant id>_assignsubmission_file/<file path><file name>
    <full name>_<participant id>_assignsubmission_file_<file name>

The full name has its `_` replaced by spaces; the participant id is the assignment's own id for the
student (`assign::get_uniqueid_for_user`), the number in the grading worksheet's `Identifier` column
("Participant 123456"), not the Moodle user id. Moodle takes feedback files back ("Upload multiple
feedback files in a zip") from the same folder names (mod/assign/feedback/file/importziplib.php).

A team assignment (`autograder.lms.groups`) names a folder after the group instead,

    <group name>_<group id>_assignsubmission_file/...          a group's submission
    <default group>_assignsubmission_file/...                  the submission of the students in no group

Confirmed in moodle/moodle mod/assign/classes/downloader.php (Moodle 4.1 and later; read at commit
da5455238d1a24a0246b11f4b682b73664993c0b): `get_student_prefix` (lines 172-197), for a team submission,
takes the student's `get_submission_group`: its name with `_` turned into spaces and `'_' . <group id>`,
or for a student in no group `get_string('defaultteam', 'mod_assign')` and no id at all (lines 182-183:
"Default group", "Standard-Gruppe", ... in the language of whoever downloads), then `clean_filename`
(which leaves every lang pack's `defaultteam` as it is); the plugin's part follows as for a student.
`load_student_filelist` (lines 131-149) zips each prefix once ("We already send that file (in group
mode)"), and `get_student_submission` (lines 157-164) asks `get_group_submission($userid, 0, false)`,
which for a student in no group is the one record of group 0 (mod/assign/locallib.php: groupid 0, userid
0). So Moodle keeps one submission for all the students in no group, and the download has one such
folder, naming none of them, however many hand in. Before 4.1 (locallib.php's `download_submissions`)
every member had a folder of their own, `<group name>-<full name>_<participant id>_...`, which the
student rule reads.

Neither download carries the submission time: both zip writers stamp the files with the time the zip
was made. The time comes from `--submitted-at`; Canvas's LATE marker is kept.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath

from autograder.lms import moodle_strings

CANVAS, MOODLE = "canvas", "moodle"
CANVAS_RULE = "<name>[_LATE]_<user id>_<attachment id>_<file name>"
MOODLE_RULE = ("<full name>_<participant id>_assignsubmission_<plugin>[/ or _]<file name>, or a team "
               "assignment's <default group>_assignsubmission_<plugin>[/ or _]<file name>")
# The folder name of the students in no group: `defaultteam` in every language of `moodle_strings`, with
# `_` turned into spaces as downloader.php does (none of them has one, nor anything clean_filename drops).
DEFAULT_GROUP = {name.replace("_", " ") for name in moodle_strings.DEFAULT_GROUP}

_ANON = re.compile(r"anon_[A-Za-z0-9]+")


@dataclass(frozen=True)
class Entry:
    """One file of a download, attributed to its student by the LMS's naming rule."""
    student_id: str      # Canvas: the user id (or anon_<id>); Moodle: the participant id (a team's group id;
                         # the default group's name for the students in no group: `default_group`)
    name: str            # the student's name as the LMS wrote it ("doejane", "Jane Doe")
    file_name: str       # the file's own name, after the LMS's renames ("00_gpu_setup-1.ipynb")
    path: str            # where it is in the download
    late: bool = False   # Canvas's LATE marker
    reupload: str = ""   # what a feedback file's name starts with to go back to this student, separator
                         # included: "doejane_12345_678_", "Jane Doe_77_assignsubmission_file/"


def canvas(path: str) -> Entry | None:
    """A top-level file of a Canvas download, or None when its name follows no Canvas rule."""
    if "/" in path.strip("/"):
        return None
    parts = path.split("_")
    if len(parts) >= 4 and parts[0] == "anon" and _ANON.fullmatch(f"anon_{parts[1]}") and parts[2].isdigit():
        student, name, late, attachment, rest = f"anon_{parts[1]}", "", False, parts[2], parts[3:]
        prefix = parts[:3]
    else:
        digits = [index for index, part in enumerate(parts) if part.isascii() and part.isdigit()]
        if len(digits) < 2 or digits[1] != digits[0] + 1 or digits[0] == 0 or digits[1] + 1 >= len(parts):
            return None
        user = digits[0]
        head = parts[:user]
        late = head[-1] == "LATE"
        name = "_".join(head[:-1] if late else head)
        if not name:
            return None
        student, attachment, rest = parts[user], parts[user + 1], parts[user + 2:]
        prefix = parts[:user + 2]
    file_name = "_".join(rest)
    if not file_name:
        return None
    return Entry(student, name, file_name, path, late, "_".join(prefix) + "_")


def moodle(path: str) -> Entry | None:
    """A file of a Moodle download (in the per-student folders or flat), or None when it follows no rule.
    The default group's folder (a team assignment's students in no group) is attributed to the default
    group's name, as the student id: which student it is, only the group roster says (`default_group`)."""
    top, _, below = path.partition("/")
    team = top.split("_", 3)      # <default group>_assignsubmission_<plugin>[_<file name>]
    if len(team) >= 3 and unicodedata.normalize("NFC", team[0]) in DEFAULT_GROUP:
        student = name = unicodedata.normalize("NFC", team[0])
        head, rest = team[:3], team[3] if len(team) == 4 else ""
    else:
        info = top.split("_", 4)      # Moodle's own explode('_', $name, 5)
        if len(info) < 4 or not info[0] or not info[1].isdigit():
            return None
        student, name = info[1], info[0]
        head, rest = info[:4], info[4] if len(info) == 5 else ""
    plugin = head[-1]
    file_name = PurePosixPath(below).name if below else rest
    if not head[-2].startswith("assignsubmission") or not plugin or not file_name or (below and rest):
        return None
    reupload = f"{top}/" if below else "_".join(head) + "_"
    return Entry(student, name, file_name, path, reupload=reupload)


def default_group(lms: str, student_id: str) -> bool:
    """Whether a submission of a download is Moodle's default group's: that of the students in no group,
    named after no student."""
    return lms == MOODLE and student_id in DEFAULT_GROUP


def detect(paths: list[str]) -> str | None:
    """The LMS whose naming the download's files follow: Moodle when any file follows Moodle's rule,
    Canvas when any top-level file follows Canvas's; None for a plain folder of students."""
    visible = [path for path in paths if not hidden(path)]
    if any(moodle(path) for path in visible):
        return MOODLE
    if any(canvas(path) for path in visible):
        return CANVAS
    return None


def parse(lms: str, path: str) -> Entry | None:
    return canvas(path) if lms == CANVAS else moodle(path)


def rule(lms: str) -> str:
    return CANVAS_RULE if lms == CANVAS else MOODLE_RULE


def hidden(path: str) -> bool:
    """Files an archiver or an OS adds (`.DS_Store`, `__MACOSX/`, checkpoints): not part of any submission."""
    return any(part.startswith(".") or part in ("__MACOSX", ".ipynb_checkpoints") for part in PurePosixPath(path).parts)
