"""Facts about this environment: Python, packages, TensorFlow's build, devices, CUDA libraries.

`collect()` gathers facts and never judges them (that is `doctor`'s job). Importing TensorFlow is
optional so a terminal diagnosis can first check, in a subprocess, that the import works at all.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PACKAGES = ("tensorflow", "tensorflow-cpu", "keras", "numpy", "keras-hub", "tensorflow-text",
            "tensorboard", "nbgrader", "papermill", "nbval", "onnxruntime", "onnxruntime-gpu",
            "tf2onnx")

BUILD_INFO_KEYS = ("is_cuda_build", "is_rocm_build", "is_tensorrt_build", "cuda_version",
                   "cudnn_version", "cuda_compute_capabilities")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution, None when it is not installed."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def nvidia_distributions() -> dict[str, str]:
    """The pip-installed NVIDIA runtime distributions (nvidia-cudnn-cu12, ...) and their versions."""
    found = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name.startswith("nvidia-"):
            found[name] = dist.version
    return dict(sorted(found.items()))


def library_path_entries() -> list[str]:
    """LD_LIBRARY_PATH split into its entries (empty entries dropped)."""
    return [entry for entry in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if entry]


def cuda_runtimes_on_library_path() -> list[str]:
    """Every libcudart / libcudnn file reachable through LD_LIBRARY_PATH.

    A system CUDA listed here is searched before the wheel's own RUNPATH and can shadow it.
    """
    hits = []
    for entry in library_path_entries():
        folder = Path(entry)
        if not folder.is_dir():
            continue
        for pattern in ("libcudart.so*", "libcudnn.so*"):
            hits.extend(str(path) for path in sorted(folder.glob(pattern)))
    return hits


def cpu_flags() -> dict[str, bool | None]:
    """Whether the CPU has AVX, AVX2, FMA and AVX-512F (Linux only; None for each where unknown).

    TensorFlow's release wheels need AVX and nothing newer: `.bazelrc` builds them with the
    `avx_linux` config (`-mavx`). AVX2, FMA and AVX-512F are what `cpu_feature_guard.cc` lists as
    available but unused, and what a source build with `-march=native` on this CPU would use.
    """
    wanted = ("avx", "avx2", "fma", "avx512f")
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {flag: None for flag in wanted}
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
    return {flag: flag in flags for flag in wanted}


def import_check(timeout: float = 120.0) -> dict[str, Any]:
    """Does TensorFlow import: asked of a fresh interpreter, with the last error line if not.

    In a process that has imported TensorFlow already (a notebook's kernel), the import evidently
    works: that is the answer, without a second interpreter (seconds of a core). A failed import
    leaves no `tensorflow` in `sys.modules`, so it is asked of a fresh interpreter as before."""
    loaded = sys.modules.get("tensorflow")
    if getattr(loaded, "__version__", None):
        return {"ok": True, "returncode": 0, "error": "", "version": loaded.__version__}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    try:
        done = subprocess.run([sys.executable, "-c", "import tensorflow as tf; print(tf.__version__)"],
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "returncode": None, "error": f"import took longer than {timeout:.0f} s"}
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    error = lines[-1] if done.returncode != 0 and lines else ""
    if done.returncode < 0:
        error = f"killed by signal {-done.returncode}" + (f": {error}" if error else "")
    return {"ok": done.returncode == 0, "returncode": done.returncode, "error": error,
            "version": done.stdout.strip() if done.returncode == 0 else None}


def tensorflow_facts() -> dict[str, Any]:
    """Build info and devices as TensorFlow reports them (imports TensorFlow)."""
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    devices = []
    for device in tf.config.list_physical_devices():
        entry = {"name": device.name, "type": device.device_type}
        if device.device_type == "GPU":
            details = tf.config.experimental.get_device_details(device)
            entry["device_name"] = details.get("device_name")
            capability = details.get("compute_capability")
            entry["compute_capability"] = ".".join(map(str, capability)) if capability else None
        devices.append(entry)
    return {
        "version": tf.__version__,
        "built_with_cuda": tf.test.is_built_with_cuda(),
        "build_info": {key: _jsonable(build.get(key)) for key in BUILD_INFO_KEYS if key in build},
        "devices": devices,
        "library_dir": tf.sysconfig.get_lib(),
    }


@contextlib.contextmanager
def captured_stderr():
    """Collect what is written to file descriptor 2 inside the block, where TensorFlow's C++ logging
    writes directly (past `sys.stderr`); yields a list of the lines, filled when the block ends."""
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines.extend(line for line in sink.read().decode("utf-8", "replace").splitlines() if line.strip())


def collect(import_tensorflow: bool = True) -> dict[str, Any]:
    """Every fact, as a JSON-serialisable dict."""
    facts: dict[str, Any] = {
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "prefix": sys.prefix, "in_virtualenv": sys.prefix != sys.base_prefix},
        "platform": {"system": platform.system(), "machine": platform.machine(),
                     "release": platform.release()},
        "packages": package_versions(),
        "nvidia_distributions": nvidia_distributions(),
        "ld_library_path": library_path_entries(),
        "cuda_on_ld_library_path": cuda_runtimes_on_library_path(),
        "cpu_flags": cpu_flags(),
    }
    if import_tensorflow:
        # what TensorFlow logs while it imports and looks for devices (the cuInit failure on a
        # machine without a driver) is a fact too: `doctor` turns it into a diagnosis
        with captured_stderr() as log:
            facts["tensorflow"] = tensorflow_facts()
        facts["tensorflow_log"] = log
    return facts


def report(facts: dict[str, Any] | None = None) -> str:
    """A few lines a reader takes in at a glance."""
    facts = facts if facts is not None else collect()
    packages = facts["packages"]
    lines = [
        f"Python      {facts['python']['version']} ({facts['python']['executable']})",
        "Packages    " + ", ".join(f"{name} {version}" for name, version in packages.items()
                                   if version and name in ("tensorflow", "tensorflow-cpu", "keras", "numpy")),
    ]
    tf_facts = facts.get("tensorflow")
    if tf_facts:
        build = tf_facts["build_info"]
        cuda = build.get("cuda_version") or "none"
        cudnn = build.get("cudnn_version") or "none"
        lines.append(f"TF build    CUDA build: {build.get('is_cuda_build')}, CUDA {cuda}, cuDNN {cudnn}, "
                     f"TensorRT build: {build.get('is_tensorrt_build')}")
        gpus = [device for device in tf_facts["devices"] if device["type"] == "GPU"]
        cpus = [device for device in tf_facts["devices"] if device["type"] == "CPU"]
        gpu_text = ", ".join(f"{gpu.get('device_name')} (cc {gpu.get('compute_capability')})" for gpu in gpus)
        lines.append(f"Devices     {len(cpus)} CPU, {len(gpus)} GPU" + (f": {gpu_text}" if gpus else ""))
    nvidia = facts["nvidia_distributions"]
    lines.append(f"pip CUDA    {len(nvidia)} nvidia-* distributions" +
                 (f" ({', '.join(sorted(nvidia))})" if nvidia else ""))
    lines.append(f"LD_LIBRARY_PATH  {os.pathsep.join(facts['ld_library_path']) or '(unset)'}")
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return str(value)


@contextlib.contextmanager
def restored_environment(*names: str):
    """Let a block change the environment variables `names`; put back their old values after."""
    previous = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
