"""How text is cut into sentences and words, the same way everywhere: the metrics, the claims,
the test sets' chunks and their copy checks."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

WORD = re.compile(r"\w+")
"""A word: a run of word characters (letters, digits, underscores, in any script)."""


def word_set(words: str) -> frozenset[str]:
    """The words of ``words``, split at whitespace."""
    return frozenset(words.split())


AUXILIARIES = word_set(
    "is are was were do does did can could will would should has have had may might must"
)
"""The verbs that open an English yes-or-no question."""

QUESTION_WORDS = word_set("what which who whom whose when where why how")

FUNCTION_WORDS = QUESTION_WORDS | word_set(
    """is are was were be been being do does did
    can could should would will shall may might must has have had the a an of for to in on at
    by with and or not from about as into onto than then that this these those there it its
    they them their you your i my we our he she his her me us if so such any some all each
    more most much many also only just very"""
)
"""Words that carry no subject of their own: question words, auxiliaries, articles, pronouns,
prepositions, conjunctions, quantifiers."""

GENERIC_WORDS = word_set(
    """purpose main difference differences type types kind kinds example examples way ways
    number name names role roles reason reasons benefit benefits advantage advantages need
    needed required allowed possible important different common available use used using
    thing things something information details detail happen happens true false else
    known"""
)
"""Words that name no particular thing: "purpose", "type", "information"."""

_FIRST_WORD = re.compile(r"^\W*(\w+)")


def asks_yes_or_no(question: str) -> bool:
    """Whether an English question asks yes or no: it opens with an auxiliary ("Is it...?",
    "Can I...?"), so that "Yes." or "No." answers it."""
    first = _FIRST_WORD.match(question)
    return bool(first) and first.group(1).lower() in AUXILIARIES


def answered_by_yes_or_no(question: str) -> bool:
    """Whether "Yes." can answer ``question``: it opens with an auxiliary ("Is it...?"), or it is
    a question with no question word ("freelancer: should I open a second account?")."""
    words = WORD.findall(question.lower())
    return asks_yes_or_no(question) or (
        question.rstrip().endswith("?") and not QUESTION_WORDS.intersection(words)
    )


def asks_for_something(question: str) -> bool:
    """Whether ``question`` asks for something its own words do not hold: it has a question
    word ("Who discovered penicillin?") and neither asks yes or no nor offers a choice ("Is it
    X?", "X or Y?", which an answer settles in the question's own words)."""
    words = WORD.findall(question.lower())
    return (
        bool(QUESTION_WORDS.intersection(words))
        and not asks_yes_or_no(question)
        and "or" not in words
    )


_local = threading.local()


def _segmenter() -> Any:
    """One pysbd segmenter per thread: a segmenter keeps state while it works, so sharing one
    between workers miscounts sentences."""
    if not hasattr(_local, "segmenter"):
        import pysbd

        _local.segmenter = pysbd.Segmenter(language="en", clean=False)
    return _local.segmenter


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped, blanks dropped; newlines also end a sentence, so list
    items and headings count as one sentence each."""
    return list(_split(text))


def passage_sentences(passages: Sequence[str]) -> list[str]:
    """The sentences of every passage in order, each passage split on its own (no sentence
    runs from one passage into the next)."""
    return [sentence for passage in passages for sentence in split_sentences(passage)]


@lru_cache(maxsize=4096)
def _split(text: str) -> tuple[str, ...]:
    """Remembered: the same passage is split by the metric that judges it and again by the
    explanation of its score (pysbd takes milliseconds a passage)."""
    sentences: list[str] = []
    for block in text.split("\n"):
        if block.strip():
            sentences.extend(s.strip() for s in _segmenter().segment(block) if s.strip())
    return tuple(sentences)
