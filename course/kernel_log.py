"""A notebook kernel whose own log goes to a file instead of the terminal.

A kernel process inherits the terminal's stdout and stderr from whoever starts it. What a cell
prints reaches the notebook's outputs over Jupyter's messages, but what the process writes to its
file descriptors 1 and 2 itself does not: TensorFlow's C++ log lines (`E0000 ... failed call to
cuInit`, the oneDNN notice), XLA's and the profiler's messages, ipykernel's own warnings. On a
terminal those read like errors of the command that ran the notebook. `KernelLogManager` starts the
kernel with both descriptors on `log_path` (appended), so `make run` can keep each notebook's
kernel log in a file and link it.

It is jupyter_client's `AsyncKernelManager` with one documented trait more; nbclient (and so
papermill) takes it as `kernel_manager_class` and configures it through `config`:

    papermill.execute_notebook(..., kernel_manager_class=KernelLogManager,
                               config=kernel_log_config(Path("build/x.kernel.log")))
"""

from __future__ import annotations

from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Unicode
from traitlets.config import Config


class KernelLogManager(AsyncKernelManager):
    """An AsyncKernelManager that starts its kernel with stdout and stderr appended to `log_path`."""

    log_path = Unicode("", config=True,
                       help="File the kernel process's stdout and stderr are appended to ('' = inherit them).")

    async def start_kernel(self, **kw):
        if not self.log_path:
            return await super().start_kernel(**kw)
        Path(self.log_path).parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:  # the kernel process keeps its own copies of the descriptor
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
            return await super().start_kernel(**kw)


def kernel_log_config(path: Path) -> Config:
    """The traitlets config that sends a KernelLogManager's kernel log to `path`."""
    return Config({"KernelLogManager": {"log_path": str(path)}})
