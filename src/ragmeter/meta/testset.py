"""How good a generated test set is (``ragmeter meta testset``), beside people's questions.

The figures:

- acceptance: candidates judged, accepted, and rejected by reason (from the run's summary);
- supported: the share of accepted references whose every claim the judge found supported by
  their chunks (recorded by the run's check, so 100 % by construction for accepted samples;
  the share among all candidates that reached the check says how often the judge wrote an
  unsupported reference);
- copying: the share of questions that repeat a run of 5 (``testset.quality.COPY_RUN``) or
  more consecutive words of their source text (case and punctuation ignored): a question
  written by lifting a phrase from its chunk is easy for a lexical retriever and unlike what
  users type;
- duplicates: questions with a near-copy (MiniLM cosine >= 0.92) among the others;
- the mix: the share of each kind accepted, beside the share asked for;
- retrieval: BM25 (bm25s) and MiniLM recall@5 of the source over the whole corpus, chunked as
  the run chunked it. For a generated question a hit is a retrieved chunk that overlaps its
  source chunk ("chunk") or comes from its source document ("document"); recall is the share
  of its sources found, averaged over questions. People's questions (MTRAG) are scored at the
  document level against their gold passages: first turns alone, and follow-ups with the
  conversation's earlier user turns prefixed to the question (and, for contrast, alone).
  Unanswerable questions have no source and are left out.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from ragmeter.arena.passages import Passage
from ragmeter.arena.retrieval import BM25Retriever
from ragmeter.judges.base import Embedder
from ragmeter.records import read_json_lines
from ragmeter.testset.chunking import MAX_CHARS, MIN_CHARS, Chunk, chunk_corpus, unit_rows
from ragmeter.testset.documents import Document, read_documents
from ragmeter.testset.quality import copies
from ragmeter.testset.runner import GenerationSummary, output_paths

K = 5
DUPLICATE = 0.92


@dataclass(frozen=True)
class Query:
    """A question as a retriever is asked it, with what would count as finding its source."""

    text: str
    documents: frozenset[str]
    spans: tuple[tuple[str, int, int], ...] = ()
    """(document, start, end) of each source chunk; empty for people's questions."""


class Recall(BaseModel):
    questions: int
    bm25: float | None
    minilm: float | None


class TestsetReport(BaseModel):
    samples: int
    candidates: int | None
    acceptance: float | None
    rejected: dict[str, int]
    supported_accepted: float | None
    supported_reached: float | None
    """Among candidates that reached the support check, the share that passed it."""
    copying: float | None
    copying_people: float | None
    duplicates: int
    kinds: dict[str, dict[str, float]]
    """Per kind: ``asked`` (share of the mix) and ``accepted`` (share of the samples)."""
    recall: dict[str, Recall]
    corpus_chunks: int
    people_corpus_chunks: int | None


def _overlaps(chunk: Chunk, spans: Sequence[tuple[str, int, int]]) -> bool:
    return any(chunk.document == d and chunk.start < e and s < chunk.end for d, s, e in spans)


def recall_at_k(
    queries: Sequence[Query],
    chunks: Sequence[Chunk],
    ranked: Callable[[str], Sequence[int]],
    level: str,
) -> float | None:
    """Mean share of each query's sources among the chunks ``ranked`` puts in its top ``K``:
    ``level`` "chunk" counts source chunks overlapped, "document" source documents reached."""
    if not queries:
        return None
    shares = []
    for query in queries:
        top = [chunks[i] for i in ranked(query.text)[:K]]
        if level == "chunk":
            found = sum(1 for span in query.spans if any(_overlaps(c, [span]) for c in top))
            shares.append(found / len(query.spans))
        else:
            reached = {c.document for c in top} & query.documents
            shares.append(len(reached) / len(query.documents))
    return float(np.mean(shares))


class _Rankers:
    """BM25 and MiniLM rankings of one chunked corpus."""

    def __init__(self, chunks: Sequence[Chunk], embedder: Embedder | None) -> None:
        self.chunks = list(chunks)
        self.bm25 = BM25Retriever([Passage(c.id, c.document, c.text) for c in self.chunks])
        self.position = {c.id: n for n, c in enumerate(self.chunks)}
        self.embedder = embedder
        self.vectors = unit_rows(embedder.embed([c.text for c in chunks])) if embedder else None

    def by_bm25(self, text: str) -> list[int]:
        return [self.position[hit.passage.id] for hit in self.bm25.search(text, K)]

    def by_minilm(self, text: str) -> list[int]:
        assert self.embedder is not None and self.vectors is not None
        vector = unit_rows(self.embedder.embed([text]))[0]
        return [int(i) for i in np.argsort(-(self.vectors @ vector), kind="stable")[:K]]

    def recall(self, queries: Sequence[Query], level: str) -> Recall:
        return Recall(
            questions=len(queries),
            bm25=recall_at_k(queries, self.chunks, self.by_bm25, level),
            minilm=recall_at_k(queries, self.chunks, self.by_minilm, level)
            if self.embedder
            else None,
        )


def _query_text(row: dict[str, Any]) -> str:
    earlier = [t["content"] for t in row.get("history", []) if t.get("role") == "user"]
    return " ".join([*earlier, row["question"]])


def people_questions(
    path: str | Path,
) -> tuple[list[Document], dict[str, list[Query]], dict[str, list[str]]]:
    """MTRAG's conversations (one per task) as queries, their passages as the corpus
    (``<document_id>.txt``, as a folder of them would be named), and the sources of each
    question for the copying figure.

    Raises:
        ValueError: naming the row and field of a line that is not an MTRAG row.
    """
    passages: dict[str, str] = {}
    groups: dict[str, list[Query]] = {"first turns": [], "follow-ups": [], "follow-ups alone": []}
    sources: dict[str, list[str]] = {}
    seen: set[str] = set()
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        field = "task_id"
        try:
            row = json.loads(line)
            task = str(row[field])
            if task in seen:
                continue
            seen.add(task)
            field = "conversation"
            users = [t["text"] for t in row[field] if t["speaker"] == "user"]
            field = "contexts"
            gold = {f"{c['document_id']}.txt": c["text"] for c in row[field]}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"row {number}, field {field!r}: {exc!r}") from None
        passages.update(gold)
        if not gold or not users:
            continue  # no gold passage: nothing to find
        documents = frozenset(gold)
        sources[users[-1]] = list(gold.values())
        if len(users) == 1:
            groups["first turns"].append(Query(users[-1], documents))
        else:
            groups["follow-ups"].append(Query(" ".join(users), documents))
            groups["follow-ups alone"].append(Query(users[-1], documents))
    corpus = [Document(name, text) for name, text in passages.items()]
    return corpus, groups, sources


def testset_report(
    testset: str | Path,
    corpus: Any,
    *,
    embedder: Embedder | None,
    mtrag: str | Path | None = None,
    max_chars: int | None = None,
) -> TestsetReport:
    """The quality figures of a generated test set (see the module's docstring).

    Args:
        testset: the test set written by ``generate_testset``; its summary and rejected
            files are read from beside it when present.
        corpus: the documents the questions are retrieved from (a folder, files or objects).
        embedder: MiniLM (or another) for the duplicates and dense recall; None skips both.
        mtrag: MTRAG's dev rows, for people's questions over their own passages.
        max_chars: the chunk size; the run's (from its summary), else the default.
    """
    path = Path(testset)
    rows = read_json_lines(path)
    for number, row in enumerate(rows, 1):
        for field in ("question", "metadata"):
            if field not in row:
                raise ValueError(f"{path}, row {number}: no field {field!r}")
    paths = output_paths(path)
    summary = (
        GenerationSummary.model_validate_json(paths["summary"].read_text())
        if paths["summary"].exists()
        else None
    )
    rejected = read_json_lines(paths["rejected"]) if paths["rejected"].exists() else []
    size = max_chars or (summary.settings.get("max_chars") if summary else None) or MAX_CHARS
    min_chars = (summary.settings.get("min_chars") if summary else None) or MIN_CHARS
    chunks = chunk_corpus(read_documents(corpus).documents, size, min_chars)
    rankers = _Rankers(chunks, embedder)
    sourced = [r for r in rows if r.get("reference_contexts")]
    queries = [
        Query(
            _query_text(r),
            frozenset(s["document"] for s in r["metadata"]["sources"]),
            tuple((s["document"], s["start"], s["end"]) for s in r["metadata"]["sources"]),
        )
        for r in sourced
    ]
    recall = {
        "generated (source chunk)": rankers.recall(queries, "chunk"),
        "generated (source document)": rankers.recall(queries, "document"),
    }
    copying_people, people_chunks = None, None
    if mtrag is not None:
        people_corpus, groups, sources = people_questions(mtrag)
        people_chunked = chunk_corpus(people_corpus, size, min_chars)
        people_chunks = len(people_chunked)
        people = _Rankers(people_chunked, embedder)
        for group, group_queries in groups.items():
            recall[f"people, MTRAG {group}"] = people.recall(group_queries, "document")
        copying_people = float(np.mean([copies(q, s) for q, s in sources.items()]))
    checked = [r["metadata"]["checks"].get("supported") for r in sourced]
    reached = [c for c in checked if c] + [
        r["checks"]["supported"] for r in rejected if r.get("checks", {}).get("supported")
    ]
    kinds = Counter(r["metadata"]["kind"] for r in rows)
    asked = summary.settings.get("mix", {}) if summary else {}
    return TestsetReport(
        samples=len(rows),
        candidates=summary.candidates if summary else None,
        acceptance=round(len(rows) / summary.candidates, 4)
        if summary and summary.candidates
        else None,
        rejected=summary.rejected if summary else dict(Counter(r["reason"] for r in rejected)),
        supported_accepted=_share([c["all"] for c in checked if c]),
        supported_reached=_share([c["all"] for c in reached]),
        copying=_share([copies(r["question"], r["reference_contexts"]) for r in sourced]),
        copying_people=copying_people,
        duplicates=_duplicates([r["question"] for r in rows], embedder),
        kinds={
            kind: {
                "asked": round(asked.get(kind, 0.0), 4),
                "accepted": round(kinds[kind] / len(rows), 4),
            }
            for kind in dict.fromkeys([*asked, *kinds])
        }
        if rows
        else {},
        recall=recall,
        corpus_chunks=len(chunks),
        people_corpus_chunks=people_chunks,
    )


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def _duplicates(questions: Sequence[str], embedder: Embedder | None) -> int:
    """Questions with a near-copy among the others (cosine >= ``DUPLICATE``)."""
    if embedder is None or len(questions) < 2:
        return 0
    vectors = unit_rows(embedder.embed(list(questions)))
    similar = vectors @ vectors.T
    np.fill_diagonal(similar, -1.0)
    return int((similar.max(axis=1) >= DUPLICATE).sum())
