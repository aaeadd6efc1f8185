"""Group work: the group roster, checked before anything is graded, and a group's one result spread
to every member.

    autograder grade 02_convlstm --submissions downloads.zip --groups groups.csv

A group hands in one submission. Canvas names its file after the member who submitted it (the
group's representative: `doejane_12345_678_<file>`, one user id for the whole group); Moodle's team
submissions come as `<group name>_<group id>_assignsubmission_file/` (mod/assign/classes/downloader.php,
`get_student_prefix`: the group's name with `_` turned into spaces, then `_<group id>`), and the one
submission Moodle keeps for all the students in no group as `<default group>_assignsubmission_file/`
("Default group", "Standard-Gruppe", ... without an id: `autograder.lms.downloads`). Either way the
download names no member but one, so the roster says who is in which group. `read` takes any of:

- a plain CSV `group,student_id`, one line per member (the ids as grading knows them);
- Canvas's CSV export of a group set (the API's `GET /api/v1/group_categories/:id/export`, "a csv
  file of users in format ready to import"; where the People page offers it is not checked here):
  columns `name, canvas_user_id, user_id, login_id, sections, group_name, canvas_group_id, group_id`.
  Confirmed from canvas-lms doc/api/group_category_csv.md: `canvas_user_id`, `user_id`, `login_id`,
  `group_name`, `canvas_group_id`, `group_id` (the import's columns, which the export writes); the
  export's `name` and `sections` columns and their order are from third-party tools that read it.
  Members are matched by `canvas_user_id`, the id of Canvas's download names; a line with an empty
  `group_name` is a student in no group.
- Moodle's grading worksheet of a team assignment (View all submissions, "Download grading
  worksheet"), in the site's language. Confirmed from mod/assign/gradingtable.php (its download mode):
  the identifier column (`recordid`: "Participant 1001", `hiddenuser` and the participant id) is
  written first, the full name (`fullname`) right after it unless blind marking hides identities, and
  with team submissions a group column (`col_team`, header `submissionteam`) holding the group's name,
  `defaultteam` ("Default group": a student in no group, where the assignment lets one hand in
  without a group), `noteamgrader` ("Not a member of any group, so unable to make submissions.") or
  `multipleteamsgrader` ("Member of more than one group, so unable to make submissions.", refused
  here), all in the site's language. The identifier column is found as the export finds it
  (`roster.worksheet_identifier`: `Identifier`, else the first column by its values); the group and
  full name columns by their headers and the group column's values by Moodle's strings, in every
  language of the lang packs `moodle_strings` holds (copied from the packs; assumed, not tried on a
  live Moodle site: that a site's download writes them as the packs have them). A worksheet of another
  language, or of a site that changed those strings, is refused with its columns named (write the
  plain CSV). It is the Moodle file that pairs
  members with the participant ids that the grade import and the feedback upload use: Moodle's own
  group exports (Groups overview, a report builder "Groups" report) name users by user id, name or
  email, never by participant id.

With the class roster (`--roster`: its students, `roster.names`) `read` also refuses a member of a group
(or of Moodle's default group) whom the class roster lacks, with the line that names them: their row
would be graded into grades.csv for a student the LMS does not have.

`Groups.check` places every submission of a class before anything is graded: its id is a member's
(Canvas's representative, a folder named after a member) or the group's own (a folder named after the
group, Moodle's group id), or for a Moodle download its name is the group's. Moodle's default group
folder is, unless the roster has a group of that name, the submission of the one student the worksheet
puts in the default group (its Group column says `defaultteam`, in any language of `moodle_strings`):
graded once, its row given to that student as a group of one (grades.csv's group: the default
group's name, as the worksheet says). Where the worksheet has several students there, or none (or the
roster is no worksheet), the download cannot say whose it is: refused, naming its folder and those
students. A submission that places in no group is graded as an individual under its own id, as without
a roster (a student in no group, or a group the roster lacks: `autograder export` then refuses an id its
class list does not have). Every problem is named at once: a student in two groups (with both groups),
a group without members, a member the class roster lacks; then a group with two submissions (with
both), a default group folder that names no one student.

`spread` gives every member the group's row; `upload_name` is the name under which a member's
feedback goes back through the LMS. Moodle: `<name>_<participant id>_assignsubmission_file/`, the
member's own folder (importziplib.php reads the participant id from it, which a group's folder, named
by the group id, does not give). Canvas: the group's upload name with the member's user id in place of
the representative's (Canvas reads the user and attachment ids from a name's first two all-digit parts
and wants the attachment among that user's submission's; assumed, not tried on a live Canvas: a group
submission gives every member's submission the group's attachments).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Collection, TypeVar

from autograder import csvfile
from autograder.errors import AutograderError
from autograder.lms import downloads, moodle_strings
from autograder.lms.roster import participant_id, worksheet_identifier

T = TypeVar("T")

PLAIN = ("group", "student_id")
CANVAS = ("canvas_user_id", "group_name")


class GroupsError(AutograderError):
    """A group roster that cannot be used: the message names every problem, with its file and lines."""


@dataclass
class Group:
    """One group of the roster: its name, what else names it, its members."""
    name: str
    ids: set[str] = field(default_factory=set)            # what else names it: Canvas's canvas_group_id, group_id
    members: list[str] = field(default_factory=list)      # student ids, in roster order
    names: dict[str, str] = field(default_factory=dict)   # member -> their name, where the roster has it
    lines: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Groups:
    """The group roster read from `path`: every group by its name, every member's group."""
    path: Path
    groups: dict[str, Group]           # by name
    member_of: dict[str, Group]        # student id -> their group
    default: Group | None = None       # a Moodle worksheet's students in the default group (`defaultteam`):
                                       # who the download's default group folder may be; None for another roster

    def of(self, submission_id: str, lms: str = "", name: str = "") -> Group | None:
        """The group a submission is the group's submission of, or None: an individual's."""
        if submission_id in self.member_of:
            return self.member_of[submission_id]
        for group in self.groups.values():
            if submission_id == group.name or submission_id in group.ids:
                return group
        if lms == downloads.MOODLE and name:
            return next((group for group in self.groups.values() if _moodle_name(group.name) == _moodle_name(name)),
                        None)
        return None

    def check(self, submissions: list[tuple[str, ...]]) -> dict[str, Group]:
        """`(student id, lms, name[, where it is in the download])` of every submission -> its group
        (individuals left out). A GroupsError names every group with two submissions (both of them) and
        every Moodle default group folder that is no one student's (`_default_group`)."""
        placed: dict[str, Group] = {}
        by_group: dict[str, list[str]] = {}
        refused: dict[str, str] = {}
        for student, lms, name, *where in submissions:
            group = self.of(student, lms, name)
            if group is None and downloads.default_group(lms, student) and student not in refused:
                group, problem = self._default_group(student, where[0] if where else student)
                if problem:
                    refused[student] = problem
            if group is not None:
                placed[student] = group
                if student not in by_group.setdefault(group.name, []):
                    by_group[group.name].append(student)
        twice = [f"group {name!r} has {len(found)} submissions, one each from {' and '.join(found)}: "
                 "a group hands in one" for name, found in by_group.items() if len(found) > 1]
        if twice or refused:
            raise GroupsError(f"{self.path}:\n" + "\n".join(twice + list(refused.values())))
        return placed

    def _default_group(self, name: str, where: str) -> tuple[Group | None, str]:
        """Moodle's default group folder `name` (found at `where`): the worksheet's one student in the
        default group as a group of one, or why the download cannot say whose it is. Moodle keeps one
        submission for all the students in no group and names none of them in the download
        (`autograder.lms.downloads`), so with several there, it is refused rather than guessed."""
        fix = (f"rename its folder to '<full name>_<participant id>_assignsubmission_file' of the student whose "
               f"work it is, or list the students it is the work of under the group {name!r} in a plain group "
               "roster (group,student_id)")
        default = self.default
        if default is not None and len(default.members) == 1:
            return default, ""
        if default is None or not default.members:
            return None, (f"{where}: Moodle's default group folder ({name!r}: the submission of the students in no "
                          "group) names no student, and this roster puts no student in the default group (the team "
                          f"grading worksheet's Group column, {name!r} for them, says who is): {fix}")
        students = ", ".join(f"{member} (line {line})" for member, line in zip(default.members, default.lines))
        return None, (f"{where}: Moodle's default group folder ({name!r}) is the one submission Moodle keeps for all "
                      f"{len(default.members)} students in no group, {students}, and names none of them: which one "
                      f"handed it in, the download does not say; {fix}")


def _moodle_name(name: str) -> str:
    """A group's name as Moodle's download writes it in a folder name (`_` -> space)."""
    return name.replace("_", " ").strip()


def read(path: Path, class_list: Collection[str] | None = None, class_path: object = "") -> Groups:
    """The group roster in any of the three layouts (by its header), checked: every problem at once. With
    `class_list` (the ids of the class roster `class_path`), a member it lacks is one."""
    columns, lines = csvfile.read_table(path, (), error=GroupsError)
    problems = []
    default = None
    team = [column for column in columns if column in moodle_strings.GROUP]
    if all(column in columns for column in CANVAS):
        entries = [(line, line["group_name"], line["canvas_user_id"], line["name"],
                    {line["canvas_group_id"], line["group_id"]} - {""}) for line in lines]
    elif all(column in columns for column in PLAIN):
        entries = [(line, line["group"], line["student_id"], "", set()) for line in lines]
    elif team:
        group_column, identifier, full_name = _worksheet_columns(path, columns, lines, team)
        several = [line for line in lines if line[group_column] in moodle_strings.SEVERAL_GROUPS]
        problems += [f"line {line.number}: {line[identifier]} is in more than one group (Moodle does not say "
                     "which): a student is in one group" for line in several]
        for line in lines:      # in the default group: who the download's default group folder may be
            if line[group_column] in moodle_strings.DEFAULT_GROUP and (student := participant_id(line[identifier])):
                default = default or Group(line[group_column])
                if student not in default.members:
                    default.members.append(student)
                    default.lines.append(line.number)
                    if full_name and line[full_name]:
                        default.names[student] = line[full_name]
        entries = [(line, "" if line[group_column] in moodle_strings.NO_GROUP else line[group_column],
                    participant_id(line[identifier]), line[full_name] if full_name else "", set())
                   for line in lines if line not in several]
    else:
        raise GroupsError(f"{path}: not a group roster: expected the columns {', '.join(PLAIN)} (plain), "
                          f"{', '.join(CANVAS)} (Canvas's group set export) or, for Moodle's grading worksheet of a "
                          "team assignment, a group column named as Moodle names it in the languages of its lang "
                          f"packs ({', '.join(sorted(moodle_strings.GROUP))}); found "
                          f"{', '.join(columns) or 'no header'}. For a worksheet in another language write the plain "
                          "CSV from it (group, and the participant number as student_id)")
    groups: dict[str, Group] = {}
    member_of: dict[str, Group] = {}
    first_line: dict[str, int] = {}
    for line, name, student, student_name, ids in entries:
        if not name:
            continue      # a student in no group: an individual
        group = groups.setdefault(name, Group(name))
        group.ids |= ids
        group.lines.append(line.number)
        if not student:
            continue      # the group named without a member (checked below)
        if student in member_of and member_of[student] is not group:
            problems.append(f"line {line.number}: student {student} is in two groups, {member_of[student].name!r} "
                            f"(line {first_line[student]}) and {name!r}")
            continue
        if student not in group.members:
            group.members.append(student)
            member_of[student] = group
            first_line[student] = line.number
            if student_name:
                group.names[student] = student_name
    problems += [f"line{'s' if len(group.lines) > 1 else ''} {', '.join(map(str, group.lines))}: group "
                 f"{group.name!r} has no members"
                 for group in groups.values() if not group.members]
    if class_list is not None:
        problems += _not_in_class(member_of, first_line, default, set(class_list), class_path)
    if problems:
        raise GroupsError(f"{path}:\n" + "\n".join(problems))
    if not groups:
        raise GroupsError(f"{path}: no group in it (every student is in none)")
    return Groups(Path(path), groups, member_of, default)


def _not_in_class(member_of: dict[str, Group], first_line: dict[str, int], default: Group | None,
                  class_list: set[str], class_path: object) -> list[str]:
    """Every member of a group (or of Moodle's default group) whom the class roster lacks, by line."""
    named = sorted([(first_line[student], student, group.name) for student, group in member_of.items()]
                   + ([(line, student, default.name) for student, line in zip(default.members, default.lines)]
                      if default else []))
    missing = [f"line {line}: student {student} of group {name!r} is not in the class roster {class_path}"
               for line, student, name in named if student not in class_list]
    if missing and len(missing) == len(named):
        missing.append(f"(none of its students is in {class_path}: do both name students alike, by the ids "
                       "grading knows them by?)")
    return missing


def _worksheet_columns(path: Path, columns: list[str], lines: list[csvfile.Line],
                       team: list[str]) -> tuple[str, str, str]:
    """A team worksheet's group, identifier and full name columns (the last "" where identities are hidden):
    the group's and the name's by their headers in the site's language (`moodle_strings`), the
    identifier as the export finds it (`roster.worksheet_identifier`)."""
    columns_named = f" (its columns: {', '.join(columns)})"
    if len(team) > 1:
        raise GroupsError(f"{path}: more than one column could be the group's, {', '.join(team)}; Moodle's team "
                          f"worksheet has one{columns_named}")
    identifier = worksheet_identifier(columns, [line.values for line in lines], path, GroupsError,
                                      f"; its column {team[0]} is named as Moodle names a team worksheet's group "
                                      f"column{columns_named}")
    full_name = next((column for column in columns if column in moodle_strings.FULL_NAME), "")
    return team[0], identifier, full_name


def spread(items: list[T], group_of: Callable[[T], Group | None], for_member: Callable[[T, Group, str], T]) -> list[T]:
    """Every item of an individual as it is; an item of a group's submission once per member
    (`for_member(item, group, member)`), in the roster's order of members."""
    found = []
    for item in items:
        group = group_of(item)
        found += [item] if group is None else [for_member(item, group, member) for member in group.members]
    return found


def as_member(item: T, group: Group, member: str) -> T:
    """A group's item (a dataclass with `student_id` and `group`, such as a grades row) as `member`'s:
    a deep copy with their id and the group's name, sharing nothing with the group's item."""
    return replace(copy.deepcopy(item), student_id=member, group=group.name)  # type: ignore[type-var]


def upload_name(lms: str, reupload: str, group: Group, member: str) -> str:
    """What a feedback file's name starts with to reach `member` through the LMS, from the group's
    submission's (`reupload`: the representative's on Canvas, the group's folder on Moodle); "" where
    the submission came from no LMS download."""
    if not reupload:
        return ""
    if lms == downloads.MOODLE:
        # "assignsubmission_file/" after "<name>_<id>_", or after the default group's "<name>_" (no `_` in a name)
        plugin = reupload[reupload.index("_assignsubmission") + 1:]
        return f"{_moodle_name(group.names.get(member) or group.name)}_{member}_{plugin}"
    parts = reupload.rstrip("_").split("_")
    user = next(index for index, part in enumerate(parts) if part.isascii() and part.isdigit())
    name = re.sub(r"[^a-z0-9]", "", (group.names.get(member) or group.name).lower())
    if not name or name.isdigit():
        name = f"group{name}"
    return "_".join([name, member, *parts[user + 1:]]) + "_"
