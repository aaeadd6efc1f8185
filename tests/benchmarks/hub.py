"""Benchmark, not a test: what one server holds of a class on the course's JupyterHub.

    .venv/bin/python -m tests.benchmarks.hub [--students 1 10] [--repeat 3]      (as root)

For each class size N, N students launch from the test LTI platform (tests/lti_platform.py) at once,
each into the hub as `make hub` starts it (tests/hub_server.py), and each starts a kernel in their
server that imports TensorFlow. Per student it times the launch (the OIDC login through the real
LTI13Authenticator), the server's start (a new Unix user the first time) and the kernel's first
`import tensorflow`, and prints, per class size, the median and the 95th percentile (nearest rank) of
the whole path, from the launch to a kernel that has imported TensorFlow. Then the memory: each
server's resident memory while idle (its process tree, no kernel), and each kernel's after
`import tensorflow` (resident, and unique: the pages no other process shares, psutil's USS), medians
over the students. From these it prints how many students a machine of a given memory holds
(`--machine-gb`, default 128 GB, less `--reserve-gb` for the system, default 8) and, with
`--gpu-gb` (default 80) and the class size, the GPU memory each student's cap can be.

Every run removes the Unix users it made. The class's students are 7330000 + n.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import statistics
import sys
import time
import uuid

import psutil
import requests

from tests.hub_server import Hub, hub_folder, reachable_python, remove_unix_users
from tests.lti_platform import Launch, Platform

COURSE = "tf-bench"
FIRST_ID = 7330000


def percentile_95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def tree_rss(process: psutil.Process) -> int:
    return sum(part.memory_info().rss for part in [process, *process.children(recursive=True)])


def kernel_import_tensorflow(hub: Hub, user: str) -> tuple[float, int]:
    """Start a kernel in `user`'s server, run `import tensorflow` in it over the websocket; returns
    (seconds from the kernel request to the import's end, the kernel's pid)."""
    import websocket  # websocket-client, which jupyter_server's own tests and JupyterLab's terminals use

    started = time.perf_counter()
    kernel = hub.server(user, "POST", "/api/kernels", json={"name": "tf-course"}).json()
    url = f"{hub.url.replace('http', 'ws')}/user/{user}/api/kernels/{kernel['id']}/channels"
    socket = websocket.create_connection(url, header=[f"Authorization: token {hub.token}"], timeout=300)
    message_id = uuid.uuid4().hex
    code = "import os, tensorflow\nprint(os.getpid())"
    socket.send(json.dumps({"header": {"msg_id": message_id, "msg_type": "execute_request", "username": user,
                                       "session": uuid.uuid4().hex, "version": "5.3"},
                            "parent_header": {}, "metadata": {}, "channel": "shell",
                            "content": {"code": code, "silent": False, "store_history": False,
                                        "user_expressions": {}, "allow_stdin": False}}))
    pid = None
    while True:
        reply = json.loads(socket.recv())
        if reply.get("parent_header", {}).get("msg_id") != message_id:
            continue
        if reply["msg_type"] == "stream" and reply["content"]["name"] == "stdout":
            pid = int(reply["content"]["text"].split()[-1])
        if reply["msg_type"] == "execute_reply":
            assert reply["content"]["status"] == "ok", reply["content"]
            break
    socket.close()
    return time.perf_counter() - started, pid


def student_path(hub: Hub, platform: Platform, user: str) -> dict:
    begun = time.perf_counter()
    answer = Launch(platform, hub.url, user, ["Learner"]).run()
    assert answer.status_code == 302, answer.text[:300]
    launched = time.perf_counter()
    hub.spawn(user)
    spawned = time.perf_counter()
    kernel_seconds, pid = kernel_import_tensorflow(hub, user)
    return {"user": user, "launch": launched - begun, "spawn": spawned - launched, "kernel": kernel_seconds,
            "total": time.perf_counter() - begun, "kernel_pid": pid}


def server_process(user: str) -> psutil.Process:
    import pwd

    uid = pwd.getpwnam(user).pw_uid
    return next(process for process in psutil.process_iter(["uids", "cmdline"])
                if process.info["uids"] and process.info["uids"].real == uid
                and any("jupyterhub-singleuser" in part for part in process.info["cmdline"] or []))


def kernel_of(hub: Hub, user: str) -> str:
    return hub.server(user, "GET", "/api/kernels").json()[0]["id"]


def kernel_memory(paths: list[dict]) -> list[tuple[int, int]]:
    found = []
    for path in paths:
        process = psutil.Process(path["kernel_pid"])
        full = process.memory_full_info()
        found.append((full.rss, full.uss))
    return found


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--students", type=int, nargs="+", default=[1, 10])
    options.add_argument("--repeat", type=int, default=1, help="runs per class size (default 1)")
    options.add_argument("--machine-gb", type=float, default=128)
    options.add_argument("--reserve-gb", type=float, default=8)
    options.add_argument("--gpu-gb", type=float, default=80)
    arguments = options.parse_args(argv)
    if os.geteuid() != 0:
        print("the hub makes Unix users: run as root", file=sys.stderr)
        return 2
    memory = {"server": [], "kernel_rss": [], "kernel_uss": []}
    with reachable_python():
        for size in arguments.students:
            totals, parts = [], {"launch": [], "spawn": [], "kernel": []}
            for _ in range(arguments.repeat):
                with hub_folder() as folder:
                    users = [str(FIRST_ID + number) for number in range(size)]
                    remove_unix_users(users)
                    platform = Platform()
                    hub = Hub(folder, platform, COURSE, ())
                    try:
                        with concurrent.futures.ThreadPoolExecutor(size) as pool:
                            paths = list(pool.map(lambda user: student_path(hub, platform, user), users))
                        for rss, uss in kernel_memory(paths):
                            memory["kernel_rss"].append(rss)
                            memory["kernel_uss"].append(uss)
                        for path in paths:
                            hub.server(path["user"], "DELETE", f"/api/kernels/{kernel_of(hub, path['user'])}")
                        for user in users:
                            memory["server"].append(tree_rss(server_process(user)))
                    finally:
                        hub.stop()
                        platform.close()
                        remove_unix_users(users)
                totals += [path["total"] for path in paths]
                for name in parts:
                    parts[name] += [path[name] for path in paths]
            print(f"{size:3d} student(s) at once, {arguments.repeat} run(s): launch to a kernel with TensorFlow imported "
                  f"median {statistics.median(totals):6.1f} s, p95 {percentile_95(totals):6.1f} s "
                  f"(launch {statistics.median(parts['launch']):.2f} s, server {statistics.median(parts['spawn']):.1f} s, "
                  f"kernel + import {statistics.median(parts['kernel']):.1f} s, medians)")
    mib = 2 ** 20
    server, rss, uss = (statistics.median(memory[name]) / mib for name in ("server", "kernel_rss", "kernel_uss"))
    print(f"memory, medians over every student: idle server {server:.0f} MiB; kernel after import tensorflow "
          f"{rss:.0f} MiB resident, {uss:.0f} MiB its own (USS)")
    usable = (arguments.machine_gb - arguments.reserve_gb) * 1024
    per_student = server + uss
    print(f"a machine of {arguments.machine_gb:.0f} GB ({arguments.reserve_gb:.0f} GB kept for the system) holds about "
          f"{int(usable // per_student)} students with one TensorFlow kernel each (server + the kernel's own memory, "
          f"before any training); a {arguments.gpu_gb:.0f} GB GPU shared by {max(arguments.students)} students gives each "
          f"{arguments.gpu_gb * 1024 / max(arguments.students):.0f} MB as gpu_memory_mb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
