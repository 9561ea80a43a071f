"""Documents cut into passages of at most 100 words, the unit the paper retrieves (after DPR).

We pack whole sentences into a passage while they fit, and cut only a sentence that alone is
longer than the limit. A passage that ends mid-sentence reads worse to the generator and to whoever
inspects it, and it costs nothing here to respect the sentence boundaries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ragmeter.arena.data import Document
from ragmeter.text import split_sentences

MAX_WORDS = 100


@dataclass(frozen=True)
class Passage:
    id: str
    """``<document id>#<number>``, numbered from 1 within the document."""
    doc_id: str
    text: str


def split_passages(document: Document, max_words: int = MAX_WORDS) -> list[Passage]:
    """Cut one document into passages of at most ``max_words`` whitespace-separated words."""
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    chunks: list[list[str]] = []
    current: list[str] = []
    for sentence in split_sentences(document.text):
        words = sentence.split()
        if len(current) + len(words) > max_words and current:
            chunks.append(current)
            current = []
        while len(words) > max_words:  # a sentence longer than a passage: cut it
            chunks.append(words[:max_words])
            words = words[max_words:]
        current = current + words
    if current:
        chunks.append(current)
    return [
        Passage(id=f"{document.id}#{number}", doc_id=document.id, text=" ".join(words))
        for number, words in enumerate(chunks, 1)
    ]


def build_passages(documents: Iterable[Document], max_words: int = MAX_WORDS) -> list[Passage]:
    """Every document's passages, in document order."""
    return [p for document in documents for p in split_passages(document, max_words)]
