"""A retriever's run: for each query, the documents it returned with their scores.

Read from a TREC run file (``qid Q0 docid rank score tag``, whitespace-separated) or a
samples file whose rows carry ``context_ids`` (``ragmeter.retrieval.samples``). As trec_eval
does, the order that counts is by score, descending, ties broken by document id, descending;
the rank column is read, checked and otherwise ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ragmeter.retrieval.files import FirstSeen, RetrievalFileError, text_lines


@dataclass(frozen=True)
class Run:
    """Scores: query id -> document id -> score (higher ranks first)."""

    name: str
    scores: dict[str, dict[str, float]]
    path: Path | None = None
    tags: list[str] = field(default_factory=list)
    """The run tags its lines carry (TREC's last column), each once."""

    @property
    def queries(self) -> list[str]:
        return list(self.scores)


def ranked(ids: list[str]) -> dict[str, float]:
    """A ranking given in order (first is best) as scores: n for the first of n, down to 1,
    so that no two tie and trec_eval's order is the order given."""
    return {docid: float(len(ids) - position) for position, docid in enumerate(ids)}


def in_order(scores: dict[str, float]) -> list[str]:
    """A query's documents in trec_eval's order: by score, ties by document id, both
    descending."""
    return sorted(scores, key=lambda d: (scores[d], d), reverse=True)


def read_run(path: str | Path) -> Run:
    """Read a TREC run file; the run is named after the file (its stem).

    Raises:
        RetrievalFileError: naming the file and line of a malformed line, a rank that is not an
            integer, a score that is not a finite number, or a document listed twice for one
            query (with the first line).
        FileNotFoundError: no such file.
    """
    path = Path(path)
    scores: dict[str, dict[str, float]] = {}
    tags: dict[str, None] = {}
    seen = FirstSeen(path, "ranked")
    for number, line in text_lines(path):
        columns = line.split()
        if len(columns) != 6:
            raise RetrievalFileError(
                path,
                number,
                f"expected 6 columns (query-id Q0 document-id rank score tag), got {line!r}",
            )
        qid, _, docid, rank, score, tag = columns
        try:
            int(rank)
        except ValueError:
            raise RetrievalFileError(path, number, f"the rank {rank!r} is not an integer") from None
        try:
            value = float(score)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise RetrievalFileError(path, number, f"the score {score!r} is not a finite number")
        seen.add((qid, docid), number, f"query {qid!r}, document {docid!r}")
        scores.setdefault(qid, {})[docid] = value
        tags.setdefault(tag)
    if not scores:
        raise RetrievalFileError(path, None, "holds no ranking")
    return Run(name=path.stem, scores=scores, path=path, tags=list(tags))
