"""The one Jupyter kernel of the course.

Every notebook's metadata, papermill, nbval and nbgrader use the kernel named `KERNEL_NAME`. The
Makefile registers it inside the virtual environment (`--sys-prefix`), so it needs no write to the
home folder and always runs the environment's own Python.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

KERNEL_NAME = "tf-course"
DISPLAY_NAME = "Python 3 (TF course)"


def kernelspec_metadata() -> dict:
    """The `kernelspec` block every course notebook carries."""
    return {"name": KERNEL_NAME, "display_name": DISPLAY_NAME, "language": "python"}


def install(prefix: str | None = None, user: bool = False) -> None:
    """Register the current interpreter as the course kernel (ipykernel's own installer)."""
    command = [sys.executable, "-m", "ipykernel", "install", "--name", KERNEL_NAME,
               "--display-name", DISPLAY_NAME]
    if user:
        command.append("--user")
    else:
        command += ["--prefix", prefix or sys.prefix]
    subprocess.run(command, check=True)


@dataclass(frozen=True)
class KernelCheck:
    registered: bool
    spec_path: str | None
    spec_python: str | None
    running_python: str
    same_environment: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def check() -> KernelCheck:
    """Is the course kernel registered, and does it run the Python that is running now?"""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        return KernelCheck(False, None, None, sys.executable, False)
    spec_python = spec.argv[0] if spec.argv else None
    same = False
    if spec_python:
        try:
            same = Path(spec_python).resolve() == Path(sys.executable).resolve() or \
                Path(spec_python).parent.parent.resolve() == Path(sys.prefix).resolve()
        except OSError:
            same = False
    return KernelCheck(True, spec.resource_dir, spec_python, sys.executable, same)


def describe(spec_dir: str | Path) -> dict:
    """The kernel.json of a registered kernel, as a dict."""
    return json.loads((Path(spec_dir) / "kernel.json").read_text())
