"""Samples as a run and as qrels: the ids a sample retrieved (``context_ids``, in rank order)
and those relevant to it (``reference_context_ids``), its query id being the sample's id.

A samples file (JSONL, one sample a line) is read here for its ids alone: a row needs an
``id`` and the field read, not a question or an answer, so a retriever's output can be
evaluated before any answer is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from ragmeter.retrieval.files import FirstSeen, RetrievalFileError, id_field, json_objects
from ragmeter.retrieval.qrels import Qrels
from ragmeter.retrieval.runs import Run, ranked
from ragmeter.sample import Sample, parse_grades, parse_ids

SAMPLES_SUFFIXES = (".jsonl", ".ndjson")
"""Files read as samples where a qrels file or a run is expected."""

ID_FIELDS = ("id", "sample_id")
RUN_FIELDS = ("context_ids", "retrieved_context_ids")
QRELS_FIELDS = ("reference_context_ids", "relevant_context_ids")

T = TypeVar("T")


def is_samples_file(path: str | Path) -> bool:
    return Path(path).suffix.lower() in SAMPLES_SUFFIXES


def run_of(samples: Iterable[Sample], name: str) -> Run:
    """The run of ``samples`` that carry ``context_ids``, each under its key."""
    return Run(
        name=name,
        scores={s.key: ranked(s.context_ids) for s in samples if s.context_ids is not None},
    )


def qrels_of(samples: Iterable[Sample], name: str) -> Qrels:
    """The qrels of ``samples`` that carry ``reference_context_ids``, each under its key."""
    return Qrels(
        name=name,
        grades={s.key: s.relevance for s in samples if s.relevance is not None},
    )


def read_samples_run(path: str | Path) -> tuple[Run, list[str]]:
    """The run of a samples file, named after the file, and the ids of the rows without
    ``context_ids`` (not in the run: a query the qrels judge scores 0 for it).

    Raises:
        RetrievalFileError: naming the file and line of a row that is not a JSON object, has
            no id or an id an earlier row has (with its line), or ids that are not a list of
            distinct ids; or a file where no row has ``context_ids``.
    """
    path = Path(path)
    found, without = _rows(path, RUN_FIELDS, lambda value: ranked(parse_ids(value)))
    return Run(name=path.stem, scores=found, path=path), without


def read_samples_qrels(path: str | Path) -> tuple[Qrels, list[str]]:
    """The qrels of a samples file, and the ids of the rows without ``reference_context_ids``
    (not judged: a run's ranking for one of them is reported, not scored).

    Raises:
        RetrievalFileError: as :func:`read_samples_run`, for ``reference_context_ids`` (a list
            of ids, or an object of integer grades).
    """
    path = Path(path)
    found, without = _rows(path, QRELS_FIELDS, _grades)
    return Qrels(name=path.stem, grades=found, path=path), without


def _grades(value: object) -> dict[str, int]:
    grades = parse_grades(value)
    return grades if isinstance(grades, dict) else dict.fromkeys(grades, 1)


def _rows(
    path: Path, fields: tuple[str, ...], parse: Callable[[object], T]
) -> tuple[dict[str, T], list[str]]:
    """Each row's id and its first field of ``fields``, parsed; and the ids of the rows without
    any of them."""
    found: dict[str, T] = {}
    without: list[str] = []
    seen = FirstSeen(path, "a sample's id")
    for number, row in json_objects(path):
        qid = id_field(path, number, row, ID_FIELDS)
        seen.add(qid, number, f"the id {qid!r}")
        name = next((n for n in fields if row.get(n) is not None), None)
        if name is None:
            without.append(qid)
            continue
        try:
            found[qid] = parse(row[name])
        except ValueError as error:
            raise RetrievalFileError(path, number, f"field {name!r}: {error}") from None
    if not found:
        raise RetrievalFileError(path, None, f"no row has {fields[0]}")
    return found, without
