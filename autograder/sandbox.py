"""Run the student's kernel inside a bubblewrap sandbox.

nbgrader executes a submission through nbclient, which starts the kernel with jupyter_client's
`KernelManager`. `SandboxedKernelManager` (set as `Execute.kernel_manager_class` by
`autograder.config`) wraps the kernel command in `bwrap`, so the student's code sees:

- the operating system, the Python installation and the virtual environment, read-only;
- the `course` package the notebooks import, read-only, and nothing else of the repository
  (no `source/`, no `autograder/`, no `.git`);
- a scratch folder as its working directory and `$HOME`: a copy of the student's own submitted
  files, *without* the notebook nbgrader is executing (that copy holds the hidden tests);
- a private `/tmp`, `/dev` and `/proc`, with the GPU's device nodes and driver files where the machine
  has them (`gpu_binds`); no network (the kernel's sockets are Unix sockets in a
  folder both sides see); its own user (uid 65534 inside), PID, IPC and UTS namespaces; all
  capabilities dropped; `/etc/shadow` and other secrets of `/etc` masked; it dies with the worker.

It does not see the grading workspace (the source copy, `gradebook.db`), the other students' jobs,
the submissions folder or the home folder. The residual risk is written down in the README.

A warm kernel (`autograder.warm_kernels`) is a fork of a kernel server that runs in a sandbox of
this same shape (`command`), with the same environment (`kernel_env`) and a scratch copy made the
same way (`scratch_copy`); only its startup differs.

`AUTOGRADER_SANDBOX` in the environment (or `autograder grade --sandbox`) chooses the mode: `auto`
(the default: bwrap when it works, else none, and the driver says so), `bwrap` (grading fails with
a clear message when it cannot start) or `none` (no sandbox, for machines without user namespaces).
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path

from jupyter_client import AsyncKernelManager

import course

BWRAP = "bwrap"
MODES = ("auto", "bwrap", "none")
ENV_MODE = "AUTOGRADER_SANDBOX"
# system folders the kernel may read (each bound read-only where it exists), and secrets in them it may not
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
MASKED = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh", "/etc/ssl/private")
# What the CUDA driver opens on a GPU machine: the device nodes /dev/nvidia0.., nvidiactl,
# nvidia-uvm(-tools), nvidia-modeset, the capability folder /dev/nvidia-caps and the DRM nodes
# /dev/dri, bound with device access (bwrap's --bind mounts nodev), and the PCI, NUMA and module
# information in /sys, read-only. /proc/driver/nvidia needs no bind: the sandbox's own procfs shows
# it, as every procfs mount shows the kernel's driver entries (only /proc/<pid> is per namespace).
GPU_DEVICES = ("nvidia*", "dri")


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


def scratch_copy(cwd: Path, target: Path) -> Path:
    """A copy of the kernel's working folder without its notebooks (nbgrader's copy holds the hidden
    tests), at `target` (created, or an existing empty folder)."""
    if cwd.is_dir():
        shutil.copytree(cwd, target, symlinks=False, dirs_exist_ok=True, ignore=lambda folder, names: [
            name for name in names if name.endswith(".ipynb")])
    else:
        target.mkdir(parents=True, exist_ok=True)
    return target


def kernel_env(scratch: Path) -> dict[str, str]:
    """What a sandboxed kernel's environment says, whoever starts it: its home and temp folders."""
    return {"HOME": str(scratch), "TMPDIR": "/tmp", "MPLCONFIGDIR": str(scratch / ".matplotlib"),
            # ipykernel polls its parent, which lives outside the PID namespace: pid 1 turns it off;
            # --die-with-parent (or the kernel forkserver) ends the kernel with the worker instead.
            "JPY_PARENT_PID": "1"}


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


def command(cmd: list[str], *, scratch: Path, sockets: Path, read_only: tuple[Path, ...] = ()) -> list[str]:
    """`cmd` wrapped in bwrap, with `scratch` as the working folder and home, `sockets` shared with
    the outside and `read_only` files (a kernel's connection file) visible."""
    args = [shutil.which(BWRAP) or BWRAP, *_namespace_args()]
    for folder in SYSTEM_DIRS:
        path = Path(folder)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), folder]
        elif path.exists():
            args += ["--ro-bind", folder, folder]
    # private /proc, /dev and /tmp before the binds: a venv or checkout under /tmp is bound on top
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    args += gpu_binds()
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
    args += ["--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--bind", str(sockets), str(sockets)]
    for path in read_only:
        args += ["--ro-bind", str(path), str(path)]
    for name, value in kernel_env(scratch).items():
        args += ["--setenv", name, value]
    return args + ["--", *cmd]


class SandboxedKernelManager(AsyncKernelManager):
    """A KernelManager whose kernel runs under bwrap (or unwrapped when the mode is 'none').

    When the grading worker has a kernel server (`AUTOGRADER_WARM_KERNELS`, see
    `autograder.warm_kernels`), the kernel is a fork of that server's warm process, inside the
    server's sandbox; when the server cannot serve, a cold kernel starts as below instead."""

    _scratch: tempfile.TemporaryDirectory | None = None
    _warm = None  # the kernel server's warm_kernels.Address, when the worker has one

    def _use_sockets_in(self, sockets: Path) -> None:
        # the kernel's sockets are files in a folder both sides see, so the sandbox needs no network
        self.transport, self.ip = "ipc", str(sockets / f"kernel-{uuid.uuid4().hex[:12]}")
        # a signal would reach bwrap, not the kernel: interrupt a cell past its timeout by message
        self.kernel_spec.interrupt_mode = "message"

    def _cold_sandbox(self) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="kernel-")
        sockets = Path(self._scratch.name) / "sockets"
        sockets.mkdir()
        self._use_sockets_in(sockets)

    async def _async_pre_start_kernel(self, **kw):
        from autograder import warm_kernels  # it builds on this module

        if self._scratch is None and self._warm is None:
            self._warm = warm_kernels.from_env()
            if self._warm is not None:
                self._use_sockets_in(self._warm.sockets)
            elif mode() == "bwrap":
                self._cold_sandbox()
        return await super()._async_pre_start_kernel(**kw)

    def _fall_back_to_cold(self) -> None:
        """The kernel server could not serve: connect as a cold kernel would, in a new connection file."""
        self._warm = None
        if mode() == "bwrap":
            self._cold_sandbox()
        else:
            self.transport, self.ip = "tcp", "127.0.0.1"
        self.cleanup_connection_file()
        self.shell_port = self.iopub_port = self.stdin_port = self.hb_port = self.control_port = 0  # chosen anew
        self.write_connection_file()
        assert self.provisioner is not None
        self.provisioner.connection_info = self.get_connection_info()

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        from autograder import warm_kernels

        cwd = Path(kw.get("cwd") or os.getcwd())
        if self._warm is not None:
            try:
                process = await asyncio.to_thread(
                    warm_kernels.launch, self._warm, kernel_cmd, cwd=cwd, env=dict(kw.get("env") or os.environ),
                    connection_file=Path(self.connection_file), name=Path(self.ip).name)
            except warm_kernels.Unavailable as why:
                self.log.warning("no warm kernel (%s): starting a cold one", why)
                self._fall_back_to_cold()
            else:
                assert self.provisioner is not None
                # the pid is the kernel's in the server's PID namespace; signals travel through the server
                self.provisioner.process, self.provisioner.pid = process, process.pid  # type: ignore[attr-defined]
                self.provisioner.pgid, self.provisioner.cwd = None, str(self._warm.work)  # type: ignore[attr-defined]
                self._reconcile_connection_info(self.provisioner.connection_info)
                return
        if mode() == "bwrap":
            scratch = scratch_copy(cwd, Path(self._scratch.name) / "work")
            kernel_cmd = command(kernel_cmd, scratch=scratch, sockets=Path(self.ip).parent,
                                 read_only=(Path(self.connection_file).resolve(),))
            kw["cwd"] = str(scratch)
        await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if self._scratch is not None and not restart:
            self._scratch.cleanup()
            self._scratch = None
