"""course.data.text_corpus: the pydoc_data corpus as sentences, and the word-order task."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from course.data import text_corpus


def sentiment(clause: str) -> int:
    """1 for a positive clause, 0 for a negative one, recomputed from the word lists."""
    words = clause.split()
    adjective = words[-1]
    assert adjective in text_corpus.POSITIVE + text_corpus.NEGATIVE, clause
    positive = adjective in text_corpus.POSITIVE
    return int(positive != ("not" in words))


def test_documents_are_prose_sentences_in_reading_order():
    documents = text_corpus.documents()
    assert len(documents) > 50
    sentences = [sentence for document in documents for sentence in document]
    assert len(sentences) > 1500
    for sentence in sentences:
        assert 5 <= len(sentence.split()) <= 40, sentence
        assert sentence[0].isupper() and sentence[-1] in ".?!", sentence
        assert ">>>" not in sentence and "::=" not in sentence, sentence
    assert "Assignment is defined recursively depending on the form of the target (list)." in sentences


def test_every_sentence_occurs_once_and_sentences_flattens_documents():
    sentences = text_corpus.sentences()
    assert len(sentences) == len(set(sentences))
    assert sentences == [sentence for document in text_corpus.documents() for sentence in document]


def test_documents_are_deterministic_and_fresh_lists():
    first = text_corpus.documents()
    first[0].append("changed")
    assert text_corpus.documents()[0] == first[0][:-1]


def test_word_limits_are_respected():
    short = text_corpus.sentences(min_words=3, max_words=8)
    assert short and all(3 <= len(sentence.split()) <= 8 for sentence in short)


def test_split_sentences_keeps_abbreviations_together():
    text = "Use a list, e.g. The one above. Then stop! Why? Because."
    assert text_corpus.split_sentences(text) == ["Use a list, e.g. The one above.", "Then stop!", "Why?", "Because."]


def test_word_order_task_labels_follow_the_clause_after_but():
    texts, labels = text_corpus.word_order_task(500, seed=3)
    assert len(texts) == 500 and labels.shape == (500,) and labels.dtype == np.int32
    for text, label in zip(texts, labels):
        first, second = text.split(" but ")
        assert first.startswith("the ") and second.startswith("the "), text
        assert sentiment(first) != sentiment(second), text
        assert first.split()[1] != second.split()[1], text
        assert label == sentiment(second), text
    assert 0.4 < labels.mean() < 0.6


def test_word_order_task_is_seeded():
    assert text_corpus.word_order_task(50, seed=1)[0] == text_corpus.word_order_task(50, seed=1)[0]
    assert text_corpus.word_order_task(50, seed=1)[0] != text_corpus.word_order_task(50, seed=2)[0]


def test_swapping_the_clauses_keeps_the_words_and_flips_the_label():
    texts, labels = text_corpus.word_order_task(200, seed=5)
    for text, label in zip(texts, labels):
        first, second = text.split(" but ")
        swapped = f"{second} but {first}"
        assert collections.Counter(swapped.split()) == collections.Counter(text.split())
        assert sentiment(first) == 1 - label


def test_a_bag_of_words_is_at_chance():
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    train, train_labels = text_corpus.word_order_task(3000, seed=0)
    test, test_labels = text_corpus.word_order_task(2000, seed=1)
    vectorizer = CountVectorizer()
    model = LogisticRegression(max_iter=2000).fit(vectorizer.fit_transform(train), train_labels)
    assert abs(model.score(vectorizer.transform(test), test_labels) - 0.5) < 0.05


def test_negation_rate():
    assert not any("not" in text.split() for text in text_corpus.word_order_task(100, seed=0, negation_rate=0.0)[0])
    assert all(text.split().count("not") == 2 for text in text_corpus.word_order_task(100, seed=0, negation_rate=1.0)[0])


def test_word_order_task_sizes():
    texts, labels = text_corpus.word_order_task(0, seed=0)
    assert texts == [] and labels.shape == (0,)
    with pytest.raises(ValueError):
        text_corpus.word_order_task(-1, seed=0)


def test_reviews_keep_one_sentiment_and_end_with_its_verdict():
    documents, labels = text_corpus.reviews(200, seed=3)
    again, _ = text_corpus.reviews(200, seed=3)
    assert again == documents, "the same seed gives the same reviews"
    assert set(labels.tolist()) == {0, 1}
    for document, label in zip(documents, labels):
        assert 3 <= len(document) <= 6
        assert document[-1] in text_corpus.VERDICTS[label], document
        for sentence in document[:-1]:
            if sentence.startswith("we "):
                assert sentence.split()[1] == ("loved" if label else "hated"), sentence
                assert sentiment(sentence.split(" , ")[1]) == label, sentence
                continue
            if " but " in sentence:
                first, second = sentence.split(" but ")
                assert sentiment(first) == 1 - label and sentiment(second) == label, sentence
            else:
                assert all(sentiment(clause) == label for clause in sentence.split(" and ")), sentence


def test_reviews_reject_bad_sizes():
    with pytest.raises(ValueError, match="count"):
        text_corpus.reviews(-1, seed=0)
    with pytest.raises(ValueError, match="sentences"):
        text_corpus.reviews(2, seed=0, sentences=(1, 3))
