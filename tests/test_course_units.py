"""Unit tests of the course package: syllabus, layout, timing, gpu, kernel, environment, doctor."""

from __future__ import annotations

import json
import time

import pytest

from course import doctor, environment, gpu, kernel, syllabus, timing
from course.layout import CourseRootNotFound, Layout, find_root


# syllabus -----------------------------------------------------------------------------------------

def test_assignments_are_the_six_in_order():
    assert syllabus.ids() == ["00_gpu_setup", "01_session_vs_eager", "02_convlstm",
                              "03_bert_finetuning", "04_xla", "05_tf_trt"]


def test_gpu_profile_requires_a_gpu_and_ci_grade_do_not():
    for assignment in syllabus.ASSIGNMENTS:
        if assignment.profiles:
            assert assignment.parameters("gpu").get("REQUIRE_GPU") is True, assignment.id
            assert not assignment.parameters("ci").get("REQUIRE_GPU"), assignment.id
            assert not assignment.parameters("grade").get("REQUIRE_GPU"), assignment.id
            assert "SEED" in assignment.parameters("grade"), f"{assignment.id}: grade must fix a seed"


def test_parameters_are_copies():
    first = syllabus.get("00_gpu_setup").parameters("ci")
    first["MATMUL_SIZE"] = -1
    assert syllabus.get("00_gpu_setup").parameters("ci")["MATMUL_SIZE"] != -1


def test_unknown_names_say_what_exists():
    with pytest.raises(syllabus.UnknownAssignmentError, match="00_gpu_setup"):
        syllabus.get("99_nope")
    with pytest.raises(syllabus.UnknownProfileError, match="ci, grade, gpu"):
        syllabus.get("00_gpu_setup").parameters("fast")


# layout -------------------------------------------------------------------------------------------

def test_find_root_walks_up_to_nbgrader_config(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    (tmp_path / "nbgrader_config.py").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_root(deep) == tmp_path
    layout = Layout(tmp_path)
    assert layout.source_notebook("00_gpu_setup") == tmp_path / "source/00_gpu_setup/00_gpu_setup.ipynb"
    assert layout.executed("ci", "00_gpu_setup", ".html") == tmp_path / "build/executed/ci/00_gpu_setup.html"


def test_find_root_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    with pytest.raises(CourseRootNotFound, match="nbgrader_config.py"):
        find_root(tmp_path)


# timing -------------------------------------------------------------------------------------------

def test_measure_warms_up_then_times_each_repeat():
    calls = []
    result = timing.measure(lambda: calls.append(1), repeats=5, warmup=3)
    assert len(calls) == 8 and result.repeats == 5 and result.warmup == 3
    assert result.min_s <= result.median_s <= max(result.samples)


def test_measure_sees_the_work_and_sync_is_inside_the_timed_region():
    slept = timing.measure(lambda: None, repeats=3, warmup=0, sync=lambda _: time.sleep(0.01))
    assert slept.median_s >= 0.009


def test_statistics_on_known_samples():
    known = timing.Measurement(samples=(0.001, 0.002, 0.003, 0.004, 0.100), warmup=0)
    assert known.median_s == 0.003 and known.median_ms == pytest.approx(3.0)
    assert known.iqr_s == pytest.approx(0.002)
    assert timing.ratio(known, timing.Measurement(samples=(0.0015,), warmup=0)) == pytest.approx(2.0)
    assert "median 3.00 ms" in str(known)


@pytest.mark.parametrize("seconds, text", [(2.5e-6, "2.5 us"), (0.0123, "12.30 ms"), (3.0, "3.00 s")])
def test_format_seconds(seconds, text):
    assert timing.format_seconds(seconds) == text


def test_measure_rejects_nonsense():
    with pytest.raises(ValueError):
        timing.measure(lambda: None, repeats=0)


# gpu ----------------------------------------------------------------------------------------------

def test_gpu_cell_skips_with_a_reason_on_cpu(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "visible_gpus", lambda: [])
    assert gpu.available(require=False, why="to time the matmul") is False
    assert "Skipped (no GPU visible to TensorFlow)" in capsys.readouterr().out


def test_gpu_cell_is_a_hard_check_under_the_gpu_profile(monkeypatch):
    monkeypatch.setattr(gpu, "visible_gpus", lambda: [])
    with pytest.raises(gpu.GPURequiredError, match="REQUIRE_GPU"):
        gpu.available(require=True, why="to time the matmul")


def test_gpu_cell_runs_when_a_gpu_is_there(monkeypatch):
    monkeypatch.setattr(gpu, "visible_gpus", lambda: ["GPU:0"])
    assert gpu.available(require=True, why="anything") is True


# kernel, environment, doctor ----------------------------------------------------------------------

def test_course_kernel_is_registered_for_this_environment():
    found = kernel.check()
    assert found.registered, "run `make venv`: it registers the tf-course kernel"
    assert found.same_environment, found


def test_the_course_kernel_grows_gpu_memory_as_it_needs_it(tmp_path):
    """A student's kernel does not map the whole GPU at its first op, so 04's subprocess and 05's ONNX
    Runtime CUDA session beside it still find memory: the kernel spec's env, as Jupyter starts it."""
    import json

    from jupyter_client.kernelspec import KernelSpecManager

    kernel.install(prefix=str(tmp_path / "env"))
    spec_file = tmp_path / "env" / "share" / "jupyter" / "kernels" / kernel.KERNEL_NAME / "kernel.json"
    assert json.loads(spec_file.read_text())["env"] == {"TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    spec = KernelSpecManager(kernel_dirs=[str(spec_file.parent.parent)]).get_kernel_spec(kernel.KERNEL_NAME)
    assert spec.env["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"


def test_kernel_install_gives_nbgrader_validate_a_timeout_for_tensorflow_notebooks(tmp_path, monkeypatch):
    """What nbgrader's validate handler loads (its own load_config, run from a student's folder)
    after `install` into a prefix: the course's per-cell timeout instead of nbgrader's 30 s."""
    import os

    from jupyter_core.paths import jupyter_config_path
    from nbgrader.apps import NbGrader

    kernel.install(prefix=str(tmp_path / "env"))
    assert (tmp_path / "env" / "share" / "jupyter" / "kernels" / kernel.KERNEL_NAME / "kernel.json").exists()
    student_folder = tmp_path / "student"
    student_folder.mkdir()
    monkeypatch.chdir(student_folder)
    paths = [os.getcwd(), str(tmp_path / "env" / "etc" / "jupyter")]
    app = NbGrader()
    app.config_file_paths.append(paths)
    app.load_config_file()
    assert app.config.Execute.timeout == kernel.VALIDATE_CELL_TIMEOUT > 30
    assert str(tmp_path) not in " ".join(jupyter_config_path())  # nothing leaked into this process's paths


def test_environment_facts_without_tensorflow_are_json():
    facts = environment.collect(import_tensorflow=False)
    json.dumps(facts)
    assert facts["packages"]["tensorflow"].startswith("2.21")
    assert set(facts["cpu_flags"]) == {"avx", "avx2", "fma", "avx512f"}


def test_cuda_libraries_on_the_loader_path_are_found(tmp_path, monkeypatch):
    (tmp_path / "libcudart.so.11.0").write_text("")
    monkeypatch.setenv("LD_LIBRARY_PATH", f"::{tmp_path}:/does/not/exist")
    assert environment.library_path_entries() == [str(tmp_path), "/does/not/exist"]
    assert environment.cuda_runtimes_on_library_path() == [str(tmp_path / "libcudart.so.11.0")]


def test_doctor_flags_a_shadowing_cuda_and_mixed_wheels():
    facts = environment.collect(import_tensorflow=False)
    facts["cuda_on_ld_library_path"] = ["/usr/local/cuda-11.0/lib64/libcudart.so.11.0"]
    facts["packages"] = dict(facts["packages"], **{"tensorflow-cpu": "2.21.0"})
    assert doctor._shadowing(facts).status == doctor.WARN
    assert doctor._wheel(facts).status == doctor.FAIL


def test_doctor_reports_an_import_failure_as_fail():
    check = doctor._tensorflow_import({"ok": False, "returncode": 1, "error": "ImportError: libcudart.so.12"})
    assert check.status == doctor.FAIL and "libcudart" in check.detail


def test_the_import_check_asks_a_fresh_interpreter_unless_tensorflow_is_imported_here(monkeypatch):
    import subprocess
    import sys
    import types

    asked = []

    def run(command, **_):
        asked.append(command)
        return subprocess.CompletedProcess(command, 1, "", "ImportError: libcudart.so.12\n")

    monkeypatch.setattr(environment.subprocess, "run", run)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    failed = environment.import_check()
    assert asked and not failed["ok"] and failed["error"] == "ImportError: libcudart.so.12"
    asked.clear()
    monkeypatch.setitem(sys.modules, "tensorflow", types.SimpleNamespace(__version__="2.21.0"))
    assert environment.import_check() == {"ok": True, "returncode": 0, "error": "", "version": "2.21.0"}
    assert not asked, "a process that imported TensorFlow needs no second interpreter to know the import works"


@pytest.mark.parametrize("line, expected", [
    ("E0000 00:00:1796318886.364770   12603 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: "
     "Failed call to cuInit: UNKNOWN ERROR (303)", "no NVIDIA driver found: libcuda.so.1"),
    ("E0000 00:00:1.0 1 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: "
     "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected (100)", "reports no GPU"),
    ("E0000 00:00:1.0 1 cuda_platform.cc:52] failed call to cuInit: INTERNAL: something new (42)",
     "cuInit failed (TensorFlow logged: failed call to cuInit: INTERNAL: something new (42))"),
    ("I0000 00:00:1.0 1 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.",
     "the CUDA runtime (libcudart) did not load"),
])
def test_doctor_reads_the_driver_problem_from_tensorflows_log(line, expected):
    log = ["WARNING: All log messages before absl::InitializeLog() is called are written to STDERR", line]
    assert expected in doctor.driver_diagnosis(log)


def test_doctor_says_nothing_of_a_driver_tensorflows_log_does_not_mention():
    assert doctor.driver_diagnosis(["I0000 00:00:1.0 1 cpu_feature_guard.cc:227] This TensorFlow binary ..."]) is None
    facts = {"tensorflow": {"devices": [{"type": "CPU"}], "build_info": {"is_cuda_build": False}},
             "nvidia_distributions": {}, "tensorflow_log": []}
    assert doctor._gpu(facts).detail == "no GPU visible to TensorFlow"


def test_doctor_hints_name_what_the_student_readme_installs(monkeypatch):
    """Without a GPU on a CUDA build, the hint names requirements-gpu.lock (the student README's GPU
    install), not a pip extra; a missing kernel names kernel.install(), not a make target."""
    facts = {"tensorflow": {"devices": [{"type": "CPU"}], "build_info": {"is_cuda_build": True}},
             "nvidia_distributions": {}, "tensorflow_log": []}
    hint = doctor._gpu(facts).hint
    assert "requirements-gpu.lock" in hint and "[gpu]" not in hint and "extra" not in hint, hint
    cpu_wheel = {"packages": {"tensorflow-cpu": "2.21.0"}}
    assert "requirements-gpu.lock" in doctor._wheel(cpu_wheel).hint
    monkeypatch.setattr(kernel, "check", lambda: kernel.KernelCheck(registered=False, spec_path=None, spec_python=None,
                                                                    running_python="python", same_environment=False))
    hint = doctor._kernel({}).hint
    assert 'python -c "from course import kernel; kernel.install()"' in hint and "make" not in hint, hint


def test_captured_stderr_takes_what_is_written_to_the_descriptor_itself(capfd):
    import os

    with environment.captured_stderr() as lines:
        os.write(2, b"E0000 from C++\n\n")
        os.write(2, b"W0000 another line\n")
    assert lines == ["E0000 from C++", "W0000 another line"]
    assert capfd.readouterr().err == ""
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_doctor_text_and_json_formats():
    diagnosis = {"ok": False, "facts": {}, "checks": [
        {"name": "gpu", "status": "WARN", "detail": "no GPU", "hint": "skip"},
        {"name": "cpu", "status": "FAIL", "detail": "no AVX", "hint": ""}]}
    text = doctor.format_text(diagnosis)
    assert "[WARN] gpu: no GPU" in text and "-> skip" in text and "problems found" in text
    assert json.loads(doctor.format_json(diagnosis))["ok"] is False


# plotting ------------------------------------------------------------------------------


def test_every_course_figure_describes_what_it_shows_with_its_numbers():
    from course import plotting

    lines = plotting.lines([1, 2, 4, 8], {"eager": [3, 2, 0.5, 1], "graph": [1, 1, 1, 1]}, title="Dispatch",
                           xlabel="ops", ylabel="ms per op")
    assert plotting.description(lines) == ("Line plot, Dispatch: ms per op against ops. eager: 3 at 1 to 1 at 8 "
                                           "(lowest 0.5 at 4); graph: 1 at 1 to 1 at 8.")
    bars = plotting.bars(["copy last\nframe", "model"], [0.12, 0.0341], title="Error", ylabel="MAE")
    assert plotting.description(bars) == "Bar chart, Error: MAE. copy last frame: 0.12; model: 0.0341."
    assert [plotting._number(value) for value in (1024, 999.6, -999.7, 0.0009996, 1234.5, 1e-12, float("nan"))] == \
        ["1,024", "1,000", "-1,000", "0.001", "1,230", "1.00e-12", "no value"]
    gapped = plotting.lines([1, 2, 3], {"a": [float("nan"), 3, 1]}, title="t", xlabel="x", ylabel="y")
    assert plotting.description(gapped).endswith("a: no value at 1 to 1 at 3 (highest 3 at 2).")
    grid = plotting.image_grid([[[[0, 1], [1, 0]]] * 3], title="Frames", row_labels=["truth"])
    assert plotting.description(grid) == ("Image grid, Frames: 1 row of 3 images; rows, top to bottom: truth; "
                                          "one grey scale from 0 (black) to 1 (white).")


def test_show_gives_the_image_its_description_as_alt_text_and_refuses_a_figure_without_one(monkeypatch):
    from matplotlib import pyplot

    from course import plotting

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda data, **options: shown.append((data, options)))
    figure = plotting.bars(["a", "b"], [1, 2.5], title="T", ylabel="y")
    plotting.show(figure, alt="Why it is drawn.")
    data, options = shown[0]
    assert options["raw"] and options["metadata"] == {"image/png": {"alt": "Why it is drawn. Bar chart, T: y. a: 1; b: 2.5."}}
    assert data["image/png"] and data["text/plain"] == options["metadata"]["image/png"]["alt"]
    assert not pyplot.fignum_exists(figure.number), "shown once: the inline backend does not show it again"
    bare, _ = pyplot.subplots()
    with pytest.raises(ValueError, match="a figure without a description"):
        plotting.show(bare)
    # without a figure: pyplot's current one, as the notebooks call it
    plotting.lines([1], {"a": [1]}, title="t", xlabel="x", ylabel="y")
    plotting.show()
    assert shown[-1][1]["metadata"]["image/png"]["alt"] == "Line plot, t: y against x. a: 1 at 1."


def test_a_figure_shown_without_alt_text_is_found_in_the_executed_notebook(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from course import runner

    png = {"image/png": "iVBORw0KGgo="}
    notebook = new_notebook(cells=[
        new_code_cell("a", outputs=[new_output("display_data", data=png, metadata={"image/png": {"alt": "Bars."}})]),
        new_code_cell("b", outputs=[new_output("display_data", data=png)]),
        new_code_cell("c", outputs=[new_output("display_data", data=png, metadata={"image/png": {"alt": " "}})]),
        new_code_cell("d", metadata={"alt": "Said by the cell."}, outputs=[new_output("display_data", data=png)])])
    nbformat.write(notebook, tmp_path / "x.ipynb")
    assert runner.undescribed_figures(tmp_path / "x.ipynb") == ["cell 1", "cell 2"]


def test_the_executed_notebooks_page_gives_each_described_image_its_alt_text(tmp_path):
    """runner.write_html: nbconvert's lab page, whose template leaves alt out, with the figure's description."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from course import runner

    png = {"image/png": "iVBORw0KGgo="}
    notebook = new_notebook(cells=[new_code_cell("a", outputs=[new_output(
        "display_data", data=png, metadata={"image/png": {"alt": "Bar chart, T: y. a: 1 < 2."}})])])
    nbformat.write(notebook, tmp_path / "x.ipynb")
    page = runner.write_html(tmp_path / "x.ipynb").read_text(encoding="utf-8")
    assert 'alt="Bar chart, T: y. a: 1 &lt; 2."' in page and "No description has been provided" not in page


def test_plots_have_titles_and_labelled_axes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from course import plotting

    figure = plotting.lines([1, 2, 4], {"eager": [3, 2, 1], "graph": [1, 1, 1]}, title="Dispatch",
                            xlabel="ops in the chain", ylabel="median time (ms)", logx=True)
    axes = figure.axes[0]
    assert (axes.get_title(), axes.get_xlabel(), axes.get_ylabel()) == ("Dispatch", "ops in the chain", "median time (ms)")
    assert [line.get_label() for line in axes.get_lines()] == ["eager", "graph"]
    assert plotting.save(figure, tmp_path / "plot.png").stat().st_size > 0
    grid = plotting.image_grid([[[[0, 1], [1, 0]]] * 3, [[[1, 0], [0, 1]]] * 3], title="Frames",
                               row_labels=["truth", "prediction"])
    assert len(grid.axes) == 6


def test_lines_shade_a_series_spread_in_its_own_colour():
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    from course import plotting

    figure = plotting.lines([16, 32], {"pretrained": [0.7, 0.8], "random": [0.5, 0.6]}, title="Curve",
                            xlabel="labelled examples", ylabel="accuracy", bands={"random": ([0.4, 0.5], [0.6, 0.7])})
    axes = figure.axes[0]
    (band,) = axes.collections
    vertices = band.get_paths()[0].vertices
    assert vertices[:, 1].min() == 0.4 and vertices[:, 1].max() == 0.7, "the band spans low to high"
    assert np.allclose(band.get_facecolor()[0][:3], matplotlib.colors.to_rgb(axes.get_lines()[1].get_color()))
    with pytest.raises(ValueError, match="not drawn"):
        plotting.lines([1], {"a": [1]}, title="t", xlabel="x", ylabel="y", bands={"b": ([0], [1])})


def test_image_grid_draws_grey_panels_on_one_shared_scale():
    """Per-panel autoscaling would show a faint prediction (max 0.2) as bright as the truth (max 1)."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    from course import plotting

    truth, faint = np.array([[0.0, 1.0], [0.5, 0.25]]), np.array([[0.05, 0.2], [0.1, 0.1]])
    grid = plotting.image_grid([[truth], [faint]], title="Frames")
    assert [axes.images[0].get_clim() for axes in grid.axes] == [(0.0, 1.0), (0.0, 1.0)]
    fixed = plotting.image_grid([[faint], [faint]], title="Frames", vmin=0.0, vmax=1.0)
    assert {axes.images[0].get_clim() for axes in fixed.axes} == {(0.0, 1.0)}
    colour = plotting.image_grid([[np.zeros((2, 2, 3))], [faint]], title="Frames")
    assert colour.axes[1].images[0].get_clim() == (0.05, 0.2), "RGB panels do not set the grey scale"
    with pytest.raises(ValueError, match="ylabel"):
        plotting.bars(["a"], [1.0], title="t", ylabel=" ")


def test_grading_hides_an_object_everywhere_for_the_block_only():
    """A solution that calls the object the test compares with gets `Hidden`, by any name it holds,
    an alias bound before the block included; everything is as before once the block ends."""
    import sys
    import types

    from course import grading

    library = types.ModuleType("fake_library")
    exec("class Packer:\n    def __init__(self, size):\n        self.size = size\n"
         "    def __call__(self, tokens):\n        return tokens[:self.size]\n"
         "class Plain:\n    pass\n"
         "def pack(tokens, size=2):\n    return tokens[:size]\n", library.__dict__)

    class Subclass(library.Packer):
        pass

    sys.modules["fake_library"] = library
    try:
        Alias, alias_pack = library.Packer, library.pack  # bound before the block, as an answer cell can
        made_before = Alias(2)
        before = ({**vars(library.Packer)}, library.pack.__code__)
        with pytest.raises(grading.Hidden, match="fake_library.Packer is hidden"):
            with grading.hidden("fake_library.Packer", "fake_library.pack", "fake_library.Plain"):
                for refused in (lambda: Alias(3), lambda: library.Packer(3), lambda: Subclass(3),
                                lambda: made_before([1, 2, 3]), lambda: alias_pack([1, 2, 3]),
                                lambda: library.pack([1]), lambda: library.Plain()):
                    with pytest.raises(grading.Hidden, match="is hidden while the test runs your function"):
                        refused()
                assert isinstance(made_before, library.Packer) and made_before.size == 2, "the object stays itself"
                Alias(4)  # an error inside the block: everything is restored all the same
        assert ({**vars(library.Packer)}, library.pack.__code__) == before, "restored after an error"
        assert "__init__" not in vars(library.Plain), "an inherited __init__ is inherited again"
        assert Alias(2)([1, 2, 3]) == Subclass(2)([1, 2, 3]) == alias_pack([1, 2, 3]) == [1, 2]
        assert library.pack([1, 2, 3], size=1) == [1] and library.Plain() is not None
        with pytest.raises(TypeError, match="hides classes and plain functions"):
            with grading.hidden("fake_library.Packer", "sys.getsizeof"):
                pass
        assert {**vars(library.Packer)} == before[0], "restored when a later name cannot be hidden"
    finally:
        sys.modules.pop("fake_library", None)


def test_checks_give_each_group_its_share_and_name_what_failed(capsys):
    """Partial credit: a failed group costs its share, says why, and never raises; nbgrader reads
    the returned number as the cell's grade."""
    from course import grading

    checks = grading.Checks("pack_pair", points=3)
    with checks.group("tuples"):
        assert (1, 2) == (1, 2)
    with checks.group("arrays", weight=2):
        raise AssertionError("expected [2], got [1]")
    with checks.group("errors"):
        raise NotImplementedError
    assert checks.score() == 0.75
    out = capsys.readouterr().out.splitlines()
    assert out == ["  FAILED arrays: expected [2], got [1]", "  FAILED errors: NotImplementedError: (no message)",
                   "pack_pair: 1 of 3 groups of checks passed, 0.75 of 3 points"]

    full = grading.Checks("pack_pair", points=2)
    for name in ("visible", "hidden"):
        with full.group(name):
            pass
    assert full.score() == 2.0
    assert capsys.readouterr().out == "pack_pair: all 2 groups of checks passed, 2 of 2 points\n"

    blank = grading.Checks("pack_pair", points=2)
    with blank.group("only"):
        raise NotImplementedError("write pack_pair")
    with pytest.raises(AssertionError, match=r"no group of checks passed \(0 of 2 points\); first failure, only: "
                                             r"NotImplementedError: write pack_pair"):
        blank.score()  # nbgrader scores the error 0, and Run All stops at the cell
    with pytest.raises(RuntimeError, match="no group"):
        grading.Checks("empty", points=1).score()
    with pytest.raises(KeyboardInterrupt):
        with grading.Checks("x", points=1).group("interrupted"):
            raise KeyboardInterrupt


def test_calibration_helpers_give_onnx_runtime_answers(tmp_path):
    """course.calibration (05_tf_trt's INT8 reference): ORT's calibraters on arrays or batches, compute_scale_zp, QDQ."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    from course import calibration

    values = np.array([[-1.5, 0.25], [3.0, 0.5]], dtype=np.float32)
    assert calibration.ort_range(values, "minmax", symmetric=False) == (-1.5, 3.0)
    assert calibration.ort_range(values, "minmax", symmetric=True) == (-3.0, 3.0)
    scale, zero_point = calibration.ort_scale_zero_point(-1.5, 3.0, symmetric=False)
    assert zero_point == -43 and abs(scale - 4.5 / 255) < 1e-8
    assert calibration.ort_scale_zero_point(-1.5, 3.0, symmetric=True) == (float(np.float32(6 / 254)), 0)
    restored = calibration.ort_quantize_dequantize(values, scale, zero_point)
    assert restored.dtype == np.float32 and np.max(np.abs(restored - values)) <= scale / 2 + 1e-7
    gaussian = np.random.default_rng(0).normal(0, 1, 5000).astype(np.float32)
    low, high = calibration.ort_range(gaussian, "entropy", num_bins=256)
    assert gaussian.min() <= low < 0 < high <= gaussian.max()
    halves = [gaussian[:2500], gaussian[2500:]]  # a list of arrays: one calibration batch each
    assert calibration.ort_range(halves, "minmax", symmetric=False) == (float(gaussian.min()), float(gaussian.max()))
    assert [value.name for value in calibration.identity_model((2, 3)).graph.output] == ["observed"]
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["hidden"]), helper.make_node("Neg", ["hidden"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "relu.onnx")
    batches = [np.array([[-1.0, 2.0, 0.5]], np.float32), np.array([[3.0, -4.0, 1.0]], np.float32)]
    seen = calibration.tensor_activations(tmp_path / "relu.onnx", batches)
    assert set(seen) == {"x", "hidden", "y"}
    assert np.array_equal(seen["hidden"], np.maximum(np.concatenate(batches), 0))


def test_the_demo_solution_may_leave_only_its_written_answers_to_grade_by_hand(tmp_path):
    """make run's check of the demo class: the solution gets every automatic point, and its written
    answers (the model answers typed in) wait for a hand grade; a lost automatic point is a problem."""
    from autograder.authoring import course_run
    from autograder.runfolder import GRADES_COLUMNS

    def line_of(student: str, score: int, status: str, reason: str, cells: str) -> str:
        return f"{student},,,ps1,ps1.ipynb,,,,{score},0,{score},6,{status},{reason},,1,{cells}"

    def read(solution_row: str) -> course_run.Line:
        layout = Layout(tmp_path / "course")
        line = course_run.Line("ps1", "ok")
        grading = course_run.DemoGrading(layout, line)   # no release notebook: nothing starts
        line.problems.clear()
        run = grading.build.demo_grading("ps1")
        run.root.mkdir(parents=True, exist_ok=True)
        run.grades_csv.write_text(",".join([*GRADES_COLUMNS, "test_a", "written_why"]) + "\n"
                                  f"{solution_row}\n{line_of('blank', 0, 'graded', '', '0,0')}\n")
        run.max_points_csv.write_text("column,max_points\nscore,6\ntest_a,4\nwritten_why,2\n")
        grading._read(0)
        return line

    written = "written answers to grade by hand: written_why"
    waiting = read(line_of("solution", 4, "needs_manual_grade", written, "4,"))
    assert waiting.problems == [] and waiting.solution_score == "4/6 (+2 by hand)"
    lost = read(line_of("solution", 3, "needs_manual_grade", written, "3,"))
    assert lost.problems and "the solution got 3/6 (+2 by hand)" in lost.problems[0]


def test_training_benchmark_counts_a_seed_only_at_full_marks():
    """`make bench-training` reads a test cell's score as the autograder does: a model at chance ends its
    Checks cell without an error but with 1.2 of 3 points, and that seed has not passed."""
    import nbformat

    from tests.benchmarks import training

    def executed(*outputs, points=3, run=True):
        cell = nbformat.v4.new_code_cell("checks.score()", execution_count=7 if run else None)
        cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t", "points": points,
                                     "schema_version": 3, "locked": True}
        cell.outputs = [nbformat.from_dict(output) for output in outputs]
        return cell

    def stream(name, text):
        return {"output_type": "stream", "name": name, "text": text}

    def result(value):
        return {"output_type": "execute_result", "data": {"text/plain": value}, "metadata": {}, "execution_count": 7}

    partial = executed(stream("stdout", "  FAILED hidden accuracy: expected at least 0.8, got 0.512\n"), result("1.2"))
    assert training.graded_score(partial) == (1.2, 3.0) and not training.full_marks(training.graded_score(partial))
    assert training.full_marks(training.graded_score(executed(result("3.0"))))
    log_line = "W0000 00:00:1712345678.123456    1234 cuda_executor.cc:1]  no GPU\n"
    assert training.full_marks(training.graded_score(executed(stream("stderr", log_line), result("3.0")))), \
        "TensorFlow's log lines are filtered as the autograder does"
    assert training.graded_score(executed(stream("stderr", "Traceback: a real message\n"), result("3.0"))) == (0.0, 3.0)
    error = {"output_type": "error", "ename": "AssertionError", "evalue": "no group passed", "traceback": []}
    assert training.graded_score(executed(error)) == (0.0, 3.0)
    assert training.full_marks(training.graded_score(executed(points=1))), "an all-or-nothing cell that ran clean"
    assert training.graded_score(executed(run=False)) is None and not training.full_marks(None)
    margins = nbformat.v4.new_code_cell("")
    margins.outputs = [nbformat.from_dict(stream("stdout", 'BENCH-MARGINS {"hidden acc": 0.5, "swapped acc": null}\n'))]
    assert training.read_margins(margins) == {"hidden acc": 0.5, "swapped acc": None}
