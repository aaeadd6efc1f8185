"""FilterLogNoise line by line: library noise goes, everything a student or a real error wrote stays."""

from __future__ import annotations

import re

from autograder.nbgrader_setup.preprocessors.filter_log_noise import DEFAULT_PATTERNS, filter_text

PATTERNS = [re.compile(pattern) for pattern in DEFAULT_PATTERNS]

NOISE = [
    "I0000 00:00:1796235959.660254    3034 port.cc:153] oneDNN custom operations are on.\n",
    "2026-12-02 18:20:00.123456: W tensorflow/core/framework/op_kernel.cc:1840] OP_REQUIRES failed\n",
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
    "WARNING:tensorflow:5 out of the last 5 calls to <function f at 0x7f> triggered tf.function retracing. "
    "Tracing is expensive.\n",
    "/venv/lib/python3.11/site-packages/keras/src/layers/core/dense.py:93: UserWarning: Do not pass an "
    "`input_shape`/`input_dim` argument to a layer.\n",
    "  super().__init__(activity_regularizer=activity_regularizer, **kwargs)\n",
]


def test_library_noise_is_dropped_with_the_source_line_python_prints_under_a_warning():
    assert filter_text("".join(NOISE), PATTERNS) == ""


def test_what_the_student_wrote_stays_even_between_noise_lines():
    text = NOISE[3] + "my own message\n" + NOISE[4] + NOISE[5] + "  indented but mine, after my line\n"
    assert filter_text(text, PATTERNS) == "my own message\n"
    mine = "my own message\n  indented but mine, after my line\n"
    assert filter_text(mine, PATTERNS) == mine


def test_a_students_own_warning_and_a_traceback_stay():
    warning = "/tmp/ipykernel_12/3456.py:2: UserWarning: loud\n  warnings.warn('loud')\n"
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: no\n"
    assert filter_text(warning, PATTERNS) == warning
    assert filter_text(NOISE[0] + traceback, PATTERNS) == traceback


def test_error_level_lines_of_tensorflows_python_logger_stay():
    line = "ERROR:tensorflow:the checkpoint could not be restored\n"
    assert filter_text(line, PATTERNS) == line
