"""Run a command under a wall-clock and a memory bound, and kill its whole process tree.

The grading worker starts a Jupyter kernel in a new session (jupyter_client does), so a process
group kill would miss it: the watchdog walks the tree with psutil and sums the resident memory of
the worker and every descendant (the kernel, anything the student started). Address-space limits
(RLIMIT_AS) are no use for TensorFlow, which maps far more than it touches.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import psutil

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Outcome:
    returncode: int | None
    seconds: float
    timed_out: bool = False
    memory_exceeded: bool = False
    peak_bytes: int = 0
    stderr_tail: str = ""


def _tree(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _rss(processes: list[psutil.Process]) -> int:
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def kill_tree(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=5)


def _none() -> list[psutil.Process]:
    return []


def _watch(root: psutil.Process, exited: Callable[[], bool], start: float, timeout: float,
           memory_bytes: int, also: Callable[[], list[psutil.Process]]) -> tuple[bool, bool, int]:
    """Poll `root`'s tree and `also()` until `exited()`; kill them past the bounds. (timed out,
    memory exceeded, peak)"""
    peak, known = 0, [root]
    timed_out = memory_exceeded = False
    while not exited():
        known = [*(_tree(root) or known[:1]), *also()]
        peak = max(peak, _rss(known))
        if peak > memory_bytes:
            memory_exceeded = True
        elif time.monotonic() - start > timeout:
            timed_out = True
        if timed_out or memory_exceeded:
            kill_tree([*(_tree(root) or known), *also()])
            break
        time.sleep(POLL_SECONDS)
    # the worker may exit and leave a kernel behind: nothing of this run outlives it
    kill_tree([process for process in [*known[1:], *also()] if process.is_running()])
    return timed_out, memory_exceeded, peak


def _tail(stderr_path: str | None) -> str:
    if not stderr_path:
        return ""
    with open(stderr_path, "rb") as handle:
        return handle.read()[-4000:].decode("utf-8", "replace")


def run_bounded(command: list[str], *, timeout: float, memory_bytes: int, env: dict | None = None,
                cwd: str | None = None, stderr_path: str | None = None,
                also: Callable[[], list[psutil.Process]] = _none) -> Outcome:
    """Run `command`; kill it and its descendants past `timeout` seconds or `memory_bytes` of RSS.
    `also` gives processes that count as the command's though they are not below it (a kernel a
    kernel server forked for it)."""
    start = time.monotonic()
    stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
    try:
        child = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        if stderr_path:
            stderr.close()
    timed_out, memory_exceeded, peak = _watch(psutil.Process(child.pid), lambda: child.poll() is not None,
                                              start, timeout, memory_bytes, also)
    returncode = child.wait()
    return Outcome(returncode, time.monotonic() - start, timed_out, memory_exceeded, peak, _tail(stderr_path))


def call_bounded(process: BaseProcess, *, timeout: float, memory_bytes: int,
                 stderr_path: str | None = None, also: Callable[[], list[psutil.Process]] = _none) -> Outcome:
    """Start `process` (a multiprocessing Process, e.g. forked from a warm forkserver) under the same
    bounds as `run_bounded`; its target is expected to write its stderr to `stderr_path`."""
    start = time.monotonic()
    process.start()
    try:
        root = psutil.Process(process.pid)
    except psutil.NoSuchProcess:  # it already ended
        process.join()
        return Outcome(process.exitcode, time.monotonic() - start, stderr_tail=_tail(stderr_path))
    timed_out, memory_exceeded, peak = _watch(root, lambda: process.exitcode is not None, start, timeout,
                                              memory_bytes, also)
    process.join()
    return Outcome(process.exitcode, time.monotonic() - start, timed_out, memory_exceeded, peak,
                   _tail(stderr_path))
