"""A kernel forkserver: imports an assignment's heavy modules (TensorFlow: ~6 CPU-seconds) once, then
forks every grading kernel from that warm state, so a notebook's `import tensorflow` is a lookup.

    python kernel_forkserver.py --listen-fd N --work DIR --wipe DIR ... [--preload MODULE ...]

`autograder.warm_kernels` starts it, inside the grading sandbox, as a plain script: it imports
nothing of `autograder` (the sandbox does not show it) and never runs student code itself; each
kernel is a fork that becomes `python -m ipykernel_launcher` with the request's argv, environment
and working folder. It serves one grading worker, one kernel at a time.

Each connection to the listening socket (inherited as a file descriptor; its path is outside the
sandbox) speaks newline-delimited JSON:

    -> {"op": "reset"}                  kill every process below this one (strays of the last
    <- {"ok": true}                     student included: this process is their subreaper) and
                                        empty the --wipe folders
    -> {"op": "launch", "argv": [...], "env": {...}, "cwd": "...", "connection_file": "...",
        "connection": {...}}            with the caller's stdin, stdout, stderr as SCM_RIGHTS fds
    <- {"pid": N} or {"error": "..."}
    -> {"op": "signal", "signum": N}    relayed to the kernel
    <- {"exit": code}                   when the kernel has ended
Closing the connection kills the kernel.

A kernel differs from a cold one in that the preloaded modules are already in `sys.modules`:
environment variables a module reads only at import time (`TF_ENABLE_ONEDNN_OPTS`) keep the values
the server started with, and every kernel shares the server's hash seed. The random modules are
reseeded in each kernel.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import stat
import sys
import threading
import time
import traceback

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
LAUNCHER = "ipykernel_launcher"


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def preload(modules: list[str]) -> list[str]:
    """Import `modules` (a failure is the kernel's to report, not ours); return what was imported."""
    done = []
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - SystemExit, or anything a package raises at import
            continue
        done.append(name)
    return done


def _remove(path: str, device: int) -> None:
    """Delete `path` and what is below it on `device`; a folder on another device is a bind mount
    (the venv, the course package, a checkout under /tmp): it is left alone, not walked."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(OSError):
            os.unlink(path)
        return
    if info.st_dev != device:
        return
    with contextlib.suppress(OSError):   # a student may leave folders without write permission
        os.chmod(path, stat.S_IRWXU)
    try:
        names = os.listdir(path)
    except OSError:
        names = []
    for name in names:
        _remove(os.path.join(path, name), device)
    with contextlib.suppress(OSError):
        os.rmdir(path)   # fails for a mount point, which is the sandbox's, not the student's


def empty(folder: str) -> None:
    """Delete everything in `folder` that lives on its file system."""
    try:
        device = os.stat(folder).st_dev
        os.chmod(folder, stat.S_IRWXU)
    except OSError:
        return
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        _remove(os.path.join(folder, name), device)


def descendants() -> list[int]:
    """Every process below this one, from /proc (children first found, grandchildren after)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
    found, frontier = [], [os.getpid()]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


class Server:
    def __init__(self, listener: socket.socket, work: str, wipe: list[str]):
        self.listener = listener
        self.work = work
        self.wipe = wipe
        self.selector = selectors.DefaultSelector()
        self.buffers: dict[socket.socket, bytes] = {}
        self.kernels: dict[socket.socket, int] = {}      # connection -> the kernel it launched
        self.wakeup_read, self.wakeup_write = os.pipe()
        os.set_blocking(self.wakeup_write, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wakeup_write)
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wakeup_read, selectors.EVENT_READ, "child")

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                if key.data == "accept":
                    connection, _ = self.listener.accept()
                    self.buffers[connection] = b""
                    self.selector.register(connection, selectors.EVENT_READ, "request")
                elif key.data == "child":
                    with contextlib.suppress(BlockingIOError):
                        os.read(self.wakeup_read, 4096)
                    self.reap()
                else:
                    self.receive(key.fileobj)  # type: ignore[arg-type]

    # -- connections -------------------------------------------------------------------------
    def receive(self, connection: socket.socket) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(connection, 65536, 3)
        except OSError:
            data, fds = b"", []
        if not data:
            self.drop(connection)
            return
        self.buffers[connection] += data
        while b"\n" in self.buffers[connection]:
            line, self.buffers[connection] = self.buffers[connection].split(b"\n", 1)
            try:
                request = json.loads(line)
            except ValueError:
                self.drop(connection)
                return
            self.handle(connection, request, fds)
            fds = []
        for fd in fds:
            os.close(fd)

    def send(self, connection: socket.socket, message: dict) -> None:
        with contextlib.suppress(OSError):
            connection.sendall(json.dumps(message).encode() + b"\n")

    def drop(self, connection: socket.socket) -> None:
        pid = self.kernels.pop(connection, None)
        if pid is not None:
            self.kill_all()
        self.selector.unregister(connection)
        self.buffers.pop(connection, None)
        connection.close()

    def handle(self, connection: socket.socket, request: dict, fds: list[int]) -> None:
        op = request.get("op")
        if op == "reset":
            self.kill_all()
            for folder in self.wipe:
                empty(folder)
            self.send(connection, {"ok": True})
        elif op == "launch":
            if connection in self.kernels or len(fds) != 3:
                self.send(connection, {"error": "one kernel per connection, with stdin, stdout and stderr"})
                for fd in fds:
                    os.close(fd)
                return
            try:
                pid = os.fork()
            except OSError as error:
                self.send(connection, {"error": f"fork failed: {error}"})
                pid = -1
            if pid == 0:
                self.become_kernel(request, fds)  # never returns
            for fd in fds:
                os.close(fd)
            if pid > 0:
                self.kernels[connection] = pid
                self.send(connection, {"pid": pid})
        elif op == "signal" and connection in self.kernels:
            with contextlib.suppress(OSError):
                os.kill(self.kernels[connection], int(request.get("signum", signal.SIGTERM)))
        else:
            self.send(connection, {"error": f"unknown request {op!r}"})

    # -- processes ---------------------------------------------------------------------------
    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for connection, kernel in list(self.kernels.items()):
                if kernel == pid:
                    del self.kernels[connection]
                    self.send(connection, {"exit": os.waitstatus_to_exitcode(status)})

    def kill_all(self, seconds: float = 10.0) -> None:
        """SIGKILL everything below this process and reap it (a kernel, and whatever it left)."""
        deadline = time.monotonic() + seconds
        while (victims := descendants()) and time.monotonic() < deadline:
            for pid in victims:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
            self.reap()

    def become_kernel(self, request: dict, fds: list[int]) -> None:
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for number in (signal.SIGCHLD, signal.SIGTERM):
                signal.signal(number, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for connection in list(self.buffers):
                connection.close()
            self.listener.close()
            self.selector.close()
            os.close(self.wakeup_read)
            os.close(self.wakeup_write)
            for fd, target in zip(fds, (0, 1, 2)):
                os.dup2(fd, target)
                os.close(fd)
            os.setsid()
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # outside a sandbox's PID namespace, too
            _prctl(PR_SET_DUMPABLE, 1)   # the kernel is the student's: only the server stays closed
            os.environ.clear()
            os.environ.update(request["env"])
            os.chdir(request["cwd"])
            _reseed()
            with open(request["connection_file"], "w", encoding="utf-8") as handle:
                json.dump(request["connection"], handle)
            argv = list(request["argv"])
            sys.argv = [LAUNCHER, *argv[argv.index(LAUNCHER) + 1:]]
            sys.path[0] = os.getcwd()   # what `python -m` puts first
            runpy.run_module(LAUNCHER, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:  # noqa: BLE001 - reported on the kernel's stderr, then the fork ends
            traceback.print_exc()
        finally:  # end as a process does (multiprocessing's forks end the same way), never back in the server
            with contextlib.suppress(BaseException):
                threading._shutdown()  # type: ignore[attr-defined]
                atexit._run_exitfuncs()
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)


def _reseed() -> None:
    """A fork inherits the server's random state: give each kernel its own, as a fresh process has."""
    if "random" in sys.modules:
        sys.modules["random"].seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        with contextlib.suppress(Exception):
            numpy.random.seed()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--wipe", action="append", default=[])
    parser.add_argument("--preload", action="append", default=[])
    args = parser.parse_args(argv)
    _prctl(PR_SET_DUMPABLE, 0)         # a kernel (same uid) may not ptrace this process or read its fds
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # whatever a kernel leaves behind stays below this process
    listener = socket.socket(fileno=args.listen_fd)
    os.chdir(args.work)
    preload(["ipykernel.kernelapp", *args.preload])
    if threading.active_count() > 1:   # a fork would lose those threads, with any lock they hold
        print(f"kernel forkserver: preloading started threads {threading.enumerate()}: not serving",
              file=sys.stderr)
        return 1
    Server(listener, args.work, args.wipe).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
