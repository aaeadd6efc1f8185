"""A test that grades a re-implementation gives nothing to a solution that calls the object it
re-implements, and still passes the reference solution (02's ConvLSTM step and output shape, 03's
pair packing and encoder block). The graded cells run here as nbgrader runs them, hidden tests included."""

from __future__ import annotations

import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course import gpu, grading

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
            "gpu": gpu, "grading": grading, "backbone": backbone, "HIDDEN_DIM": 8, "SEED": 0}


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


@pytest.mark.parametrize("assignment_id, before, solution_id, test_id, cheat", [
    ("02_convlstm", (), "convlstm_step", "test_convlstm_step", CHEAT_STEP),
    ("02_convlstm", ("convlstm_step", "test_convlstm_step"), "convlstm_output_shape", "test_convlstm_output_shape",
     CHEAT_SHAPE),
    ("03_bert_finetuning", (), "pack_pair", "test_pack_pair", CHEAT_PACK),
    ("03_bert_finetuning", ("encoder-weights",), "encoder_block", "test_encoder_block", CHEAT_ENCODER),
])
def test_calling_the_reimplemented_object_earns_nothing(namespace, assignment_id, before, solution_id, test_id, cheat):
    cells = notebook_cells(assignment_id)
    namespace = dict(namespace)
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
        failures = [failure for _, _, failure in cheating["checks"].results]
        assert all(failure and "is hidden while the test runs your function" in failure for failure in failures), failures
    assert score == 0.0, f"calling the re-implemented object scored {score}"
    assert "Hidden" not in type(namespace["layers"].ConvLSTM2D).__name__, "the test left ConvLSTM2D hidden"
