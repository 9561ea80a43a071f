"""Sentence splitting and loose matching of quoted text, shared by the metrics."""

from __future__ import annotations

import difflib
import re
from functools import lru_cache

_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=1)
def _segmenter():  # type: ignore[no-untyped-def]
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped, blanks dropped; newlines also end a sentence, so list
    items and headings count as one sentence each."""
    sentences: list[str] = []
    for block in text.split("\n"):
        if block.strip():
            sentences.extend(s.strip() for s in _segmenter().segment(block) if s.strip())
    return sentences


def normalize(text: str) -> str:
    return _SPACE.sub(" ", text).strip().strip("\"'").lower()


def best_match(quote: str, candidates: list[str], threshold: float = 0.85) -> int | None:
    """Index of the candidate that ``quote`` reproduces (near-)verbatim, or None."""
    target = normalize(quote)
    best_index, best_ratio = None, threshold
    for index, candidate in enumerate(candidates):
        candidate = normalize(candidate)
        if candidate == target:
            return index
        ratio = difflib.SequenceMatcher(None, target, candidate, autojunk=False).ratio()
        if ratio >= best_ratio:
            best_index, best_ratio = index, ratio
    return best_index
