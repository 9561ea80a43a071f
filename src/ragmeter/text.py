"""Sentence splitting shared by the metrics."""

from __future__ import annotations

from functools import lru_cache


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
