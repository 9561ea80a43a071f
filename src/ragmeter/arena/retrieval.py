"""BM25 passage retrieval with the ``bm25s`` library (the ``arena`` extra).

The paper retrieves with ColBERTv2, whose weights cannot be fetched here; BM25 is the lexical
baseline that RobustQA also reports, and it needs no model. As in the paper, the retriever is
fixed while the systems vary, so any retriever that is the same for every system keeps the
comparison fair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.arena.passages import Passage

DEFAULT_K = 5


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float


class BM25Retriever:
    """Top-k passages for a query by BM25 (Lucene variant, k1=1.5, b=0.75)."""

    def __init__(self, passages: Sequence[Passage], *, k1: float = 1.5, b: float = 0.75) -> None:
        if not passages:
            raise ValueError("cannot index an empty corpus")
        bm25s = _bm25s()
        self.passages = list(passages)
        self._bm25s = bm25s
        self._index = bm25s.BM25(k1=k1, b=b)
        tokens = bm25s.tokenize(
            [p.text for p in self.passages], stopwords="en", show_progress=False
        )
        self._index.index(tokens, show_progress=False)

    def search(self, query: str, k: int = DEFAULT_K) -> list[Hit]:
        """The best ``k`` passages, best first. Passages that share no term with the query score
        0 and are left out: they would only be noise for the generator, so a query about nothing
        in the corpus gets no passages and the generator should answer that it found nothing."""
        if k < 1:
            raise ValueError("k must be at least 1")
        tokens = self._bm25s.tokenize(
            [query], stopwords="en", return_ids=False, show_progress=False
        )
        found = self._index.retrieve(tokens, k=min(k, len(self.passages)), show_progress=False)
        return [
            Hit(self.passages[int(i)], float(s))
            for i, s in zip(found.documents[0], found.scores[0], strict=True)
            if s > 0
        ]


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:
        raise ImportError("BM25 retrieval needs bm25s: pip install 'ragmeter[arena]'") from exc
    return bm25s
