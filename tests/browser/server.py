"""A JupyterLab server for one browser test module: 127.0.0.1, a free port, a random token.

Jupyter's per-user folders (runtime, config, data, IPython, lab settings and workspaces) point into
a scratch folder, so a test neither reads nor writes the tester's own Jupyter state. The
environment-wide folders of the running Python (`sys.prefix/share/jupyter`, `sys.prefix/etc/jupyter`)
stay on Jupyter's search paths: the `tf-course` kernel spec and nbgrader's server and lab
extensions are found there, as they are for `make lab`.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.servers import free_port

START_TIMEOUT = 120.0

# JupyterLab settings a fresh user would otherwise be asked about: no news or update check
# (they would need the network), and a notebook that keeps every cell in the page.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                        "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def isolated_env(scratch: Path) -> dict[str, str]:
    """os.environ with Jupyter's per-user folders inside `scratch` and the venv's bin on PATH."""
    folders = {"JUPYTER_RUNTIME_DIR": "runtime", "JUPYTER_CONFIG_DIR": "config", "JUPYTER_DATA_DIR": "data",
               "IPYTHONDIR": "ipython", "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
               "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces", "MPLCONFIGDIR": "matplotlib"}
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("COURSE_ROOT", None)
    for variable, name in folders.items():
        (scratch / name).mkdir(parents=True, exist_ok=True)
        env[variable] = str(scratch / name)
    for name, values in LAB_SETTINGS.items():
        path = scratch / "lab-settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return env


class LabServer:
    """`jupyter lab` serving `root` (its working directory too, where nbgrader looks for its config)."""

    def __init__(self, root: Path, scratch: Path):
        self.root = root
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = scratch / "jupyterlab.log"
        self._env = isolated_env(scratch)
        self._process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        command = [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser",
                   "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
                   "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if os.geteuid() == 0:
            command.append("--allow-root")
        return command

    def start(self) -> "LabServer":
        log = self.log_path.open("wb")
        self._process = subprocess.Popen(self.command(), cwd=self.root, env=self._env, stdout=log,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self._process.returncode}:\n{self.log()}")
            try:
                self.api("status")
                return self
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"jupyter lab did not answer /api/status within {START_TIMEOUT:.0f} s:\n{self.log()}")

    def api(self, path: str, method: str = "GET"):
        """Call the REST API with the token; the decoded JSON answer (None for an empty one)."""
        request = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        for session in self.api("sessions"):
            self.api(f"sessions/{session['id']}", method="DELETE")

    def page_url(self, path: str) -> str:
        """The lab URL that opens `path` (relative to root) in a fresh workspace, logged in by token."""
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:] if self.log_path.exists() else ""

    def __enter__(self) -> "LabServer":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
