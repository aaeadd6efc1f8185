"""Watch a process tree under a wall-clock, a memory and a task bound, and kill the whole tree past one.

The grading worker starts a Jupyter kernel in a new session (jupyter_client does), so a process
group kill would miss it: the watchdog walks the tree with psutil and sums the resident memory and
the tasks (processes and threads) of the worker and every descendant (the kernel's sandbox, anything
the student started). Address-space limits (RLIMIT_AS) are no use for TensorFlow, which maps far
more than it touches; the sandbox's RLIMIT_NPROC does not hold for a grader running as root, so the
task count is watched here as well.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import psutil

POLL_SECONDS = 0.25
# the tree is walked again every this many polls (a new process counts within two seconds; a walk reads
# every process of the machine, 7 ms on the 2-core build machine); between two walks the memory and
# tasks of the processes already known are measured
TREE_EVERY = 8


def _tree(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _usage(processes: list[psutil.Process]) -> tuple[int, int]:
    """Resident bytes and tasks (threads, so processes too) of `processes`."""
    rss = tasks = 0
    for process in processes:
        try:
            with process.oneshot():
                rss += process.memory_info().rss
                tasks += process.num_threads()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return rss, tasks


def kill_tree(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=5)


@dataclass(frozen=True)
class Watched:
    """Which bound the watchdog enforced on a tree, and its peak resident memory."""
    timed_out: bool = False
    memory_exceeded: bool = False
    tasks_exceeded: bool = False
    peak_bytes: int = 0

    @property
    def killed(self) -> bool:
        return self.timed_out or self.memory_exceeded or self.tasks_exceeded


def watch(root: psutil.Process, finished: Callable[[float], bool], *, start: float, wall_seconds: float,
          memory_bytes: int, tasks: int) -> Watched:
    """Poll `root`'s tree until `finished(seconds)` (which waits at most that long for the end of what
    is watched) says it is done; past `wall_seconds` after `start` (time.monotonic()),
    `memory_bytes` of RSS or `tasks` processes and threads, kill the whole tree, `root` included.
    Either way, nothing `root` started outlives the watch: its remaining descendants are killed, and
    `root` itself is left alone when it finished (a long-lived worker between two jobs)."""
    peak, known, polls = 0, [root], 0
    timed_out = memory_exceeded = tasks_exceeded = False
    while not finished(POLL_SECONDS):
        if polls % TREE_EVERY == 0:
            known = _tree(root) or known[:1]
        polls += 1
        rss, count = _usage(known)
        peak = max(peak, rss)
        if peak > memory_bytes:
            memory_exceeded = True
        elif count > tasks:
            tasks_exceeded = True
        elif time.monotonic() - start > wall_seconds:
            timed_out = True
        if timed_out or memory_exceeded or tasks_exceeded:
            kill_tree(_tree(root) or known)
            break
    leftovers = {process.pid: process for process in [*known[1:], *_tree(root)[1:]]}
    kill_tree([process for process in leftovers.values() if process.is_running()])
    return Watched(timed_out, memory_exceeded, tasks_exceeded, peak)
