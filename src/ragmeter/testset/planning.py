"""The plan of a test-set run: which chunks, kinds, styles and personas, in which order.

The documents are read, chunked and rid of near-copies (``Corpus.read``). Candidates are
planned in a fixed order from the seed: kinds interleaved by their shares (a smooth weighted
round robin), each kind walking the shuffled source chunks from its own starting point, a
paired kind taking the source chunk's nearest chunk by embedding (one sharing a named entity
with it first, when spaCy is installed) as the second; style and persona drawn per candidate.

A kind written about a fact sentence (``FACT_KINDS``) goes round the chunks again, asking about
each chunk's next fact, for as long as some chunk has one left: a short document can give
several such questions. Another kind's prompt has nothing that changes from one round to the
next (the judge would write the same question again), so it walks the chunks once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ragmeter.judges import Embedder
from ragmeter.testset.chunking import NEAR_IDENTICAL, Chunk, chunk_corpus, deduplicate, unit_rows
from ragmeter.testset.documents import Corpus as Read
from ragmeter.testset.documents import read_documents
from ragmeter.testset.entities import EntityFinder
from ragmeter.testset.queries import FACT_KINDS, KINDS, PAIRED, fact_sentence


@dataclass(frozen=True)
class Plan:
    index: int
    kind: str
    style: str
    persona: str | None
    chunks: tuple[Chunk, ...]
    pairing: dict[str, Any] = field(default_factory=dict, compare=False)
    fact: int = 0
    """Which of each chunk's fact sentences it asks about (``fact_sentence``'s ``turn``)."""


def schedule(mix: Mapping[str, float]) -> Iterator[str]:
    """Kinds in proportion to their shares, evenly interleaved (smooth weighted round robin)."""
    credit = dict.fromkeys(mix, 0.0)
    while True:
        for kind, share in mix.items():
            credit[kind] += share
        best = max(mix, key=lambda k: credit[k])
        credit[best] -= 1.0
        yield best


@dataclass(frozen=True)
class ChunkIndex:
    """The chunks' texts and unit vectors, searched by a question's embedding: what the
    unanswerable check looks up. Kept apart from ``Corpus`` (which holds the driver's
    embedder) so that it can be sent to Ray workers, each embedding with its own."""

    texts: tuple[str, ...]
    vectors: np.ndarray

    def nearest(self, embedder: Embedder, question: str, k: int) -> list[str]:
        """The ``k`` chunks closest to ``question``, closest first (ties in chunk order)."""
        vector = unit_rows(embedder.embed([question]))[0]
        order = np.argsort(-(self.vectors @ vector), kind="stable")[:k]
        return [self.texts[int(i)] for i in order]


class Corpus:
    """The chunks, their unit vectors, and the look-ups the planner and checks need."""

    @classmethod
    def read(
        cls,
        documents: Any,
        embedder: Embedder,
        max_chars: int,
        min_chars: int,
        min_words: int,
        entities: bool,
    ) -> Corpus:
        """The documents read, chunked and rid of near-copies.

        Raises:
            ValueError: no chunk is long enough to write a question from.
        """
        read = read_documents(documents)
        chunks, dropped = deduplicate(
            chunk_corpus(read.documents, max_chars, min_chars), embedder, NEAR_IDENTICAL
        )
        corpus = cls(chunks, embedder, min_words, entities)
        corpus.read_from, corpus.dropped = read, dropped
        if not corpus.sources:
            raise ValueError(
                f"no chunk of at least {min_words} words in the documents ({len(chunks)} "
                f"chunks from {len(read.documents)} documents, {len(read.skipped)} skipped)"
            )
        return corpus

    def __init__(
        self, chunks: list[Chunk], embedder: Embedder, min_words: int, entities: bool
    ) -> None:
        self.chunks = chunks
        self.vectors = unit_rows(embedder.embed([c.text for c in chunks]))
        self.embedder = embedder
        self.sources = [i for i, c in enumerate(chunks) if c.words >= min_words]
        self.entities = EntityFinder(enabled=entities)
        self.read_from = Read([], [])
        self.dropped: list[tuple[Chunk, Chunk]] = []

    @cached_property
    def index(self) -> ChunkIndex:
        return ChunkIndex(tuple(c.text for c in self.chunks), self.vectors)

    def nearest(self, question: str, k: int) -> list[str]:
        return self.index.nearest(self.embedder, question, k)

    def partner(self, source: int, duplicate: float) -> tuple[int, dict[str, Any]] | None:
        """The chunk a paired question joins to ``source``: among its ten nearest source
        chunks that are not near-copies, the nearest that shares a named entity with it, else
        the nearest."""
        candidates = np.array([i for i in self.sources if i != source])
        if not candidates.size:
            return None
        similar = self.vectors[candidates] @ self.vectors[source]
        allowed = similar < duplicate
        if not allowed.any():
            return None
        order = [int(candidates[i]) for i in np.argsort(-similar, kind="stable") if allowed[i]]
        cosine = dict(zip(candidates.tolist(), similar.tolist(), strict=True))
        mine = self.entities.of(self.chunks[source].text)
        for other in order[:10]:
            shared = sorted(mine & self.entities.of(self.chunks[other].text))
            if shared:
                return other, {"cosine": round(cosine[other], 4), "shared_entities": shared[:5]}
        return order[0], {"cosine": round(cosine[order[0]], 4), "shared_entities": []}


def plans(
    corpus: Corpus,
    mix: Mapping[str, float],
    styles: Mapping[str, float],
    personas: Sequence[str],
    seed: int,
    duplicate: float,
) -> Iterator[tuple[str, Callable[[], Plan | None]]]:
    """For each step of the schedule, its kind and a function that plans its next candidate
    (None when the kind has no source left: every chunk used, or for a fact kind every chunk's
    every fact); called only for kinds still needed."""
    order = random.Random(seed).sample(corpus.sources, len(corpus.sources))
    walked = dict.fromkeys(mix, 0)
    turn = dict.fromkeys(mix, 0)
    planned_this_round = dict.fromkeys(mix, False)
    start = {kind: KINDS.index(kind) * len(order) // len(KINDS) for kind in mix}
    count = 0

    def plan(kind: str) -> Plan | None:
        nonlocal count
        while True:
            if walked[kind] >= len(order):  # a round is over: another, for the next facts
                if kind not in FACT_KINDS or not planned_this_round[kind]:
                    return None
                walked[kind], turn[kind], planned_this_round[kind] = 0, turn[kind] + 1, False
            source = order[(start[kind] + walked[kind]) % len(order)]
            walked[kind] += 1
            chunks, pairing = (corpus.chunks[source],), {}
            if kind in PAIRED:
                found = corpus.partner(source, duplicate)
                if found is None:
                    continue
                chunks, pairing = (corpus.chunks[source], corpus.chunks[found[0]]), found[1]
            if kind in FACT_KINDS and any(
                fact_sentence(c.text, turn[kind]) is None for c in chunks
            ):
                continue
            planned_this_round[kind] = True
            draw = random.Random(f"{seed}:{count}")
            style = draw.choices(list(styles), weights=list(styles.values()))[0]
            persona = draw.choice(list(personas)) if personas else None
            count += 1
            return Plan(count, kind, style, persona, chunks, pairing, turn[kind])

    for kind in schedule(mix):
        yield kind, lambda kind=kind: plan(kind)  # type: ignore[misc]
