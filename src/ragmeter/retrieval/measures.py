"""IR measures through ir-measures (trec_eval's own code, pytrec-eval-terrier, underneath):
never worked out here, so that a value is trec_eval's to the last digit.

trec_eval orders a query's documents by score, descending, ties broken by document id,
descending (string order), whatever the rank column says; a document the qrels do not judge
counts as not relevant; and, as ``trec_eval -c`` does, a query of the qrels that a run does not
return scores 0. A run's query that the qrels do not judge is not scored: the callers report it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import version
from typing import Any

from ragmeter.retrieval.runs import ranked

DEFAULT_MEASURES = ("nDCG@10", "R@100", "RR", "AP", "P@10")
"""What ``ragmeter retrieval`` reports unless asked otherwise."""

INSTALL = "the retrieval measures need ir-measures: pip install 'ragmeter[retrieval]'"

Grades = Mapping[str, Mapping[str, int]]
Scores = Mapping[str, Mapping[str, float]]


def ir_measures() -> Any:
    """The ``ir_measures`` module, or an ImportError that says how to install it."""
    try:
        import ir_measures
    except ImportError as error:
        raise ImportError(INSTALL) from error
    return ir_measures


def library_versions() -> dict[str, str]:
    """The versions of the libraries that compute the measures: part of what decides a value."""
    ir_measures()
    return {name: version(name) for name in ("ir-measures", "pytrec-eval-terrier")}


def parse_measures(names: str | Iterable[str]) -> list[Any]:
    """ir-measures measures from their names (``nDCG@10``, ``R(rel=2)@100``, ``RR``, ...), comma
    separated or listed; each once, in the order given.

    Raises:
        ValueError: naming a measure ir-measures does not know or cannot compute.
    """
    library = ir_measures()
    listed = names.split(",") if isinstance(names, str) else list(names)
    found: dict[str, Any] = {}
    for name in (n.strip() for n in listed):
        if not name:
            continue
        try:
            measure = library.parse_measure(name)
        except (NameError, ValueError) as error:
            raise ValueError(
                f"the measure {name!r} is not one ir-measures reads: {error}"
            ) from None
        if not library.DefaultPipeline.supports(measure):
            raise ValueError(f"the measure {name!r}: no installed ir-measures provider computes it")
        found.setdefault(str(measure), measure)
    if not found:
        raise ValueError("no measure named")
    return list(found.values())


def per_query(measures: Sequence[Any], qrels: Grades, run: Scores) -> dict[str, dict[str, float]]:
    """Each measure's value on each query of ``qrels`` (measure name -> query id -> value); a
    query the run does not return scores 0, as with ``trec_eval -c``."""
    values: dict[str, dict[str, float]] = {str(m): dict.fromkeys(qrels, 0.0) for m in measures}
    returned = {qid: documents for qid, documents in run.items() if documents}
    for found in ir_measures().iter_calc(list(measures), qrels, returned):
        if found.query_id in qrels:
            values[str(found.measure)][found.query_id] = float(found.value)
    return values


def one_query(measure: Any, relevance: Mapping[str, int], ids: Sequence[str]) -> float:
    """``measure`` of one ranking (``ids``, best first) against one query's graded ids: a run
    and qrels of a single query, handed to ir-measures."""
    values = per_query([measure], {"q": relevance}, {"q": ranked(list(ids))})
    return values[str(measure)]["q"]


def judged_at(qrels: Grades, run: Scores, cutoffs: Iterable[int]) -> dict[int, tuple[int, int]]:
    """At each cutoff k: how many of the run's top-k documents the qrels judge (any grade), and
    how many there are, over the queries of the qrels.

    Counted by ir-measures as precision at k with every judged document relevant, so that the
    top k is trec_eval's (its order and ties) and a query with fewer than k documents counts
    those it has."""
    library = ir_measures()
    judged = {qid: dict.fromkeys(documents, 1) for qid, documents in qrels.items()}
    counts: dict[int, tuple[int, int]] = {}
    for k in sorted(set(cutoffs)):
        share = per_query([library.P @ k], judged, run)[str(library.P @ k)]
        returned = {qid: min(k, len(run.get(qid, ()))) for qid in qrels}
        counts[k] = (round(sum(share.values()) * k), sum(returned.values()))
    return counts


def cutoff_of(measure: Any) -> int | None:
    """The measure's cutoff (10 of ``nDCG@10``); None for one over the whole ranking."""
    cutoff = measure.params.get("cutoff")
    return cutoff if isinstance(cutoff, int) else None
