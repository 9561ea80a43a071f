"""A retriever evaluated as IR people do: qrels and runs read from TREC, BEIR or samples files,
IR measures computed by ir-measures (trec_eval's code underneath), means with intervals over
queries, and every pair of runs decided (``ragmeter retrieval``)."""

from ragmeter.retrieval.evaluation import (
    HUMAN,
    JudgedAt,
    MeasureSummary,
    RetrievalEvaluation,
    RunSummary,
    evaluate_files,
    evaluate_runs,
)
from ragmeter.retrieval.files import RetrievalFileError
from ragmeter.retrieval.measures import DEFAULT_MEASURES, one_query, parse_measures, per_query
from ragmeter.retrieval.qrels import Qrels, read_qrels
from ragmeter.retrieval.runs import Run, ranked, read_run
from ragmeter.retrieval.samples import (
    is_samples_file,
    qrels_of,
    read_samples_qrels,
    read_samples_run,
    run_of,
)
from ragmeter.retrieval.texts import Passage, read_passages, read_queries

__all__ = [
    "DEFAULT_MEASURES",
    "HUMAN",
    "JudgedAt",
    "MeasureSummary",
    "Passage",
    "Qrels",
    "RetrievalEvaluation",
    "RetrievalFileError",
    "Run",
    "RunSummary",
    "evaluate_files",
    "evaluate_runs",
    "is_samples_file",
    "one_query",
    "parse_measures",
    "per_query",
    "qrels_of",
    "ranked",
    "read_passages",
    "read_qrels",
    "read_queries",
    "read_run",
    "read_samples_qrels",
    "read_samples_run",
    "run_of",
]
