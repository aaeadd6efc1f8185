"""Every setting of a grading run, declared once: the traits of `GradingSettings`.

    c.GradingSettings.timeout = 900          # in the course's nbgrader_config.py, or
    autograder grade 04_xla --timeout 900    # on the command line, on top of it

Each trait has its type, its default and its help (and the tag `grade_key` when its value decides a
grade: a kept row is used again only under the same values); `autograder grade`'s options are made from them
(`autograder.cli`: `--<name>`, or the trait's `flag` tag, with its `metavar` tag), so the command line,
the course's nbgrader configuration and the code read the same record. The record travels whole: to
a worker in its job.json (`autograder.execution.protocol`), to a Dask task pickled; nbgrader gets it as
a traitlets `Config` section (`as_config`), and the classes that use a setting inside nbgrader (the
`InjectProfile` preprocessor, the kernel sandbox's provisioner) read it from the configuration they
are given, as `GradingSettings(parent=self)`. `Limits` is what one kernel's sandbox may use, as the
sandbox takes it; its defaults are the traits' defaults.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from traitlets import Bool, Enum, Float, Int, Unicode, validate
from traitlets.config import Config, Configurable

from course import syllabus

SANDBOX_MODES = ("auto", "bwrap", "none")
GB = 2**30
# Similar submissions' defaults; why these values: autograder.grading.similarity, which reads them here.
SIMILARITY_THRESHOLD = 0.5
SIMILARITY_MIN_SHARED = 100
SIMILARITY_TOP = 10


@dataclass(frozen=True)
class Limits:
    """What one kernel's sandbox may use besides memory and wall clock (the watchdog's)."""
    disk_bytes: int = GB          # each of /tmp (the working folder) and /dev/shm; also the largest file
    tasks: int = 1024             # processes and threads
    cpu_seconds: int = 0          # CPU time per process; 0: none


def database_url(url: str) -> str:
    """An SQLAlchemy URL as nbgrader's documentation and users write it, for the driver this
    environment ships: `postgresql://...` (and Heroku's `postgres://...`) name no driver, and
    SQLAlchemy 2.1 picks psycopg 3 for them, while the lock installs psycopg2 (psycopg2-binary).
    A URL that names its driver (`postgresql+psycopg2://`, `sqlite:///...`) is left as it is."""
    scheme, separator, rest = url.partition("://")
    if separator and scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg2://{rest}"
    return url


PASSWORD_VARIABLE = "PGPASSWORD"   # libpq reads the password from it when the URL has none


def without_password(url: str) -> str:
    """The database URL without its password, which goes to this process's environment instead, as
    libpq's `PGPASSWORD`: the workers this process starts inherit it (their kernels do not:
    `autograder.execution.provisioner`), and the URL that job.json, Dask tasks, the formgrader's
    configuration and log lines carry holds no secret. A PostgreSQL URL only (libpq's variable)."""
    from sqlalchemy.engine import URL, make_url

    parsed = make_url(url)
    if parsed.password is None:
        return url
    if not parsed.drivername.startswith("postgresql"):
        raise ValueError(f"a password in a {parsed.drivername} database URL: only PostgreSQL's can be kept out of "
                         "the run folder (in PGPASSWORD); give the URL without it")
    os.environ[PASSWORD_VARIABLE] = str(parsed.password)
    return URL.create(parsed.drivername, parsed.username, None, parsed.host, parsed.port, parsed.database,
                      parsed.query).render_as_string(hide_password=False)


_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*")   # no `.`: never a path out of TZPATH


def time_zone(name: str) -> ZoneInfo:
    """The tz database's zone `name` (UTC, Europe/Berlin); a ValueError naming it when there is none
    (`timestamp_zone`, and the zone a timestamp.txt names: autograder.lms.exchange)."""
    try:
        if _ZONE_NAME.fullmatch(name):
            return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        pass
    raise ValueError(f"{name!r} is not a time zone of the tz database (e.g. UTC, CET, Europe/Berlin)")


class GradingSettings(Configurable):
    """The settings of `autograder grade`: the command line's options, and `c.GradingSettings.<name>` in
    the course's nbgrader_config.py (the options win)."""

    profile = Enum(syllabus.PROFILES, default_value="grade",
                   help="the course profile whose parameters are injected over the student's parameters cell"
                   ).tag(config=True, grade_key=True)
    workers = Int(None, allow_none=True, help="submissions graded at once on this machine (default: one per core)"
                  ).tag(config=True, metavar="N")
    timeout = Float(600.0, help="wall-clock seconds per notebook: past it the notebook's kernel is killed "
                                "(status timeout)").tag(config=True, grade_key=True, metavar="SECONDS")
    cell_timeout = Int(None, allow_none=True,
                       help="seconds one cell may run (nbgrader's Execute.timeout): past it the cell is "
                            "interrupted (status timeout); default: Execute.timeout of the course's nbgrader "
                            "configuration").tag(config=True, grade_key=True, metavar="SECONDS")
    memory_limit = Float(6.0, help="resident memory of a notebook's worker and kernel, in GB: past it both are "
                                   "killed (status error)").tag(config=True, grade_key=True, metavar="GB")
    force = Bool(False, help="re-grade submissions already graded with the same content").tag(config=True)
    sandbox = Enum(SANDBOX_MODES, default_value="auto",
                   help="a sandbox for every kernel: auto (the one this machine has: bwrap) or bwrap, both refusing "
                        "to grade when it cannot start, naming the fix; none: no sandbox, chosen knowingly").tag(config=True, grade_key=True)
    disk_limit = Float(Limits.disk_bytes / GB,
                       help="size of each kernel sandbox's /tmp (its working folder) and /dev/shm, and its largest "
                            "file, in GB").tag(config=True, grade_key=True, metavar="GB")
    task_limit = Int(Limits.tasks, help="processes and threads of a notebook's worker and kernel"
                     ).tag(config=True, grade_key=True, metavar="N")
    cpu_limit = Float(Limits.cpu_seconds, help="CPU seconds per process of a kernel's sandbox; 0: none (the wall "
                                               "clock bounds it anyway)").tag(config=True, grade_key=True, metavar="SECONDS")
    executor = Unicode(None, allow_none=True,
                       help="where the notebooks run: an executor registered under the autograder.executors entry "
                            "point (local, dask, or a plug-in's); default: dask with --scheduler, else local"
                       ).tag(config=True, metavar="NAME")
    scheduler = Unicode(None, allow_none=True,
                        help="run the notebooks on a dask.distributed cluster, e.g. tcp://head-node:8786"
                        ).tag(config=True, metavar="ADDRESS")
    db_url = Unicode(None, allow_none=True,
                     help="keep the gradebook in this database (an SQLAlchemy URL as nbgrader takes it), e.g. "
                          "postgresql://grader@db/gradebook; default: a SQLite file per worker"
                     ).tag(config=True, flag="--db", metavar="URL")
    timestamp_zone = Unicode(None, allow_none=True,
                             help="the time zone of a collected timestamp.txt that names none (ngshare writes its "
                                  "UTC times so: UTC); default: such a file gives no submission time"
                             ).tag(config=True, metavar="ZONE")
    term = Unicode(None, allow_none=True, help="due dates and the late penalty (TOML); default: term.toml in the "
                                               "course root, if any").tag(config=True, metavar="FILE")
    extensions = Unicode(None, allow_none=True, help="per-student due dates (CSV: student_id,assignment,due)"
                         ).tag(config=True, metavar="CSV")
    submitted_at = Unicode(None, allow_none=True,
                           help="submission times (CSV: student_id,submitted_at, ISO 8601 with an offset); a "
                                "submission without one is on time").tag(config=True, metavar="CSV")
    overrides = Unicode(None, allow_none=True,
                        help="points set by hand (CSV: student_id,cell,points,comment,grader); default: "
                             "overrides/<assignment>.csv in the course root, if any; they survive --force"
                        ).tag(config=True, metavar="CSV")
    roster = Unicode(None, allow_none=True,
                     help="the class list whose names grades.csv and report.html show (CSV: Canvas's gradebook "
                          "export, Moodle's grade export or grading worksheet, or student_id,name); its names win "
                          "over an LMS download's").tag(config=True, metavar="CSV")
    groups = Unicode(None, allow_none=True,
                     help="group work: who is in which group (CSV: group,student_id, or Canvas's group set export, or "
                          "Moodle's grading worksheet of a team assignment); a group's submission is graded once and "
                          "its row given to every member").tag(config=True, metavar="CSV")
    similarity_threshold = Float(SIMILARITY_THRESHOLD,
                                 help="similar submissions: a pair is listed when at least this share (0 to 1) of "
                                      "one student's own code is found in the other's").tag(config=True, metavar="SHARE")
    similarity_min_shared = Int(SIMILARITY_MIN_SHARED,
                                help="similar submissions: a pair is listed only when the shared code is at least this "
                                     "many characters (counted after renaming, without comments and spaces)").tag(config=True, metavar="CHARS")
    similarity_top = Int(SIMILARITY_TOP, help="similar submissions: how many pairs per notebook report.html shows "
                                              "(similarity.csv lists every pair)").tag(config=True, metavar="N")

    @validate("similarity_threshold")
    def _share(self, proposal):
        if not 0 <= proposal["value"] <= 1:
            raise ValueError(f"{proposal['trait'].name} must be between 0 and 1, got {proposal['value']}")
        return proposal["value"]

    @validate("timestamp_zone")
    def _zone(self, proposal):
        if proposal["value"] is not None:
            time_zone(proposal["value"])   # a ValueError that names it
        return proposal["value"]

    @validate("db_url")
    def _database_url(self, proposal):
        return without_password(database_url(proposal["value"])) if proposal["value"] else proposal["value"]

    @validate("workers", "timeout", "memory_limit", "disk_limit", "task_limit", "cell_timeout", "similarity_top")
    def _positive(self, proposal):
        value = proposal["value"]
        if value is not None and value <= 0:
            raise ValueError(f"{proposal['trait'].name} must be positive, got {value}")
        return value

    @validate("cpu_limit", "similarity_min_shared")
    def _not_negative(self, proposal):
        if proposal["value"] < 0:
            raise ValueError(f"{proposal['trait'].name} must be 0 or more, got {proposal['value']}")
        return proposal["value"]

    @property
    def limits(self) -> Limits:
        return Limits(disk_bytes=int(self.disk_limit * GB), tasks=self.task_limit, cpu_seconds=int(self.cpu_limit))

    @property
    def local_workers(self) -> int:
        """How many submissions this machine grades at once."""
        return self.workers or os.cpu_count() or 1

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_limit * GB)

    def as_config(self) -> Config:
        """These settings as the configuration section that gives them back (`GradingSettings(config=...)`)."""
        return Config({type(self).__name__: self.trait_values(config=True)})

    def key(self) -> dict:
        """What of these settings decides a notebook's grade, the traits tagged `grade_key` (the re-run
        cache keys rows on it, with the course's files: `autograder.grading.cache`)."""
        return {name: getattr(self, name) for name in sorted(self.trait_names(grade_key=True))}
