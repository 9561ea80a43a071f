"""How text is cut into sentences and words, the same way everywhere: the metrics, the claims,
the test sets' chunks and their copy checks."""

from __future__ import annotations

import re
import threading
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

_FIRST_WORD = re.compile(r"^\W*(\w+)")


def asks_yes_or_no(question: str) -> bool:
    """Whether an English question asks yes or no: it opens with an auxiliary ("Is it...?",
    "Can I...?"), so that "Yes." or "No." answers it."""
    first = _FIRST_WORD.match(question)
    return bool(first) and first.group(1).lower() in AUXILIARIES


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


@lru_cache(maxsize=4096)
def _split(text: str) -> tuple[str, ...]:
    """Remembered: the same passage is split by the metric that judges it and again by the
    explanation of its score (pysbd takes milliseconds a passage)."""
    sentences: list[str] = []
    for block in text.split("\n"):
        if block.strip():
            sentences.extend(s.strip() for s in _segmenter().segment(block) if s.strip())
    return tuple(sentences)
