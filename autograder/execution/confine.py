"""The first process of a kernel's sandbox: set the kernel's limits, copy the student's files into its
working folder, then become the kernel.

    python -I -S confine.py --files DIR --work DIR --tasks N --cpu-seconds S --file-bytes B -- KERNEL...

It runs inside the sandbox (`autograder.execution.sandbox.command` binds this file read-only), as
the sandbox's user, before any student code: the limits are set inside the sandbox's own user
namespace, so RLIMIT_NPROC counts only this kernel's processes and threads, not the grader's. It
uses the standard library only: the sandbox sees no `autograder` package.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys

# SIGXCPU at the soft limit (the kernel dies), SIGKILL this much later at the hard one
CPU_GRACE_SECONDS = 5


def limits(tasks: int, cpu_seconds: int, file_bytes: int) -> dict[int, tuple[int, int]]:
    """The resource limits to set: 0 means none for `cpu_seconds`."""
    chosen = {resource.RLIMIT_NPROC: (tasks, tasks), resource.RLIMIT_FSIZE: (file_bytes, file_bytes),
              resource.RLIMIT_CORE: (0, 0)}
    if cpu_seconds > 0:
        chosen[resource.RLIMIT_CPU] = (cpu_seconds, cpu_seconds + CPU_GRACE_SECONDS)
    return chosen


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        raise SystemExit("confine.py: expected -- KERNEL COMMAND")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="confine.py")
    parser.add_argument("--files", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--cpu-seconds", type=int, default=0)
    parser.add_argument("--file-bytes", type=int, required=True)
    command = argv[split + 1:]
    if not command:
        raise SystemExit("confine.py: no kernel command after --")
    return parser.parse_args(argv[:split]), command


def main(argv: list[str]) -> None:
    args, command = parse(argv)
    for kind, value in limits(args.tasks, args.cpu_seconds, args.file_bytes).items():
        resource.setrlimit(kind, value)
    shutil.copytree(args.files, args.work, dirs_exist_ok=True)
    os.chdir(args.work)
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
