"""Warm kernels: kernels forked from a kernel server that imported the notebook's packages once.

Through real kernels: what a forked kernel has (the preloaded modules, a scratch copy of its folder,
the sandbox), what it must not have (the previous kernel's files and processes, the server's control
socket, the server's random state), what happens when a student's kernel attacks its server, and
that a class graded with warm kernels gets exactly the rows it gets with cold ones.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder import grade, sandbox, warm_kernels
from course.kernel import KERNEL_NAME
from tests import notebooks
from tests.notebooks import run_cells

pytestmark = pytest.mark.grading


def test_preload_modules_are_the_third_party_packages_the_notebook_imports():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("import pandas"),
        nbformat.v4.new_code_cell("import os, sys\nimport tensorflow as tf\nfrom keras import layers"),
        nbformat.v4.new_code_cell("from course import syllabus\nfrom . import local\nimport numpy.linalg"),
        nbformat.v4.new_code_cell("def f(:\n    import scipy"),          # unparsable: its import lines count
        nbformat.v4.new_code_cell("if False:\n    import tensorflow\n    from sklearn.datasets import load_digits"),
        nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    import onnx\n    ### END SOLUTION\n"
                                  "import matplotlib.pyplot as plt"),
        nbformat.v4.new_code_cell("assert True\n### BEGIN HIDDEN TESTS\nimport pandas\n### END HIDDEN TESTS"),
    ])
    assert warm_kernels.preload_modules(notebook) == ["tensorflow", "keras", "numpy", "scipy", "sklearn",
                                                      "matplotlib"], \
        "what the solution or a hidden test imports must not show in a student's sys.modules"


def test_only_an_ipykernel_command_can_be_forked():
    assert warm_kernels.interpreter(["/v/bin/python", "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f",
                                     "k.json"]) == ["/v/bin/python", "-Xfrozen_modules=off"]
    assert warm_kernels.interpreter(["/v/bin/python", "-m", "ipykernel", "-f", "k.json"]) is None
    assert warm_kernels.interpreter(["julia", "kernel.jl", "{connection_file}"]) is None
    assert warm_kernels.interpreter(["-m", "ipykernel_launcher"]) is None


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("warm") / "server.log"
    started = warm_kernels.KernelServer(warm_kernels.kernel_python(KERNEL_NAME), preload=["numpy"],
                                        sandbox_mode=sandbox.mode(), log=log)
    started.ensure()
    yield started
    started.close()


@pytest.fixture
def warm(server, monkeypatch):
    """Kernels started in this test fork from `server`."""
    monkeypatch.setenv(warm_kernels.ENV, str(server.ensure().root))
    return server


@pytest.fixture
def folder(tmp_path):
    """A kernel's folder as nbgrader leaves it: the notebook (with hidden tests) and a data file."""
    work = tmp_path / "autograded" / "student" / "00"
    work.mkdir(parents=True)
    (work / "00.ipynb").write_text("SECRET-HIDDEN-TESTS")
    (work / "data.csv").write_text("1,2,3")
    return work


def test_a_warm_kernel_has_the_preloaded_modules_and_a_scratch_copy_of_its_folder(warm, folder):
    out = run_cells([
        "import sys; print('numpy' in sys.modules, 'ipykernel.kernelapp' in sys.modules)",
        "import os; print(sorted(name for name in os.listdir('.') if not name.startswith('.')))",
        "print(open('data.csv').read())",
        "import os; print(os.environ['HOME'] == os.getcwd(), os.environ.get('AUTOGRADER_WARM_KERNELS'))",
        "import sys; print(sys.argv[0].endswith('ipykernel_launcher.py') or sys.argv[0])",
        "open('result.txt', 'w').write('mine'); print('wrote')",
    ], folder)
    assert out[0].split() == ["True", "True"], "the kernel must be a fork of the warm server"
    assert out[1].strip() == "['data.csv']", "nbgrader's copy of the notebook (hidden tests) must stay outside"
    assert out[2].strip() == "1,2,3"
    assert out[3].split()[0] == "True" and out[3].split()[1] == str(warm.address.root), out[3]
    assert out[4].strip() == "True", out[4]
    assert not (folder / "result.txt").exists(), "the kernel works in a copy, not in nbgrader's folder"


@pytest.mark.skipif(sandbox.mode() != "bwrap", reason="the server's sandbox needs bwrap")
def test_a_warm_kernel_cannot_reach_its_server_or_the_grading_folder(warm, folder):
    control, settings = warm.address.control, warm.address.settings
    out = run_cells([
        f"import os; print(os.path.exists({str(control)!r}), os.path.exists({str(settings)!r}))",
        f"import os; print(os.path.exists({str(folder / '00.ipynb')!r}))",
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=3); print('online')\n"
        "except OSError as error:\n    print('offline', error.errno)",
        PTRACE,
    ], folder)
    assert out[0].split() == ["False", "False"], "the control socket is outside the server's sandbox"
    assert out[1].strip() == "False"
    assert out[2].startswith("offline")
    assert out[3].split() == ["refused", "refused", "refused", "refused"], \
        f"the kernel can read or change its server (which forks the next student's kernel): {out[3]}"


# what a kernel would need to change the server that forks the next student's kernel
PTRACE = """
import ctypes, os
server = os.getppid()
for name, mode in (('mem', 'r+b'), ('environ', 'rb'), ('fd/0', 'rb')):
    try:
        open(f'/proc/{server}/{name}', mode).read(1)
        print('opened', end=' ')
    except OSError:
        print('refused', end=' ')
print('attached' if ctypes.CDLL(None, use_errno=True).ptrace(16, server, 0, 0) == 0 else 'refused')
"""


STRAY = """
import os, time
for folder in ('.', '/tmp', '/dev/shm'):
    open(os.path.join(folder, 'left-by-a.txt'), 'w').write('A')
reader, writer = os.pipe()
if os.fork() == 0:          # a double-forked sleeper, in a session of its own
    os.setsid()
    sleeper = os.fork()
    if sleeper == 0:
        time.sleep(600)
    os.write(writer, str(sleeper).encode())
    os._exit(0)
print(os.read(reader, 20).decode())
"""


def test_nothing_of_one_kernel_is_left_for_the_next(warm, folder):
    sleeper = int(run_cells([STRAY], folder)[0])       # its pid in the server's PID namespace, as the next kernel's
    out = run_cells([
        "import os; print([os.path.exists(os.path.join(f, 'left-by-a.txt')) for f in ('.', '/tmp', '/dev/shm')])",
        "import os; print(sorted(os.listdir('/tmp')))",
        f"import os; print(os.path.exists('/proc/{sleeper}'))",
    ], folder)
    assert out[0].strip() == "[False, False, False]", "a kernel must not meet the previous kernel's files"
    if sandbox.mode() == "bwrap":  # the private /tmp holds only the folders bind mounts hang from
        bound = [warm.address.root, warm_kernels.SCRIPT, sandbox.course_package(), *sandbox.readable_roots()]
        mount_points = sorted({path.relative_to("/tmp").parts[0] for path in map(Path, bound)
                               if Path("/tmp") in path.parents})
        assert out[1].strip() == str(mount_points), out[1]
    assert out[2].strip() == "False", "the previous kernel's processes must be gone before the next kernel starts"


def test_a_warm_kernel_past_its_timeout_is_interrupted_and_the_next_one_starts(warm, folder):
    with pytest.raises(CellTimeoutError):
        run_cells(["while True:\n    pass"], folder, timeout=5)
    assert run_cells(["print('next')"], folder)[0].strip() == "next"


def test_each_warm_kernel_has_its_own_random_state(warm, folder):
    cell = "import random, numpy; print(random.random(), numpy.random.rand())"
    first, second = run_cells([cell], folder)[0], run_cells([cell], folder)[0]
    assert first != second, "forks of one server must not replay its random numbers"


def test_a_kernel_that_kills_its_server_costs_only_itself(warm, folder):
    before = warm.process.pid
    with pytest.raises(DeadKernelError):
        run_cells(["import os, signal; os.kill(os.getppid(), signal.SIGKILL)", "import time; time.sleep(30)"], folder,
            timeout=60)
    deadline = time.monotonic() + 10
    while warm.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert warm.problem(), "the server was killed"
    os.environ[warm_kernels.ENV] = str(warm.ensure().root)     # as jobs.run does before each job
    assert warm.process.pid != before
    assert run_cells(["import sys; print('numpy' in sys.modules)"], folder)[0].strip() == "True"


@pytest.mark.parametrize("mode", ["bwrap", "none"])
def test_without_a_server_the_kernel_starts_cold(monkeypatch, tmp_path, folder, mode):
    if mode == "bwrap" and sandbox.probe() is not None:
        pytest.skip(f"bwrap cannot run here: {sandbox.probe()}")
    monkeypatch.setenv(sandbox.ENV_MODE, mode)
    monkeypatch.setenv(warm_kernels.ENV, str(tmp_path / "no-server"))
    assert run_cells(["import sys; print('numpy' in sys.modules)"], folder)[0].strip() == "False"
    with pytest.raises(warm_kernels.Unavailable):
        warm_kernels.launch(warm_kernels.Address(tmp_path / "no-server"), ["python", "-m", "ipykernel_launcher"],
                            cwd=folder, env={}, connection_file=tmp_path / "k.json", name="k")


def test_an_unknown_kind_of_kernel_is_refused(tmp_path):
    with pytest.raises(grade.GradingError, match="kernels must be one of auto, warm, cold"):
        grade.grade_class("00_gpu_setup", tmp_path, tmp_path, tmp_path / "out", options=grade.Options(kernels="hot"))


def test_warm_and_cold_kernels_grade_a_class_identically(tmp_path):
    """The same students, graded with each kind of kernel: the same rows, cell by cell."""
    source, release = notebooks.tiny_course(tmp_path, "00_gpu_setup")
    released = nbformat.read(release, as_version=4)
    submissions = tmp_path / "submissions"
    notebooks.write_class(released, {"right": "def double(value):\n    return value * 2\n",
                                     "wrong": "def double(value):\n    return 4\n",
                                     "crashes": "import os\nos._exit(3)\n"}, submissions, "00_gpu_setup.ipynb")
    said = {}
    results = {}
    for kernels in ("warm", "cold"):
        lines: list[str] = []
        results[kernels] = grade.grade_class("00_gpu_setup", source, submissions, tmp_path / kernels,
                                             options=grade.Options(workers=2, timeout=60, kernels=kernels),
                                             progress=lines.append)
        said[kernels] = lines
    assert any(line.startswith("kernels: warm") for line in said["warm"]), said["warm"]
    assert not any(line.startswith("kernels:") for line in said["cold"])

    def table(result):
        return [(row.student_id, row.status, row.score, row.max_score, row.cells,
                 row.reason.split(" for kernel ")[0]) for row in result.rows]

    assert table(results["warm"]) == table(results["cold"])
    assert [(row.student_id, row.status, row.score) for row in results["warm"].rows] == [
        ("crashes", "error", 0.0), ("right", "graded", 6.0), ("wrong", "graded", 0.0)]


def test_an_unsandboxed_server_serves_too(monkeypatch, tmp_path, folder):
    """AUTOGRADER_SANDBOX=none (a machine without bwrap): the kernels still fork from a warm server."""
    monkeypatch.setenv(sandbox.ENV_MODE, "none")
    server = warm_kernels.KernelServer(warm_kernels.kernel_python(KERNEL_NAME), preload=["numpy"],
                                       sandbox_mode="none", log=tmp_path / "server.log")
    try:
        monkeypatch.setenv(warm_kernels.ENV, str(server.ensure().root))
        out = run_cells(["import sys, os; print('numpy' in sys.modules, os.getcwd() == str(%r))" % str(server.address.work)],
                  folder)
        assert out[0].split() == ["True", "True"], out
    finally:
        server.close()
    assert not server.kernel_processes() and server.problem() == "not started"


def test_a_stopped_server_is_replaced_before_the_next_kernel(warm, folder):
    """A kernel can SIGSTOP its server (it costs that student a timeout); the next job must not wait on it."""
    import signal

    deadline = time.monotonic() + 30
    while warm.server_process() is None and time.monotonic() < deadline:   # bwrap has not exec'd it yet
        time.sleep(0.1)
    warm.server_process().send_signal(signal.SIGSTOP)
    while not warm.problem() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "stopped" in warm.problem()
    os.environ[warm_kernels.ENV] = str(warm.ensure().root)
    assert not warm.problem()
    assert run_cells(["print('served')"], folder)[0].strip() == "served"


def test_the_gpu_profile_starts_cold_kernels_unless_told_otherwise(tmp_path):
    said: list[str] = []
    assert grade.kernel_servers(grade.Options(profile="gpu"), nbformat.v4.new_notebook(), "none", tmp_path, 1,
                                said.append) == []
    assert said and said[0].startswith("kernels: cold (the gpu profile")
    assert grade.kernel_servers(grade.Options(kernels="cold"), nbformat.v4.new_notebook(), "none", tmp_path, 1,
                                said.append) == []
    assert grade.kernel_servers(grade.Options(scheduler="tcp://head:8786"), nbformat.v4.new_notebook(), "none",
                                tmp_path, 1, said.append) == []
    assert len(said) == 1


def test_closing_a_server_that_is_just_starting_leaves_no_process(tmp_path):
    """Closed at once (an instructor's Ctrl-C right after the start): nothing of bwrap survives. (An
    earlier version left bwrap's inner half running when it was killed mid-start; that race is too
    narrow to hit on demand, so this checks the outcome at a few moments of the start.)"""
    for attempt in range(4):   # closed at different moments of bwrap's start
        server = warm_kernels.KernelServer(warm_kernels.kernel_python(KERNEL_NAME), preload=[],
                                           sandbox_mode=sandbox.mode(), log=tmp_path / "server.log")
        root = str(server.ensure().root)
        time.sleep(attempt * 0.003)
        server.close()
        left = processes_naming(root)
        deadline = time.monotonic() + 10   # a killed process may take a moment to be reaped
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = processes_naming(root)
        assert not left, f"processes of a closed server, 10 s after close(): {left}"


def processes_naming(text: str) -> list:
    """Live (not zombie) processes with `text` in their command line."""
    import psutil

    return [process for process in psutil.process_iter(["cmdline", "status"])
            if process.info.get("status") != psutil.STATUS_ZOMBIE
            and any(text in argument for argument in process.info.get("cmdline") or ())]


def test_a_kernel_that_stops_its_server_costs_nobody_else(tmp_path):
    """SIGSTOP on the server: that student's job still ends, long before its timeout (the kernel's
    shutdown waits a few seconds for an exit the stopped server cannot report), with its answers
    graded as they are; the next student, on the same worker, meets a new server."""
    source, release = notebooks.tiny_course(tmp_path, "00_gpu_setup")
    released = nbformat.read(release, as_version=4)
    notebooks.write_class(released, {
        "a stopper": "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(5)\n"
                     "def double(value):\n    return 2 * value\n",
        "b honest": "def double(value):\n    return 2 * value\n"}, tmp_path / "subs", "00_gpu_setup.ipynb")
    result = grade.grade_class("00_gpu_setup", source, tmp_path / "subs", tmp_path / "out",
                               options=grade.Options(workers=1, timeout=120, kernels="warm"), progress=lambda _: None)
    rows = {row.student_id: row for row in result.rows}
    assert rows["a stopper"].seconds < 90, rows["a stopper"]
    assert (rows["a stopper"].status, rows["a stopper"].score) == ("graded", 6.0), rows["a stopper"]
    assert (rows["b honest"].status, rows["b honest"].score) == ("graded", 6.0), rows["b honest"]
    log = (tmp_path / "out" / "jobs" / "kernel-server-0.log").read_text(encoding="utf-8")
    assert "restarting the kernel server: a process of it is stopped" in log
