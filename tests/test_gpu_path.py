"""The GPU path, checked where a CPU can tell: which GPUs a Dask worker's kernels see, what the gpu
profile puts in every kernel's environment, and TensorFloat-32 switched off and back."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from autograder.execution import executors, jobs
from autograder.runfolder import BuildFolder
from autograder.settings import GradingSettings
from course import gpu

ROOT = Path(__file__).resolve().parent.parent


def worker(host: str, name: str, gpus: int = 0) -> dict:
    return {"host": host, "name": name, "resources": {"GPU": gpus} if gpus else {}}


def test_the_gpu_workers_of_a_host_share_its_gpus_out_in_name_order():
    workers = {"tcp://10.0.0.1:4001": worker("10.0.0.1", "gpu-b", 1),
               "tcp://10.0.0.1:4002": worker("10.0.0.1", "gpu-a", 1),
               "tcp://10.0.0.1:4003": worker("10.0.0.1", "gpu-c", 2),
               "tcp://10.0.0.1:4004": worker("10.0.0.1", "cpu", 0),
               "tcp://10.0.0.2:4001": worker("10.0.0.2", "gpu-z", 1)}
    assigned = {address: executors.gpu_devices(address, workers) for address in workers}
    assert assigned == {"tcp://10.0.0.1:4001": "1", "tcp://10.0.0.1:4002": "0", "tcp://10.0.0.1:4003": "2,3",
                        "tcp://10.0.0.1:4004": None, "tcp://10.0.0.2:4001": "0"}
    assert executors.gpu_devices("tcp://10.9.9.9:1", workers) is None, "an unknown worker owns nothing"


def test_a_gpu_job_grows_gpu_memory_and_sees_the_workers_gpus_only(monkeypatch):
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    on_gpu = jobs.environment("gpu", gpu_devices="1")
    assert on_gpu["TF_FORCE_GPU_ALLOW_GROWTH"] == "true" and on_gpu["CUDA_VISIBLE_DEVICES"] == "1"
    on_cpu = jobs.environment("grade")
    assert "TF_FORCE_GPU_ALLOW_GROWTH" not in on_cpu
    assert on_cpu.get("CUDA_VISIBLE_DEVICES") == os.environ.get("CUDA_VISIBLE_DEVICES"), "left as the worker has it"


def test_the_profile_environment_is_set_for_the_block_only(monkeypatch):
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    with gpu.profile_environment("gpu"):
        assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert "TF_FORCE_GPU_ALLOW_GROWTH" not in os.environ
    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false")
    with gpu.profile_environment("ci"):
        assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "false"
    with gpu.profile_environment("gpu"):
        assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "false"


def test_make_test_gpu_gives_nbval_the_same_environment():
    """`make test-gpu` runs nbval's kernels outside `autograder`: the Makefile exports the same values."""
    makefile = (ROOT / "Makefile").read_text()
    for name, value in gpu.environment("gpu").items():
        assert re.search(rf"^test-gpu: export {name} := {value}$", makefile, re.M), f"{name}={value} for test-gpu"


@pytest.mark.tensorflow
def test_exact_float32_turns_tf32_off_and_restores_it():
    tf = pytest.importorskip("tensorflow")
    for before in (True, False):
        tf.config.experimental.enable_tensor_float_32_execution(before)
        with gpu.exact_float32():
            assert not tf.config.experimental.tensor_float_32_execution_enabled()
        assert tf.config.experimental.tensor_float_32_execution_enabled() is before
    tf.config.experimental.enable_tensor_float_32_execution(True)


def test_the_gpu_runner_grades_the_demo_class_with_the_gpu_profile(tmp_path):
    from autograder import cli
    from autograder.authoring import course_run

    command = course_run.grade_command("02_convlstm", BuildFolder(tmp_path), "gpu")
    given = cli.settings_given(cli.parser().parse_args(command[command.index("grade"):]))
    assert GradingSettings(**given).profile == "gpu" and "sandbox" not in given, "the sandbox as configured (auto)"
    given = cli.settings_given(cli.parser().parse_args(course_run.grade_command("02_convlstm", BuildFolder(tmp_path),
                                                                                "ci")[3:]))
    assert GradingSettings(**given).profile == "grade", "make run grades with the grade profile"


def test_a_gpu_only_cell_that_skipped_is_found_and_other_skips_are_not(tmp_path, capsys, monkeypatch):
    import nbformat

    monkeypatch.setattr(gpu, "visible_gpus", lambda: [])
    assert gpu.available(require=False, why="to time the matmul on the GPU") is False
    printed = capsys.readouterr().out
    with pytest.raises(gpu.GPURequiredError, match="REQUIRE_GPU"):
        gpu.available(require=True, why="to time the matmul on the GPU")
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("stream", text="before\n" + printed)]),
        nbformat.v4.new_code_cell("y", outputs=[nbformat.v4.new_output(
            "stream", text="Skipped (TF-TRT not usable): TensorRT is not installed\n")]),
        nbformat.v4.new_markdown_cell("Skipped (no GPU visible to TensorFlow) in prose is no output")])
    path = tmp_path / "executed.ipynb"
    nbformat.write(notebook, path)
    assert gpu.skipped_cells(path) == [printed.strip()]
    assert printed.startswith("Skipped (no GPU visible to TensorFlow): a GPU is needed to time")


def test_gpu_check_lists_its_items_and_fails_without_a_driver(monkeypatch):
    """On this CPU machine the driver item must FAIL (never pass by skipping)."""
    import subprocess
    import sys

    script = ROOT / "scripts" / "gpu-check"
    listed = subprocess.run([sys.executable, script, "--list"], capture_output=True, text=True, timeout=60)
    documented = re.findall(r"^  ([a-z0-9-]+) ", script.read_text().split('"""')[1], re.M)  # the docstring's items
    assert sorted(listed.stdout.split()) == sorted(documented) and "driver" in documented, (listed.stdout, documented)
    env = dict(os.environ, PATH="/usr/bin:/bin")  # no nvidia-smi here, as on every CPU machine
    done = subprocess.run([sys.executable, script, "driver"], capture_output=True, text=True, timeout=120,
                          env=env)
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines[0].startswith("FAIL  driver") and "nvidia-smi is not on PATH" in lines[0], lines
    unknown = subprocess.run([sys.executable, script, "nonsense"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "the items: driver" in unknown.stderr


def test_a_failed_install_leaves_no_stamp_and_gpu_1_selects_the_gpu_venv_and_lock(tmp_path):
    """The stamp says the venv matches its lock: an install that fails must not leave the old one."""
    import shutil
    import subprocess
    import time

    for name in ("Makefile", "pyproject.toml", "requirements.lock", "requirements-gpu.lock"):
        shutil.copy(ROOT / name, tmp_path / name)
    stamp = tmp_path / ".venv-gpu" / ".installed"
    stamp.parent.mkdir()
    stamp.touch()
    old = time.time() - 3600
    os.utime(stamp, (old, old))  # older than the lock: make must install again
    planned = subprocess.run(["make", "-n", "GPU=1", "venv"], cwd=tmp_path, capture_output=True, text=True)
    assert "-r requirements-gpu.lock" in planned.stdout and ".venv-gpu/bin/uv pip install" in planned.stdout
    assert "-r requirements.lock" not in planned.stdout
    failed = subprocess.run(["make", "GPU=1", "venv", "PYTHON=false"], cwd=tmp_path, capture_output=True, text=True)
    assert failed.returncode != 0, "creating the venv with `false` must fail"
    assert not stamp.exists(), "the failed install left the old stamp: the next make would skip the install"


def test_the_demo_class_is_graded_without_a_sandbox_only_where_none_can_start_and_says_so(monkeypatch, tmp_path):
    """The course's own solutions may be graded unconfined where bwrap cannot start, and the run says
    so first; where it can, the course's configured mode (which refuses when it cannot start)."""
    from autograder import cli
    from autograder.authoring import course_run
    from autograder.execution import sandbox

    monkeypatch.setattr(sandbox, "probe", lambda: "bwrap is not installed")
    mode, why = course_run.demo_sandbox()
    command = course_run.grade_command("01_session_vs_eager", BuildFolder(tmp_path), "ci", mode)
    assert cli.settings_given(cli.parser().parse_args(command[command.index("grade"):]))["sandbox"] == "none"
    assert why == "bwrap is not installed"
    monkeypatch.setattr(sandbox, "probe", lambda: None)
    assert course_run.demo_sandbox() == (None, None)
