"""Benchmark, not a test: how often a correct solution passes the tests that grade a trained model,
and the numbers the notebooks' lessons rest on, from the same runs.

    .venv/bin/python -m tests.benchmarks.training [--seeds 10] [--only 03_bert_finetuning]
        [--profile grade|default|ci|gpu] [--reference-only]

Two graded tests check a model after training: 02's `test_colour_model_beats_copy_last_frame` and
03's `test_fine_tune_classifier` (its hidden tests included). For each, and for every route to a
correct solution that the statement allows, this runs the source notebook (solutions and hidden
tests in it) under the `grade` profile with `SEED` = 0, 1, ..., N-1 and prints, per route, how many
seeds passed that test and the median time of the whole notebook, against a third of the
autograder's default timeout per notebook (`autograder grade --timeout`, 600 s). Other test cells
below full marks are listed too. Goal (issue 19): at least 95 % for every route.

`--profile` picks what papermill injects after the parameters cell: a profile of `course.syllabus`
(the runner's and `course prepare`'s overrides; `grade` by default), or `default`: nothing but
`SEED`, so the parameters cell's own sizes run (a student's laptop). The pass-rate goal and the
200 s budget are the grade profile's; under another profile the budget column shows `-`.
`--reference-only` skips the other routes (the lessons' numbers of a route come from its own runs).

A seed passes when the test cell earns its full points as the autograder scores it: nbgrader's
`determine_grade` on the executed cell, after the autograder's TensorFlow log filter. A test cell
of groups (`course.grading.Checks`) raises only when no group passed, so a model at chance that
fails the accuracy groups still ends without an error, with a partial score such as 1.2 of 3.

Per seed, and per route as the median and the smallest margin over the seeds, it prints the numbers
the test's thresholds judge (02: the model's MAE over the copy-last-frame MAE, below 1; 03: held-out
and hidden accuracy, hidden accuracy over the bag of words' and accuracy with the clauses swapped).
Two cells the benchmark adds around the test cell read them, without changing the notebook: one
before it records the locals of the test's own functions as they return (02's MAEs are locals of
`check_beats_copy_last`), one after it prints them and the test's globals (03's `_accuracy`...).

The lessons (`tests.benchmarks.lessons`): a last cell the benchmark appends prints, as one JSON
line, the global dicts a notebook leaves for them, and the benchmark prints them per seed and then,
per route, their median and min-max over the seeds and the lessons' smallest margins:
- 02, `prediction_plot_numbers`: the plotted grey forecaster's MAE over copying the last frame
  (below 1): median, min-max, the largest ratio (the smallest margin) and in how many seeds a model
  was plotted (and which).
- 03, `pretraining_numbers` (held-out pretraining pairs): MLM accuracy minus the most-frequent-token
  accuracy, the unigram loss minus the MLM loss per masked token, NSP accuracy minus 0.5 and the
  same-sentiment rule's NSP accuracy minus the model's (the rule that says IsNext when A and B come
  from reviews of the same sentiment: the best any model can do on these reviews), each with its
  median and min-max, and whether its smallest value over the seeds exceeds the spread (max - min
  over the seeds) of the model's own number: MLM accuracy, MLM loss, NSP accuracy.
- 03, `learning_curve_numbers` (held-out accuracy after fine-tuning on n labelled examples, the
  pretrained backbone and the same one from random weights, paired by curve seed): per n, the
  median over the notebook seeds of each seed's median accuracies and paired gain (pretrained minus
  scratch), the smallest paired gain and how many (notebook seed, curve seed) pairs gained.
A notebook without such a dict prints "not in this notebook" for it.

The routes are the reference solution in source/ and the alternatives below, put in place of the
solution cell.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.nbgrader_setup.preprocessors import FilterLogNoise
from course import gpu, kernel, syllabus
from course.layout import Layout
from tests.benchmarks import lessons

BUDGET_SECONDS = 600 / 3  # a third of `autograder grade`'s default --timeout (a budget of the grade profile)
DEFAULT_PROFILE = "default"  # --profile default: no profile injected, the parameters cell as written

# 03, route 1 of exercise 5: the preprocessor inside the classifier, `fit` on a shuffled dataset of
# strings (keras-hub 0.32 batches lists in order and Keras ignores shuffle= for datasets)
FIT_ON_STRINGS = '''def fine_tune_classifier(preset, train_texts, train_labels, *, num_classes, sequence_length, epochs,
                         batch_size, learning_rate, validation_data=None):
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(preset, sequence_length=sequence_length)
    classifier = keras_hub.models.BertTextClassifier.from_preset(preset, num_classes=num_classes,
                                                                 preprocessor=preprocessor)
    classifier.compile(optimizer=keras.optimizers.AdamW(learning_rate),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                       metrics=["sparse_categorical_accuracy"])
    labels = np.asarray(train_labels)
    dataset = tf.data.Dataset.from_tensor_slices((list(train_texts), labels)).shuffle(len(labels)).batch(batch_size)
    if validation_data is not None:
        validation_data = tf.data.Dataset.from_tensor_slices(
            (list(validation_data[0]), np.asarray(validation_data[1]))).batch(batch_size)
    history = classifier.fit(dataset, epochs=epochs, validation_data=validation_data, shuffle=False, verbose=0)
    return classifier, history
'''


@dataclass(frozen=True)
class Margin:
    """A number a threshold of the test judges, read in the kernel after the test cell ran."""
    label: str
    expression: str     # evaluated after the test cell: its globals, and `_bench_calls` (see RECORD_LOCALS)
    threshold: float
    passes: str = ">="  # how the test compares the value with the threshold: ">=", ">" or "<"

    def margin(self, value: float) -> float:
        return self.threshold - value if self.passes == "<" else value - self.threshold


# 02: check_beats_copy_last(model, seed, count) computes model_error and copy_error, the visible group first
MAE_RATIO = "_bench_calls[{}]['model_error'] / _bench_calls[{}]['copy_error']"
MARGINS = {
    "02_convlstm": [Margin("visible MAE/copy", MAE_RATIO.format(0, 0), 1.0, "<"),
                    Margin("hidden MAE/copy", MAE_RATIO.format(1, 1), 1.0, "<")],
    "03_bert_finetuning": [Margin("held-out acc", "_visible", 0.6, ">"),
                           Margin("hidden acc", "_accuracy", 0.8),
                           Margin("acc - bag of words", "_accuracy - _baseline_accuracy", 0.2),
                           Margin("swapped acc", "_swapped_accuracy", 0.8)],
}
# the locals those expressions read from the test's own functions (recorded as each call returns)
RECORDED_LOCALS = {"02_convlstm": ("model_error", "copy_error")}

RECORD_LOCALS = '''import sys as _bench_sys
_bench_calls = []
def _bench_profile(frame, event, arg, _wanted={wanted!r}):
    if event == "return" and all(name in frame.f_code.co_varnames for name in _wanted):
        _bench_calls.append({{name: frame.f_locals.get(name) for name in _wanted}})
_bench_sys.setprofile(_bench_profile)
'''

PRINT_MARGINS = '''_bench_sys.setprofile(None)
def _bench_value(expression):
    try:
        return float(eval(expression))
    except Exception:  # the test stopped before this number (the model is missing, a group failed early)
        return None
print("BENCH-MARGINS", __import__("json").dumps({{label: _bench_value(expression)
                                                 for label, expression in {margins!r}}}))
'''


@dataclass(frozen=True)
class Route:
    assignment: str
    test_id: str        # the graded test cell that checks the trained model
    name: str
    solution_id: str = ""
    source: str = ""    # replaces the solution cell `solution_id`; empty: the reference solution


ROUTES = [
    Route("02_convlstm", "test_colour_model_beats_copy_last_frame", "reference"),
    Route("03_bert_finetuning", "test_fine_tune_classifier", "reference (route 2: fit on features)"),
    Route("03_bert_finetuning", "test_fine_tune_classifier", "route 1: fit on strings", "fine_tune_classifier",
          FIT_ON_STRINGS),
]


def grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def graded_score(cell) -> tuple[float, float] | None:
    """(points earned, points) of an executed test cell as the autograder scores it, or None for a cell
    that did not run or is not an autograded test (a written answer is graded by hand)."""
    from nbgrader.utils import determine_grade

    nbgrader = cell.get("metadata", {}).get("nbgrader", {})
    if cell.get("cell_type") != "code" or not nbgrader.get("grade") or nbgrader.get("solution"):
        return None
    if not cell.get("execution_count"):
        return None
    filtered, _ = FilterLogNoise().preprocess_cell(copy.deepcopy(cell), {}, 0)
    earned, points = determine_grade(filtered)
    return float(earned), float(points)


def full_marks(score: tuple[float, float] | None) -> bool:
    return score is not None and score[0] >= score[1]


def read_margins(cell) -> dict[str, float | None]:
    """What PRINT_MARGINS printed in its executed cell."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            for line in output.get("text", "").splitlines():
                if line.startswith("BENCH-MARGINS "):
                    return json.loads(line.split(" ", 1)[1])
    return {}


@dataclass
class Run:
    score: tuple[float, float] | None  # the test cell's (earned, points); None: it did not run
    seconds: float
    failed: list[str]                  # other graded tests below full marks
    margins: dict[str, float | None]
    lessons: dict[str, dict | str]     # the notebook's lesson dicts (tests.benchmarks.lessons), or why none

    @property
    def passed(self) -> bool:
        return full_marks(self.score)


def parameters(assignment: str, profile: str, seed: int) -> dict:
    """What papermill injects: the profile's overrides and SEED; `default`: SEED alone, so the
    parameters cell's own sizes stay (what a student's laptop runs)."""
    overrides = {} if profile == DEFAULT_PROFILE else syllabus.get(assignment).parameters(profile)
    return {**overrides, "SEED": seed}


def run_once(layout: Layout, route: Route, seed: int, folder: Path, profile: str = "grade") -> Run:
    """Execute the notebook for `route` under `profile` with SEED = `seed`; read the scores, the margins
    and the lessons' numbers."""
    import papermill

    from course.kernel_log import KernelLogManager, kernel_log_config

    notebook = nbformat.read(layout.source_notebook(route.assignment), as_version=4)
    if route.source:
        [cell] = [cell for cell in notebook.cells if grade_id(cell) == route.solution_id]
        cell.source = route.source
    [test_index] = [index for index, cell in enumerate(notebook.cells) if grade_id(cell) == route.test_id]
    margins = [(margin.label, margin.expression) for margin in MARGINS.get(route.assignment, [])]
    notebook.cells[test_index + 1:test_index + 1] = [nbformat.v4.new_code_cell(PRINT_MARGINS.format(margins=margins))]
    wanted = RECORDED_LOCALS.get(route.assignment)
    notebook.cells[test_index:test_index] = [nbformat.v4.new_code_cell(
        RECORD_LOCALS.format(wanted=wanted) if wanted else "import sys as _bench_sys\n_bench_calls = []\n")]
    last = lessons.lesson_cell_source(route.assignment)
    if last:
        notebook.cells.append(nbformat.v4.new_code_cell(last))
    work = folder / f"{route.assignment}-{seed}"
    work.mkdir(parents=True)
    given, executed = work / "given.ipynb", work / "executed.ipynb"
    nbformat.write(notebook, given)
    started = time.perf_counter()
    try:
        with gpu.profile_environment(profile):
            papermill.execute_notebook(str(given), str(executed),
                                       parameters=parameters(route.assignment, profile, seed),
                                       kernel_name=kernel.KERNEL_NAME, cwd=str(work), progress_bar=False,
                                       log_output=False, allow_errors=True, kernel_manager_class=KernelLogManager,
                                       config=kernel_log_config(work / "kernel.log"))
    except papermill.PapermillExecutionError:
        pass  # every cell ran (allow_errors); the outputs say which tests failed
    seconds = time.perf_counter() - started
    cells = nbformat.read(executed, as_version=4).cells if executed.exists() else []
    scores = {grade_id(cell): graded_score(cell) for cell in cells if grade_id(cell)}
    failed = [test for test, score in scores.items()
              if test != route.test_id and score is not None and not full_marks(score)]
    test_index = next((index for index, cell in enumerate(cells) if grade_id(cell) == route.test_id), None)
    margins = read_margins(cells[test_index + 1]) if test_index is not None and test_index + 1 < len(cells) else {}
    return Run(scores.get(route.test_id), seconds, failed, margins,
               lessons.read_lessons(route.assignment, cells) if last else {})


def describe(run: Run) -> str:
    score = "did not run" if run.score is None else f"{run.score[0]:g} of {run.score[1]:g} points"
    numbers = ", ".join(f"{label} {'-' if value is None else f'{value:.4f}'}" for label, value in run.margins.items())
    return f"{score}, {run.seconds:.0f} s" + (f"; {numbers}" if numbers else "")


def summarize_margins(assignment: str, runs: list[Run]) -> list[str]:
    """Per number: its median over the seeds, and the smallest margin to its threshold (and where)."""
    lines = []
    for margin in MARGINS.get(assignment, []):
        values = [(seed, run.margins.get(margin.label)) for seed, run in enumerate(runs)]
        known = [(seed, value) for seed, value in values if value is not None]
        if not known:
            lines.append(f"    {margin.label:22} no value (the test stopped before it)")
            continue
        seed, worst = min(known, key=lambda item: margin.margin(item[1]))
        lines.append(f"    {margin.label:22} median {statistics.median(value for _, value in known):.4f}, "
                     f"smallest margin {margin.margin(worst):+.4f} (seed {seed}: {worst:.4f}, "
                     f"passes {margin.passes} {margin.threshold:g})"
                     + (f", missing for {len(values) - len(known)} seeds" if len(known) < len(values) else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--seeds", type=int, default=10, help="run SEED = 0, 1, ..., N-1 (default 10)")
    options.add_argument("--only", help="one assignment id")
    options.add_argument("--profile", default="grade", choices=(DEFAULT_PROFILE, *syllabus.PROFILES),
                         help="the profile injected (default grade); default: none, the parameters cell's own sizes")
    options.add_argument("--reference-only", action="store_true",
                         help="only the reference solution of each notebook, not the other routes")
    arguments = options.parse_args(argv)
    layout = Layout.find()
    routes = [route for route in ROUTES if (not arguments.only or route.assignment == arguments.only)
              and (not arguments.reference_only or route.name.startswith("reference"))]
    budget = f"{BUDGET_SECONDS:>9.0f}" if arguments.profile == "grade" else f"{'-':>9}"
    print(f"profile {arguments.profile}, seeds 0..{arguments.seeds - 1}")
    print(f"{'assignment':20} {'route':40} {'passed':>8} {'rate':>6} {'median s':>9} {'budget s':>9}  other failures")
    with tempfile.TemporaryDirectory(prefix="bench-training-") as scratch:
        for number, route in enumerate(routes):
            runs = []
            for seed in range(arguments.seeds):
                runs.append(run_once(layout, route, seed, Path(scratch) / str(number), arguments.profile))
                print(f"  {route.assignment} {route.name}, seed {seed}: {describe(runs[-1])}", flush=True)
                print("\n".join(lessons.describe_seed(runs[-1].lessons)), flush=True)
            passed = sum(run.passed for run in runs)
            median = statistics.median(run.seconds for run in runs)
            others = sorted({test for run in runs for test in run.failed})
            print(f"{route.assignment:20} {route.name:40} {passed:>4}/{len(runs):<3} {passed / len(runs):>6.0%} "
                  f"{median:>9.1f} {budget}  {', '.join(others) or '-'}", flush=True)
            print("\n".join(summarize_margins(route.assignment, runs)), flush=True)
            print("\n".join(lessons.summarize(route.assignment, [run.lessons for run in runs])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
