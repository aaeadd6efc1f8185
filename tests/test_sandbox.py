"""The kernel sandbox: what a student's kernel can and cannot reach, through a real kernel under bwrap."""

from __future__ import annotations

from pathlib import Path

import pytest
from nbclient.exceptions import CellTimeoutError

from autograder.execution import sandbox
from tests.notebooks import run_cells


def test_bwrap_works_on_this_machine():
    """make test installs bubblewrap: the grading sandbox is a requirement here, not an option."""
    assert sandbox.probe() is None, sandbox.probe()
    assert sandbox.mode() == "bwrap"


@pytest.fixture
def submission(tmp_path):
    """A grading layout in miniature: the secret next to the kernel's folder, a data file inside it."""
    (tmp_path / "gradebook.db").write_text("SECRET-GRADEBOOK")
    work = tmp_path / "autograded" / "student" / "00"
    work.mkdir(parents=True)
    (work / "00.ipynb").write_text("SECRET-HIDDEN-TESTS")
    (work / "data.csv").write_text("1,2,3")
    return tmp_path, work


@pytest.mark.kernel
def test_the_kernel_sees_its_own_files_and_the_course_package_only(submission):
    base, work = submission
    out = run_cells([
        "import os; print(sorted(name for name in os.listdir('.') if not name.startswith('.')))",
        "print(open('data.csv').read())",
        "import course.syllabus; print('course ok', len(course.syllabus.ASSIGNMENTS))",
        f"import os; print(os.path.exists({str(base / 'gradebook.db')!r}), os.path.exists('../../../gradebook.db'))",
        "import os; print(sorted(os.listdir(os.path.dirname(os.path.dirname(course.__file__)))))",
        "import os; print(os.environ['HOME'] == os.getcwd())",
    ], work)
    assert out[0].strip() == "['data.csv']", "nbgrader's copy of the notebook (hidden tests) must stay outside"
    assert out[1].strip() == "1,2,3"
    assert out[2].startswith("course ok 6")
    assert out[3].strip() == "False False"
    assert "source" not in out[4] and "autograder" not in out[4], out[4]
    assert out[5].strip() == "True"


@pytest.mark.kernel
def test_the_kernel_cannot_write_outside_its_scratch_folder_or_reach_the_network(submission):
    base, work = submission
    out = run_cells([
        "import course, os\npath = os.path.join(os.path.dirname(course.__file__), 'sandbox-probe.py')\ntry:\n"
        "    open(path, 'w').close()\n    os.remove(path)\n    print('wrote')\n"
        "except OSError as error:\n    print('refused', error.errno)",
        "open('result.txt', 'w').write('mine'); print('scratch ok')",
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=3); print('online')\n"
        "except OSError as error:\n    print('offline', error.errno)",
        "import os; print(os.getpid())",
        "try:\n    print(len(open('/etc/shadow').read()))\nexcept OSError as error:\n    print('refused', error.errno)",
    ], work)
    assert out[0].startswith("refused")
    assert out[1].strip() == "scratch ok"
    assert not (work / "result.txt").exists(), "the scratch copy, not the grading folder, is the working folder"
    assert out[2].startswith("offline")
    assert int(out[3]) < 10, "the kernel has its own PID namespace"
    assert out[4].strip() in ("0", "refused 2", "refused 13"), f"/etc/shadow is readable: {out[4][:80]}"


@pytest.mark.kernel
def test_a_cell_past_its_timeout_is_interrupted_not_left_running(submission):
    _, work = submission
    with pytest.raises(CellTimeoutError):
        run_cells(["while True:\n    pass"], work, timeout=5)


def test_the_mode_is_an_argument_checked_against_the_machine(monkeypatch):
    assert sandbox.mode("none") == "none"
    with pytest.raises(sandbox.SandboxUnavailable, match="expected one of"):
        sandbox.mode("chroot")
    monkeypatch.setattr(sandbox, "probe", lambda: "bwrap is not installed")
    for wanted in ("bwrap", "auto"):   # grading unconfined is only ever asked for, never fallen into
        with pytest.raises(sandbox.SandboxUnavailable, match="not installed.*bubblewrap.*--sandbox none"):
            sandbox.mode(wanted)
    assert "NONE (--sandbox none)" in sandbox.describe("none")


def test_a_checkout_under_tmp_is_bound_over_the_private_tmp(monkeypatch, tmp_path):
    """The sandbox's own /tmp must not hide a venv or a course checkout that lives under /tmp."""
    venv = Path("/tmp/checkout/.venv")
    monkeypatch.setattr(sandbox, "readable_roots", lambda: [venv])
    monkeypatch.setattr(sandbox, "course_package", lambda: Path("/tmp/checkout/course"))
    args = sandbox.command(["python"], files=tmp_path / "files", sockets=tmp_path / "sockets",
                           read_only=(tmp_path / "kernel.json",))
    private_tmp = next(i for i, (a, b) in enumerate(zip(args, args[1:])) if (a, b) == ("--tmpfs", "/tmp"))
    for bound in (str(venv), "/tmp/checkout/course", str(tmp_path / "sockets"), str(tmp_path / "kernel.json")):
        assert args.index(bound) > private_tmp, f"{bound} is bound before /tmp is replaced, so it is hidden"


def test_the_sandbox_command_carries_every_limit(tmp_path):
    """Each bound of `Limits` reaches bwrap (the tmpfs sizes) or confine.py (the rlimits), and the
    kernel command comes last, unchanged."""
    limits = sandbox.Limits(disk_bytes=12345678, tasks=77, cpu_seconds=99)
    args = sandbox.command(["python", "-m", "ipykernel_launcher", "-f", "c.json"], files=tmp_path, sockets=tmp_path,
                           limits=limits)
    sizes = [args[i + 1:i + 4] for i, arg in enumerate(args) if arg == "--size"]
    assert sizes == [["12345678", "--tmpfs", "/tmp"], ["12345678", "--tmpfs", "/dev/shm"]]
    confine = args[args.index("--") + 1:]
    assert confine[3] == str(sandbox.CONFINE)
    options = dict(zip(confine[4:confine.index("--", 4):2], confine[5:confine.index("--", 4):2]))
    assert options == {"--files": str(sandbox.FILES), "--work": str(sandbox.WORK), "--tasks": "77",
                       "--cpu-seconds": "99", "--file-bytes": "12345678"}
    assert confine[confine.index("--", 4) + 1:] == ["python", "-m", "ipykernel_launcher", "-f", "c.json"]


@pytest.mark.kernel
def test_the_kernel_runs_under_the_limits_it_was_given(submission):
    """Inside a real sandbox: the rlimits confine.py set, the tmpfs sizes, and what happens past them
    (a full /tmp says ENOSPC, a file past the size limit EFBIG even when sparse; RLIMIT_NPROC is set, though the kernel
    enforces it only for a grader that is not root outside the namespace: the watchdog counts tasks)."""
    _, work = submission
    limits = sandbox.Limits(disk_bytes=8 * 2**20, tasks=300, cpu_seconds=50)
    out = run_cells([
        "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC), resource.getrlimit(resource.RLIMIT_CPU), "
        "resource.getrlimit(resource.RLIMIT_FSIZE))",
        "import os; stat = os.statvfs('/tmp'); print(stat.f_blocks * stat.f_frsize, os.getcwd())",
        "import errno, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\ntry:\n"
        "    with open('big', 'wb') as handle:\n        handle.seek(9 * 2**20); handle.write(b'x')\nexcept OSError as error:\n    print(errno.errorcode[error.errno])",
        "import errno, os\nos.remove('big')\nwritten = 0\ntry:\n    for n in range(8):\n"
        "        with open(f'part{n}', 'wb') as handle:\n            handle.write(b'x' * 2**20); written += 1\n"
        "except OSError as error:\n    print(errno.errorcode[error.errno], written)",
    ], work, limits=limits)
    assert out[0].split(") (") == ["(300, 300", "50, 55", "8388608, 8388608)\n"], out[0]
    assert out[1].split() == [str(8 * 2**20), str(sandbox.WORK)]
    assert out[2].strip() == "EFBIG"
    assert out[3].split()[0] == "ENOSPC" and int(out[3].split()[1]) < 8


@pytest.mark.kernel
def test_a_kernel_past_its_cpu_time_dies(submission):
    """RLIMIT_CPU holds for root too: a spinning cell ends the kernel instead of running on."""
    from nbclient.exceptions import DeadKernelError

    _, work = submission
    with pytest.raises(DeadKernelError):  # the wall-clock timeout is far off, whatever the machine's load
        run_cells(["while True:\n    pass"], work, timeout=600, limits=sandbox.Limits(cpu_seconds=3))


@pytest.fixture
def fake_gpu_machine(tmp_path):
    """The device folder of a machine with two NVIDIA GPUs, as files under `tmp_path`."""
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    (dev / "dri").mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset",
                 "nvidia-caps/nvidia-cap1", "dri/renderD128", "null", "sda"):
        (dev / name).write_text(name)
    numa = tmp_path / "sys" / "bus" / "pci" / "devices" / "0000:01:00.0" / "numa_node"
    numa.parent.mkdir(parents=True)
    numa.write_text("0\n")
    return tmp_path


def test_gpu_device_nodes_and_sys_are_bound_where_the_machine_has_a_gpu(fake_gpu_machine):
    args = sandbox.gpu_binds(fake_gpu_machine)
    binds = {(args[i], args[i + 2]): args[i + 1] for i in range(0, len(args), 3)}
    expected_devices = ["/dev/dri", "/dev/nvidia-caps", "/dev/nvidia-modeset", "/dev/nvidia-uvm",
                        "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"]
    assert sorted(target for kind, target in binds if kind == "--dev-bind") == expected_devices
    assert binds[("--dev-bind", "/dev/nvidia0")] == str(fake_gpu_machine / "dev" / "nvidia0")
    assert binds[("--ro-bind", "/sys")] == str(fake_gpu_machine / "sys")
    assert not any(target in ("/dev/null", "/dev/sda") for _, target in binds), "only the GPU's nodes"


def test_no_gpu_binds_on_a_machine_without_the_nvidia_driver(fake_gpu_machine, tmp_path_factory):
    (fake_gpu_machine / "dev" / "nvidiactl").unlink()
    assert sandbox.gpu_binds(fake_gpu_machine) == [], "no control device: no driver, nothing to bind"
    assert sandbox.gpu_binds(tmp_path_factory.mktemp("empty")) == []


def test_bwrap_takes_the_gpu_binds_after_its_private_dev(fake_gpu_machine):
    """The binds land on top of the sandbox's own /dev, so the kernel sees the GPU nodes there."""
    import subprocess

    inside = subprocess.run(
        ["bwrap", *sandbox._namespace_args(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
         *sandbox.gpu_binds(fake_gpu_machine), "sh", "-c",
         "ls /dev/nvidia-caps; cat /dev/nvidia1; echo; cat /sys/bus/pci/devices/0000:01:00.0/numa_node; "
         "test -e /dev/sda || echo no-sda"],
        capture_output=True, text=True, timeout=30)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.split() == ["nvidia-cap1", "nvidia1", "0", "no-sda"]


def test_every_sandboxed_kernel_gets_the_gpu_binds_after_dev(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "gpu_binds", lambda: ["--dev-bind", "/dev/nvidia0", "/dev/nvidia0"])
    args = sandbox.command(["python", "-m", "ipykernel"], files=tmp_path, sockets=tmp_path)
    position = args.index("--dev-bind")
    assert args[position:position + 3] == ["--dev-bind", "/dev/nvidia0", "/dev/nvidia0"]
    assert args.index("--dev") < position < args.index("--")


def test_the_sandboxs_etc_leaves_the_secrets_out_rather_than_covering_them(tmp_path):
    """/etc/shadow is replaced whenever a user is added or removed (a hub makes users while grading runs):
    a bind onto it made at that moment failed the sandbox's start, so the secrets are left out of the
    sandbox's /etc instead, and an entry gone by the time bwrap starts is skipped."""
    from autograder.execution import sandbox

    etc = tmp_path / "etc"
    (etc / "ssh").mkdir(parents=True)
    (etc / "ssl" / "private").mkdir(parents=True)
    for name in ("shadow", "gshadow", "shadow-", "passwd", "hosts"):
        (etc / name).write_text(name)
    (etc / "localtime").symlink_to("/usr/share/zoneinfo/UTC")
    args = sandbox.etc_binds(etc)
    assert args[:2] == ["--dir", "/etc"]
    triples = [args[index:index + 3] for index in range(2, len(args), 3)]
    assert triples == [["--ro-bind-try", str(etc / "hosts"), "/etc/hosts"],
                       ["--symlink", "/usr/share/zoneinfo/UTC", "/etc/localtime"],
                       ["--ro-bind-try", str(etc / "passwd"), "/etc/passwd"],
                       ["--ro-bind-try", str(etc / "ssl"), "/etc/ssl"]]
