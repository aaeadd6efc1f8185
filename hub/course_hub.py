"""What the course's JupyterHub adds to JupyterHub, through its documented hooks (hub/jupyterhub_config.py).

- `ClassSettings`: the class's hub settings, one TOML file (hub/class.example.toml says what each is).
- `LaunchRoles`: an LTI 1.3 launch's roles, as nbgrader's groups. Instructors and teaching assistants
  are the course's graders (`formgrade-<course>`, the formgrader); everyone is in `nbgrader-<course>`
  (the Assignments panel). `Authenticator.post_auth_hook`, with `Authenticator.manage_groups`.
- `NonceStore`: every launch's id_token nonce, kept until the token expires, so a launch cannot be
  replayed: jupyterhub-ltiauthenticator 1.6.3 checks the nonce against a cookie only
  (ltiauthenticator/lti13/handlers.py), and a captured callback with its cookies logs in again.
- `ensure_unix_user`: each student's server runs as a Unix user of their own, made on first spawn with
  a home only they can read (`Spawner.pre_spawn_hook`).
- `exchange_configuration`: the nbgrader configuration every server reads: nbgrader's own exchange (a
  folder on this machine) or ngshare's (a hub service, for servers that share no filesystem).
- `NgshareCourse`: ngshare's course, its instructors and its students, kept as the hub's logins make
  them (ngshare lets only the users a course lists fetch and submit in it).

Nothing here imports JupyterHub's private modules; tornado's HTTPError is how a hook refuses a login.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import sqlite3
import subprocess
import time
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from tornado import web

ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
# LTI 1.3 role URIs (LTI Advantage, "Role vocabularies"): context roles end in #Instructor, #Learner, ...;
# a teaching assistant is the Instructor sub-role .../membership/Instructor#TeachingAssistant.
GRADER_ROLES = ("membership#Instructor", "membership/Instructor#TeachingAssistant", "membership#ContentDeveloper")
# How long the proxy waits for a server's answer (hub/jupyterhub_config.py): nbgrader's Validate answers
# when the whole notebook has run
PROXY_TIMEOUT_SECONDS = 3600
# A Unix user name the hub creates: the LMS's id as it is (Canvas and Moodle ids are numbers), within
# what useradd accepts and what is safe on a command line; anything else is refused by name.
UNIX_NAME = re.compile(r"[a-z0-9_][a-z0-9_.-]{0,31}")


@dataclass(frozen=True)
class LtiSettings:
    issuer: str
    client_id: str
    authorize_url: str
    jwks_endpoint: str
    username_key: str = "sub"


@dataclass(frozen=True)
class ClassSettings:
    """The class's hub, as the instructor's TOML file sets it."""

    course_id: str
    state_dir: Path
    port: int = 8000
    ip: str = ""
    lti: LtiSettings | None = None
    roster: Path | None = None
    instructors: tuple[str, ...] = ()
    gpu_memory_mb: int | None = None
    cull_idle_seconds: int = 3600
    mem_limit: str | None = None
    cpu_limit: float | None = None
    course_dir: Path | None = None
    formgrader_port: int = 9999
    exchange: str = "folder"
    ngshare_port: int = 10101

    @classmethod
    def read(cls, path: Path) -> "ClassSettings":
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        known = {field.name for field in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown settings {unknown} (known: {sorted(known)})")
        missing = [name for name in ("course_id", "state_dir") if name not in data]
        if missing:
            raise ValueError(f"{path}: missing {missing}")
        if ("lti" in data) == ("roster" in data):
            raise ValueError(f"{path}: give exactly one of [lti] (login from the LMS) and roster (a class "
                             "without an LMS, logging in as its Unix users)")
        lti = LtiSettings(**data["lti"]) if "lti" in data else None
        exchange = data.get("exchange", "folder")
        if exchange not in EXCHANGES:
            raise ValueError(f"{path}: exchange = {exchange!r}: give one of {list(EXCHANGES)}")
        if exchange == "ngshare" and "course_dir" not in data:
            raise ValueError(f"{path}: exchange = \"ngshare\" needs course_dir: the formgrader service is the "
                             "course's instructor in ngshare, who releases and collects")
        base = path.parent
        return cls(course_id=data["course_id"], state_dir=(base / data["state_dir"]).resolve(),
                   port=int(data.get("port", 8000)), ip=data.get("ip", ""), lti=lti,
                   roster=(base / data["roster"]).resolve() if "roster" in data else None,
                   instructors=tuple(data.get("instructors", ())),
                   gpu_memory_mb=data.get("gpu_memory_mb"), cull_idle_seconds=int(data.get("cull_idle_seconds", 3600)),
                   mem_limit=data.get("mem_limit"), cpu_limit=data.get("cpu_limit"),
                   course_dir=(base / data["course_dir"]).resolve() if "course_dir" in data else None,
                   formgrader_port=int(data.get("formgrader_port", 9999)), exchange=exchange,
                   ngshare_port=int(data.get("ngshare_port", 10101)))

    @property
    def graders_group(self) -> str:
        return f"formgrade-{self.course_id}"

    @property
    def students_group(self) -> str:
        return f"nbgrader-{self.course_id}"

    @property
    def grader_user(self) -> str:
        """The Unix user the course's formgrader runs as, owner of the course directory."""
        return f"grader-{self.course_id}"

    @property
    def exchange_folder(self) -> Path:
        """nbgrader's own exchange (`exchange = "folder"`), a folder every user writes into."""
        return self.state_dir / "exchange"

    @property
    def ngshare_state(self) -> Path:
        """ngshare's database and files (`exchange = "ngshare"`), the formgrader's Unix user's alone."""
        return self.state_dir / "ngshare"

    @property
    def ngshare_url(self) -> str:
        """Where the servers and the hub reach ngshare: the service's own port, under its hub prefix."""
        return f"http://127.0.0.1:{self.ngshare_port}/services/ngshare"

    @property
    def jupyter_config(self) -> Path:
        """The folder every single-user server reads its Jupyter configuration from (nbgrader's exchange)."""
        return self.state_dir / "jupyter-config"

    @property
    def user_lab_config(self) -> Path:
        """The Jupyter configuration the users' own servers read before `jupyter_config`: their JupyterLab
        without nbgrader's instructor tools (`write_lab_config`)."""
        return self.jupyter_config / "user-servers"


def roster_names(path: Path) -> set[str]:
    """A class without an LMS: the Unix user names allowed to log in, one per line (# comments)."""
    names = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not UNIX_NAME.fullmatch(name):
            raise ValueError(f"{path}:{number}: {name!r} is not a Unix user name")
        names.add(name)
    return names


def launch_groups(roles: list[str], settings: ClassSettings) -> list[str]:
    """nbgrader's groups for an LTI launch's roles: graders for Instructor and TeachingAssistant."""
    groups = [settings.students_group]
    if any(role.endswith(grader) for role in roles for grader in GRADER_ROLES):
        groups.append(settings.graders_group)
    return groups


EXCHANGES = ("folder", "ngshare")


def exchange_configuration(settings: ClassSettings, ngshare_url: str | None = None) -> str:
    """nbgrader_config.py for every server and the formgrader: the course id and the exchange, nbgrader's
    own (`folder`: a folder every user writes into) or ngshare's (`ngshare`: nbgrader's exchange classes
    replaced by ngshare_exchange's, which speak to the ngshare service at `ngshare_url`, by default this
    machine's, with the server's hub token)."""
    lines = ["c = get_config()  # noqa: F821", f"c.CourseDirectory.course_id = {settings.course_id!r}"]
    if settings.exchange == "ngshare":
        lines += ["import getpass, os",
                  "# ngshare_exchange reads $JUPYTERHUB_USER, else $USER, when it is imported (ngshare_exchange/",
                  "# exchange.py); a process started outside a Jupyter server (over ssh, by cron) may have neither",
                  "os.environ.setdefault('USER', getpass.getuser())",
                  "from ngshare_exchange import configureExchange", f"configureExchange(c, {ngshare_url or settings.ngshare_url!r})",
                  "# ngshare's submission times are UTC, written without a zone (its database keeps none)",
                  "c.GradingSettings.timestamp_zone = 'UTC'"]
    else:
        lines.append(f"c.Exchange.root = {str(settings.exchange_folder)!r}")
    return "\n".join(lines) + "\n"


class NgshareCourse:
    """ngshare's side of the course, kept as the hub's logins make it.

    ngshare lets a user fetch and submit only in a course that lists them, and lets only its admins make
    a course or name its instructors (ngshare/ngshare.py: check_course_user, check_admin, AddCourse,
    ManageInstructor). The hub asks with `token`, the hub token of `admin`, the service ngshare runs with
    as its admin. At the first login after the hub starts, the course is made with `instructors` as its
    instructors, or, when it exists (409), each of them is made an instructor again (an instructor added
    to the class's settings since); at every login the user, unless an instructor, is added as a student
    (ngshare updates the entry). On one machine the admin and only instructor is the formgrader service;
    on Kubernetes the admin is a token-only service and the instructors are LMS ids (hub/k8s/values.yaml).

    ngshare knows a user by name alone, so a login under the admin's name is refused. When ngshare
    refuses or does not answer within `wait_seconds`, a login that needs it (`required`: a student's) is
    refused with a page that says so (tornado's HTTPError 503), logged; a grader's goes on, logged, so
    that an instructor can still reach the hub to look into it."""

    def __init__(self, url: str, course_id: str, instructors: tuple[str, ...], admin: str, token: str,
                 wait_seconds: float = 10.0):
        self.url, self.course_id, self.instructors = url.rstrip("/"), course_id, instructors
        self.admin, self.token, self.wait_seconds = admin, token, wait_seconds
        self.ready = False   # the course exists with its instructors, since this hub started

    async def enrol(self, name: str, log, claims: dict | None = None, required: bool = True) -> None:
        """The course made ready if it is not yet, and `name`, unless an instructor, its student, with the
        names and email of the LTI id_token's `claims` where it has them (ngshare asks for all three; an
        empty one where the LMS sent none). Logs what it did, or what ngshare answered."""
        from urllib.parse import quote

        if name == self.admin:
            log.warning("login of %r refused: ngshare knows its admin by that name", name)
            raise web.HTTPError(403, f"The user name {name!r} is the course exchange's own: it cannot log in")
        course = quote(self.course_id, safe="")
        try:
            if not self.ready:
                made = await self._post(f"/course/{course}", {"instructors": json.dumps(list(self.instructors))},
                                        (200, 409), name, log)
                if made == 409:
                    for instructor in self.instructors:
                        await self._post(f"/instructor/{course}/{quote(instructor, safe='')}",
                                         {"first_name": "", "last_name": "", "email": ""}, (200,), name, log)
                self.ready = True
            if name not in self.instructors:   # ngshare refuses an instructor as a student (409)
                await self._post(f"/student/{course}/{quote(name, safe='')}",
                                 {"first_name": (claims or {}).get("given_name", ""),
                                  "last_name": (claims or {}).get("family_name", ""),
                                  "email": (claims or {}).get("email", "")}, (200,), name, log)
        except web.HTTPError:
            if required:
                raise
            log.warning("login of %r goes on without ngshare (a grader)", name)
            return
        log.info("ngshare: %r is %s of %s", name, "an instructor" if name in self.instructors else "a student",
                 self.course_id)

    async def _post(self, path: str, body: dict, accepted: tuple[int, ...], name: str, log) -> int:
        """ngshare's answer code to POST `path`; tornado's HTTPError 503 when it is not one of `accepted`."""
        from urllib.parse import urlencode

        from tornado.httpclient import AsyncHTTPClient, HTTPClientError

        try:
            answer = await AsyncHTTPClient().fetch(
                self.url + path, method="POST", body=urlencode(body), headers={"Authorization": f"token {self.token}"},
                raise_error=False, connect_timeout=self.wait_seconds, request_timeout=self.wait_seconds)
        except (OSError, HTTPClientError) as error:   # refused, unreachable, timed out: ngshare is not up (yet)
            log.error("ngshare did not answer POST %s for %r: %s", path, name, error)
            raise web.HTTPError(503, "The course's exchange (ngshare) is not answering: log in again in a minute, "
                                     "and tell your instructor if this stays") from None
        if answer.code not in accepted:
            log.error("ngshare refused POST %s for %r: %s %s", path, name, answer.code,
                      (answer.body or b"").decode(errors="replace")[:300])
            raise web.HTTPError(503, "The course's exchange (ngshare) refused to enrol you: tell your instructor")
        return answer.code


class NonceStore:
    """Nonces of the launches seen, each kept until its id_token expires (SQLite, survives a restart)."""

    def __init__(self, path: Path):
        self.path = path
        with sqlite3.connect(self.path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS nonce (issuer TEXT, nonce TEXT, expires REAL, "
                       "PRIMARY KEY (issuer, nonce))")

    def first_use(self, issuer: str, nonce: str, expires: float) -> bool:
        """True the first time (issuer, nonce) is seen, False for a replay."""
        with sqlite3.connect(self.path) as db:
            db.execute("DELETE FROM nonce WHERE expires < ?", (time.time(),))
            inserted = db.execute("INSERT OR IGNORE INTO nonce VALUES (?, ?, ?)", (issuer, nonce, expires)).rowcount
        return inserted == 1


class LaunchRoles:
    """`Authenticator.post_auth_hook` for LTI 1.3: refuse a replayed launch, map the roles to groups, and
    with ngshare as the exchange, enrol the user in ngshare's course (`ngshare`)."""

    def __init__(self, settings: ClassSettings, nonces: NonceStore, ngshare: NgshareCourse | None = None):
        self.settings, self.nonces, self.ngshare = settings, nonces, ngshare

    async def __call__(self, authenticator, handler, authentication: dict) -> dict:
        token = authentication.get("auth_state") or {}
        user = authentication["name"]
        if not UNIX_NAME.fullmatch(user):
            authenticator.log.warning("LTI launch refused: user name %r cannot be a Unix user name", user)
            raise web.HTTPError(403, f"The LMS sent the user name {user!r}, which this hub cannot use: ask the "
                                     "instructor to set username_key to the LMS's numeric user id")
        if not self.nonces.first_use(token.get("iss", ""), token.get("nonce", ""), float(token.get("exp", 0))):
            authenticator.log.warning("LTI launch refused: replayed id_token (nonce %s) for %r", token.get("nonce"), user)
            raise web.HTTPError(403, "This LMS launch was already used: open the assignment from the LMS again")
        roles = list(token.get(ROLES_CLAIM, []))
        authentication["groups"] = launch_groups(roles, self.settings)
        authenticator.log.info("LTI launch of %r with roles %s: groups %s", user, roles, authentication["groups"])
        if self.ngshare:
            await self.ngshare.enrol(user, authenticator.log, token,
                                     required=self.settings.graders_group not in authentication["groups"])
        return authentication


def roster_groups(settings: ClassSettings, ngshare: NgshareCourse | None = None):
    """`Authenticator.post_auth_hook` for a class without an LMS: the instructors named in the settings
    are graders, everyone a student (and, with ngshare as the exchange, a student of ngshare's course)."""

    async def hook(authenticator, handler, authentication: dict) -> dict:
        name = authentication["name"]
        authentication["groups"] = [settings.students_group] + (
            [settings.graders_group] if name in settings.instructors else [])
        if ngshare:
            await ngshare.enrol(name, authenticator.log, required=name not in settings.instructors)
        return authentication

    return hook


def closed_folders(path: Path) -> list[Path]:
    """The folders on the way to `path` (itself resolved through its links) that other users cannot
    enter (no search permission for others): a server started as a student cannot run a program there.
    Folders not made yet are left out (the hub makes its own with the modes it needs)."""
    closed, seen = [], set()
    for target in (path, path.resolve()):
        for folder in reversed(target.parents):
            if folder not in seen and folder.exists() and not folder.stat().st_mode & 0o001:
                closed.append(folder)
            seen.add(folder)
    return closed


def ensure_unix_user(name: str) -> pwd.struct_passwd:
    """The Unix user `name`, created with a private home (mode 700) if it does not exist yet."""
    if not UNIX_NAME.fullmatch(name):
        raise ValueError(f"{name!r} cannot be a Unix user name")
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--comment", "course hub user", name],
                   check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    Path(entry.pw_dir).chmod(0o700)
    return entry


def ensure_course_directory(folder: Path, owner: pwd.struct_passwd) -> None:
    """The course directory the formgrader works in: made, with the course's nbgrader configuration (the
    repository's nbgrader_config.py, `autograder`'s settings), for `owner` when it does not exist; an
    existing one is used as it is and must belong to `owner`, who writes its gradebook and release."""
    if not folder.exists():
        folder.mkdir(parents=True)
        configuration = Path(__file__).resolve().parent.parent / "nbgrader_config.py"
        (folder / "nbgrader_config.py").write_text(configuration.read_text(encoding="utf-8"), encoding="utf-8")
        for path in (folder, folder / "nbgrader_config.py"):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    if folder.stat().st_uid != owner.pw_uid:
        raise SystemExit(f"the course directory {folder} belongs to uid {folder.stat().st_uid}, not to "
                         f"{owner.pw_name}, who runs the formgrader: chown -R {owner.pw_name} {folder}")


# JupyterLab plugins turned off (labconfig/page_config.json, read from every Jupyter configuration folder):
# for everyone, the "official Jupyter news?" question; in the users' own servers, nbgrader's instructor
# tools (their formgrader has no course directory there, the formgrader service has it), as nbgrader's
# documentation advises for students.
EVERY_LAB_OFF = ("@jupyterlab/apputils-extension:announcements",)
USER_LAB_OFF = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:course-list")


def write_lab_config(settings: ClassSettings) -> None:
    """JupyterLab's page configuration for every server and for the users' own (`EVERY_LAB_OFF`,
    `USER_LAB_OFF`), readable by every user."""
    for folder, names in ((settings.jupyter_config, EVERY_LAB_OFF), (settings.user_lab_config, USER_LAB_OFF)):
        (folder / "labconfig").mkdir(parents=True, exist_ok=True)
        for path in (folder, folder / "labconfig"):
            path.chmod(0o755)
        (folder / "labconfig" / "page_config.json").write_text(
            json.dumps({"disabledExtensions": {name: True for name in names}}, indent=2) + "\n", encoding="utf-8")


SYSTEMD = Path("/run/systemd/system")  # present when systemd is the init system (sd_booted(3))


def spawner(settings: ClassSettings, systemd: bool) -> tuple[str, dict]:
    """The spawner class and its settings: SystemdSpawner where systemd runs (each server a unit of
    its own; `mem_limit` and `cpu_limit` enforced by its cgroup: MemoryMax, CPUQuota), else JupyterHub's
    LocalProcessSpawner, which enforces no limit (both run the server as the user's own Unix user)."""
    if not systemd:
        return "jupyterhub.spawner.LocalProcessSpawner", {}
    return "systemdspawner.SystemdSpawner", {
        "username_template": "{USERNAME}",   # the hub user name is the Unix user (made by pre_spawn)
        "dynamic_users": False,
        "isolate_tmp": True,                 # a /tmp of its own: no student reads another's temporary files
        "isolate_devices": False,            # keep /dev/nvidia*: the GPU
        "disable_user_sudo": True,
    }


def pre_spawn(spawner) -> None:
    """`Spawner.pre_spawn_hook`: the user's own Unix user and home before their server starts."""
    entry = ensure_unix_user(spawner.user.name)
    spawner.log.info("server of %r runs as uid %d in %s", spawner.user.name, entry.pw_uid, entry.pw_dir)
