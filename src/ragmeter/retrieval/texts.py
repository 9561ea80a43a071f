"""The texts behind the ids: queries and passages, for grading (query, passage) pairs.

JSONL in either of two shapes: ``{"qid", "query"}`` and ``{"docid", "text"}``, or BEIR's
``queries.jsonl`` and ``corpus.jsonl`` (``{"_id", "text"}``, a passage with an optional
``"title"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.retrieval.files import FirstSeen, RetrievalFileError, id_field, json_objects


@dataclass(frozen=True)
class Passage:
    docid: str
    text: str
    title: str = ""

    @property
    def shown(self) -> str:
        """The passage as the judge reads it: its title, where it has one, above its text."""
        return f"{self.title}\n{self.text}" if self.title else self.text


def read_queries(path: str | Path) -> dict[str, str]:
    """Query id -> query text.

    Raises:
        RetrievalFileError: naming the file and line of a row that is not a JSON object, lacks
            its id or text, or repeats an earlier row's id (with that row's line).
        FileNotFoundError: no such file.
    """
    path = Path(path)
    queries: dict[str, str] = {}
    seen = FirstSeen(path, "a query id")
    for number, row in json_objects(path):
        qid = id_field(path, number, row, ("qid", "_id", "query_id"))
        seen.add(qid, number, f"the query id {qid!r}")
        queries[qid] = _text(path, number, row, ("query", "text"))
    if not queries:
        raise RetrievalFileError(path, None, "holds no query")
    return queries


def read_passages(path: str | Path) -> dict[str, Passage]:
    """Document id -> passage (its text, and its title where BEIR gives one).

    Raises:
        RetrievalFileError: as :func:`read_queries`, for passages.
        FileNotFoundError: no such file.
    """
    path = Path(path)
    passages: dict[str, Passage] = {}
    seen = FirstSeen(path, "a document id")
    for number, row in json_objects(path):
        docid = id_field(path, number, row, ("docid", "_id", "doc_id", "corpus_id"))
        seen.add(docid, number, f"the document id {docid!r}")
        title = row.get("title") or ""
        if not isinstance(title, str):
            raise RetrievalFileError(
                path, number, f"field 'title': expected a string, got {type(title).__name__}"
            )
        passages[docid] = Passage(docid, _text(path, number, row, ("text", "contents")), title)
    if not passages:
        raise RetrievalFileError(path, None, "holds no passage")
    return passages


def _text(path: Path, number: int, row: Mapping[str, Any], names: tuple[str, ...]) -> str:
    name = next((n for n in names if n in row), None)
    if name is None:
        raise RetrievalFileError(path, number, f"no {' or '.join(map(repr, names))} field")
    value = row[name]
    if not isinstance(value, str):
        raise RetrievalFileError(
            path, number, f"field {name!r}: expected a string, got {type(value).__name__}"
        )
    return value
