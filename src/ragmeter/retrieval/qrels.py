"""Relevance judgments (qrels): which documents are relevant to which query, and how much.

Read from a TREC qrels file (``qid iteration docid grade``, whitespace-separated; the
iteration column is unused), a BEIR qrels file (tab-separated under the header
``query-id corpus-id score``), or a samples file whose rows carry ``reference_context_ids``
(``ragmeter.retrieval.samples``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ragmeter.retrieval.files import FirstSeen, RetrievalFileError, text_lines

BEIR_HEADER = ("query-id", "corpus-id", "score")
"""The first line of a BEIR qrels file."""


@dataclass(frozen=True)
class Qrels:
    """Graded judgments: query id -> document id -> grade (0 not relevant; higher, more)."""

    name: str
    grades: dict[str, dict[str, int]]
    path: Path | None = None

    @property
    def queries(self) -> list[str]:
        return list(self.grades)

    def judged(self) -> int:
        """Judged (query, document) pairs."""
        return sum(len(documents) for documents in self.grades.values())


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC or a BEIR qrels file, told apart by BEIR's header line.

    Raises:
        RetrievalFileError: naming the file and line of a malformed line, a grade that is not
            an integer, or a (query, document) pair judged twice (with the first line).
        FileNotFoundError: no such file.
    """
    path = Path(path)
    grades: dict[str, dict[str, int]] = {}
    seen = FirstSeen(path, "judged")
    for number, qid, docid, grade in _judgments(path):
        seen.add((qid, docid), number, f"query {qid!r}, document {docid!r}")
        grades.setdefault(qid, {})[docid] = grade
    if not grades:
        raise RetrievalFileError(path, None, "holds no judgment")
    return Qrels(name=path.stem, grades=grades, path=path)


def _judgments(path: Path) -> Iterator[tuple[int, str, str, int]]:
    lines = text_lines(path)
    beir = None
    for number, line in lines:
        if beir is None:
            beir = tuple(c.strip().lower() for c in line.split("\t")) == BEIR_HEADER
            if beir:
                continue
            if path.suffix.lower() == ".tsv":
                raise RetrievalFileError(
                    path,
                    number,
                    f"a BEIR qrels file starts with the header {' '.join(BEIR_HEADER)}",
                )
        if beir:
            columns = [c.strip() for c in line.split("\t")]
            expected = "3 tab-separated columns (query-id corpus-id score)"
        else:
            columns = line.split()
            expected = "4 columns (query-id iteration document-id grade)"
        if len(columns) != (3 if beir else 4) or not all(columns):
            raise RetrievalFileError(path, number, f"expected {expected}, got {line!r}")
        qid, docid, grade = columns[0], columns[-2], columns[-1]
        try:
            value = int(grade)
        except ValueError:
            raise RetrievalFileError(
                path, number, f"the grade {grade!r} is not an integer"
            ) from None
        yield number, qid, docid, value
