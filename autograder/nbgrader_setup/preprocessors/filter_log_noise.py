"""Drop TensorFlow's log lines from stderr so they never zero a test cell.

nbgrader scores a test cell 0 when it wrote anything to stderr, and TensorFlow's C++ runtime writes
log lines to file descriptor 2 at import and on later calls, whatever TF_CPP_MIN_LOG_LEVEL says.
nbgrader's own `IgnorePattern` drops a whole stderr output when a pattern matches anywhere in it,
which would also drop a real message printed next to a log line. This preprocessor works line by
line: known noise goes, every other line stays, and a stderr output left empty is removed.

Errors are `error` outputs, not stderr, so a failing test still fails.
"""

from __future__ import annotations

import re

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, List, Unicode

DEFAULT_PATTERNS = [
    # absl / glog prefix: I1202 18:20:00.123456   1234 file.cc:12] ... (before absl is initialised
    # the time reads 00:00:<seconds since the epoch>)
    r"^[IWEF]\d{4} \d{2}:\d{2}:\d+\.\d+\s+\d+ [\w./-]+:\d+\]",
    # TensorFlow's own C++ logging: 2026-12-02 18:20:00.123456: W tensorflow/... ]
    r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+: [IWEF] ",
    r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR",
    # second line of cpu_feature_guard's message
    r"^To enable the following instructions: .* rebuild TensorFlow with the appropriate compiler flags\.",
    r"^WARNING: TensorFlow is not using all available CPU",
    # Python logging without a handler of its own: WARNING:tensorflow:5 out of the last 5 calls ...
    r"^(WARNING|INFO|DEBUG):(tensorflow|absl|keras|h5py|tf2onnx|onnx|keras_hub):",
    # warnings.warn inside a library: /.../site-packages/keras/src/layers/core.py:12: UserWarning: ...
    r"^\S*[/\\]site-packages[/\\](tensorflow|tf_keras|keras|keras_hub|tensorflow_text|absl|google[/\\]protobuf|"
    r"tf2onnx|onnx|onnxruntime|h5py|numpy|jupyter_client|ipykernel)[/\\]\S*:\d+: \w*Warning: ",
]


class FilterLogNoise(NbGraderPreprocessor):
    """Remove lines matching `patterns` from every stderr stream output of code cells."""

    enabled = Bool(True).tag(config=True)
    patterns = List(Unicode(), default_value=DEFAULT_PATTERNS,
                    help="Regular expressions (re.match per line) of stderr lines to drop").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        compiled = [re.compile(pattern) for pattern in self.patterns]
        kept_outputs = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                text = filter_text(output.get("text", ""), compiled)
                if not text.strip():
                    continue
                output["text"] = text
            kept_outputs.append(output)
        cell.outputs = kept_outputs
        return cell, resources


def filter_text(text: str, compiled: list[re.Pattern]) -> str:
    """`text` without the lines any pattern matches, nor the indented lines right under such a line."""
    kept, dropping = [], False
    for line in text.splitlines(keepends=True):
        if any(pattern.match(line) for pattern in compiled):
            dropping = True
        elif not (dropping and line[:1] in (" ", "\t") and line.strip()):
            dropping = False
            kept.append(line)
    return "".join(kept)
