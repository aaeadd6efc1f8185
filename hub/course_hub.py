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
        base = path.parent
        return cls(course_id=data["course_id"], state_dir=(base / data["state_dir"]).resolve(),
                   port=int(data.get("port", 8000)), ip=data.get("ip", ""), lti=lti,
                   roster=(base / data["roster"]).resolve() if "roster" in data else None,
                   instructors=tuple(data.get("instructors", ())),
                   gpu_memory_mb=data.get("gpu_memory_mb"), cull_idle_seconds=int(data.get("cull_idle_seconds", 3600)),
                   mem_limit=data.get("mem_limit"), cpu_limit=data.get("cpu_limit"),
                   course_dir=(base / data["course_dir"]).resolve() if "course_dir" in data else None,
                   formgrader_port=int(data.get("formgrader_port", 9999)))

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
    def exchange(self) -> Path:
        return self.state_dir / "exchange"

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
    """`Authenticator.post_auth_hook` for LTI 1.3: refuse a replayed launch, map the roles to groups."""

    def __init__(self, settings: ClassSettings, nonces: NonceStore):
        self.settings, self.nonces = settings, nonces

    def __call__(self, authenticator, handler, authentication: dict) -> dict:
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
        return authentication


def roster_groups(settings: ClassSettings):
    """`Authenticator.post_auth_hook` for a class without an LMS: the instructors named in the settings
    are graders, everyone a student."""

    def hook(authenticator, handler, authentication: dict) -> dict:
        name = authentication["name"]
        authentication["groups"] = [settings.students_group] + (
            [settings.graders_group] if name in settings.instructors else [])
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
