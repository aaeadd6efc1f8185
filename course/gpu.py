"""What the notebooks and the grader do about GPUs.

GPU-only cells skip with a printed reason on a CPU machine and fail hard under the gpu profile
(REQUIRE_GPU comes from the parameters cell; the `gpu` profile sets it):

    if gpu.available(require=REQUIRE_GPU, why="to time the matmul on the GPU"):
        ...GPU code...

On a machine without a GPU this prints "Skipped (no GPU visible to TensorFlow): a GPU is needed
to ..." and returns False; with `require=True` it raises `GPURequiredError` instead, so the GPU
runner cannot pass by skipping (and `skipped_cells` finds any cell that did). The module also holds
the gpu profile's environment (memory growth), the per-student GPU memory cap the course kernel
applies (`MEMORY_LIMIT_VARIABLE`, `memory_limit_mb`, `limit_memory`) and `exact_float32` for
tolerance tests.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping

from course.environment import restored_environment

# What every kernel and subprocess of the gpu profile gets in its environment. TensorFlow maps all
# but a reserve of each GPU's memory at start unless allow_growth is on; TF_FORCE_GPU_ALLOW_GROWTH
# overrides GPUOptions.allow_growth for every process that inherits it (GPUBFCAllocator, see
# https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.h),
# so ONNX Runtime's CUDA provider in the same kernel, 04's auto-clustering subprocess and a second
# grading kernel on the same GPU still find memory.
PROFILE_ENVIRONMENT = {"gpu": {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}}


# Where many students share one GPU (a JupyterHub), each course kernel may get a cap on the GPU memory
# TensorFlow gives it, in MB (2**20 bytes, TensorFlow's unit): the hub sets this variable in every
# server's environment, the kernel inherits it, and `course.kernel` applies it when the kernel first
# imports TensorFlow. Memory growth stays on (TF_FORCE_GPU_ALLOW_GROWTH): the kernel takes memory as
# it needs it, up to the cap.
MEMORY_LIMIT_VARIABLE = "COURSE_GPU_MEMORY_LIMIT_MB"


def memory_limit_mb(environ: Mapping[str, str] | None = None) -> int | None:
    """The GPU memory cap in MB that `MEMORY_LIMIT_VARIABLE` asks for; None when it is unset or empty.
    ValueError, saying what is wrong, when it is not a positive whole number."""
    raw = (os.environ if environ is None else environ).get(MEMORY_LIMIT_VARIABLE, "")
    value = raw.strip()
    if not value:
        return None
    if not re.fullmatch(r"[0-9]+", value) or int(value) == 0:
        raise ValueError(f"{MEMORY_LIMIT_VARIABLE}={raw!r} is not a positive whole number of MB (e.g. 4096)")
    return int(value)


def limit_memory(tf, limit_mb: int) -> list:
    """Give every physical GPU TensorFlow sees one logical device of at most `limit_mb` MB, before
    TensorFlow initializes its devices; return those GPUs. Without a GPU: nothing, and no output.

    A logical device configuration and memory growth set through tf.config exclude each other:
    `Context.set_memory_growth` raises "Cannot set memory growth on device when virtual devices
    configured", and `Context._compute_device_options` leaves allow_growth out of GPUOptions once a
    device has a configuration (tensorflow/python/eager/context.py, 2.21). TF_FORCE_GPU_ALLOW_GROWTH
    still holds: GPUBFCAllocator reads it for every allocator, the capped one included
    (tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.cc), so the kernel grows up to the cap."""
    gpus = tf.config.list_physical_devices("GPU")
    for device in gpus:
        tf.config.set_logical_device_configuration(
            device, [tf.config.LogicalDeviceConfiguration(memory_limit=limit_mb)])
    return gpus


def environment(profile: str) -> dict[str, str]:
    """The environment variables a kernel of `profile` gets (none outside the gpu profile)."""
    return dict(PROFILE_ENVIRONMENT.get(profile, {}))


@contextlib.contextmanager
def profile_environment(profile: str):
    """`environment(profile)` set in os.environ for the block (kernels started in it inherit it)."""
    settings = environment(profile)
    with restored_environment(*settings):
        os.environ.update(settings)
        yield


@contextlib.contextmanager
def exact_float32():
    """TensorFloat-32 off in the block, as it was after.

    On NVIDIA GPUs from Ampere on, TensorFlow runs float32 matmuls and convolutions with TF32 inputs
    (10 mantissa bits) by default, so results differ from float32 by about 1e-3 relative; tests with
    a 1e-5 tolerance compute with it off. No effect on a CPU. (`enable_tensor_float_32_execution` in
    https://github.com/tensorflow/tensorflow/blob/v2.21.0/tensorflow/python/framework/config.py)"""
    import tensorflow as tf

    before = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        yield
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(before)


NO_GPU = "no GPU visible to TensorFlow"
SKIPPED = f"Skipped ({NO_GPU})"  # how a GPU-only cell that skips begins its printed reason


class GPURequiredError(RuntimeError):
    """The gpu profile demanded a GPU and TensorFlow sees none."""


def visible_gpus() -> list:
    """The physical GPUs TensorFlow sees (imports TensorFlow lazily)."""
    import tensorflow as tf

    return tf.config.list_physical_devices("GPU")


def available(*, require: bool, why: str) -> bool:
    """True when a GPU is visible; otherwise print why the cell is skipped, or raise if required."""
    gpus = visible_gpus()
    if gpus:
        return True
    reason = NO_GPU
    if require:
        raise GPURequiredError(
            f"REQUIRE_GPU is set (gpu profile) but {reason}; needed {why}. "
            "Check `nvidia-smi`, the driver, and `course doctor`."
        )
    print(f"{SKIPPED}: a GPU is needed {why}.")
    return False


def skipped_cells(executed) -> list[str]:
    """The lines of an executed notebook's outputs where a GPU-only cell said it skipped for want of
    a GPU (other skips, e.g. TensorRT not installed, are not counted)."""
    import nbformat

    notebook = nbformat.read(executed, as_version=4)
    found = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = output.get("text", "") if output.get("output_type") == "stream" else ""
            found += [line.strip() for line in text.splitlines() if line.startswith(SKIPPED)]
    return found
