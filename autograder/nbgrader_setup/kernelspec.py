"""The grading kernel spec: the course kernel, started through the sandbox provisioner.

nbgrader's Execute runs every submission with `GRADING_KERNEL` (`config.configure` sets
`Execute.kernel_name`). Its spec is the course kernel's (`course.kernel`: same Python, same
arguments) with two additions, both jupyter_client's documented kernel spec fields:

- `metadata.kernel_provisioner.provisioner_name`: `course-sandbox`, the provisioner this package
  registers under the `jupyter_client.kernel_provisioners` entry point
  (`autograder.execution.provisioner.SandboxProvisioner`);
- `interrupt_mode: "message"`: a cell past its timeout is interrupted by a message to the kernel,
  since a signal would reach the sandbox's init, not the kernel.

`install()` writes it beside the course kernel, in the environment (`--sys-prefix`); the Makefile
does so when it builds the venv, and every grading worker does before it grades (a no-op when the
spec is already there), so a cluster's workers need no step of their own.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from course.kernel import KERNEL_NAME

GRADING_KERNEL = "tf-course-grading"
PROVISIONER = "course-sandbox"


def spec() -> dict:
    """The grading kernel spec, from the course kernel's as this environment registered it."""
    course = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    return {"argv": list(course.argv), "display_name": f"{course.display_name} (grading sandbox)",
            "language": course.language, "interrupt_mode": "message",
            "metadata": {**course.metadata, "kernel_provisioner": {"provisioner_name": PROVISIONER}}}


def install(prefix: str | None = None) -> Path:
    """Write the grading kernel spec under `prefix` (default: this environment); atomic, and only when
    it differs, so grading workers on one machine may all call it at once."""
    folder = Path(prefix or sys.prefix) / "share" / "jupyter" / "kernels" / GRADING_KERNEL
    path = folder / "kernel.json"
    text = json.dumps(spec(), indent=1)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, encoding="utf-8", suffix=".tmp") as handle:
        handle.write(text)
    os.replace(handle.name, path)
    return path
