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
# The environment the course kernel starts with. On a GPU, TensorFlow maps all but a reserve of the
# GPU's memory when it first touches it unless allow_growth is on, and TF_FORCE_GPU_ALLOW_GROWTH
# overrides GPUOptions.allow_growth for the process (GPUBFCAllocator,
# https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.h):
# 04's auto-clustering subprocess and 05's ONNX Runtime CUDA session run beside a kernel that would
# otherwise hold the whole GPU. Without a GPU the variable changes nothing.
KERNEL_ENVIRONMENT = {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def kernelspec_metadata() -> dict:
    """The `kernelspec` block every course notebook carries."""
    return {"name": KERNEL_NAME, "display_name": DISPLAY_NAME, "language": "python"}


# nbgrader's Validate button runs the whole notebook with nbgrader's default of 30 s per cell; a
# course notebook's first cell (`import tensorflow`) alone can take longer on a busy laptop, and a
# training cell does with the default sizes. nbgrader's validate handler reads `nbgrader_config.py`
# from the folder JupyterLab was started in and from Jupyter's config path, where this sits.
VALIDATE_CELL_TIMEOUT = 600
NBGRADER_CONFIG = f"""# Written by `course.kernel.install()`: settings for nbgrader's Validate button in this environment.
# A TensorFlow notebook's first cell alone can take longer than nbgrader's default of 30 s per cell.
c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.Execute.timeout = {VALIDATE_CELL_TIMEOUT}
"""


def install(prefix: str | None = None, user: bool = False) -> None:
    """Register the current interpreter as the course kernel (ipykernel's own installer) with the
    environment of `KERNEL_ENVIRONMENT`, and give
    nbgrader's Validate a per-cell timeout that fits TensorFlow notebooks (environment-wide, beside
    the kernel; a course directory's own nbgrader_config.py still decides there)."""
    command = [sys.executable, "-m", "ipykernel", "install", "--name", KERNEL_NAME,
               "--display-name", DISPLAY_NAME]
    for name, value in KERNEL_ENVIRONMENT.items():
        command += ["--env", name, value]
    if user:
        command.append("--user")
    else:
        command += ["--prefix", prefix or sys.prefix]
    subprocess.run(command, check=True)
    from jupyter_core.paths import jupyter_config_dir

    config_dir = Path(jupyter_config_dir()) if user else Path(prefix or sys.prefix) / "etc" / "jupyter"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "nbgrader_config.py").write_text(NBGRADER_CONFIG, encoding="utf-8")


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
