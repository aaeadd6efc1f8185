"""A small English corpus that ships with Python, split into sentences, and a word-order task.

CPython installs the text of its language reference in `pydoc_data.topics` (what `help("assert")`
prints): about 465,000 characters of English prose with code examples, grammar rules and tables
in between. `documents()` keeps the prose, one document per help topic, as a list of sentences in
reading order: a sentence's successor in its document is the next sentence of that topic that was
kept (code, tables and sentences outside the word limits in between are dropped), which is what
next-sentence prediction pairs. Every sentence occurs once in the whole corpus.

`word_order_task(count, seed)` generates a sentence-classification task that a bag of words
cannot solve: every sentence joins two opposite clauses with "but", and the label is the
sentiment of the clause after "but" ("the food was good but the service was slow" is negative;
the same words in the other order are positive). Clauses may be negated ("was not good").

`reviews(count, seed)` generates documents written in the task's own small language: short reviews,
each positive or negative throughout, whose sentences are clauses like the task's joined by "and"
(same sentiment) or "but" (the second clause carries the review's sentiment), "we loved the room ,
it was quiet", and a closing verdict ("we will not come back"). Unlabelled text where the context
predicts many words: what masked-language-model pretraining needs to learn something in minutes.

Nothing here downloads anything, and nothing here solves an exercise.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

# A paragraph is prose when most of its characters are letters and spaces; code, grammar rules
# and tables are not.
_PROSE_LETTER_RATIO = 0.86
_NOT_PROSE = (">>>", "::=", "+--", "|", "...", "-->")
_BULLET = re.compile(r"^(\*|-|\d+\.|\(\d+\)|[a-z]\.)\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")
_ABBREVIATION = re.compile(r"\b(e\.g|i\.e|etc|cf|vs|Mr|Dr|No)\.$")
_MARKUP = re.compile(r"[*`]")
_HEADING_RULE = re.compile(r"^[*=\-~^]{3,}\s*$")


def topics() -> dict[str, str]:
    """The raw help texts of `pydoc_data.topics`, by topic name (sorted)."""
    from pydoc_data import topics as pydoc_topics

    return dict(sorted(pydoc_topics.topics.items()))


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks of `text`, headings (a line over a rule) dropped."""
    blocks, current = [], []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if _HEADING_RULE.match(line) or _HEADING_RULE.match(following):
            continue
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return ["\n".join(block) for block in blocks]


def _is_prose(paragraph: str) -> bool:
    if any(marker in paragraph for marker in _NOT_PROSE):
        return False
    letters = sum(character.isalpha() or character.isspace() for character in paragraph)
    return letters >= _PROSE_LETTER_RATIO * len(paragraph)


def _join(paragraph: str) -> str:
    """One line of text: bullet marks and emphasis marks removed, whitespace collapsed."""
    words = " ".join(_BULLET.sub("", line.strip()) for line in paragraph.splitlines())
    return " ".join(_MARKUP.sub("", words).split())


def split_sentences(text: str) -> list[str]:
    """Split running text at '.', '!' or '?' followed by a capital, not after e.g. / i.e. / etc."""
    pieces, current = [], ""
    for piece in _SENTENCE_END.split(text):
        current = f"{current} {piece}".strip() if current else piece
        if not _ABBREVIATION.search(current):
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _is_sentence(sentence: str, min_words: int, max_words: int) -> bool:
    words = sentence.split()
    return (min_words <= len(words) <= max_words and sentence[0].isupper()
            and sentence.endswith((".", "?", "!")) and not sentence.endswith(":"))


@lru_cache(maxsize=8)
def _documents(min_words: int, max_words: int) -> tuple[tuple[str, ...], ...]:
    seen: set[str] = set()
    documents = []
    for text in topics().values():
        sentences = []
        for paragraph in _paragraphs(text):
            if not _is_prose(paragraph):
                continue
            for sentence in split_sentences(_join(paragraph)):
                if _is_sentence(sentence, min_words, max_words) and sentence not in seen:
                    seen.add(sentence)
                    sentences.append(sentence)
        if sentences:
            documents.append(tuple(sentences))
    return tuple(documents)


def documents(min_words: int = 5, max_words: int = 40) -> list[list[str]]:
    """The corpus as documents (one per help topic), each a list of sentences in reading order.

    Only sentences of `min_words` to `max_words` words are kept, and each sentence text occurs
    once in the whole corpus (its first occurrence). Deterministic: the same lists every call.
    """
    return [list(document) for document in _documents(min_words, max_words)]


def sentences(min_words: int = 5, max_words: int = 40) -> list[str]:
    """Every sentence of `documents()`, document after document."""
    return [sentence for document in _documents(min_words, max_words) for sentence in document]


# The word-order task -------------------------------------------------------------------------

POSITIVE = ("good", "great", "fast", "friendly", "clean", "cheap", "quiet", "fresh")
NEGATIVE = ("bad", "awful", "slow", "rude", "dirty", "expensive", "noisy", "stale")
NOUNS = ("food", "service", "room", "staff", "price", "view", "music", "coffee", "bed", "menu")
LABELS = ("negative", "positive")


def _clause(noun: str, adjective: str, negated: bool) -> str:
    return f"the {noun} was {'not ' if negated else ''}{adjective}"


def word_order_task(count: int, seed: int, negation_rate: float = 0.25) -> tuple[list[str], np.ndarray]:
    """`count` sentences "<clause> but <clause>" and their labels (1 positive, 0 negative).

    Each clause is "the NOUN was [not] ADJECTIVE"; its sentiment is the adjective's, flipped by
    "not" (negated with probability `negation_rate`). The two clauses always have opposite
    sentiments and different nouns, and the label is the sentiment of the clause after "but".
    Swapping the clauses keeps every word and flips the label, and both orders are equally
    likely, so a model that ignores word order is at chance. Deterministic given `seed`.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    rng = np.random.default_rng(seed)
    texts, labels = [], np.zeros(count, dtype=np.int32)
    for index in range(count):
        first_noun, second_noun = rng.choice(len(NOUNS), size=2, replace=False)
        first_sentiment = int(rng.integers(2))
        clauses = []
        for noun, sentiment in ((first_noun, first_sentiment), (second_noun, 1 - first_sentiment)):
            negated = bool(rng.random() < negation_rate)
            words = POSITIVE if sentiment != negated else NEGATIVE
            clauses.append(_clause(NOUNS[noun], words[rng.integers(len(words))], negated))
        texts.append(f"{clauses[0]} but {clauses[1]}")
        labels[index] = 1 - first_sentiment
    return texts, labels


# Generated reviews: unlabelled text in the task's language ---------------------------------------

VERDICTS = (("we will not come back", "i would not recommend it", "we hated it"),
            ("we will come back", "i would recommend it", "we loved it"))


def _review_clause(rng: np.random.Generator, noun: str, sentiment: int, negation_rate: float) -> str:
    negated = bool(rng.random() < negation_rate)
    words = POSITIVE if sentiment != negated else NEGATIVE
    return _clause(noun, words[rng.integers(len(words))], negated)


def reviews(count: int, seed: int, *, sentences: tuple[int, int] = (3, 6),
            negation_rate: float = 0.25) -> tuple[list[list[str]], np.ndarray]:
    """`count` generated reviews (documents, each a list of sentences) and their sentiments (1 positive).

    A review has one sentiment throughout. Each of its sentences but the last is, with equal odds,
    one clause "the NOUN was [not] ADJECTIVE" of that sentiment, two such clauses joined by "and", a
    clause of the opposite sentiment "but" one of the review's, or "we loved (hated) the NOUN , it was
    [not] ADJECTIVE"; the last sentence is a verdict ("we will come back", "i would not recommend
    it", ...). Clauses use the word-order task's nouns and adjectives and its negation rule. The
    number of sentences is drawn from `sentences` (inclusive). Deterministic given `seed`.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    low, high = sentences
    if not 2 <= low <= high:
        raise ValueError(f"sentences must be (low, high) with 2 <= low <= high, got {sentences}")
    rng = np.random.default_rng(seed)
    documents, sentiments = [], np.zeros(count, dtype=np.int32)
    for index in range(count):
        sentiment = int(rng.integers(2))
        document = []
        for _ in range(int(rng.integers(low, high + 1)) - 1):
            kind = int(rng.integers(4))
            first, second = (NOUNS[noun] for noun in rng.choice(len(NOUNS), size=2, replace=False))
            if kind == 0:
                document.append(_review_clause(rng, first, sentiment, negation_rate))
            elif kind == 1:
                document.append(f"{_review_clause(rng, first, sentiment, negation_rate)} and "
                                f"{_review_clause(rng, second, sentiment, negation_rate)}")
            elif kind == 2:
                document.append(f"{_review_clause(rng, first, 1 - sentiment, negation_rate)} but "
                                f"{_review_clause(rng, second, sentiment, negation_rate)}")
            else:
                judged = _review_clause(rng, first, sentiment, negation_rate).split(" was ", 1)[1]
                document.append(f"we {'loved' if sentiment else 'hated'} the {first} , it was {judged}")
        document.append(VERDICTS[sentiment][rng.integers(len(VERDICTS[sentiment]))])
        documents.append(document)
        sentiments[index] = sentiment
    return documents, sentiments
