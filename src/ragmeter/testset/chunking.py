"""Chunks of documents, cut where the text allows: at headings, then paragraphs, lines and
sentences, under a size limit, each with its document and character offsets.

A chunk's text is exactly ``document.text[start:end]``, so a test set's citation can be found
in the source. Near-identical chunks (the same boilerplate in many pages, a page saved twice)
are kept once: exact copies by a hash of the normalised text, close ones by embedding cosine.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.judges.base import Embedder
from ragmeter.language import LANGUAGE, detect_language, language_code
from ragmeter.testset.documents import Document
from ragmeter.text import WORD, split_sentences

MAX_CHARS = 1200
"""About 300 tokens: room for a few facts, and two chunks fit a small judge's prompt."""
MIN_CHARS = 200
"""A section shorter than this is joined to the next one instead of standing alone."""
NEAR_IDENTICAL = 0.95
"""Embedding cosine at or above which two chunks count as the same text."""

_HEADING = re.compile(r"^#{1,6}\s+\S.*$", re.MULTILINE)
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Chunk:
    document: str
    start: int
    end: int
    text: str
    heading: str | None = None
    """The last heading above the chunk, when the document has headings."""
    title: str | None = None
    """What the document calls itself (``document_title``): a question written from the
    chunk names its subject from it."""

    @property
    def id(self) -> str:
        return f"{self.document}:{self.start}-{self.end}"

    @property
    def words(self) -> int:
        return len(WORD.findall(self.text))

    def citation(self) -> dict[str, object]:
        """Where the chunk is: what a test set records beside its text."""
        return {"document": self.document, "start": self.start, "end": self.end}


Span = tuple[int, int]


def _pieces(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[Span]:
    """``[start, end)`` cut after each match of ``pattern`` (the separator stays with the
    piece before it)."""
    spans, at = [], start
    for match in pattern.finditer(text, start, end):
        if match.end() > at:
            spans.append((at, match.end()))
            at = match.end()
    if at < end:
        spans.append((at, end))
    return spans


def _sentences(text: str, start: int, end: int, language: str) -> list[Span]:
    """Sentence spans of one line (split by ``language``'s rules), found back in the text so
    offsets stay exact."""
    spans, at = [], start
    for sentence in split_sentences(text[start:end], language):
        found = text.find(sentence, at, end)
        if found < 0:  # the segmenter changed the text: keep the line whole
            return [(start, end)]
        spans.append((at, found + len(sentence)))
        at = found + len(sentence)
    if spans and at < end:
        spans[-1] = (spans[-1][0], end)
    return spans or [(start, end)]


def _hard_cut(text: str, start: int, end: int, limit: int) -> list[Span]:
    """Pieces of at most ``limit`` characters, cut at the last space where there is one."""
    spans = []
    while end - start > limit:
        cut = text.rfind(" ", start + limit // 2, start + limit)
        cut = cut + 1 if cut > start else start + limit
        spans.append((start, cut))
        start = cut
    spans.append((start, end))
    return spans


def _units(text: str, start: int, end: int, limit: int, language: str) -> Iterator[Span]:
    """Spans of at most ``limit`` characters, cut at the largest boundary that allows it:
    paragraphs, then lines, then sentences (of ``language``), then spaces."""
    for para in _pieces(text, start, end, _PARAGRAPH):
        if para[1] - para[0] <= limit:
            yield para
            continue
        for line in _pieces(text, *para, re.compile(r"\n")):
            if line[1] - line[0] <= limit:
                yield line
                continue
            for sentence in _sentences(text, *line, language):
                if sentence[1] - sentence[0] <= limit:
                    yield sentence
                else:
                    yield from _hard_cut(text, *sentence, limit)


def _sections(text: str) -> list[tuple[int, int, str | None]]:
    """The document cut before each Markdown heading, with the heading that opens each part."""
    starts = [m.start() for m in _HEADING.finditer(text)]
    bounds = [0, *[s for s in starts if s > 0], len(text)]
    sections = []
    for start, end in itertools.pairwise(bounds):
        heading = _HEADING.match(text, start)
        sections.append((start, end, heading.group(0).lstrip("#").strip() if heading else None))
    return sections


def _trimmed(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


TITLE_WORDS = 20


def document_title(document: Document) -> str | None:
    """The document's title: a ``title`` in its metadata, else its first line when that line
    reads as a title (a Markdown heading, or a line of at most ``TITLE_WORDS`` words that does
    not end a sentence), else None. A file name is not used: it is often an id."""
    given = document.metadata.get("title")
    if isinstance(given, str) and given.strip():
        return " ".join(given.split())
    first = next((line.strip() for line in document.text.splitlines() if line.strip()), "")
    heading = _HEADING.match(first)
    if heading:
        return first.lstrip("#").strip()
    words = first.split()
    if 0 < len(words) <= TITLE_WORDS and not first.endswith((".", ":", ",", ";")):
        return " ".join(words)
    return None


def document_language(document: Document) -> str:
    """The language ``document`` is split into sentences by: a ``language`` in its metadata,
    else detected from its opening (``ragmeter.language``)."""
    given = document.metadata.get(LANGUAGE)
    return language_code(given) if given else detect_language([document.text])


def chunk_document(
    document: Document, max_chars: int = MAX_CHARS, min_chars: int = MIN_CHARS
) -> list[Chunk]:
    """The chunks of ``document``: whole sections where they fit (a short section joins the
    next), else paragraphs, lines and sentences (by the rules of the document's language,
    ``document_language``) packed up to ``max_chars``; blank ones are dropped."""
    if max_chars < 50:
        raise ValueError("max_chars must be at least 50")
    text = document.text
    language = document_language(document)
    title = document_title(document)
    chunks: list[Chunk] = []
    current: Span | None = None
    heading: str | None = None
    current_heading: str | None = None

    def flush() -> None:
        nonlocal current
        if current is not None:
            start, end = _trimmed(text, *current)
            if WORD.search(text[start:end]):
                chunks.append(
                    Chunk(document.name, start, end, text[start:end], current_heading, title)
                )
        current = None

    for start, end, section in _sections(text):
        if current is not None and current[1] - current[0] >= min_chars:
            flush()
        heading = section or heading
        for unit in _units(text, start, end, max_chars, language):
            if current is not None and unit[1] - current[0] > max_chars:
                flush()
            if current is None:
                current, current_heading = unit, heading
            else:
                current = (current[0], unit[1])
    flush()
    return chunks


def normalised_hash(text: str) -> str:
    """The same for texts that differ only in case, spacing and punctuation."""
    words = " ".join(WORD.findall(text.casefold()))
    return hashlib.sha256(words.encode()).hexdigest()


def deduplicate(
    chunks: Sequence[Chunk],
    embedder: Embedder | None = None,
    threshold: float = NEAR_IDENTICAL,
) -> tuple[list[Chunk], list[tuple[Chunk, Chunk]]]:
    """The chunks with near-identical ones dropped, and each dropped chunk with the earlier
    chunk it repeats (the first of a run of near-copies is kept). Without an embedder only
    exact copies (after normalisation) are found."""
    kept: list[Chunk] = []
    dropped: list[tuple[Chunk, Chunk]] = []
    seen: dict[str, Chunk] = {}
    for chunk in chunks:
        digest = normalised_hash(chunk.text)
        if digest in seen:
            dropped.append((chunk, seen[digest]))
        else:
            seen[digest] = chunk
            kept.append(chunk)
    if embedder is None or len(kept) < 2:
        return kept, dropped
    vectors = unit_rows(embedder.embed([c.text for c in kept]))
    keep = np.ones(len(kept), dtype=bool)
    block = 512  # rows compared at once: memory stays small for a large corpus
    for first in range(1, len(kept), block):
        rows = np.arange(first, min(first + block, len(kept)))
        similar = vectors[rows] @ vectors[: rows[-1]].T
        similar[rows[:, None] <= np.arange(rows[-1])[None, :]] = -1.0  # earlier chunks only
        for row, i in enumerate(rows):
            earlier = int(similar[row].argmax())
            if similar[row, earlier] >= threshold:
                keep[i] = False
                dropped.append((kept[i], kept[earlier]))
    return [c for c, k in zip(kept, keep, strict=True) if k], dropped


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), so a dot product is a cosine."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def chunk_corpus(
    documents: Sequence[Document], max_chars: int = MAX_CHARS, min_chars: int = MIN_CHARS
) -> list[Chunk]:
    return [c for d in documents for c in chunk_document(d, max_chars, min_chars)]
