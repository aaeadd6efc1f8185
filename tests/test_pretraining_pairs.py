"""03's pretraining batches hold both sentences of every pair.

The notebook's cell `pretrain-data-make` packs each (A, B, label) pair with keras-hub's
BertMaskedLMPreprocessor and asserts that every packed pair has pieces of segment 1. A positional
tuple, `preprocessor((a, b))`, is read by keras-hub's preprocessing layers as `(x, y)`
(keras_hub/src/layers/preprocessing/preprocessing_layer.py), so B became labels and every
sequence was `[CLS] A [SEP]`: this runs the cell's own code, as the student's release notebook and the
reference solution hold it, on a small vocabulary, and checks that its check fails that way.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.tensorflow

SENTENCES_A = ["the food was good", "we loved the room , it was quiet", "the staff was not rude"]
SENTENCES_B = ["we will come back", "the bed was clean and the view was great", "i would recommend it"]


def cell_source(folder: str, cell_id: str) -> str:
    nb = nbformat.read(ROOT / folder / "03_bert_finetuning" / "03_bert_finetuning.ipynb", as_version=4)
    found = [cell.source for cell in nb.cells if cell.get("id") == cell_id]
    assert len(found) == 1, f"{folder}: no single cell {cell_id!r}"
    return found[0]


def namespace():
    import keras
    import keras_hub
    import tensorflow as tf

    words = sorted({word for sentence in SENTENCES_A + SENTENCES_B for word in sentence.split()})
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    return {"keras": keras, "keras_hub": keras_hub, "tf": tf, "np": np, "SEQUENCE_LENGTH": 24,
            "MAX_PREDICTIONS": 3, "tokenizer": keras_hub.models.BertTokenizer(vocabulary=vocabulary),
            "pretraining_pairs": [(a, b, 1) for a, b in zip(SENTENCES_A, SENTENCES_B)],
            "held_out_pairs": [(SENTENCES_A[0], SENTENCES_B[1], 0)]}


@pytest.mark.parametrize("folder", ["source", "release"])
def test_every_packed_pair_holds_both_sentences(folder):
    scope = namespace()
    exec(cell_source(folder, "pretrain-data-make"), scope)
    inputs = scope["pretraining_data"][0]
    segment_ids = np.asarray(inputs["segment_ids"])
    padding_mask = np.asarray(inputs["padding_mask"])
    tokenizer = scope["tokenizer"]
    for row, (first, second, _) in enumerate(scope["pretraining_pairs"]):
        real = padding_mask[row]
        expected = 1 + len(first.split()) + 1  # [CLS] A [SEP]: segment 0; then B [SEP]: segment 1
        assert list(segment_ids[row][real]) == [0] * expected + [1] * (len(second.split()) + 1), (
            f"pair {row}: segment ids {segment_ids[row][real]} do not read [CLS] A [SEP] B [SEP]")
    token_ids = np.asarray(scope["mlm_preprocessor"].packer(
        (tokenizer(tf_constant(SENTENCES_A)), tokenizer(tf_constant(SENTENCES_B))))[0])
    assert all(list(row).count(tokenizer.sep_token_id) == 2 for row in token_ids), "[CLS] A [SEP] B [SEP]: two [SEP]"


def tf_constant(values):
    import tensorflow as tf

    return tf.constant(values)


def test_the_cells_check_fails_when_b_is_read_as_labels():
    source = cell_source("source", "pretrain-data-make")
    assert "mlm_preprocessor(\n        x=(" in source, "the cell no longer passes the pairs as x=(a, b): update this test"
    positional = source.replace("mlm_preprocessor(\n        x=(", "mlm_preprocessor(\n        (")
    with pytest.raises(AssertionError, match=r"only 0 of 3 packed pairs hold a piece of sentence B"):
        exec(positional, namespace())
