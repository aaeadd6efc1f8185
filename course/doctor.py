"""`course doctor`: the environment diagnosis of assignment 00, from a terminal.

Each check looks at facts from `environment` and says OK, WARN or FAIL with what to do next. The
notebook 00_gpu_setup teaches where each of these facts comes from and why each failure happens.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass
from typing import Any, Callable

from course import environment, kernel

OK, WARN, FAIL = "OK", "WARN", "FAIL"
# what the student README installs: the GPU lock into a fresh venv, and the kernel from the environment
GPU_INSTALL = ("install requirements-gpu.lock into a fresh venv (`pip install --require-hashes --no-deps "
               "-r requirements-gpu.lock`): it brings pip's CUDA libraries")
KERNEL_INSTALL = '`python -c "from course import kernel; kernel.install()"`'


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    hint: str = ""


def _python(facts: dict) -> Check:
    version = facts["python"]["version"]
    where = "a virtual environment" if facts["python"]["in_virtualenv"] else "the system interpreter"
    status = OK if sys.version_info[:2] == (3, 11) else WARN
    hint = "" if status == OK else "requirements.lock and requirements-gpu.lock pin packages for Python 3.11"
    return Check("python", status, f"Python {version} in {where}", hint)


def _tensorflow_import(check: dict) -> Check:
    if check["ok"]:
        return Check("import tensorflow", OK, f"TensorFlow {check['version']} imports")
    return Check("import tensorflow", FAIL, check["error"] or f"exit code {check['returncode']}",
                 "see 00_gpu_setup, section 'Classic import errors', for what this message means")


def _wheel(facts: dict) -> Check:
    packages = facts["packages"]
    if packages.get("tensorflow") and packages.get("tensorflow-cpu"):
        return Check("tensorflow wheel", FAIL, "both tensorflow and tensorflow-cpu are installed",
                     "uninstall both and reinstall from requirements.lock (keras-hub needs `tensorflow`)")
    if packages.get("tensorflow-cpu"):
        return Check("tensorflow wheel", WARN, "tensorflow-cpu is installed: no CUDA build",
                     f"for GPU support, {GPU_INSTALL}")
    return Check("tensorflow wheel", OK, f"tensorflow {packages.get('tensorflow')}")


def _build(facts: dict) -> Check:
    build = facts["tensorflow"]["build_info"]
    detail = (f"CUDA build {build.get('is_cuda_build')}, CUDA {build.get('cuda_version', '-')}, "
              f"cuDNN {build.get('cudnn_version', '-')}, TensorRT build {build.get('is_tensorrt_build')}")
    return Check("build", OK, detail)


# cuInit's result codes (CUresult, cuda.h) that TensorFlow's log can carry, and what each means here.
# 303 is what TensorFlow's own CUDA stub returns for every driver call when it cannot load the
# driver's library (GetSymbolNotFoundError in third_party/xla/xla/tsl/cuda/cuda_stub.cc), which
# DsoLoader::GetCudaDriverDsoHandle looks for as libcuda.so.1 (tsl/platform/default/dso_loader.cc);
# the stub's cuGetErrorName fails the same way, hence "UNKNOWN ERROR (303)" in the log line.
CU_INIT_RESULTS = {
    100: "the NVIDIA driver is loaded but reports no GPU (CUDA_ERROR_NO_DEVICE)",
    303: "no NVIDIA driver found: libcuda.so.1, the driver's library, could not be loaded",
    803: "the NVIDIA driver and its kernel module disagree (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)",
    999: "the NVIDIA driver failed to initialise (CUDA_ERROR_UNKNOWN)",
}
CU_INIT_FAILED = re.compile(r"failed call to cuInit: (?P<status>.*?)\s*$")


def driver_diagnosis(log: list[str]) -> str | None:
    """What TensorFlow's log says about the NVIDIA driver, in words; None when it says nothing.

    TensorFlow logs `failed call to cuInit: ... (<code>)` from the file its log line names
    (cuda_platform.cc) when it enumerates GPUs, and `Could not find cuda drivers` from
    cudart_stub.cc when the CUDA runtime, libcudart, does not load (its name notwithstanding, it says
    nothing of the driver: `DsoLoader::GetCudaRuntimeDsoHandle` failed)."""
    for line in log:
        match = CU_INIT_FAILED.search(line)
        if match:
            status = match.group("status")
            code = re.search(r"\((\d+)\)\s*$", status)
            meaning = CU_INIT_RESULTS.get(int(code.group(1))) if code else None
            return f"{meaning or 'cuInit failed'} (TensorFlow logged: failed call to cuInit: {status})"
    if any("Could not find cuda drivers" in line for line in log):
        return ("the CUDA runtime (libcudart) did not load: the CUDA wheels of tensorflow[and-cuda] are missing "
                "or not found (TensorFlow logged: Could not find cuda drivers on your machine)")
    return None


def _gpu(facts: dict) -> Check:
    gpus = [device for device in facts["tensorflow"]["devices"] if device["type"] == "GPU"]
    if gpus:
        names = ", ".join(f"{gpu.get('device_name')} (compute capability {gpu.get('compute_capability')})"
                          for gpu in gpus)
        return Check("gpu", OK, f"{len(gpus)} GPU visible: {names}")
    hint = "GPU-only cells will print why they skip"
    if facts["tensorflow"]["build_info"].get("is_cuda_build") and not facts["nvidia_distributions"]:
        hint += f"; on a GPU machine, {GPU_INSTALL}"
    driver = driver_diagnosis(facts.get("tensorflow_log", []))
    return Check("gpu", WARN, "no GPU visible to TensorFlow" + (f": {driver}" if driver else ""), hint)


def _shadowing(facts: dict) -> Check:
    hits = facts["cuda_on_ld_library_path"]
    if not hits:
        return Check("LD_LIBRARY_PATH", OK, "no CUDA runtime on LD_LIBRARY_PATH to shadow the wheel's own")
    return Check("LD_LIBRARY_PATH", WARN, "CUDA libraries on LD_LIBRARY_PATH: " + ", ".join(hits[:4]),
                 "they are searched before the wheel's RUNPATH ($ORIGIN/../nvidia/*/lib); "
                 "remove them unless they are the versions TensorFlow was built with")


def _cpu(facts: dict) -> Check:
    flags = facts["cpu_flags"]
    if flags.get("avx") is None:
        return Check("cpu", WARN, "could not read the CPU flags")
    if not flags.get("avx"):
        return Check("cpu", FAIL, "the CPU has no AVX", "TensorFlow wheels need AVX: expect 'Illegal instruction'")
    return Check("cpu", OK, "CPU flags: " + ", ".join(flag for flag, present in flags.items() if present))


def _kernel(_: dict) -> Check:
    found = kernel.check()
    if not found.registered:
        return Check("kernel", WARN, f"no Jupyter kernel named {kernel.KERNEL_NAME!r}",
                     f"register it from this environment: {KERNEL_INSTALL}")
    if not found.same_environment:
        return Check("kernel", WARN, f"kernel {kernel.KERNEL_NAME!r} runs {found.spec_python}, "
                     f"not this environment's {found.running_python}",
                     f"register it again from this environment: {KERNEL_INSTALL}")
    return Check("kernel", OK, f"kernel {kernel.KERNEL_NAME!r} runs this environment ({found.spec_python})")


def _loader_tools(_: dict) -> Check:
    """00's loader exercise compares answers with this machine's ld.so on libraries built with cc."""
    import os
    import shutil

    from course import loader

    missing = [what for what, present in (("the glibc x86-64 loader", os.path.exists(loader.LOADER)),
                                          ("a C compiler (cc)", shutil.which("cc") or shutil.which("gcc")))
               if not present]
    if missing:
        return Check("loader tools", WARN, "missing: " + ", ".join(missing),
                     "00's loader and fatbin exercises need Linux on x86-64 with glibc and `cc` "
                     "(Debian/Ubuntu: apt install gcc)")
    return Check("loader tools", OK, f"{loader.LOADER} and a C compiler, for 00's loader and fatbin exercises")


FACT_CHECKS: tuple[Callable[[dict], Check], ...] = (_python, _wheel, _cpu, _shadowing, _kernel, _loader_tools)
TENSORFLOW_CHECKS: tuple[Callable[[dict], Check], ...] = (_build, _gpu)


def diagnose() -> dict[str, Any]:
    """Run every check; TensorFlow is imported in this process only once it is known to import (a
    subprocess shows it, unless this process has imported it already: `environment.import_check`)."""
    imported = environment.import_check()
    facts = environment.collect(import_tensorflow=imported["ok"])
    checks = [check(facts) for check in FACT_CHECKS]
    checks.insert(1, _tensorflow_import(imported))
    if imported["ok"]:
        checks.extend(check(facts) for check in TENSORFLOW_CHECKS)
    return {"checks": [asdict(check) for check in checks], "facts": facts,
            "ok": all(check.status != FAIL for check in checks)}


def format_text(diagnosis: dict[str, Any]) -> str:
    lines = []
    for check in diagnosis["checks"]:
        lines.append(f"[{check['status']:>4}] {check['name']}: {check['detail']}")
        if check["hint"]:
            lines.append(f"       -> {check['hint']}")
    lines.append("")
    lines.append("healthy" if diagnosis["ok"] else "problems found (FAIL above)")
    return "\n".join(lines)


def format_json(diagnosis: dict[str, Any]) -> str:
    return json.dumps(diagnosis, indent=2, sort_keys=True)
