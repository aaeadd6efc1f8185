"""Tiny nbgrader notebooks built in the tests (nbformat.v4), so grading tests run in seconds."""

from __future__ import annotations

import nbformat
from nbformat import v4

from course import kernel

# the `kernelspec` block every course notebook carries
KERNELSPEC = {"name": kernel.KERNEL_NAME, "display_name": kernel.DISPLAY_NAME, "language": "python"}


def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def code(source: str, cell_id: str, **nbgrader) -> nbformat.NotebookNode:
    cell = v4.new_code_cell(source, id=cell_id)
    if nbgrader:
        cell.metadata.update(_meta(cell_id, **nbgrader))
    return cell


def solution(source: str, cell_id: str) -> nbformat.NotebookNode:
    return code(source, cell_id, grade=False, solution=True, locked=False)


def test_cell(source: str, cell_id: str, points: int = 1) -> nbformat.NotebookNode:
    return code(source, cell_id, grade=True, solution=False, locked=True, points=points)


def notebook(cells: list) -> nbformat.NotebookNode:
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def run_cells(cells: list[str], cwd, timeout: int = 120, limits=None) -> list[str]:
    """Execute `cells` in a kernel started as grading starts it (the grading kernel spec, so through
    the sandbox provisioner, in a bwrap sandbox of its own), working in `cwd`; return each cell's
    printed text. `limits` (an `autograder.execution.sandbox.Limits`) bounds the sandbox."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    from autograder.nbgrader_setup import kernelspec
    from autograder.nbgrader_setup.config import configure
    from autograder.settings import GradingSettings, Limits

    kernelspec.install()
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_code_cell(source) for source in cells]
    limits = limits or Limits()
    config = configure(Config())
    config.merge(GradingSettings(sandbox="bwrap", disk_limit=limits.disk_bytes / 2**30, task_limit=limits.tasks,
                                 cpu_limit=limits.cpu_seconds).as_config())
    client = NotebookClient(notebook, kernel_name=kernelspec.GRADING_KERNEL, timeout=timeout, config=config,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return ["".join(output.get("text", "") for output in cell.outputs) for cell in notebook.cells]


def parameters(source: str) -> nbformat.NotebookNode:
    cell = v4.new_code_cell(source, id="parameters")
    cell.metadata["tags"] = ["parameters"]
    return cell


def tiny_assignment() -> nbformat.NotebookNode:
    """Three tests worth 6 points: a function, the injected profile, and TensorFlow-like log noise."""
    return notebook([
        v4.new_markdown_cell("# Tiny assignment", id="header"),
        parameters("MATMUL_SIZE = 999\nREPEATS = 99"),
        solution("def double(value):\n    ### BEGIN SOLUTION\n    return 2 * value\n    ### END SOLUTION", "double"),
        test_cell("assert double(2) == 4, f'double(2) should be 4, got {double(2)}'\n"
                  "### BEGIN HIDDEN TESTS\nassert double(-7) == -14, 'hidden: double(-7)'\n### END HIDDEN TESTS",
                  "test_double", points=3),
        test_cell("assert double(1) == 2\nassert (MATMUL_SIZE, REPEATS) == (128, 3), (MATMUL_SIZE, REPEATS)",
                  "test_profile", points=2),
        test_cell("import sys\n"
                  "sys.stderr.write('I0000 00:00:1796235959.660254    3034 port.cc:153] oneDNN custom operations are on.\\n')\n"
                  "sys.stderr.write('WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\\n')\n"
                  "sys.stderr.write('WARNING:tensorflow:5 out of the last 5 calls to <function f> triggered tf.function retracing.\\n')\n"
                  "import warnings\n"
                  "warnings.warn_explicit('`input_shape` is deprecated', UserWarning,\n"
                  "                       '/opt/env/lib/python3.11/site-packages/keras/src/layers/core.py', 12)\n"
                  "sys.stderr.flush()\n"
                  "assert double(0) == 0",
                  "test_noise", points=1),
    ])


def answered(notebook, code: str) -> nbformat.NotebookNode:
    """A copy of `notebook` (a release) with `code` typed into every solution cell."""
    changed = nbformat.from_dict(notebook)
    for cell in changed.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = code
    return changed


def write_class(release_nb, answers: dict[str, str], folder, name: str) -> None:
    """`folder/<student>/<name>` for every student of `answers` (student -> the code they typed)."""
    for student, code in answers.items():
        (folder / student).mkdir(parents=True)
        nbformat.write(answered(release_nb, code), folder / student / name)


def tiny_course(root, assignment: str):
    """`root/source/<assignment>/<assignment>.ipynb` (the tiny assignment) and its student release,
    generated by nbgrader in `root/release-ws`; returns (source folder, release notebook path)."""
    from autograder.nbgrader_setup.workspace import Workspace

    source = root / "source" / assignment
    source.mkdir(parents=True)
    nbformat.write(tiny_assignment(), source / f"{assignment}.ipynb")
    releaser = Workspace(root / "release-ws", assignment)
    releaser.create(source)
    return source, releaser.release_dir() / f"{assignment}.ipynb"


def squashed_text(page: str) -> str:
    """The text an HTML page shows, without tags, styles, scripts or any whitespace.

    nbconvert highlights code token by token (`double ( - 7 )`), so a leak check must compare
    texts with all whitespace removed.
    """
    import html as html_module
    import re

    page = re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.S | re.I)
    text = html_module.unescape(re.sub(r"<[^>]+>", "", page))
    return re.sub(r"\s+", "", text)


def squash(text: str) -> str:
    import re

    return re.sub(r"\s+", "", text)


def secret_regions(cell_source: str) -> list[list[str]]:
    """The lines of each solution or hidden-test region of a cell (stripped, blank lines dropped)."""
    regions, current = [], None
    for line in cell_source.splitlines():
        if "### BEGIN SOLUTION" in line or "### BEGIN HIDDEN TESTS" in line:
            current = []
        elif "### END SOLUTION" in line or "### END HIDDEN TESTS" in line:
            if current:
                regions.append(current)
            current = None
        elif current is not None and line.strip():
            current.append(line.strip())
    return regions


def secret_chunks(cell_source: str, window: int = 3, shortest: int = 40) -> list[str]:
    """Whitespace-free runs of `window` consecutive secret lines; a shorter region counts whole if
    it is at least `shortest` characters. A single generic line (`return result`) is no leak; three
    lines of an answer in a row are."""
    chunks = []
    for region in secret_regions(cell_source):
        if len(region) < window:
            joined = squash("".join(region))
            if len(joined) >= shortest:
                chunks.append(joined)
            continue
        chunks += [squash("".join(region[start:start + window])) for start in range(len(region) - window + 1)]
    return chunks


def leaked(chunks: list[str], text: str, public: str = "") -> list[str]:
    """Chunks found in `text` (whitespace-free) that are not already public."""
    return [chunk for chunk in chunks if chunk in text and chunk not in public]
