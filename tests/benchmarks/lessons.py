"""The numbers the notebooks' lessons rest on, read from the runs of `tests.benchmarks.training`.

A notebook leaves them in global dicts (02: `prediction_plot_numbers`; 03: `pretraining_numbers` and
`learning_curve_numbers`). The benchmark appends PRINT_LESSONS as the notebook's last cell: it
prints, on one line after `BENCH-LESSONS `, a JSON object of those globals that exist at the end of
the run. `read_lessons` parses it; `describe_seed` gives the per-seed lines and `summarize` the lines
per notebook (over the seeds of one route): median, min-max and the smallest margin of each lesson.
"""

from __future__ import annotations

import json
import math
import statistics
import textwrap
from collections.abc import Callable

# the global dicts each notebook's lessons rest on, in the order they are printed
LESSON_GLOBALS = {
    "02_convlstm": ("prediction_plot_numbers",),
    "03_bert_finetuning": ("pretraining_numbers", "learning_curve_numbers"),
}

NOT_IN_NOTEBOOK = "not in this notebook"        # no cell of the notebook names the dict
NOT_SET = "not set by this run"                 # a cell names it, but it is not a global at the end
DID_NOT_RUN = "the notebook did not run"

PRINT_LESSONS = '''print("BENCH-LESSONS", __import__("json").dumps(
    {{_bench_name: globals()[_bench_name] for _bench_name in {names!r} if _bench_name in globals()}},
    default=lambda value: __import__("numpy").asarray(value).tolist()))  # numpy and TensorFlow numbers
'''


def lesson_cell_source(assignment: str) -> str | None:
    """The source of the last cell to append to `assignment`'s notebook; None: it has no lessons."""
    names = LESSON_GLOBALS.get(assignment)
    return PRINT_LESSONS.format(names=names) if names else None


def read_lessons(assignment: str, cells) -> dict[str, dict | str]:
    """Per dict of the notebook: its value as printed by the last cell, or why there is none."""
    names = LESSON_GLOBALS.get(assignment, ())
    if not cells:
        return {name: DID_NOT_RUN for name in names}
    printed: dict = {}
    for output in cells[-1].get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            for line in output.get("text", "").splitlines():
                if line.startswith("BENCH-LESSONS "):
                    printed = json.loads(line.split(" ", 1)[1])  # NaN is read back as float("nan")
    named = {name for name in names for cell in cells[:-1] if name in cell.get("source", "")}
    return {name: printed[name] if name in printed else NOT_SET if name in named else NOT_IN_NOTEBOOK
            for name in names}


# --- numbers -------------------------------------------------------------------------------------

def _finite(values):
    return [value for value in values if value is not None and not math.isnan(value)]


def _seeds(count: int) -> str:
    return f"{count} seed" + ("" if count == 1 else "s")


def _median_range(values: list[float]) -> str:
    return f"median {statistics.median(values):.4f}, min-max {min(values):.4f}-{max(values):.4f}"


def _table(dicts: list[tuple[int, dict]], keys: list[str]) -> list[str]:
    """Per key: median, min and max over the seeds (NaN and missing values counted, left out)."""
    lines = [f"      {'':36} {'median':>8} {'min':>8} {'max':>8}"]
    for key in keys:
        values = [numbers.get(key) for _, numbers in dicts]
        known = _finite(values)
        if not known:
            lines.append(f"      {key:36} {'-':>8} {'-':>8} {'-':>8}  (NaN or missing in all {_seeds(len(values))})")
            continue
        note = f"  (NaN or missing in {_seeds(len(values) - len(known))})" if len(known) < len(values) else ""
        lines.append(f"      {key:36} {statistics.median(known):>8.4f} {min(known):>8.4f} {max(known):>8.4f}{note}")
    return lines


def _margin_line(label: str, dicts: list[tuple[int, dict]], margin: Callable[[dict], float], own: str) -> str:
    """A margin that must be > 0, over the seeds: median, min-max, and whether its smallest value
    exceeds the spread (max - min over the seeds) of the dict's value `own`."""
    margins = [(seed, margin(numbers)) for seed, numbers in dicts]
    margins = [(seed, value) for seed, value in margins if not math.isnan(value)]
    if not margins:
        return f"      {label}: no value"
    seed, smallest = min(margins, key=lambda item: item[1])
    line = f"      {label:36} {_median_range([value for _, value in margins])}; smallest {smallest:+.4f} (seed {seed})"
    owns = _finite(numbers.get(own) for _, numbers in dicts)
    if not owns:
        return line + f"; no {own} to compare with"
    spread = max(owns) - min(owns)
    verdict = "exceeds it" if smallest > spread else "does NOT exceed it"
    return (line + f"\n      {'':36} against the spread of {own} over the seeds, max - min = {spread:.4f} "
            f"({min(owns):.4f}-{max(owns):.4f}): {verdict}")


def _prediction_plot(dicts: list[tuple[int, dict]]) -> list[str]:
    lines = _table(dicts, ["model_over_copy_last_frame", "model_mae", "copy_last_frame_mae",
                           "plotted_frames_model_mae", "plotted_frames_copy_last_frame_mae", "head_alone_mae",
                           "keras_example_mae"])
    ratios = [(seed, numbers["model_over_copy_last_frame"]) for seed, numbers in dicts
              if not math.isnan(numbers.get("model_over_copy_last_frame", math.nan))]
    plotted = sum(numbers.get("plotted", 0.0) == 1.0 for _, numbers in dicts)
    keras_example = sum(numbers.get("plotted_is_keras_example", 0.0) == 1.0 and numbers.get("plotted", 0.0) == 1.0
                        for _, numbers in dicts)
    lines.append("      lesson: the plotted model beats copying the last frame (model MAE / copy-last MAE < 1)")
    if ratios:
        seed, largest = max(ratios, key=lambda item: item[1])
        lines.append(f"      {'model / copy-last MAE':36} {_median_range([ratio for _, ratio in ratios])}; largest "
                     f"{largest:.4f} (seed {seed}: margin {1 - largest:+.4f} below 1)")
    lines.append(f"      {'plotted':36} {plotted} of {len(dicts)} seeds "
                 f"(the Keras-example model in {keras_example}, the causal head alone in {plotted - keras_example})")
    return lines


def _pretraining(dicts: list[tuple[int, dict]]) -> list[str]:
    lines = _table(dicts, ["mlm_accuracy", "most_frequent_accuracy", "mlm_loss_per_masked_token",
                           "unigram_loss_per_masked_token", "nsp_accuracy", "sentiment_rule_accuracy"])
    lines.append("      lesson: each margin > 0 by more than the spread over the seeds; compared: the smallest margin")
    lines.append("      over the seeds with max - min over the seeds of the model's own number (accuracy or loss)")
    value = lambda numbers, key: float(numbers.get(key, math.nan))  # noqa: E731
    lines.append(_margin_line("MLM acc - most-frequent acc", dicts,
                              lambda n: value(n, "mlm_accuracy") - value(n, "most_frequent_accuracy"),
                              "mlm_accuracy"))
    lines.append(_margin_line("unigram loss - MLM loss (nats/token)", dicts,
                              lambda n: value(n, "unigram_loss_per_masked_token")
                              - value(n, "mlm_loss_per_masked_token"),
                              "mlm_loss_per_masked_token"))
    lines.append(_margin_line("NSP acc - 0.5", dicts, lambda n: value(n, "nsp_accuracy") - 0.5,
                              "nsp_accuracy"))
    lines.append(_margin_line("same-sentiment rule acc - NSP acc", dicts,
                              lambda n: value(n, "sentiment_rule_accuracy") - value(n, "nsp_accuracy"),
                              "nsp_accuracy"))
    return lines


def _curve_rows(numbers: dict) -> dict[int, list[tuple[float, float]]]:
    """Per size: (pretrained, scratch) accuracy per curve seed, paired by position."""
    return {int(size): list(zip(pretrained, scratch))
            for size, pretrained, scratch in zip(numbers["sizes"], numbers["pretrained"], numbers["scratch"])}


def _learning_curve(dicts: list[tuple[int, dict]]) -> list[str]:
    lines = ["      held-out accuracy after fine-tuning on n labelled examples; gain = pretrained - scratch,",
             "      paired by curve seed (the same labelled examples); gains > 0 counts (notebook seed, curve seed)"
             " pairs",
             "      median pretrained / scratch / gain: median over the notebook seeds of each seed's median "
             "over its curve seeds",
             f"      {'n':>6} {'pretrained':>10} {'scratch':>8} {'median gain':>11}  {'smallest paired gain':32} "
             f"{'gains > 0':>9}"]
    per_size: dict[int, list[tuple[int, list[tuple[float, float]]]]] = {}
    for seed, numbers in dicts:
        for size, pairs in _curve_rows(numbers).items():
            per_size.setdefault(size, []).append((seed, pairs))
    for size in sorted(per_size):
        runs = [(seed, pairs) for seed, pairs in per_size[size] if pairs]
        if not runs:
            lines.append(f"      {size:>6} no accuracies")
            continue
        median_of = lambda pick: statistics.median(statistics.median(pick(pair) for pair in pairs)  # noqa: E731
                                                   for _, pairs in runs)
        gains = [(seed, curve_seed, pretrained - scratch) for seed, pairs in runs
                 for curve_seed, (pretrained, scratch) in enumerate(pairs)]
        seed, curve_seed, smallest = min(gains, key=lambda item: item[2])
        where = f"{smallest:+.4f} (seed {seed}, curve seed {curve_seed})"
        pretrained, scratch = median_of(lambda pair: pair[0]), median_of(lambda pair: pair[1])
        lines.append(f"      {size:>6} {pretrained:>10.4f} {scratch:>8.4f} "
                     f"{median_of(lambda pair: pair[0] - pair[1]):>+11.4f}  {where:32} "
                     f"{sum(gain > 0 for *_, gain in gains):>4}/{len(gains):<4}")
    return lines


def _describe_curve(numbers: dict) -> list[str]:
    parts = []
    for size, pairs in _curve_rows(numbers).items():
        if pairs:
            gains = [pretrained - scratch for pretrained, scratch in pairs]
            parts.append(f"n={size}: median pretrained {statistics.median(p for p, _ in pairs):.4f}, "
                         f"scratch {statistics.median(s for _, s in pairs):.4f}, "
                         f"gain {statistics.median(gains):+.4f}, smallest gain {min(gains):+.4f}, "
                         f"{sum(gain > 0 for gain in gains)}/{len(gains)} gains > 0")
    return parts or ["no sizes"]


SUMMARIES = {"prediction_plot_numbers": _prediction_plot, "pretraining_numbers": _pretraining,
             "learning_curve_numbers": _learning_curve}


def describe_seed(lessons: dict[str, dict | str]) -> list[str]:
    """The numbers of one run, per dict, or why it has none."""
    lines = []
    for name, numbers in lessons.items():
        if isinstance(numbers, str):
            lines.append(f"      {name}: {numbers}")
        elif name == "learning_curve_numbers":
            lines.append(f"      {name}:")
            lines.extend(f"        {part}" for part in _describe_curve(numbers))
        else:
            text = " ".join(f"{key}={value:.4f}" if isinstance(value, (int, float)) else f"{key}={value}"
                            for key, value in numbers.items())
            lines.append(textwrap.fill(f"{name}: {text}", width=120, initial_indent=" " * 6,
                                       subsequent_indent=" " * 8, break_on_hyphens=False))
    return lines


def summarize(assignment: str, lessons_per_seed: list[dict[str, dict | str]]) -> list[str]:
    """Per dict of `assignment`, over the seeds of one route: the table and the lessons' margins."""
    lines = []
    for name in LESSON_GLOBALS.get(assignment, ()):
        values = [(seed, lessons.get(name, NOT_IN_NOTEBOOK)) for seed, lessons in enumerate(lessons_per_seed)]
        dicts = [(seed, numbers) for seed, numbers in values if isinstance(numbers, dict)]
        if not dicts:
            reasons = sorted({numbers for _, numbers in values if isinstance(numbers, str)})
            lines.append(f"    {name}: {', '.join(reasons) or 'no seeds'}")
            continue
        missing = len(values) - len(dicts)
        without = f" ({_seeds(missing)} without it)" if missing else ""
        lines.append(f"    {name}, over {_seeds(len(dicts))}{without}:")
        try:
            lines.extend(SUMMARIES[name](dicts))
        except (KeyError, TypeError, ValueError) as error:  # a dict without the keys described above
            lines.append(f"      cannot summarize: {type(error).__name__}: {error}")
    return lines
