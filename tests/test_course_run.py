"""`make run`'s pieces: a notebook's kernel writes its own log to a file, not to the terminal, and
the demo grading of one assignment runs while the next notebook executes."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat import v4

from autograder.authoring import course_run
from course import runner
from course.layout import Layout
from tests import notebooks

# what a TensorFlow kernel does to the terminal: C++ logging on descriptor 2, past the notebook
NOISY = ("import os\n"
         "os.write(2, b'E0000 00:00:1.0 1 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\\n')\n"
         "print('printed by the cell')")


def noisy_notebook(path: Path, extra: str = "") -> Path:
    notebook = v4.new_notebook(cells=[v4.new_code_cell("MATMUL_SIZE = 1\nREPEATS = 1", metadata={"tags": ["parameters"]}),
                                      v4.new_code_cell(NOISY), v4.new_code_cell(extra or "print(MATMUL_SIZE)")])
    notebook.metadata["kernelspec"] = dict(notebooks.KERNELSPEC)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


@pytest.mark.notebook
@pytest.mark.tensorflow
def test_the_kernels_own_log_goes_to_its_file_and_the_outputs_are_unchanged(tmp_path, capfd):
    source = noisy_notebook(tmp_path / "00_gpu_setup.ipynb")
    result = runner.run_notebook(source, tmp_path / "out" / "00_gpu_setup.ipynb", "ci", "00_gpu_setup",
                                 progress_bar=False)
    terminal = capfd.readouterr()
    assert result.status == "ok", result.error
    assert "cuInit" not in terminal.out + terminal.err, terminal
    assert result.kernel_log == tmp_path / "out" / "00_gpu_setup.kernel.log"
    assert "failed call to cuInit" in result.kernel_log.read_text(encoding="utf-8")
    executed = nbformat.read(result.executed, as_version=4)
    printed = ["".join(output.get("text", "") for output in cell.get("outputs", [])) for cell in executed.cells]
    assert "printed by the cell\n" in printed and "128\n" in printed, printed  # the ci profile's MATMUL_SIZE


@pytest.mark.notebook
@pytest.mark.tensorflow
def test_a_failing_notebook_names_its_kernel_log(tmp_path, capfd):
    source = noisy_notebook(tmp_path / "00_gpu_setup.ipynb", extra="raise ValueError('broken on purpose')")
    result = runner.run_notebook(source, tmp_path / "out" / "00_gpu_setup.ipynb", "ci", "00_gpu_setup",
                                 progress_bar=False)
    assert result.status == "failed" and "ValueError: broken on purpose" in result.error
    assert "cuInit" not in "".join(capfd.readouterr())
    assert result.kernel_log.exists()


def test_the_report_links_each_assignments_files(tmp_path):
    log = tmp_path / "executed" / "ci" / "00_gpu_setup.kernel.log"
    grade_log = tmp_path / "demo" / "00_gpu_setup" / "grade.log"
    for path in (log, log.with_name("00_gpu_setup.html"), grade_log):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    line = course_run.Line("00_gpu_setup", "ok", 1.0, kernel_log=log, grade_log=grade_log)
    page = course_run.write_report([line], tmp_path / "report.html", "ci").read_text(encoding="utf-8")
    for target in ("executed/ci/00_gpu_setup.kernel.log", "executed/ci/00_gpu_setup.html", "demo/00_gpu_setup/grade.log"):
        assert f'href="{target}"' in page, page
    assert "grading report" not in page  # not written: not linked


@pytest.mark.grading
def test_the_run_prints_one_line_per_assignment_and_grades_while_the_next_executes(tmp_path, monkeypatch):
    """The demo grading of an assignment is started before the next notebook executes and finished
    after it (order of events), and each assignment gets its one line once both are done."""
    events: list[str] = []
    layout = Layout(tmp_path)
    for assignment_id in ("00_gpu_setup", "01_session_vs_eager"):
        noisy_notebook(layout.source_notebook(assignment_id))

    def execute(notebook, output, profile, assignment_id, **_):
        events.append(f"execute {assignment_id}")
        return runner.RunResult(assignment_id, "ok", 1.0, None, None, "", output.with_suffix(".kernel.log"))

    class Grading:
        def __init__(self, layout, line, profile, sandbox_mode):
            self.line = line
            assert profile == "ci", "the demo class is graded for the profile the run executes"
            assert sandbox_mode is None, "bwrap starts here: the demo class is graded in the configured sandbox"
            events.append(f"start grading {line.assignment}")

        def finish(self):
            events.append(f"finish grading {self.line.assignment}")
            return f"{self.line.assignment} done"

    monkeypatch.setattr(course_run.runner, "run_notebook", execute)
    monkeypatch.setattr(course_run, "DemoGrading", Grading)
    monkeypatch.setattr(course_run.release, "drift", lambda layout: [])
    said: list[str] = []
    lines = course_run.run(layout, "ci", say=said.append)
    assert events == ["execute 00_gpu_setup", "start grading 00_gpu_setup", "execute 01_session_vs_eager",
                      "finish grading 00_gpu_setup", "start grading 01_session_vs_eager",
                      "finish grading 01_session_vs_eager"]
    assert said[:2] == ["00_gpu_setup done", "01_session_vs_eager done"]
    assert [line.status for line in lines[2:]] == ["missing"] * 4 and all("missing" in text for text in said[2:])
