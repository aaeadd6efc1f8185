"""The bubblewrap sandbox a student's kernel runs in: one per kernel, so one per student.

`autograder.execution.provisioner.SandboxProvisioner` (a jupyter_client kernel provisioner) wraps the
kernel command with `command`, so the student's code sees:

- the operating system, the Python installation and the virtual environment, read-only;
- the `course` package the notebooks import, read-only, and nothing else of the repository
  (no `source/`, no `autograder/`, no `.git`);
- a working folder and `$HOME` (`WORK`) on the sandbox's own size-bounded `/tmp`: a copy of the
  student's own submitted files, *without* the notebook nbgrader is executing (that copy holds the
  hidden tests), made inside the sandbox by `confine.py` before the kernel starts;
- a private `/dev` (with a size-bounded `/dev/shm`) and `/proc`, with the GPU's device nodes and
  driver files where the machine has them (`gpu_binds`); no network (the kernel's sockets are Unix
  sockets in a folder both sides see); its own user (uid 65534 inside), PID, IPC and UTS
  namespaces; all capabilities dropped; `/etc/shadow` and other secrets of `/etc` left out (`etc_binds`).

Bounds (`Limits`): the PID namespace dies as one unit with bwrap (`--die-with-parent`, and its init
is PID 1 inside); `/tmp` and `/dev/shm` are tmpfs of `disk_bytes` each; `confine.py` sets
RLIMIT_FSIZE (`disk_bytes`), RLIMIT_CPU (`cpu_seconds`) and RLIMIT_NPROC (`tasks`, processes and
threads: the kernel ignores it for a user that is root outside the namespace, so the grading
watchdog, `autograder.execution.bounds`, counts tasks too). Memory and wall clock are the watchdog's.

It does not see the grading workspace (the source copy, `gradebook.db`), the other students'
kernels, the submissions folder or the home folder. The residual risk is written down in docs/security.md.

The mode (`auto`: bwrap when it works, else none, and the driver says so; `bwrap`: grading fails
with a clear message when it cannot start; `none`: no sandbox, for machines without user namespaces)
is the grading settings' `sandbox` (`autograder.settings.GradingSettings`), which the provisioner reads.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import course
from autograder.errors import AutograderError
from autograder.settings import SANDBOX_MODES, Limits

BWRAP = "bwrap"
# inside the sandbox: the kernel's working folder and home, the student's files as staged outside
# (read-only), and the script that sets the limits and copies them before the kernel starts
WORK = Path("/tmp/work")
FILES = Path("/run/submission")
CONFINE = Path("/run/confine.py")
# system folders the kernel may read (each bound read-only where it exists), and secrets in them it may not
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
MASKED = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh", "/etc/ssl/private")
# What the CUDA driver opens on a GPU machine: the device nodes /dev/nvidia0.., nvidiactl,
# nvidia-uvm(-tools), nvidia-modeset, the capability folder /dev/nvidia-caps and the DRM nodes
# /dev/dri, bound with device access (bwrap's --bind mounts nodev), and the PCI, NUMA and module
# information in /sys, read-only. /proc/driver/nvidia needs no bind: the sandbox's own procfs shows
# it, as every procfs mount shows the kernel's driver entries (only /proc/<pid> is per namespace).
GPU_DEVICES = ("nvidia*", "dri")


class SandboxUnavailable(AutograderError):
    """`bwrap` was demanded but cannot start a sandbox on this machine."""


@functools.lru_cache(maxsize=1)
def probe() -> str | None:
    """None when bwrap can start a sandbox here; otherwise why not."""
    binary = shutil.which(BWRAP)
    if not binary:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    try:
        done = subprocess.run([binary, *_namespace_args(), "--ro-bind", "/", "/", "--proc", "/proc",
                               "--dev", "/dev", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap failed to start: {error}"
    if done.returncode != 0:
        return f"bwrap cannot create namespaces here: {done.stderr.strip()[:300]}"
    return None


def mode(wanted: str = "auto") -> str:
    """The sandbox kernels will get for the `wanted` mode: 'bwrap' or 'none'. Grading without one is
    only ever chosen ('none'): 'auto' (the sandbox this machine has: bwrap, the only one today) and
    'bwrap' refuse with the fix when bwrap cannot start."""
    wanted = (wanted or "auto").strip().lower()
    if wanted not in SANDBOX_MODES:
        raise SandboxUnavailable(f"sandbox mode {wanted!r}: expected one of {', '.join(SANDBOX_MODES)}")
    if wanted == "none":
        return "none"
    problem = probe()
    if problem:
        raise SandboxUnavailable(
            f"no kernel sandbox for the students' code: {problem}. Install bubblewrap (`make system-packages`, "
            "or apt-get install bubblewrap) on a machine that allows user namespaces, or grade without a "
            "sandbox, knowingly: --sandbox none (student code can then read and write what the grader can)")
    return "bwrap"


def describe(wanted: str = "auto") -> str:
    """One line for the terminal: which sandbox the kernels get, or that they get none (asked for)."""
    if mode(wanted) == "bwrap":
        return ("kernel sandbox: bwrap, one per student (read-only system, no network, bounded /tmp, "
                "processes and CPU time; the grading workspace and other students are out of sight)")
    return "kernel sandbox: NONE (--sandbox none): student code can read the grading workspace"


def _namespace_args() -> list[str]:
    return ["--unshare-user", "--uid", "65534", "--gid", "65534", "--unshare-net", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL"]


def readable_roots() -> list[Path]:
    """The Python installation, the virtual environment and its site-packages: bound read-only."""
    roots = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.executable).resolve().parent.parent}
    roots |= {Path(sysconfig.get_paths()[key]) for key in ("stdlib", "purelib", "platlib")}
    return sorted(root for root in roots if root.exists())


def course_package() -> Path:
    """The folder of the `course` package (the notebooks import it)."""
    return Path(course.__file__).resolve().parent


def stage(cwd: Path, target: Path) -> Path:
    """A copy of the kernel's working folder without its notebooks (nbgrader's copy holds the hidden
    tests), at `target` (created, or an existing empty folder): bound read-only into the sandbox."""
    if cwd.is_dir():
        shutil.copytree(cwd, target, symlinks=False, dirs_exist_ok=True, ignore=lambda folder, entries: [
            name for name in entries if name.endswith(".ipynb")])
    else:
        target.mkdir(parents=True, exist_ok=True)
    return target


def kernel_env() -> dict[str, str]:
    """What a sandboxed kernel's environment says: its home and temp folders."""
    return {"HOME": str(WORK), "TMPDIR": "/tmp", "MPLCONFIGDIR": str(WORK / ".matplotlib"),
            # ipykernel polls its parent, which lives outside the PID namespace: pid 1 turns it off;
            # --die-with-parent ends the kernel with the grading worker instead.
            "JPY_PARENT_PID": "1"}


def etc_binds(etc: Path = Path("/etc")) -> list[str]:
    """bwrap arguments for the sandbox's /etc: every entry of the machine's, read-only, but the secrets of
    `MASKED` directly in it, which are left out (absent, not covered: a file such as /etc/shadow is
    replaced while users are added or removed, and a bind onto it made as it is replaced fails the
    sandbox's start). An entry gone by the time bwrap starts is skipped (`--ro-bind-try`)."""
    masked = {Path(secret).name for secret in MASKED if Path(secret).parent == Path("/etc")}
    args = ["--dir", "/etc"]
    for entry in sorted(etc.iterdir()):
        target = f"/etc/{entry.name}"
        if entry.name in masked:
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry), target]
        else:
            args += ["--ro-bind-try", str(entry), target]
    return args


def gpu_binds(root: Path = Path("/")) -> list[str]:
    """bwrap arguments that let a kernel reach the GPUs of this machine (none where it has none).

    `root` is where the machine's /dev, /proc and /sys are found (a fake device folder in tests); the
    sandbox sees them at their usual places. Without /dev/nvidiactl no GPU binds are made."""
    dev = root / "dev"
    if not (dev / "nvidiactl").exists():
        return []
    args: list[str] = []
    for pattern in GPU_DEVICES:
        for path in sorted(dev.glob(pattern)):
            args += ["--dev-bind", str(path), "/" + str(path.relative_to(root))]
    if (root / "sys").is_dir():
        args += ["--ro-bind", str(root / "sys"), "/sys"]
    return args


def command(cmd: list[str], *, files: Path, sockets: Path, read_only: tuple[Path, ...] = (),
            limits: Limits = Limits()) -> list[str]:
    """`cmd` wrapped in bwrap and `confine.py`: `files` (the staged submission) copied into `WORK`,
    `sockets` shared with the outside, `read_only` files (a kernel's connection file) visible."""
    args = [shutil.which(BWRAP) or BWRAP, *_namespace_args()]
    for folder in SYSTEM_DIRS:
        path = Path(folder)
        if folder == "/etc":
            args += etc_binds()
        elif path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.exists():
            args += ["--ro-bind", folder, folder]
    # private /proc, /dev and /tmp before the binds: a venv or checkout under /tmp is bound on top
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.disk_bytes), "--tmpfs", "/tmp",
             "--size", str(limits.disk_bytes), "--tmpfs", "/dev/shm"]
    args += gpu_binds()
    for secret in MASKED:   # what etc_binds left out is absent; a folder further down gets an empty one
        if Path(secret).parent != Path("/etc") and Path(secret).is_dir():
            args += ["--tmpfs", secret]
    bound: set[Path] = set()
    for root in readable_roots():
        if not any(root == done or done in root.parents for done in bound):
            args += ["--ro-bind", str(root), str(root)]
            bound.add(root)
    package = course_package()
    args += ["--ro-bind", str(package), str(package)]
    args += ["--ro-bind", str(files), str(FILES), "--ro-bind", str(Path(__file__).with_name("confine.py")), str(CONFINE),
             "--bind", str(sockets), str(sockets)]
    for path in read_only:
        args += ["--ro-bind", str(path), str(path)]
    for name, value in kernel_env().items():
        args += ["--setenv", name, value]
    confine = [sys.executable, "-I", "-S", str(CONFINE), "--files", str(FILES), "--work", str(WORK),
               "--tasks", str(limits.tasks), "--cpu-seconds", str(limits.cpu_seconds),
               "--file-bytes", str(limits.disk_bytes)]
    return args + ["--", *confine, "--", *cmd]
