"""GPU-only cells: skip with a printed reason on a CPU machine, fail hard under the gpu profile.

Usage in a notebook (REQUIRE_GPU comes from the parameters cell; the `gpu` profile sets it):

    if gpu.available(require=REQUIRE_GPU, why="to time the matmul on the GPU"):
        ...GPU code...

On a machine without a GPU this prints "Skipped (no GPU visible to TensorFlow): a GPU is needed
to ..." and returns
False; with `require=True` it raises `GPURequiredError` instead, so the GPU runner cannot pass by
skipping.
"""

from __future__ import annotations


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
    reason = "no GPU visible to TensorFlow"
    if require:
        raise GPURequiredError(
            f"REQUIRE_GPU is set (gpu profile) but {reason}; needed {why}. "
            "Check `nvidia-smi`, the driver, and `course doctor`."
        )
    print(f"Skipped ({reason}): a GPU is needed {why}.")
    return False
