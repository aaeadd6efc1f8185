# The course's JupyterHub on one machine: `make hub` (or `jupyterhub -f hub/jupyterhub_config.py` with
# COURSE_HUB_SETTINGS naming the class's TOML file; hub/class.example.toml says what each setting does).
# What the hub adds through JupyterHub's hooks is in hub/course_hub.py.
#
# - Login: LTI 1.3 from the LMS (jupyterhub-ltiauthenticator's LTI13Authenticator, as Canvas and Moodle
#   launch it), the hub user name the LMS's user id; or, for a class without an LMS, the machine's Unix
#   accounts (PAM) restricted to a roster file.
# - Groups: nbgrader's, from the LTI roles: Instructor and TeachingAssistant in formgrade-<course>,
#   everyone in nbgrader-<course>.
# - Each user's server runs as a Unix user of their own (LocalProcessSpawner, the hub running as root),
#   made on first spawn with a home of mode 700: no student reads another's files.
# - Every server's kernels grow their GPU memory as they need it, within the class's per-student cap.
# - The idle culler stops servers idle for cull_idle_seconds, which frees their GPU memory.
# - nbgrader's exchange, configured for every server: a folder in the hub's state folder, or (exchange =
#   "ngshare") the ngshare service, which needs no filesystem shared between servers.
import os
import secrets
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import course_hub  # noqa: E402  (hub/course_hub.py, beside this file)

from course import gpu, kernel  # noqa: E402  (the course's package: the kernel's environment, its GPU cap)

c = get_config()  # noqa: F821  (JupyterHub's config loader provides it)

settings = course_hub.ClassSettings.read(Path(os.environ.get("COURSE_HUB_SETTINGS", HERE / "class.toml")))
BIN = Path(sys.executable).parent
PATH = f"{BIN}:/usr/local/bin:/usr/bin:/bin"  # the course's programs first, in every server and service


def refuse_closed(path: Path, what: str, advice: str) -> None:
    """Stop the hub when a folder on the way to `path` is closed to the students' Unix users."""
    closed = course_hub.closed_folders(path)
    if closed:
        raise SystemExit(f"{what} is out of other users' reach: {', '.join(map(str, closed))} cannot be entered "
                         f"by others (mode o-x). {advice}")


# every server runs this Python as its student, reads its nbgrader configuration in the state folder
# and writes into the exchange there
refuse_closed(Path(sys.executable), f"the course's Python ({sys.executable})",
              "Install the course where every user can read it (e.g. a checkout in /opt with a system Python), "
              "then start the hub again.")
refuse_closed(settings.exchange_folder, f"the state folder {settings.state_dir}",
              "Choose a state_dir every user can enter (e.g. /srv/...).")

# The state folder: the hub's own files in hub/ (mode 700: its database, cookie secret, the launches'
# nonces), which a restart keeps, so users, groups and logins survive it; beside it the exchange and the
# servers' configuration, which every user reaches (the state folder itself lists nothing: mode 711).
HUB_STATE = settings.state_dir / "hub"
HUB_STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
HUB_STATE.chmod(0o700)
settings.state_dir.chmod(0o711)
c.JupyterHub.ip = settings.ip
c.JupyterHub.port = settings.port
c.JupyterHub.db_url = f"sqlite:///{HUB_STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB_STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(HUB_STATE / "jupyterhub.pid")
# The proxy's Python port waits 20 s for a server's answer unless told otherwise (tornado's default
# request_timeout; the Node.js proxy waits without limit): nbgrader's Validate answers only once the whole
# notebook ran, so the students' Validate would fail with an error page. One hour, as long as a notebook
# may run (milliseconds on the command line).
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy"),
                                   "--proxy-timeout", str(course_hub.PROXY_TIMEOUT_SECONDS * 1000)]
c.ConfigurableHTTPProxy.pid_file = str(HUB_STATE / "jupyterhub-proxy.pid")

# Login and groups (the authenticator sets a user's groups at every login: manage_groups)
c.Authenticator.manage_groups = True
# With ngshare as the exchange, the hub adds every user who logs in to ngshare's course, asking as the
# formgrader service (ngshare's admin, the course's instructor) with that service's token: a new one at
# every start, which the hub gives the formgrader's environment (its terminals have it) and keeps in its
# database as a hash, as for every service; this configuration writes it nowhere. (JupyterHub does not
# revoke an earlier start's token: jupyterhub/app.py, init_services.)
FORMGRADER_TOKEN = secrets.token_hex(32)
ngshare = (course_hub.NgshareCourse(settings.ngshare_url, settings.course_id, (settings.course_id,),
                                    settings.course_id, FORMGRADER_TOKEN)
           if settings.exchange == "ngshare" else None)
if settings.lti:
    c.JupyterHub.authenticator_class = "ltiauthenticator.lti13.auth.LTI13Authenticator"
    c.LTI13Authenticator.issuer = settings.lti.issuer
    c.LTI13Authenticator.client_id = [settings.lti.client_id]
    c.LTI13Authenticator.authorize_url = settings.lti.authorize_url
    c.LTI13Authenticator.jwks_endpoint = settings.lti.jwks_endpoint
    c.LTI13Authenticator.username_key = settings.lti.username_key
    c.LTI13Authenticator.allow_all = True  # the LMS decides who launches: the course's members
    c.Authenticator.post_auth_hook = course_hub.LaunchRoles(
        settings, course_hub.NonceStore(HUB_STATE / "lti-nonces.sqlite"), ngshare)
else:
    c.JupyterHub.authenticator_class = "jupyterhub.auth.PAMAuthenticator"
    c.Authenticator.allowed_users = course_hub.roster_names(settings.roster)
    c.Authenticator.post_auth_hook = course_hub.roster_groups(settings, ngshare)
c.Authenticator.admin_users = set(settings.instructors)

c.JupyterHub.load_roles = [
    {"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
]
c.JupyterHub.services = [
    {"name": "idle-culler",
     "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={settings.cull_idle_seconds}"]},
]

# The course's formgrader, a hub service at /services/<course_id>/ (nbgrader's own demos run it so):
# JupyterLab with nbgrader's formgrader on the course directory, as the Unix user grader-<course_id>;
# only the course's graders (formgrade-<course_id>: Instructor and TeachingAssistant) may open it.
if settings.course_dir:
    grader = course_hub.ensure_unix_user(settings.grader_user)
    course_hub.ensure_course_directory(settings.course_dir, grader)
    c.JupyterHub.services.append({
        "name": settings.course_id, "url": f"http://127.0.0.1:{settings.formgrader_port}",
        "user": settings.grader_user, "cwd": str(settings.course_dir), "oauth_no_confirm": True,
        "command": [str(BIN / "jupyterhub-singleuser"), f"--ServerApp.root_dir={settings.course_dir}"],
        "environment": {"HOME": grader.pw_dir, "PATH": PATH,
                        "JUPYTER_CONFIG_PATH": str(settings.jupyter_config), "JUPYTERHUB_DEFAULT_URL": "/lab/tree"},
        "api_token": FORMGRADER_TOKEN,
    })
    c.JupyterHub.load_roles += [
        {"name": f"formgrade-{settings.course_id}", "groups": [settings.graders_group],
         "scopes": [f"access:services!service={settings.course_id}", "list:services",
                    f"read:services!service={settings.course_id}"]},
    ]

# Each user's server: their own Unix user, JupyterLab, the course's environment and kernels; a systemd
# unit with enforced limits where systemd runs, else a plain process (course_hub.spawner)
SPAWNER, SPAWNER_SETTINGS = course_hub.spawner(settings, course_hub.SYSTEMD.is_dir())
c.JupyterHub.spawner_class = SPAWNER
for name, value in SPAWNER_SETTINGS.items():
    setattr(c.SystemdSpawner, name, value)
c.Spawner.pre_spawn_hook = course_hub.pre_spawn
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.environment = {
    "PATH": PATH,
    # the users' own JupyterLab: nbgrader's Assignments panel and Validate button, not its instructor
    # tools (the formgrader service has them), first, then what every server reads
    "JUPYTER_CONFIG_PATH": os.pathsep.join([str(settings.user_lab_config), str(settings.jupyter_config)]),
    **kernel.KERNEL_ENVIRONMENT,  # memory growth, as the course kernel's own spec sets it
    # the per-student GPU cap the course kernel applies
    **({gpu.MEMORY_LIMIT_VARIABLE: str(settings.gpu_memory_mb)} if settings.gpu_memory_mb else {}),
}
if settings.mem_limit:
    c.Spawner.mem_limit = settings.mem_limit  # enforced by SystemdSpawner (MemoryMax), not LocalProcessSpawner
if settings.cpu_limit:
    c.Spawner.cpu_limit = settings.cpu_limit

# nbgrader's exchange, and a configuration every server reads (course_hub.exchange_configuration):
# - "folder": one folder every user can write into (nbgrader's own setup, ugo+rwx, sticky so that no one
#   removes another's files);
# - "ngshare": the ngshare service (its database and files in the state folder, the formgrader's Unix
#   user's alone), which every server reaches over HTTP with its own hub token; ngshare knows the
#   formgrader service as its admin, the course's instructor.
NGSHARE_PYTHON = HERE.parent / ".venv-ngshare" / "bin" / "python"  # its own environment (hub/ngshare/)
if settings.exchange == "ngshare":
    if not NGSHARE_PYTHON.exists():
        raise SystemExit(f"exchange = \"ngshare\" runs ngshare from {NGSHARE_PYTHON.parent.parent}, which is not "
                         "installed: start the hub with `make hub`, which installs it")
    refuse_closed(NGSHARE_PYTHON, f"ngshare's Python ({NGSHARE_PYTHON})",
                  "Install the course where every user can read it, then start the hub again.")
    settings.ngshare_state.mkdir(exist_ok=True, mode=0o700)
    os.chown(settings.ngshare_state, grader.pw_uid, grader.pw_gid)
    settings.ngshare_state.chmod(0o700)
    c.JupyterHub.services.append({
        "name": "ngshare", "url": f"http://127.0.0.1:{settings.ngshare_port}", "user": settings.grader_user,
        "oauth_no_confirm": True, "cwd": str(settings.ngshare_state),
        "command": [str(NGSHARE_PYTHON), "-m", "ngshare", "--admins", settings.course_id,
                    "--database", f"sqlite:///{settings.ngshare_state / 'ngshare.sqlite'}",
                    "--storage", str(settings.ngshare_state / "files")],
        "environment": {"HOME": grader.pw_dir, "PATH": PATH},
    })
else:
    settings.exchange_folder.mkdir(parents=True, exist_ok=True)
    settings.exchange_folder.chmod(0o1777)
settings.jupyter_config.mkdir(exist_ok=True)
settings.jupyter_config.chmod(0o755)
course_hub.write_lab_config(settings)
(settings.jupyter_config / "nbgrader_config.py").write_text(course_hub.exchange_configuration(settings),
                                                           encoding="utf-8")
