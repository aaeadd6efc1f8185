"""Execute course notebooks with papermill under a profile; write the executed notebook and HTML.

    results = runner.run_all(Layout.find(), profile="ci")

Each notebook runs in its own folder (so relative paths work as they do for a student), with the
profile's overrides injected after its `parameters` cell, on the course kernel. Output goes to
`build/executed/<profile>/<assignment>.ipynb` and `.html`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from course import gpu, kernel, syllabus
from course.layout import Layout

TEMPLATES = Path(__file__).resolve().parent / "templates"   # nbconvert templates of the course's pages


@dataclass(frozen=True)
class RunResult:
    assignment: str
    status: str  # "ok", "failed" or "missing"
    seconds: float = 0.0
    executed: Path | None = None
    html: Path | None = None
    error: str = ""
    kernel_log: Path | None = None  # the kernel's own stdout and stderr


def prepare(notebook: Path, output: Path, profile: str, assignment_id: str | None = None) -> Path:
    """Inject the profile's parameters without executing (what nbval then runs)."""
    import papermill

    assignment = syllabus.get(assignment_id or notebook.stem)
    output.parent.mkdir(parents=True, exist_ok=True)
    papermill.execute_notebook(str(notebook), str(output), parameters=assignment.parameters(profile),
                               prepare_only=True, kernel_name=kernel.KERNEL_NAME, progress_bar=False)
    return output


def kernel_log(executed: Path) -> Path:
    """Where the kernel's own log of an executed notebook goes: `<name>.kernel.log` beside it."""
    return executed.with_suffix(".kernel.log")


def run_notebook(notebook: Path, output: Path, profile: str, assignment_id: str | None = None,
                 progress_bar: bool = True, timeout: int | None = 1800) -> RunResult:
    """Execute one notebook under `profile`; never raises for a failing notebook, reports it.

    The kernel's own stdout and stderr (TensorFlow's C++ log lines among them) and papermill's log
    messages go to `kernel_log(output)`, not to the terminal; the notebook's outputs are unchanged."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from course.kernel_log import KernelLogManager, kernel_log_config

    assignment = syllabus.get(assignment_id or notebook.stem)
    output.parent.mkdir(parents=True, exist_ok=True)
    log_path = kernel_log(output)
    log_path.unlink(missing_ok=True)
    start = time.perf_counter()
    error = ""
    with _logger_to_file("papermill", log_path), gpu.profile_environment(profile):
        try:
            papermill.execute_notebook(
                str(notebook), str(output), parameters=assignment.parameters(profile),
                kernel_name=kernel.KERNEL_NAME, cwd=str(notebook.parent), progress_bar=progress_bar,
                execution_timeout=timeout, log_output=False,
                kernel_manager_class=KernelLogManager, config=kernel_log_config(log_path),
            )
        except PapermillExecutionError as failure:
            error = f"cell {failure.exec_count}: {failure.ename}: {failure.evalue}"
        except Exception as failure:  # the kernel died or would not start: say so, with the log to read
            error = f"{type(failure).__name__}: {failure}"
    seconds = time.perf_counter() - start
    html = write_html(output) if output.exists() else None
    return RunResult(assignment.id, "failed" if error else "ok", seconds, output, html, error, log_path)


@contextlib.contextmanager
def _logger_to_file(name: str, path: Path):
    """Send the messages of logger `name` to `path` (and nowhere else) for the duration."""
    logger = logging.getLogger(name)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        handler.close()


IMAGES = ("image/png", "image/jpeg", "image/svg+xml")


def undescribed_figures(executed: Path) -> list[str]:
    """The cells of an executed notebook ("cell N") that show an image without alternative text (the
    `alt` of the output's metadata for its type, or of the cell's metadata): `course.plotting.show`
    always gives one, pyplot's own display none."""
    import nbformat

    found = []
    for index, cell in enumerate(nbformat.read(executed, as_version=4).cells):
        for output in cell.get("outputs", []):
            for kind in IMAGES:
                if kind in output.get("data", {}):
                    alt = (output.get("metadata", {}).get(kind) or {}).get("alt") or cell.metadata.get("alt")
                    if not str(alt or "").strip():
                        found.append(f"cell {index}")
    return found


def write_html(executed: Path) -> Path:
    import nbconvert
    import nbformat

    # nbconvert's lab page with the figures' alternative text (course/templates/course_lab)
    exporter = nbconvert.HTMLExporter(template_name="course_lab", extra_template_basedirs=[str(TEMPLATES)])
    body, _ = exporter.from_notebook_node(nbformat.read(executed, as_version=4))
    html = executed.with_suffix(".html")
    html.write_text(body, encoding="utf-8")
    return html


def run_all(layout: Layout, profile: str = "ci", assignment_ids: list[str] | None = None,
            progress_bar: bool = True) -> list[RunResult]:
    """Run every assignment in syllabus order; those without a source notebook are 'missing'."""
    results = []
    for assignment_id in assignment_ids or syllabus.ids():
        notebook = layout.source_notebook(assignment_id)
        if not notebook.exists():
            results.append(RunResult(assignment_id, "missing", error=f"{notebook} does not exist yet"))
            continue
        print(f"== {assignment_id} ({profile} profile)", flush=True)
        results.append(run_notebook(notebook, layout.executed(profile, assignment_id), profile,
                                    assignment_id, progress_bar=progress_bar))
    return results
