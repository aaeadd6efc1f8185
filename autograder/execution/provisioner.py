"""The kernel provisioner that gives every grading kernel a bubblewrap sandbox of its own.

jupyter_client starts a kernel through a provisioner, chosen by the kernel spec's
`metadata.kernel_provisioner.provisioner_name` and found under the `jupyter_client.kernel_provisioners`
entry point (this package registers `course-sandbox`; `autograder.nbgrader_setup.kernelspec` writes
the grading kernel spec that names it). nbgrader's Execute starts that kernel spec, so every kernel
of every student gets a fresh sandbox, built here on `LocalProvisioner`'s public hooks:

- `pre_launch`: a private folder for the kernel's sockets; the kernel manager connects over Unix
  sockets in it (`transport = "ipc"`), so the sandbox needs no network;
- `launch_kernel`: the submission's folder staged without its notebooks, and the kernel command
  wrapped by `sandbox.command`;
- `cleanup`: the private folder removed.

Its settings are traits (`c.SandboxProvisioner.mode`, `disk_bytes`, `tasks`, `cpu_seconds`), set by
`autograder.nbgrader_setup.config.configure`; the kernel manager hands its configuration on to it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner
from traitlets import Enum, Int

from autograder.execution import sandbox


class SandboxProvisioner(LocalProvisioner):  # type: ignore[misc]
    mode = Enum(sandbox.MODES, default_value="auto", config=True,
                help="bwrap: every kernel in a sandbox (fail when bwrap cannot start one); none: no sandbox; "
                     "auto: bwrap where it works")
    disk_bytes = Int(sandbox.Limits.disk_bytes, config=True,
                     help="size of the sandbox's /tmp (its working folder) and /dev/shm, and its largest file")
    tasks = Int(sandbox.Limits.tasks, config=True, help="processes and threads the kernel may have")
    cpu_seconds = Int(sandbox.Limits.cpu_seconds, config=True, help="CPU seconds per process; 0: no limit")

    folder: tempfile.TemporaryDirectory | None = None

    @property
    def sandboxed(self) -> bool:
        return sandbox.mode(self.mode) == "bwrap"

    @property
    def limits(self) -> sandbox.Limits:
        return sandbox.Limits(disk_bytes=self.disk_bytes, tasks=self.tasks, cpu_seconds=self.cpu_seconds)

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        if self.sandboxed and self.folder is None:
            self.folder = tempfile.TemporaryDirectory(prefix="kernel-")
            sockets = Path(self.folder.name) / "sockets"
            sockets.mkdir()
            manager = self.parent
            manager.transport, manager.ip = "ipc", str(sockets / "kernel")
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        if self.sandboxed:
            assert self.folder is not None
            folder = Path(self.folder.name)
            files = sandbox.stage(Path(kwargs.get("cwd") or os.getcwd()), folder / f"files-{len(os.listdir(folder))}")
            cmd = sandbox.command(cmd, files=files, sockets=folder / "sockets", limits=self.limits,
                                  read_only=(Path(self.parent.connection_file).resolve(),))
            kwargs["cwd"] = str(folder)
        return await super().launch_kernel(cmd, **kwargs)

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart=restart)
        if self.folder is not None and not restart:
            self.folder.cleanup()
            self.folder = None
