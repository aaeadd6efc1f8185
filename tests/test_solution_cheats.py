"""A test that grades a re-implementation gives nothing to a solution that calls the object it
re-implements (or, for 05's calibration, the course helper that answers it), and still passes the reference
solution (02's ConvLSTM step and output shape, 03's pair packing, [CLS] head and encoder block, 05's calibration). The graded cells run here as nbgrader runs them, hidden tests included.
Each object a test hides (`grading.hidden`) is also called through an alias the answer cell bound before
the test ran (00's loader run, 02's ConvLSTM layer and cell, 03's packer, classifier, encoder and attention layers,
05's `calibration.ort_range`): that earns nothing either, though it earns points with nothing hidden."""

from __future__ import annotations

import contextlib
import math
import os
import pathlib
import re
import subprocess
import tempfile
import types
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course import calibration, gpu, grading, loader

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.tensorflow  # the test cells run with TensorFlow and Keras in this process


def run_test_cell(source: str, namespace: dict) -> float | None:
    """Run a test cell as the kernel does; the score it ends with (course.grading.Checks), or None
    when it has none (a cell of fewer than 3 points, all or nothing: it raises when it fails)."""
    import ast

    tree = ast.parse(source)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is not None:
        tree.body = tree.body[:-1]
    exec(compile(tree, "<test cell>", "exec"), namespace)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), "<test cell>", "eval"), namespace)


def notebook_cells(assignment_id: str) -> dict[str, str]:
    """Each cell's source by its nbgrader grade id, or by its cell id when it has none."""
    notebook = nbformat.read(ROOT / "source" / assignment_id / f"{assignment_id}.ipynb", as_version=4)
    return {cell.metadata.get("nbgrader", {}).get("grade_id") or cell.get("id"): cell.source for cell in notebook.cells}


@pytest.fixture(scope="module")
def namespace():
    tf = pytest.importorskip("tensorflow")
    import keras
    import keras_hub
    from keras import layers

    # 03's encoder test reads the notebook's pretrained backbone: a small one stands in for it
    backbone = keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=8,
                                             intermediate_dim=16, max_sequence_length=16)
    return {"np": np, "tf": tf, "keras": keras, "layers": layers, "keras_hub": keras_hub, "warnings": warnings,
            "gpu": gpu, "grading": grading, "backbone": backbone, "HIDDEN_DIM": 8, "SEED": 0,
            # what 00's and 05's test cells use from their notebooks' imports ...
            "math": math, "os": os, "pathlib": pathlib, "re": re, "subprocess": subprocess, "tempfile": tempfile,
            "loader": loader, "calibration": calibration, "raises": raises}


def raises(error_type, function, *args, **kwargs):
    """... and 05's helper, as its notebook defines it."""
    try:
        function(*args, **kwargs)
    except error_type:
        return True
    return False


# every object a test cell hides: each is itself again once the test has run
HIDDEN_OBJECTS = ("course.loader.loader_resolution", "keras.layers.ConvLSTM2D",
                  "keras.src.layers.rnn.conv_lstm.ConvLSTMCell", "keras_hub.layers.MultiSegmentPacker",
                  "keras_hub.layers.TransformerEncoder", "keras.layers.MultiHeadAttention",
                  "keras_hub.models.BertTextClassifier", "course.calibration.ort_range")


def hidden_state() -> dict:
    """What `grading.hidden` changes, for each object: a class's own __init__ and __call__, a function's code."""
    import importlib

    state = {}
    for dotted in HIDDEN_OBJECTS:
        module, _, name = dotted.rpartition(".")
        target = getattr(importlib.import_module(module), name)
        state[dotted] = ((vars(target).get("__init__"), vars(target).get("__call__")) if isinstance(target, type)
                         else target.__code__)
    return state


CHEAT_STEP = '''
def convlstm_step(inputs, hidden, carry, kernel, recurrent_kernel, bias=None, strides=1, padding="same"):
    layer = layers.ConvLSTM2D(kernel.shape[-1] // 4, kernel.shape[:2], strides=strides, padding=padding,
                              use_bias=bias is not None, return_state=True)
    layer.build((None, 1) + inputs.shape[1:])
    layer.set_weights([kernel, recurrent_kernel] + ([bias] if bias is not None else []))
    _, new_hidden, new_carry = layer(inputs[:, None], initial_state=[hidden, carry])
    return np.asarray(new_hidden), np.asarray(new_carry)
'''

CHEAT_SHAPE = '''
def convlstm_output_shape(input_shape, filters, kernel_size, strides=1, padding="valid", dilation_rate=1,
                          return_sequences=False):
    return tuple(layers.ConvLSTM2D(filters, kernel_size, strides=strides, padding=padding, dilation_rate=dilation_rate,
                                   return_sequences=return_sequences).compute_output_shape(input_shape))
'''

CHEAT_PACK = '''
def pack_pair(tokens_a, tokens_b, max_len, *, cls_id, sep_id, pad_id):
    if max_len < 3:
        raise ValueError("max_len")
    packer = keras_hub.layers.MultiSegmentPacker(sequence_length=max_len, start_value=cls_id, end_value=sep_id,
                                                 pad_value=pad_id, truncate="round_robin")
    ids, segments = packer((tf.constant([list(tokens_a)], tf.int32), tf.constant([list(tokens_b)], tf.int32)))
    real = min(max_len, len(tokens_a) + len(tokens_b) + 3)
    return {"token_ids": ids.numpy()[0], "segment_ids": segments.numpy()[0], "padding_mask": np.arange(max_len) < real}
'''


CHEAT_ENCODER = '''
def encoder_block(inputs, padding_mask, weights, *, epsilon=1e-12):
    layer = keras_hub.layers.TransformerEncoder(weights["intermediate_bias"].shape[0], weights["query_bias"].shape[0],
                                                layer_norm_epsilon=epsilon,
                                                activation=lambda z: keras.activations.gelu(z, approximate=True))
    layer(np.zeros((1, 2, weights["output_bias"].shape[0]), "float32"))
    by_path = {suffix: weights[key] for suffix, key in ENCODER_WEIGHT_PATHS.items()}
    layer.set_weights([next(value for suffix, value in by_path.items() if variable.path.endswith(suffix))
                       for variable in layer.weights])
    return np.asarray(layer(inputs, padding_mask=padding_mask, training=False))
'''

CHEAT_CLASSIFIER = '''
def build_cls_classifier(backbone, num_classes, dropout=0.1):
    return keras_hub.models.BertTextClassifier(backbone, num_classes=num_classes, preprocessor=None, dropout=dropout)
'''


# The same cheats with the object bound to another name in the answer cell, before the test hides it
# (what `grading.hidden` guards against by changing the object itself, not the names that hold it); and one
# per other object the notebooks hide: 00's loader run, 03's attention layer, 05's ONNX Runtime range helper.
ALIAS_STEP = "from keras.layers import ConvLSTM2D as _Recurrent\n" + CHEAT_STEP.replace("layers.ConvLSTM2D",
                                                                                "_Recurrent")

ALIAS_STEP_CELL = '''
from keras.src.layers.rnn.conv_lstm import ConvLSTMCell as _Cell

def convlstm_step(inputs, hidden, carry, kernel, recurrent_kernel, bias=None, strides=1, padding="same"):
    cell = _Cell(rank=2, filters=kernel.shape[-1] // 4, kernel_size=kernel.shape[:2], strides=strides, padding=padding,
                 use_bias=bias is not None)
    cell.build(inputs.shape)
    cell.set_weights([kernel, recurrent_kernel] + ([bias] if bias is not None else []))
    new_hidden, (_, new_carry) = cell(inputs.astype("float32"), [hidden.astype("float32"), carry.astype("float32")])
    return np.asarray(new_hidden), np.asarray(new_carry)
'''

ALIAS_SHAPE = "_Recurrent = layers.ConvLSTM2D\n" + CHEAT_SHAPE.replace("layers.ConvLSTM2D", "_Recurrent")

ALIAS_PACK = "_Packer = keras_hub.layers.MultiSegmentPacker\n" + CHEAT_PACK.replace(
    "keras_hub.layers.MultiSegmentPacker", "_Packer")

ALIAS_CLASSIFIER = "from keras_hub.models import BertTextClassifier as _Classifier\n" + CHEAT_CLASSIFIER.replace(
    "keras_hub.models.BertTextClassifier", "_Classifier")

ALIAS_ENCODER = "from keras_hub.layers import TransformerEncoder as _Encoder\n" + CHEAT_ENCODER.replace(
    "keras_hub.layers.TransformerEncoder", "_Encoder")

ALIAS_ATTENTION = '''
_Attention = keras.layers.MultiHeadAttention

def encoder_block(inputs, padding_mask, weights, *, epsilon=1e-12):
    heads, head_size = weights["query_kernel"].shape[1:]
    x, real = np.asarray(inputs, "float32"), np.asarray(padding_mask, bool)
    attention = _Attention(heads, head_size)
    attention(x, x)
    attention.set_weights([weights[variable.path.split("/")[-2].replace("attention_output", "output") + "_"
                                   + variable.path.split("/")[-1]] for variable in attention.weights])
    mask = np.broadcast_to(real[:, None, :], (x.shape[0], x.shape[1], x.shape[1]))
    attended = np.asarray(attention(x, x, attention_mask=mask), "float64")

    def layer_norm(z, name):
        centred = z - z.mean(axis=-1, keepdims=True)
        scaled = centred / np.sqrt(z.var(axis=-1, keepdims=True) + epsilon)
        return weights[f"{name}_gamma"] * scaled + weights[f"{name}_beta"]

    first = layer_norm(x + attended, "attention_norm")
    hidden = np.asarray(keras.activations.gelu(first @ weights["intermediate_kernel"] + weights["intermediate_bias"],
                                               approximate=True))
    return layer_norm(first + hidden @ weights["feedforward_kernel"] + weights["feedforward_bias"], "feedforward_norm")
'''

ALIAS_LOADER = '''
from course.loader import loader_resolution as _ld_so

def resolve_needed(library, ld_library_path="", cache=None, system_dirs=()):
    return _ld_so(library, ld_library_path)
'''

# 05: the ranges from the course's own ONNX Runtime helper (which the test hides), then the choice from them
CHEAT_ORT_RANGE = '''
def ort_ranges(batches, symmetric=True, num_bins=512, num_quantized_bins=128, percentile=99.99):
    return {method: calibration.ort_range(list(batches), method, symmetric=symmetric, num_bins=num_bins,
                                          num_quantized_bins=num_quantized_bins, percentile=percentile)
            for method in ("minmax", "percentile", "entropy")}

def choose_calibration(batches, held_out, max_rms_error, candidates):
    errors = []
    for method, percentile in candidates:
        low, high = ort_ranges(batches, percentile=99.99 if percentile is None else percentile)[method]
        scale, zero_point = calibration.ort_scale_zero_point(low, high)
        restored = calibration.ort_quantize_dequantize(held_out, scale, zero_point)
        errors.append(float(np.sqrt(np.mean((restored.astype(np.float64) - np.asarray(held_out, np.float64)) ** 2))))
    return {"rms_errors": errors, "choice": next((c for c, e in zip(candidates, errors) if e <= max_rms_error), None)}
'''

ALIAS_ORT_RANGE = "from course.calibration import ort_range as _range\n" + CHEAT_ORT_RANGE.replace(
    "calibration.ort_range", "_range")

ALIAS_CHEATS = [
    ("02_convlstm", (), "convlstm_step", "test_convlstm_step", ALIAS_STEP),
    ("02_convlstm", (), "convlstm_step", "test_convlstm_step", ALIAS_STEP_CELL),
    ("02_convlstm", ("convlstm_step", "test_convlstm_step"), "convlstm_output_shape", "test_convlstm_output_shape",
     ALIAS_SHAPE),
    ("03_bert_finetuning", (), "pack_pair", "test_pack_pair", ALIAS_PACK),
    ("03_bert_finetuning", (), "build_cls_classifier", "test_build_cls_classifier", ALIAS_CLASSIFIER),
    ("03_bert_finetuning", ("encoder-weights",), "encoder_block", "test_encoder_block", ALIAS_ENCODER),
    ("03_bert_finetuning", ("encoder-weights",), "encoder_block", "test_encoder_block", ALIAS_ATTENTION),
    ("00_gpu_setup", (), "resolve_needed", "test_resolve_needed", ALIAS_LOADER),
    ("05_tf_trt", (), "int8_calibration", "test_int8_calibration", ALIAS_ORT_RANGE),
]
# groups that never call the function with an object hidden: a cheat passes them as any solution does
# (none at present: every group of 05's calibration test runs the functions with course.calibration.ort_range hidden)
NOT_HIDING: dict[str, set[str]] = {}

ALIAS_IDS = ["02-ConvLSTM2D-step", "02-ConvLSTMCell", "02-ConvLSTM2D-shape", "03-MultiSegmentPacker",
             "03-BertTextClassifier", "03-TransformerEncoder", "03-MultiHeadAttention", "00-loader_resolution",
             "05-ort_range"]


@pytest.mark.parametrize("assignment_id, before, solution_id, test_id, cheat", [
    ("02_convlstm", (), "convlstm_step", "test_convlstm_step", CHEAT_STEP),
    ("02_convlstm", ("convlstm_step", "test_convlstm_step"), "convlstm_output_shape", "test_convlstm_output_shape",
     CHEAT_SHAPE),
    ("03_bert_finetuning", (), "pack_pair", "test_pack_pair", CHEAT_PACK),
    ("03_bert_finetuning", ("encoder-weights",), "encoder_block", "test_encoder_block", CHEAT_ENCODER),
    ("03_bert_finetuning", (), "build_cls_classifier", "test_build_cls_classifier", CHEAT_CLASSIFIER),
    ("05_tf_trt", (), "int8_calibration", "test_int8_calibration", CHEAT_ORT_RANGE),
    *ALIAS_CHEATS,
])
def test_calling_the_reimplemented_object_earns_nothing(namespace, assignment_id, before, solution_id, test_id, cheat):
    cells = notebook_cells(assignment_id)
    namespace = dict(namespace)
    untouched = hidden_state()
    for earlier in before:  # the cells the notebook runs before this exercise (they define what its test uses)
        exec(cells[earlier], namespace)
    reference = dict(namespace)
    exec(cells[solution_id], reference)
    full = run_test_cell(cells[test_id], reference)  # the reference passes, hidden tests included
    assert full is None or full == reference["checks"].points, f"the reference scores {full}"
    cheating = dict(namespace)
    exec(cheat, cheating)
    try:
        score = run_test_cell(cells[test_id], cheating)
    except (grading.Hidden, AssertionError) as error:  # a Checks cell raises when no group passed
        assert "is hidden while the test runs your function" in str(error), error
        score = 0.0
    if cheating.get("checks") is not namespace.get("checks"):  # this test cell scored groups of checks
        failures = [failure for _, _, failure in cheating["checks"].results if failure is not None]
        assert all("is hidden while the test runs your function" in failure for failure in failures), failures
        passed = {name for name, _, failure in cheating["checks"].results if failure is None}
        assert passed <= NOT_HIDING.get(test_id, set()), f"calling the re-implemented object passed {passed}"
    else:
        assert score == 0.0, f"calling the re-implemented object scored {score}"
    assert hidden_state() == untouched, "the test left an object hidden"


@pytest.mark.parametrize("assignment_id, before, solution_id, test_id, cheat", ALIAS_CHEATS, ids=ALIAS_IDS)
def test_the_alias_cheats_earn_points_when_nothing_is_hidden(namespace, assignment_id, before, solution_id, test_id,
                                                             cheat):
    """The cheats above are real: what makes them earn nothing is the hiding alone."""
    cells = notebook_cells(assignment_id)
    namespace = dict(namespace, grading=types.SimpleNamespace(Checks=grading.Checks, Hidden=grading.Hidden,
                                                              hidden=lambda *names: contextlib.nullcontext()))
    for earlier in before:
        exec(cells[earlier], namespace)
    exec(cheat, namespace)
    score = run_test_cell(cells[test_id], namespace)
    assert score is None or score > 0, f"with nothing hidden the cheat scored {score}"
