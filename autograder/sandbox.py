"""Run the student's kernel inside a bubblewrap sandbox.

nbgrader executes a submission through nbclient, which starts the kernel with jupyter_client's
`KernelManager`. `SandboxedKernelManager` (set as `Execute.kernel_manager_class` by
`autograder.config`) wraps the kernel command in `bwrap`, so the student's code sees:

- the operating system, the Python installation and the virtual environment, read-only;
- the `course` package the notebooks import, read-only, and nothing else of the repository
  (no `source/`, no `autograder/`, no `.git`);
- a scratch folder as its working directory and `$HOME`: a copy of the student's own submitted
  files, *without* the notebook nbgrader is executing (that copy holds the hidden tests);
- a private `/tmp`, `/dev` and `/proc`; no network (the kernel's sockets are Unix sockets in a
  folder both sides see); its own user (uid 65534 inside), PID, IPC and UTS namespaces; all
  capabilities dropped; `/etc/shadow` and other secrets of `/etc` masked; it dies with the worker.

It does not see the grading workspace (the source copy, `gradebook.db`), the other students' jobs,
the submissions folder or the home folder. The residual risk is written down in the README.

`AUTOGRADER_SANDBOX` in the environment (or `autograder grade --sandbox`) chooses the mode: `auto`
(the default: bwrap when it works, else none, and the driver says so), `bwrap` (grading fails with
a clear message when it cannot start) or `none` (no sandbox, for machines without user namespaces).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from jupyter_client import AsyncKernelManager

import course

BWRAP = "bwrap"
MODES = ("auto", "bwrap", "none")
ENV_MODE = "AUTOGRADER_SANDBOX"
# system folders the kernel may read (each bound read-only where it exists), and secrets in them it may not
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
MASKED = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh", "/etc/ssl/private")


class SandboxUnavailable(RuntimeError):
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


def mode() -> str:
    """The sandbox this process will use for kernels: 'bwrap' or 'none'."""
    wanted = os.environ.get(ENV_MODE, "auto").strip().lower() or "auto"
    if wanted not in MODES:
        raise SandboxUnavailable(f"{ENV_MODE}={wanted!r}: expected one of {', '.join(MODES)}")
    if wanted == "none":
        return "none"
    problem = probe()
    if problem and wanted == "bwrap":
        raise SandboxUnavailable(f"{ENV_MODE}=bwrap but {problem}")
    return "none" if problem else "bwrap"


def describe() -> str:
    """One line for the terminal: which sandbox the kernels get, or why they get none."""
    if mode() == "bwrap":
        return ("kernel sandbox: bwrap (read-only system, no network, a scratch folder; "
                "the grading workspace and other students are out of sight)")
    why = probe() if os.environ.get(ENV_MODE, "auto") != "none" else f"{ENV_MODE}=none"
    return f"kernel sandbox: NONE ({why}): student code can read the grading workspace"


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


def scratch_copy(cwd: Path, into: Path) -> Path:
    """A copy of the kernel's working folder without its notebooks (nbgrader's copy holds the hidden tests)."""
    target = into / "work"
    if cwd.is_dir():
        shutil.copytree(cwd, target, symlinks=False, ignore=lambda folder, names: [
            name for name in names if name.endswith(".ipynb")])
    else:
        target.mkdir(parents=True)
    return target


def command(kernel_cmd: list[str], *, scratch: Path, sockets: Path, connection_file: Path) -> list[str]:
    """`kernel_cmd` wrapped in bwrap, with `scratch` as the working folder and home."""
    args = [shutil.which(BWRAP) or BWRAP, *_namespace_args()]
    for folder in SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.exists():
            args += ["--ro-bind", folder, folder]
    # private /proc, /dev and /tmp before the binds: a venv or checkout under /tmp is bound on top
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for secret in MASKED:
        if Path(secret).is_dir():
            args += ["--tmpfs", secret]
        elif Path(secret).exists():
            args += ["--ro-bind", "/dev/null", secret]
    bound = set()
    for root in readable_roots():
        if not any(root == done or done in root.parents for done in bound):
            args += ["--ro-bind", str(root), str(root)]
            bound.add(root)
    package = course_package()
    args += ["--ro-bind", str(package), str(package)]
    args += ["--bind", str(scratch), str(scratch), "--chdir", str(scratch),
             "--bind", str(sockets), str(sockets),
             "--ro-bind", str(connection_file), str(connection_file),
             "--setenv", "HOME", str(scratch), "--setenv", "TMPDIR", "/tmp",
             "--setenv", "MPLCONFIGDIR", str(scratch / ".matplotlib"),
             # ipykernel polls its parent, which lives outside the PID namespace: pid 1 turns it off;
             # --die-with-parent ends the kernel with the worker instead.
             "--setenv", "JPY_PARENT_PID", "1"]
    return args + ["--", *kernel_cmd]


class SandboxedKernelManager(AsyncKernelManager):
    """A KernelManager whose kernel runs under bwrap (or unwrapped when the mode is 'none')."""

    _scratch: tempfile.TemporaryDirectory | None = None

    async def _async_pre_start_kernel(self, **kw):
        if mode() == "bwrap" and self._scratch is None:
            # the kernel's sockets are files in a folder both sides see, so the sandbox needs no network
            self._scratch = tempfile.TemporaryDirectory(prefix="kernel-")
            sockets = Path(self._scratch.name) / "sockets"
            sockets.mkdir()
            self.transport, self.ip = "ipc", str(sockets / "kernel")
            # a signal would reach bwrap, not the kernel: interrupt a cell past its timeout by message
            self.kernel_spec.interrupt_mode = "message"
        return await super()._async_pre_start_kernel(**kw)

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        if self._scratch is not None:
            root = Path(self._scratch.name)
            scratch = scratch_copy(Path(kw.get("cwd") or os.getcwd()), root)
            kernel_cmd = command(kernel_cmd, scratch=scratch, sockets=root / "sockets",
                                 connection_file=Path(self.connection_file).resolve())
            kw["cwd"] = str(scratch)
        await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if self._scratch is not None and not restart:
            self._scratch.cleanup()
            self._scratch = None
