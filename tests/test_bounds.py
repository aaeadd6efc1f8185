"""The watchdog kills a runaway command and everything it started."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass

import psutil

from autograder.execution import bounds


@dataclass(frozen=True)
class Outcome:
    returncode: int
    seconds: float
    watched: bounds.Watched

    def __getattr__(self, name):
        return getattr(self.watched, name)


def run_bounded(command: list[str], *, wall_seconds: float, memory_bytes: int, tasks: int = 10**6) -> Outcome:
    """`command` in a new session under `bounds.watch`, as the grading worker watches its kernel."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                             start_new_session=True)

    def finished(seconds: float) -> bool:
        try:
            child.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    watched = bounds.watch(psutil.Process(child.pid), finished, start=start, wall_seconds=wall_seconds,
                           memory_bytes=memory_bytes, tasks=tasks)
    return Outcome(child.wait(), time.monotonic() - start, watched)

SPAWN_SLEEPER = ("import subprocess, sys, time\n"
                 "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
                 "print(child.pid, flush=True)\n"
                 "open(sys.argv[1], 'w').write(str(child.pid))\n"
                 "time.sleep(60)\n")


def test_timeout_kills_the_whole_tree(tmp_path):
    pid_file = tmp_path / "pid"
    outcome = run_bounded([sys.executable, "-c", SPAWN_SLEEPER, str(pid_file)], wall_seconds=1.5, memory_bytes=2**34)
    assert outcome.timed_out and not outcome.memory_exceeded and outcome.seconds < 10
    grandchild = int(pid_file.read_text())
    assert gone(grandchild, within=10), f"the grandchild {grandchild} outlived the timeout's kill"


def gone(pid: int, within: float) -> bool:
    """Whether `pid` is dead (or a zombie, which a SIGKILL makes of it at once) within `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # a poll interval: the test waits on the process's state, not on a time


def test_memory_bound(tmp_path):
    hog = "import time\nblocks = []\nwhile True:\n    blocks.append(bytearray(50 * 2**20))\n    time.sleep(0.05)\n"
    outcome = run_bounded([sys.executable, "-c", hog], wall_seconds=60, memory_bytes=300 * 2**20)
    assert outcome.memory_exceeded and not outcome.timed_out
    assert outcome.peak_bytes > 300 * 2**20


def test_a_quick_command_is_left_alone(tmp_path):
    outcome = run_bounded([sys.executable, "-c", "import sys; sys.exit(3)"], wall_seconds=30, memory_bytes=2**34)
    assert (outcome.returncode, outcome.timed_out, outcome.memory_exceeded) == (3, False, False)


def test_task_bound_counts_processes_and_threads(tmp_path):
    """More processes and threads than `tasks` in the tree: killed, said so (the sandbox's RLIMIT_NPROC
    does not hold for a grader running as root)."""
    spawner = ("import subprocess, sys, threading, time\n"
               "threads = [threading.Thread(target=time.sleep, args=(60,), daemon=True) for _ in range(8)]\n"
               "[thread.start() for thread in threads]\n"
               "children = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']) for _ in range(8)]\n"
               "time.sleep(60)\n")
    outcome = run_bounded([sys.executable, "-c", spawner], wall_seconds=60, memory_bytes=2**34, tasks=12)
    assert outcome.tasks_exceeded and not outcome.timed_out and not outcome.memory_exceeded
    quiet = run_bounded([sys.executable, "-c", "import time; time.sleep(0.5)"], wall_seconds=60, memory_bytes=2**34, tasks=12)
    assert not quiet.tasks_exceeded and quiet.returncode == 0
