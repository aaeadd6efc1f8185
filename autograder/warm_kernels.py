"""Warm kernels: each local grading worker gets a kernel forkserver (`kernel_forkserver.py`) that has
imported the assignment's heavy modules once, and every kernel of that worker is a fork of it.

A TensorFlow notebook spends most of its grading time importing TensorFlow (about 6 CPU-seconds of
its 8); with a forkserver per worker that cost is paid once per worker, not once per notebook.

    server = KernelServer(interpreter, preload=["tensorflow", "keras", "numpy"], sandbox_mode="bwrap")
    address = server.ensure()              # (re)started when it is not running
    ... a grading worker with AUTOGRADER_WARM_KERNELS=<address.root> in its environment asks it
    for kernels: `autograder.sandbox.SandboxedKernelManager` calls `launch`, and falls back to a
    cold kernel when the server cannot serve (`Unavailable`)
    server.close()

The server lives in one bubblewrap sandbox of the same shape as a cold kernel's (`autograder.sandbox`)
and serves one kernel at a time. Before each kernel it kills everything the previous one left
running and empties the shared folders, so one student's kernel never meets another's files or
processes. Its control socket is outside the sandbox; kernels cannot ptrace it (it is not dumpable).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from autograder import sandbox

ENV = "AUTOGRADER_WARM_KERNELS"
SCRIPT = Path(__file__).with_name("kernel_forkserver.py")
LAUNCHER = "ipykernel_launcher"
# the first kernel of a worker waits for the server's preload, slower while the other workers import too
REPLY_SECONDS = 300.0
CLOSE_SECONDS = 30.0   # close() kills and looks again until nothing of the server is left, at most this long
SANDBOX_TEMP_DIRS = ("/tmp", "/dev/shm")   # private to the server's sandbox: emptied between kernels


class Unavailable(RuntimeError):
    """The kernel server cannot give this kernel: the caller starts a cold one."""


@dataclass(frozen=True)
class Address:
    """Where a kernel server's files are: `control.sock` (outside its sandbox), `work/` (the kernels'
    working folder and home) and `sockets/` (the kernels' IPC sockets and connection files)."""
    root: Path

    @property
    def control(self) -> Path:
        return self.root / "control.sock"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def sockets(self) -> Path:
        return self.root / "sockets"

    @property
    def settings(self) -> Path:
        return self.root / "server.json"


def from_env() -> Address | None:
    root = os.environ.get(ENV, "").strip()
    return Address(Path(root)) if root else None


def _secret_regions() -> re.Pattern:
    """What nbgrader removes from the release (its solution and hidden-test delimiters, as it
    configures them by default): the instructor's, and a kernel's sys.modules must not tell a
    student which packages the solution or the hidden tests use."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    def default(converter, trait: str) -> str:
        return converter.class_traits()[trait].default_value

    pairs = [(default(ClearSolutions, "begin_solution_delimeter"), default(ClearSolutions, "end_solution_delimeter")),
             (default(ClearHiddenTests, "begin_test_delimeter"), default(ClearHiddenTests, "end_test_delimeter"))]
    return re.compile("|".join(rf"^[^\n]*{re.escape(begin)}.*?^[^\n]*{re.escape(end)}[^\n]*" for begin, end in pairs),
                      re.M | re.S)


IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]+([A-Za-z_][\w.]*)", re.M)


def _imported(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a region cut out of a block leaves it unparsable: read the import lines
        return IMPORT_LINE.findall(source)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return found


def preload_modules(notebook) -> list[str]:
    """The third-party packages `notebook`'s code cells import outside solution and hidden-test
    regions (top-level names, in order), except the course's own package: what a kernel server
    imports before it forks."""
    secret = _secret_regions()
    names: list[str] = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for name in (module.split(".")[0] for module in _imported(secret.sub("", cell.source))):
            if name not in names and name not in sys.stdlib_module_names and name != "course":
                names.append(name)
    return names


def interpreter(kernel_argv: list[str]) -> list[str] | None:
    """The `python [flags]` of a kernelspec's `python [flags] -m ipykernel_launcher ...`; None for
    other kernel commands (they cannot be forked from a Python server)."""
    for index in range(len(kernel_argv) - 1):
        if kernel_argv[index] == "-m" and kernel_argv[index + 1] == LAUNCHER:
            return kernel_argv[:index] if index else None
    return None


def kernel_python(kernel_name: str) -> list[str]:
    """The interpreter command of the installed kernelspec `kernel_name`; `Unavailable` when there is
    no such kernelspec or it does not run ipykernel."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        argv = KernelSpecManager().get_kernel_spec(kernel_name).argv
    except NoSuchKernel:
        raise Unavailable(f"no kernelspec {kernel_name!r}") from None
    python = interpreter(argv)
    if python is None:
        raise Unavailable(f"kernelspec {kernel_name!r} does not run `python -m {LAUNCHER}`: {argv}")
    return python


def servers(count: int, *, kernel_name: str, notebook, sandbox_mode: str, log_dir: Path) -> list[KernelServer]:
    """`count` started kernel servers for `notebook`'s kernels (they preload what it imports while
    the caller goes on); `Unavailable` when its kernelspec cannot be forked."""
    python = kernel_python(kernel_name)
    preload = preload_modules(notebook)
    started = [KernelServer(python, preload=preload, sandbox_mode=sandbox_mode, log=log_dir / f"kernel-server-{index}.log")
               for index in range(count)]
    for server in started:
        server.ensure()
    return started


def _parents(process: psutil.Process) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return process.parents()
    return []


class KernelServer:
    """One kernel forkserver process (started on `ensure`) and its folder."""

    def __init__(self, python: list[str], *, preload: list[str], sandbox_mode: str, log: Path):
        self.python = list(python)
        self.preload = list(preload)
        self.sandboxed = sandbox_mode == "bwrap"
        self.log = log
        self.address: Address | None = None
        self.process: subprocess.Popen | None = None
        self._server_seen = False

    def _start(self) -> Address:
        address = Address(Path(tempfile.mkdtemp(prefix="autograder-warm-")))
        address.work.mkdir()
        address.sockets.mkdir()
        address.settings.write_text(json.dumps({"python": self.python, "sandboxed": self.sandboxed}),
                                    encoding="utf-8")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(address.control))
        listener.listen(8)
        wipe = [address.work, address.sockets, *(map(Path, SANDBOX_TEMP_DIRS) if self.sandboxed else ())]
        command = [*self.python, str(SCRIPT), "--listen-fd", str(listener.fileno()), "--work", str(address.work)]
        command += [argument for folder in wipe for argument in ("--wipe", str(folder))]
        command += [argument for module in self.preload for argument in ("--preload", module)]
        env = dict(os.environ, JPY_PARENT_PID="1")
        if self.sandboxed:
            command = sandbox.command(command, scratch=address.work, sockets=address.sockets, read_only=(SCRIPT,))
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            # the listening socket is the server's alone: once it dies, connecting fails at once
            self.process = subprocess.Popen(command, pass_fds=[listener.fileno()], env=env, cwd=address.work,
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                            start_new_session=True)
        listener.close()
        self.address = address
        return address

    def problem(self) -> str:
        """Why the server cannot serve ("" when it can)."""
        if self.process is None:
            return "not started"
        if self.process.poll() is not None:
            return f"it exited with code {self.process.returncode}"
        server = self.server_process()
        if server is not None:
            self._server_seen = True
        elif self._server_seen:   # (before bwrap has exec'd it, it is not there yet)
            return "the server process has gone"
        # the server and the bwrap processes above it; not its kernels, whose state is the student's
        above = {server.pid, *(parent.pid for parent in _parents(server))} if server is not None else None
        chain = [process for process in self._tree() if above is None or process.pid in above]
        try:
            states = [process.status() for process in chain]
        except psutil.NoSuchProcess:
            return "one of its processes has gone"
        stuck = [state for state in states if state in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)]
        return f"a process of it is {stuck[0]}" if stuck else ""

    def running(self) -> bool:
        return not self.problem()

    def ensure(self) -> Address:
        """The server's address, after starting it again if it died or was stopped (a student's
        kernel can signal its server; that costs the next kernel a cold start's time, nothing else)."""
        why = self.problem()
        if self.address is not None and not why:
            return self.address
        if self.process is not None:
            with contextlib.suppress(OSError), open(self.log, "a", encoding="utf-8") as log:
                log.write(f"autograder: restarting the kernel server: {why}\n")
        self.close()
        return self._start()

    def _tree(self) -> list[psutil.Process]:
        if self.process is None:
            return []
        try:
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def server_process(self) -> psutil.Process | None:
        """The forkserver's own process (below bwrap when sandboxed), once it has started."""
        command = [*self.python, str(SCRIPT)]   # not bwrap, whose command line holds the same words
        tree = self._tree()
        matching = []
        for process in tree:
            with contextlib.suppress(psutil.Error):
                if process.cmdline()[:len(command)] == command:
                    matching.append(process)
        # its kernels are forks with the same command line: the server is the one whose parent is not
        pids = {process.pid for process in matching}
        for process in matching:
            with contextlib.suppress(psutil.Error):
                if process.ppid() not in pids:
                    return process
        return None

    def kernel_processes(self) -> list[psutil.Process]:
        """The processes below the server (the current kernel and whatever it started): what a
        job's memory bound counts and kills, as it does a cold kernel's."""
        server = self.server_process()
        with contextlib.suppress(psutil.Error):
            return server.children(recursive=True) if server else []
        return []

    def _marked(self) -> list[psutil.Process]:
        """Every process whose command line names this server's folder: bwrap's inner half lives in
        a session of its own and outlives the outer one when that is killed before it armed its
        parent-death signal, so the tree below `process` alone could miss it."""
        if self.address is None:
            return []
        root = str(self.address.root)
        found = []
        for process in psutil.process_iter(["cmdline"]):
            if any(root in argument for argument in process.info.get("cmdline") or ()):
                found.append(process)
        return found

    def close(self) -> None:
        # kill, then look again: bwrap's outer half can be mid-clone when the first look is taken, and
        # its inner half (in a session of its own) is born after it and outlives it (seen in make test)
        deadline = time.monotonic() + CLOSE_SECONDS
        while True:
            tree = self._tree()
            tree += [process for process in self._marked() if process.pid not in {known.pid for known in tree}]
            if not tree or time.monotonic() > deadline:
                break
            for process in tree:
                with contextlib.suppress(psutil.Error):
                    process.kill()
            psutil.wait_procs(tree, timeout=5)
        if self.process is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.process.wait(timeout=5)
        if self.address is not None:
            shutil.rmtree(self.address.root, ignore_errors=True)
        self.process = self.address = None
        self._server_seen = False


class ForkedKernel:
    """What jupyter_client's LocalProvisioner keeps of a kernel process (`poll`, `wait`,
    `send_signal`, `kill`, `terminate`), for a kernel forked by a server: its connection to the server
    brings the exit code, takes the signals, and kills the kernel when it closes."""

    stdin = stdout = stderr = None

    def __init__(self, connection: socket.socket, pid: int, buffer: bytes = b""):
        self.connection = connection
        self.pid = pid
        self.returncode: int | None = None
        self._buffer = buffer

    def _read(self, timeout: float | None) -> None:
        self.connection.settimeout(timeout)
        try:
            while b"\n" not in self._buffer:
                data = self.connection.recv(4096)
                if not data:  # the server is gone, and its kernels with it
                    self._ended(-signal.SIGKILL)
                    return
                self._buffer += data
        except (BlockingIOError, socket.timeout):
            return
        except OSError:
            self._ended(-signal.SIGKILL)
            return
        line, self._buffer = self._buffer.split(b"\n", 1)
        with contextlib.suppress(ValueError, TypeError):
            message = json.loads(line)
            if "exit" in message:
                self._ended(int(message["exit"]))

    def _ended(self, code: int) -> None:
        self.returncode = code
        with contextlib.suppress(OSError):
            self.connection.close()

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self._read(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.connection.sendall(json.dumps({"op": "signal", "signum": int(signum)}).encode() + b"\n")

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _reply(connection: socket.socket, buffer: bytes) -> tuple[dict, bytes]:
    while b"\n" not in buffer:
        data = connection.recv(4096)
        if not data:
            raise Unavailable("the kernel server closed the connection")
        buffer += data
    line, rest = buffer.split(b"\n", 1)
    return json.loads(line), rest


def launch(address: Address, kernel_cmd: list[str], *, cwd: Path, env: dict[str, str], connection_file: Path,
           name: str) -> ForkedKernel:
    """Ask the server at `address` for a kernel running `kernel_cmd` (`python [flags] -m
    ipykernel_launcher -f CONNECTION_FILE ...`) with `env`, in a scratch copy of `cwd` without its
    notebooks; the connection file is copied to `sockets/<name>.json`, where the kernel can read it,
    and the command is pointed there. Raises `Unavailable`."""
    try:
        settings = json.loads(address.settings.read_text(encoding="utf-8"))
        connection = json.loads(connection_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise Unavailable(f"no kernel server at {address.root}: {error}") from None
    visible = address.sockets / f"{name}.json"
    kernel_cmd = [str(visible) if argument == str(connection_file) else argument for argument in kernel_cmd]
    if interpreter(kernel_cmd) != settings["python"]:
        raise Unavailable(f"the kernel command {kernel_cmd[:4]} is not the server's {settings['python']}")
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(REPLY_SECONDS)
    try:
        client.connect(str(address.control))
        client.sendall(b'{"op": "reset"}\n')
        reply, buffer = _reply(client, b"")
        if not reply.get("ok"):
            raise Unavailable(f"the kernel server did not reset: {reply}")
        work = sandbox.scratch_copy(cwd, address.work)
        overrides = sandbox.kernel_env(work) if settings["sandboxed"] else {"JPY_PARENT_PID": "1"}
        request = {"op": "launch", "argv": kernel_cmd, "env": {**env, **overrides}, "cwd": str(work),
                   "connection_file": str(visible), "connection": connection}
        socket.send_fds(client, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        reply, buffer = _reply(client, buffer)
    except (OSError, ValueError) as error:
        client.close()
        raise Unavailable(f"kernel server at {address.root}: {error}") from None
    except Unavailable:
        client.close()
        raise
    if "pid" not in reply:
        client.close()
        raise Unavailable(f"the kernel server refused: {reply.get('error', reply)}")
    return ForkedKernel(client, int(reply["pid"]), buffer)
