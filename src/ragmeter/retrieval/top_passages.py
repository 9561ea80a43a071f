"""A run's top k passages per query as samples, for reading two runs side by side where nobody
graded their passages (``ragmeter retrieval --side-by-side``; the reading is
``ragmeter.side_by_side``'s, on its ``retrieved_passages`` criterion).

Graded one passage at a time, the bundled judge names nearly every passage "grade 2" and rarely
decides between runs; shown two runs' passages for the same query together it reads which is
better, and the runs are decided by the same paired test over queries. The two runs are
compared rank by rank: each run's passage at rank r of a query is one sample (its question the
query, its context the passage), read against the other run's at the same rank; a query's
preference is the mean over its ranks. Read together in one prompt, several passages a side
told the runs apart less well (docs/retrieval.md). Two runs that return the same passage at a
rank tie there without a read.

A run is a TREC run file, its passages' texts looked up in ``--passages``, or a samples file
(JSONL) whose rows carry the texts (``contexts``, in rank order) or their ids (``context_ids``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragmeter.retrieval.files import RetrievalFileError, id_field, json_objects
from ragmeter.retrieval.runs import in_order, read_run
from ragmeter.retrieval.samples import ID_FIELDS, RUN_FIELDS, is_samples_file
from ragmeter.retrieval.texts import Passage
from ragmeter.sample import Sample, parse_ids

DEPTH = 1
"""The ranks read per query unless asked otherwise: the top passage. docs/retrieval.md has how
the depth was chosen."""

QUESTION_FIELDS = ("question", "query", "user_input")
RANK = "#"
"""Between the query id and the rank in a sample's id."""


def query_of(input_id: str) -> str:
    """The query of a sample ``retrieved_samples`` made: the two runs' passages at each rank
    of a query are one unit of the paired test."""
    return input_id.rsplit(RANK, 1)[0]


@dataclass(frozen=True)
class Retrieved:
    """One run's top passages per query: query id -> the passages, best first, as their ids
    (to be looked up) or, with ``texts``, as their texts."""

    name: str
    ranked: dict[str, list[str]]
    texts: bool
    questions: dict[str, str] = field(default_factory=dict)
    """Query id -> query text, where the file gives it."""


def read_retrieved(path: str | Path, depth: int) -> Retrieved:
    """A run's top ``depth`` per query: a TREC run file, or a samples file with ``contexts``
    (texts) or ``context_ids`` (ids), named after the file.

    Raises:
        RetrievalFileError: naming the file and line of a row it cannot read, or a samples file
            where no row has ``contexts`` or ``context_ids``.
    """
    path = Path(path)
    if not is_samples_file(path):
        run = read_run(path)
        top = {qid: in_order(scores)[:depth] for qid, scores in run.scores.items()}
        return Retrieved(run.name, top, texts=False)
    ranked: dict[str, list[str]] = {}
    questions: dict[str, str] = {}
    kinds = set()
    for number, row in json_objects(path):
        qid = id_field(path, number, row, ID_FIELDS)
        question = next((row[f] for f in QUESTION_FIELDS if isinstance(row.get(f), str)), None)
        if question:
            questions[qid] = question
        given = next((f for f in ("contexts", *RUN_FIELDS) if row.get(f) is not None), None)
        if given is None:
            continue  # not returned: the query is left out of this run's pairs, and named
        kinds.add(given == "contexts")
        ranked[qid] = _listed(path, number, given, row[given])[:depth]
    if not ranked:
        raise RetrievalFileError(path, None, "no row has contexts or context_ids")
    if len(kinds) > 1:
        raise RetrievalFileError(path, None, "some rows give contexts and others context_ids")
    return Retrieved(path.stem, ranked, texts=kinds == {True}, questions=questions)


def _listed(path: Path, number: int, field: str, value: object) -> list[str]:
    try:
        if field != "contexts":
            return parse_ids(value)
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise ValueError("expected a list of texts")
        return value
    except ValueError as error:
        raise RetrievalFileError(path, number, f"field {field!r}: {error}") from None


def retrieved_samples(
    runs: Sequence[Retrieved],
    queries: Mapping[str, str] | None = None,
    passages: Mapping[str, Passage] | None = None,
) -> dict[str, list[Sample]]:
    """Each run's top passages as samples, one a rank of a query (its id ``QID#RANK``,
    ``query_of`` gives the query back), the passage marked with its rank. A query's text comes
    from ``queries``, else from the run's file; a passage's from the file, else ``passages``.

    Raises:
        ValueError: naming the run and the query or document whose text is missing.
    """
    found: dict[str, list[Sample]] = {}
    for run in runs:
        samples = []
        for qid, top in run.ranked.items():
            question = (queries or {}).get(qid) or run.questions.get(qid)
            if question is None:
                raise ValueError(
                    f"{run.name}: no text for query {qid!r}: give --queries with it, or a "
                    "question field in the samples file"
                )
            texts = top if run.texts else [_text(run.name, qid, docid, passages) for docid in top]
            samples += [
                Sample(
                    id=f"{qid}{RANK}{n}", question=question, contexts=[f"[{n}] {text}"], answer=""
                )
                for n, text in enumerate(texts, 1)
            ]
        found[run.name] = samples
    return found


def _text(run: str, qid: str, docid: str, passages: Mapping[str, Passage] | None) -> str:
    if passages is None:
        raise ValueError(f"{run} names its passages by id: give --passages with their texts")
    if docid not in passages:
        raise ValueError(f"{run}: document {docid!r} (query {qid}) is not in the passages file")
    return passages[docid].shown
