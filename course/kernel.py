"""The one Jupyter kernel of the course.

Every notebook's metadata, papermill, nbval and nbgrader use the kernel named `KERNEL_NAME`. The
Makefile registers it inside the virtual environment (`--sys-prefix`), so it needs no write to the
home folder and always runs the environment's own Python.

The kernel is ipykernel's, with one argument added to its spec's argv (`KERNEL_ARGUMENTS`): IPython
loads this module as an extension at kernel start (`load_ipython_extension`), which applies the
hub's per-student GPU memory cap (`course.gpu.MEMORY_LIMIT_VARIABLE`) when the kernel first
imports TensorFlow, so a kernel that never does starts as fast as before.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import logging
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from course import gpu

KERNEL_NAME = "tf-course"
DISPLAY_NAME = "Python 3 (TF course)"
# The environment the course kernel starts with. On a GPU, TensorFlow maps all but a reserve of the
# GPU's memory when it first touches it unless allow_growth is on, and TF_FORCE_GPU_ALLOW_GROWTH
# overrides GPUOptions.allow_growth for the process (GPUBFCAllocator,
# https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.h):
# 04's auto-clustering subprocess and 05's ONNX Runtime CUDA session run beside a kernel that would
# otherwise hold the whole GPU. Without a GPU the variable changes nothing.
KERNEL_ENVIRONMENT = {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}
# Appended to the argv ipykernel's installer writes (where its own extra arguments go, after
# `-f {connection_file}`). `--ext` is IPython's InteractiveShellApp.extra_extensions: the kernel
# imports the module and calls its `load_ipython_extension` after ipykernel has routed output to the
# notebook and its own log to the kernel's stderr, and before it answers any request; an extension
# that fails is logged and skipped, and the kernel starts anyway (IPython's shellapp.init_extensions).
KERNEL_ARGUMENTS = ("--ext=course.kernel",)


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
    environment of `KERNEL_ENVIRONMENT` and the arguments of `KERNEL_ARGUMENTS`, and give
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
    from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir

    # where ipykernel's installer (KernelSpecManager.install_kernel_spec) put the spec
    kernels = Path(jupyter_data_dir()) / "kernels" if user else Path(prefix or sys.prefix) / "share" / "jupyter" / "kernels"
    spec_file = kernels / KERNEL_NAME / "kernel.json"
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    spec["argv"] = startup_argv(spec["argv"])
    spec_file.write_text(json.dumps(spec, indent=1), encoding="utf-8")

    config_dir = Path(jupyter_config_dir()) if user else Path(prefix or sys.prefix) / "etc" / "jupyter"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "nbgrader_config.py").write_text(NBGRADER_CONFIG, encoding="utf-8")


def startup_argv(argv: list[str]) -> list[str]:
    """A kernel spec's argv with `KERNEL_ARGUMENTS` after it (each once)."""
    return [*argv, *(argument for argument in KERNEL_ARGUMENTS if argument not in argv)]


def load_ipython_extension(ipython) -> None:
    """The course kernel's start (IPython calls this for `--ext=course.kernel`): read the GPU memory
    cap of `gpu.MEMORY_LIMIT_VARIABLE` and apply it when TensorFlow is first imported, before any
    notebook code can touch the GPU. Importing TensorFlow here would add seconds to every kernel's
    start. Whatever it says goes to the kernel's log (ipykernel writes it to the kernel process's
    stderr, the Jupyter server's log, never into a cell): an unusable value once, as a warning."""
    log = getattr(getattr(ipython, "kernel", None), "log", None) or logging.getLogger(__name__)
    try:
        limit = gpu.memory_limit_mb()
    except ValueError as error:
        log.warning("%s: ignored, this kernel's GPU memory is not capped", error)
        return
    if limit is not None:
        _when_imported("tensorflow", lambda tf: _limit_memory(tf, limit, log))


def _limit_memory(tf, limit_mb: int, log) -> None:
    try:
        gpus = gpu.limit_memory(tf, limit_mb)
    except Exception as error:  # noqa: BLE001 - the student's import must go on; the log says why
        log.warning("could not cap GPU memory at %d MB (%s=%d): %s", limit_mb, gpu.MEMORY_LIMIT_VARIABLE,
                    limit_mb, error)
        return
    log.info("GPU memory capped at %d MB on %d GPU(s)", limit_mb, len(gpus))


def _when_imported(name: str, then) -> None:
    """Call `then(module)` once the top-level module `name` is imported: now if it is, else right
    after its first import has executed it, before the import statement returns (a finder on
    sys.meta_path whose loader wraps the real one's exec_module, PEP 451)."""
    if name in sys.modules:
        then(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, then) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self not in sys.meta_path:
            return None
        sys.meta_path.remove(self)  # the search below must not come back here
        spec = importlib.util.find_spec(fullname)
        if spec is None:
            sys.meta_path.insert(0, self)  # not installed (yet): wait for an import that finds it
        elif hasattr(spec.loader, "exec_module"):
            spec.loader = _ThenLoader(spec.loader, self.then)
        return spec


class _ThenLoader(importlib.abc.Loader):
    def __init__(self, loader, then) -> None:
        self.loader, self.then = loader, then

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__spec__.loader = module.__loader__ = self.loader  # the module keeps its own loader
        self.loader.exec_module(module)
        self.then(module)


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
