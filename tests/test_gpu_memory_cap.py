"""The hub's per-student GPU memory cap (`course.gpu.MEMORY_LIMIT_VARIABLE`), checked where a CPU can
tell: how the variable is read, what is asked of tf.config (faked GPUs), when the course kernel
applies it (at the first `import tensorflow`, never before), and what a real kernel start prints with
a good and a bad value. `scripts/gpu-check memory-cap` checks the cap on a GPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from course import gpu, kernel

ROOT = Path(__file__).resolve().parent.parent
VARIABLE = gpu.MEMORY_LIMIT_VARIABLE


# reading the variable -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, limit", [(None, None), ("", None), ("  ", None), ("1024", 1024),
                                          (" 4096\n", 4096), ("0512", 512), ("80000", 80000)])
def test_the_cap_is_a_positive_whole_number_of_mb_or_none(value, limit):
    environ = {} if value is None else {VARIABLE: value}
    assert gpu.memory_limit_mb(environ) == limit


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "1e3", "4GB", "4 096", "+8", "lots", "²"])
def test_a_bad_cap_says_what_is_wrong(value):
    with pytest.raises(ValueError) as raised:
        gpu.memory_limit_mb({VARIABLE: value})
    assert str(raised.value) == f"{VARIABLE}={value!r} is not a positive whole number of MB (e.g. 4096)"


def test_the_cap_is_read_from_the_environment_by_default(monkeypatch):
    monkeypatch.setenv(VARIABLE, "2048")
    assert gpu.memory_limit_mb() == 2048
    monkeypatch.delenv(VARIABLE)
    assert gpu.memory_limit_mb() is None


# applying it, with tf.config faked ----------------------------------------------------------------

class FakeConfig:
    """tf.config's three names that `gpu.limit_memory` uses, recording the calls."""

    def __init__(self, gpus: list) -> None:
        self.gpus, self.calls = gpus, []
        self.LogicalDeviceConfiguration = lambda memory_limit=None: ("logical", memory_limit)

    def list_physical_devices(self, device_type=None):
        self.calls.append(("list_physical_devices", device_type))
        return list(self.gpus)

    def set_logical_device_configuration(self, device, logical_devices):
        self.calls.append(("set_logical_device_configuration", device, logical_devices))


def test_each_gpu_gets_one_logical_device_of_the_cap(capsys):
    config = FakeConfig(["GPU:0", "GPU:1"])
    assert gpu.limit_memory(types.SimpleNamespace(config=config), 1024) == ["GPU:0", "GPU:1"]
    assert config.calls == [("list_physical_devices", "GPU"),
                            ("set_logical_device_configuration", "GPU:0", [("logical", 1024)]),
                            ("set_logical_device_configuration", "GPU:1", [("logical", 1024)])]
    assert capsys.readouterr() == ("", "")


def test_without_a_gpu_the_cap_does_nothing_and_says_nothing(capsys):
    config = FakeConfig([])
    assert gpu.limit_memory(types.SimpleNamespace(config=config), 1024) == []
    assert config.calls == [("list_physical_devices", "GPU")]
    assert capsys.readouterr() == ("", "")


@pytest.mark.tensorflow
def test_the_cap_through_tensorflows_own_config_with_faked_gpus(monkeypatch, capfd):
    tf = pytest.importorskip("tensorflow")
    gpus = [tf.config.PhysicalDevice(name=f"/physical_device:GPU:{index}", device_type="GPU") for index in range(2)]
    asked = []
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda device_type=None: asked.append(device_type) or
                        (gpus if device_type == "GPU" else []))
    configured = {}
    monkeypatch.setattr(tf.config, "set_logical_device_configuration",
                        lambda device, logical_devices: configured.setdefault(device.name, logical_devices))
    capfd.readouterr()
    assert gpu.limit_memory(tf, 1536) == gpus and asked == ["GPU"]
    assert {name: [(type(config), config.memory_limit) for config in configs] for name, configs in configured.items()} \
        == {device.name: [(tf.config.LogicalDeviceConfiguration, 1536)] for device in gpus}
    assert capfd.readouterr() == ("", "")
    monkeypatch.undo()
    assert gpu.limit_memory(tf, 1536) == [] and tf.config.list_logical_devices("GPU") == []  # this CPU machine
    printed = capfd.readouterr()
    assert printed.out == "" and all(re.match(r"[IWEF]\d{4} ", line) for line in printed.err.splitlines()), \
        "at most TensorFlow's own log (a CUDA build without a driver logs its failed cuInit once)"


# the kernel applies it when TensorFlow is first imported ------------------------------------------

@pytest.fixture
def fresh_meta_path(monkeypatch):
    """sys.meta_path as a copy for the test: no finder it adds outlives it."""
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    return sys.meta_path


class RecordingLog:
    """The kernel's log (ipykernel's `kernel.log`), recording what is said to it."""

    def __init__(self) -> None:
        self.said = []

    def warning(self, message, *args) -> None:
        self.said.append(("WARNING", message % args))

    def info(self, message, *args) -> None:
        self.said.append(("INFO", message % args))


class FakeIPython:
    def __init__(self, log) -> None:
        self.kernel = types.SimpleNamespace(log=log)


def test_the_kernel_start_waits_for_tensorflow_and_never_imports_it(monkeypatch, fresh_meta_path, capsys):
    monkeypatch.setenv(VARIABLE, "1024")
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)  # as in a kernel that has not imported it
    before, log = list(fresh_meta_path), RecordingLog()
    kernel.load_ipython_extension(FakeIPython(log))
    added = [finder for finder in fresh_meta_path if finder not in before]
    assert [type(finder).__name__ for finder in added] == ["_AfterImport"] and added[0].name == "tensorflow"
    assert "tensorflow" not in sys.modules and log.said == [] and capsys.readouterr() == ("", "")


def test_no_cap_adds_nothing_to_the_kernel(monkeypatch, fresh_meta_path, capsys):
    monkeypatch.delenv(VARIABLE, raising=False)
    before, log = list(fresh_meta_path), RecordingLog()
    kernel.load_ipython_extension(FakeIPython(log))
    assert fresh_meta_path == before and log.said == [] and capsys.readouterr() == ("", "")


def test_a_bad_cap_is_logged_once_and_the_kernel_goes_on(monkeypatch, fresh_meta_path, capsys):
    monkeypatch.setenv(VARIABLE, "4GB")
    before, log = list(fresh_meta_path), RecordingLog()
    kernel.load_ipython_extension(FakeIPython(log))
    assert fresh_meta_path == before, "nothing to apply"
    assert log.said == [
        ("WARNING", f"{VARIABLE}='4GB' is not a positive whole number of MB (e.g. 4096): ignored, "
                    "this kernel's GPU memory is not capped")]
    assert capsys.readouterr() == ("", ""), "the kernel's log, never a cell's output"


def write_package(folder: Path, name: str, source: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "__init__.py").write_text(textwrap.dedent(source))


def test_the_hook_runs_once_after_the_first_import_has_executed_the_module(tmp_path, monkeypatch, fresh_meta_path):
    monkeypatch.syspath_prepend(str(tmp_path))
    write_package(tmp_path, "capflow_fake", "import sys\nREADY = True\n")
    seen = []
    kernel._when_imported("capflow_fake", lambda module: seen.append((module.__name__, module.READY)))
    kernel._when_imported("capflow_missing", seen.append)
    import importlib

    importlib.import_module("capflow_fake")
    again = importlib.import_module("capflow_fake")  # a second import runs nothing

    assert seen == [("capflow_fake", True)]
    assert type(again.__loader__).__name__ == "SourceFileLoader" and again.__spec__.loader is again.__loader__
    assert [finder.name for finder in fresh_meta_path if type(finder).__name__ == "_AfterImport"] == ["capflow_missing"]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("capflow_missing")
    write_package(tmp_path, "capflow_missing", "LATE = 1\n")  # installed later: the hook still waits for it
    importlib.invalidate_caches()
    importlib.import_module("capflow_missing")

    assert [getattr(module, "LATE", None) for module in seen[1:]] == [1]
    seen.clear()
    kernel._when_imported("capflow_fake", lambda module: seen.append(module.__name__))
    assert seen == ["capflow_fake"], "already imported: applied at once"
    for name in ("capflow_fake", "capflow_missing"):
        del sys.modules[name]


def test_a_failure_to_apply_is_logged_and_the_import_goes_on():
    class Broken:
        class config:  # noqa: N801 - tf.config's name
            @staticmethod
            def list_physical_devices(device_type=None):
                raise RuntimeError("Physical devices cannot be modified after being initialized")

    log = RecordingLog()
    kernel._limit_memory(Broken, 1024, log)  # returns: the import that called it goes on
    assert log.said == [("WARNING",
        f"could not cap GPU memory at 1024 MB ({VARIABLE}=1024): Physical devices cannot be modified after being "
        "initialized")]
    log.said.clear()
    kernel._limit_memory(types.SimpleNamespace(config=FakeConfig(["GPU:0"])), 1024, log)
    assert log.said == [("INFO", "GPU memory capped at 1024 MB on 1 GPU(s)")]


# the kernel spec ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> Path:
    """The course kernel spec as `kernel.install` writes it, in a prefix of its own."""
    prefix = tmp_path_factory.mktemp("env")
    kernel.install(prefix=str(prefix))
    return prefix / "share" / "jupyter" / "kernels"


def test_the_installed_kernel_loads_the_cap_at_start(kernels):
    spec = json.loads((kernels / kernel.KERNEL_NAME / "kernel.json").read_text())
    assert spec["argv"][-len(kernel.KERNEL_ARGUMENTS):] == list(kernel.KERNEL_ARGUMENTS) == ["--ext=course.kernel"]
    assert spec["argv"][0] == sys.executable and "ipykernel_launcher" in spec["argv"], "ipykernel's own start"
    assert spec["env"] == kernel.KERNEL_ENVIRONMENT, "memory growth as before"
    assert kernel.startup_argv(spec["argv"]) == spec["argv"], "installed twice, named once"


# a real kernel start ------------------------------------------------------------------------------

FAKE_TENSORFLOW = """
    import collections

    calls = []
    PhysicalDevice = collections.namedtuple("PhysicalDevice", "name device_type")


    class _Logical:
        def __init__(self, memory_limit=None):
            self.memory_limit = memory_limit


    class config:
        LogicalDeviceConfiguration = _Logical
        gpus = {gpus}

        @staticmethod
        def list_physical_devices(device_type=None):
            calls.append(["list_physical_devices", device_type])
            return [PhysicalDevice(f"/physical_device:GPU:{{index}}", "GPU") for index in range(config.gpus)]

        @staticmethod
        def set_logical_device_configuration(device, logical_devices):
            calls.append(["set_logical_device_configuration", device.name, [d.memory_limit for d in logical_devices]])
"""


def run_in_kernel(kernels: Path, cells: list[str], cwd: Path, value: str | None) -> tuple[list[dict], str]:
    """Start the course kernel from `kernels` with the cap variable at `value` (None: unset), run
    `cells`; each cell's status, stdout and stderr, and what the kernel process wrote on its stderr."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    env = {name: setting for name, setting in os.environ.items() if name != VARIABLE}
    if value is not None:
        env[VARIABLE] = value
    manager = KernelManager(kernel_name=kernel.KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    process_stderr = cwd.parent / f"{cwd.name}.kernel-stderr.txt"
    results = []
    with process_stderr.open("w") as handle:
        manager.start_kernel(env=env, cwd=str(cwd), stderr=handle)
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=120)
        for code in cells:
            streams = {"stdout": "", "stderr": ""}

            def collect(message, streams=streams) -> None:
                if message["msg_type"] == "stream":
                    streams[message["content"]["name"]] += message["content"]["text"]
            reply = client.execute_interactive(code, output_hook=collect, timeout=180)
            results.append({"status": reply["content"]["status"], **streams})
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return results, process_stderr.read_text()


@pytest.mark.kernel
@pytest.mark.parametrize("gpus", [2, 0])
def test_a_kernel_with_a_cap_applies_it_at_the_first_import_of_tensorflow(kernels, tmp_path, gpus):
    """A `tensorflow` package in the kernel's folder stands in for TensorFlow (the folder comes first
    on the kernel's sys.path): the real kernel start, the real import hook, tf.config faked."""
    folder = tmp_path / "work"
    write_package(folder, "tensorflow", FAKE_TENSORFLOW.format(gpus=gpus))
    results, process_stderr = run_in_kernel(kernels, [
        "import sys\nprint('tensorflow' in sys.modules)",
        "import tensorflow as tf\nprint(tf.calls)",
        "import tensorflow\nprint(len(tensorflow.calls))"], folder, "1024")
    assert [result["status"] for result in results] == ["ok"] * 3, results
    assert results[0]["stdout"] == "False\n", "the kernel started without importing TensorFlow"
    expected = [["list_physical_devices", "GPU"]] + [
        ["set_logical_device_configuration", f"/physical_device:GPU:{index}", [1024]] for index in range(gpus)]
    assert results[1]["stdout"] == f"{expected}\n"
    assert results[2]["stdout"] == f"{len(expected)}\n", "applied once"
    assert [result["stderr"] for result in results] == [""] * 3, "nothing on a cell's stderr"
    assert VARIABLE not in process_stderr and "GPU memory" not in process_stderr, process_stderr


@pytest.mark.kernel
def test_a_kernel_with_a_bad_cap_says_so_once_in_its_log_and_runs(kernels, tmp_path):
    folder = tmp_path / "work"
    write_package(folder, "tensorflow", FAKE_TENSORFLOW.format(gpus=1))
    results, process_stderr = run_in_kernel(kernels, [
        "print(6 * 7)", "import tensorflow\nprint(tensorflow.calls)"], folder, "4GB")
    assert [(result["status"], result["stdout"], result["stderr"]) for result in results] == [
        ("ok", "42\n", ""), ("ok", "[]\n", "")], "the kernel runs, the cap is not applied, no cell says anything"
    said = [line for line in process_stderr.splitlines() if VARIABLE in line]
    assert said == [f"[IPKernelApp] WARNING | {VARIABLE}='4GB' is not a positive whole number of MB (e.g. 4096): "
                    "ignored, this kernel's GPU memory is not capped"], process_stderr


def without_log_prefixes(text: str) -> list[str]:
    """TensorFlow's C++ log lines without their time and thread (`I0000 00:00:1796516794.408514   26448 `)."""
    return [re.sub(r"^([IWEF])\d{4} [\d:.]+\s+\d+ ", r"\1 ", line) for line in text.splitlines()]


@pytest.mark.kernel
@pytest.mark.tensorflow
def test_with_real_tensorflow_and_no_gpu_the_cap_adds_nothing_to_stderr(kernels, tmp_path):
    """With the cap the kernel's cells print on stderr what they print without it: TensorFlow's own
    log lines, each once. (Where they land moves: on a CUDA build without a driver, as here, the
    failed cuInit is logged by the first device listing, which the cap makes part of the import.)"""
    cells = ["import tensorflow as tf",
             "print(tf.config.list_physical_devices('GPU'), tf.config.list_logical_devices('GPU'))",
             "import time\ntime.sleep(0.5)"]  # C++ output reaches the cells through a pipe ipykernel reads
    printed = {}
    for value in ("1024", None):
        folder = tmp_path / f"work-{value}"
        folder.mkdir()
        results, process_stderr = run_in_kernel(kernels, cells, folder, value)
        assert [(result["status"], result["stdout"]) for result in results] == [
            ("ok", ""), ("ok", "[] []\n"), ("ok", "")], results
        assert VARIABLE not in process_stderr and "GPU memory" not in process_stderr, process_stderr
        printed[value] = sorted(without_log_prefixes("".join(result["stderr"] for result in results)))
    assert printed["1024"] == printed[None]


@pytest.mark.kernel
@pytest.mark.tensorflow
def test_gpu_check_memory_cap_fails_on_a_cpu_machine_after_starting_the_kernel(kernels):
    """The item starts the registered course kernel (here the temporary one, first on JUPYTER_PATH) and
    reads what TensorFlow in it sees: on this CPU machine, no GPU, a FAIL with that reason."""
    env = dict(os.environ, JUPYTER_PATH=str(kernels.parent))
    done = subprocess.run([sys.executable, ROOT / "scripts" / "gpu-check", "memory-cap"], capture_output=True,
                          text=True, timeout=400, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["FAIL  memory-cap   TensorFlow in the kernel sees no GPU"], done.stdout
