"""The kernel provisioner that gives every grading kernel a bubblewrap sandbox of its own.

jupyter_client starts a kernel through a provisioner, chosen by the kernel spec's
`metadata.kernel_provisioner.provisioner_name` and found under the `jupyter_client.kernel_provisioners`
entry point (this package registers `course-sandbox`; `autograder.nbgrader_setup.kernelspec` writes
the grading kernel spec that names it). nbgrader's Execute starts that kernel spec, so every kernel
of every student gets a fresh sandbox, built here on `LocalProvisioner`'s public hooks:

- `pre_launch`: a private folder for the kernel's sockets; the kernel manager connects over Unix
  sockets in it (`transport = "ipc"`), so the sandbox needs no network;
- `launch_kernel`: the gradebook's password left out of the kernel's environment; the submission's
  folder staged without its notebooks, and the kernel command wrapped by `sandbox.command`;
- `cleanup`: the private folder removed, and the kernel's lifetime (launch to cleanup) logged at
  DEBUG with the record's `kernel_seconds` (the worker adds them up: the kernel's own time on a job).

Its settings are the grading settings' (`autograder.settings.GradingSettings`: `sandbox`,
`disk_limit`, `task_limit`, `cpu_limit`), read from the configuration the kernel manager hands on
to it (`c.GradingSettings.<name>`), so there is one record of them from the command line to here.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from autograder.execution import sandbox
from autograder.settings import PASSWORD_VARIABLE, GradingSettings

LIFETIME_LOG = logging.getLogger(__name__)


class SandboxProvisioner(LocalProvisioner):  # type: ignore[misc]
    folder: tempfile.TemporaryDirectory | None = None
    launched: float | None = None     # time.monotonic() at the kernel's launch

    @property
    def settings(self) -> GradingSettings:
        return GradingSettings(parent=self)

    @property
    def sandboxed(self) -> bool:
        return sandbox.mode(self.settings.sandbox) == "bwrap"

    @property
    def limits(self) -> sandbox.Limits:
        return self.settings.limits

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        if self.sandboxed and self.folder is None:
            self.folder = tempfile.TemporaryDirectory(prefix="kernel-")
            sockets = Path(self.folder.name) / "sockets"
            sockets.mkdir()
            manager = self.parent
            assert manager is not None, "jupyter_client makes a provisioner with its kernel manager as parent"
            manager.transport, manager.ip = "ipc", str(sockets / "kernel")
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        # the gradebook's password is the worker's (autograder.settings.without_password), never the kernel's
        kwargs["env"] = {name: value for name, value in (kwargs.get("env") or os.environ).items()
                         if name != PASSWORD_VARIABLE}
        if self.sandboxed:
            assert self.folder is not None
            assert self.parent is not None, "jupyter_client makes a provisioner with its kernel manager as parent"
            folder = Path(self.folder.name)
            files = sandbox.stage(Path(kwargs.get("cwd") or os.getcwd()), folder / f"files-{len(os.listdir(folder))}")
            cmd = sandbox.command(cmd, files=files, sockets=folder / "sockets", limits=self.limits,
                                  read_only=(Path(self.parent.connection_file).resolve(),))
            kwargs["cwd"] = str(folder)
        self.launched = time.monotonic()
        return await super().launch_kernel(cmd, **kwargs)

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart=restart)
        if self.folder is not None and not restart:
            self.folder.cleanup()
            self.folder = None
        if self.launched is not None and not restart:
            seconds = time.monotonic() - self.launched
            self.launched = None
            LIFETIME_LOG.debug("kernel %s lived %.2f s", self.kernel_id, seconds, extra={"kernel_seconds": seconds})
