"""Retriever runs evaluated against qrels: each measure's mean over the queries with its 95 %
bootstrap interval, every pair of runs decided per measure (``ragmeter.ranking``), and what the
qrels do not judge, counted.

The queries are those of the qrels. A query a run does not return scores 0 on every measure
(as ``trec_eval -c``) and is named; a run's query the qrels do not judge is not scored, and is
named too. A document the qrels do not judge counts as not relevant, as in trec_eval: the
judged share of each run's top k says how far its figures rest on that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ragmeter.ranking import Ranking, rank_systems
from ragmeter.retrieval.measures import (
    DEFAULT_MEASURES,
    cutoff_of,
    judged_at,
    library_versions,
    parse_measures,
    per_query,
)
from ragmeter.retrieval.qrels import Qrels, read_qrels
from ragmeter.retrieval.runs import Run, read_run
from ragmeter.retrieval.samples import is_samples_file, read_samples_qrels, read_samples_run
from ragmeter.stats import bootstrap_mean_ci

HUMAN = "human"
"""The qrels given as a file: people's judgments (the key of ``summary.json``'s ``qrels``)."""
CONFIDENCE = 0.95
Read = TypeVar("Read", Qrels, Run)


class MeasureSummary(BaseModel):
    mean: float
    ci_low: float
    ci_high: float
    queries: int


class JudgedAt(BaseModel):
    """How many of a run's top-k documents (over the queries of the qrels) the qrels judge."""

    k: int
    judged: int
    retrieved: int

    @property
    def unjudged(self) -> int:
        return self.retrieved - self.judged

    @property
    def fraction(self) -> float | None:
        return self.judged / self.retrieved if self.retrieved else None


class RunSummary(BaseModel):
    run: str
    path: str | None
    measures: dict[str, MeasureSummary]
    judged: list[JudgedAt]
    missing_queries: list[str]
    """Queries of the qrels the run does not return: scored 0."""
    unjudged_queries: list[str]
    """The run's queries the qrels do not judge: not scored."""
    per_query: dict[str, dict[str, float]]
    """Measure -> query -> value, every query of the qrels."""


class RetrievalEvaluation(BaseModel):
    qrels: str
    qrels_path: str | None
    queries: int
    judgments: int
    measures: list[str]
    runs: list[RunSummary]
    rankings: list[Ranking]
    """One per measure, when there are two runs or more."""
    rounds: int
    seed: int
    versions: dict[str, str]
    notes: list[str] = []
    """What the files left out (samples without ids), in words."""

    def summary(self) -> dict[str, Any]:
        """``summary.json``: ``qrels`` -> source -> run -> measure -> mean, interval and queries
        (the source ``human``: the qrels file given), with the judged shares, the queries left
        out, and how it was computed."""
        return {
            "qrels": {
                HUMAN: {
                    r.run: {m: s.model_dump() for m, s in r.measures.items()} for r in self.runs
                }
            },
            "judged": {
                HUMAN: {
                    r.run: {
                        str(j.k): {
                            "judged": j.judged,
                            "retrieved": j.retrieved,
                            "unjudged": j.unjudged,
                            "fraction": j.fraction,
                        }
                        for j in r.judged
                    }
                    for r in self.runs
                }
            },
            "queries": {
                "judged": self.queries,
                "missing": {r.run: r.missing_queries for r in self.runs},
                "unjudged": {r.run: r.unjudged_queries for r in self.runs},
            },
            "files": {
                "qrels": self.qrels_path,
                "runs": {r.run: r.path for r in self.runs},
            },
            "measures": self.measures,
            "interval": {
                "confidence": CONFIDENCE,
                "method": "percentile bootstrap over queries",
                "rounds": self.rounds,
                "seed": self.seed,
            },
            "missing_queries_score": 0.0,
            "versions": self.versions,
            "notes": self.notes,
        }

    def write(self, out_dir: str | Path) -> list[Path]:
        """``summary.json``, ``rankings.json`` (a list of rankings, one per measure) and
        ``per_query.jsonl`` (one line per run and query, each measure's value) in ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "summary.json", out / "rankings.json", out / "per_query.jsonl"]
        written[0].write_text(json.dumps(self.summary(), indent=2) + "\n", encoding="utf-8")
        rankings = [ranking.model_dump() for ranking in self.rankings]
        written[1].write_text(json.dumps(rankings, indent=2) + "\n", encoding="utf-8")
        with written[2].open("w", encoding="utf-8") as lines:
            for run in self.runs:
                for qid in next(iter(run.per_query.values()), {}):
                    values = {m: by_query[qid] for m, by_query in run.per_query.items()}
                    lines.write(json.dumps({"run": run.run, "query": qid, **values}) + "\n")
        return written


def evaluate_runs(
    qrels: Qrels,
    runs: Sequence[Run],
    measures: str | Sequence[str] = DEFAULT_MEASURES,
    *,
    rounds: int = 2000,
    seed: int = 0,
) -> RetrievalEvaluation:
    """Evaluate each run against ``qrels`` on ``measures`` (ir-measures names) and decide every
    pair of runs per measure.

    Raises:
        ValueError: no run, two runs of one name, or a measure ir-measures does not read.
    """
    if not runs:
        raise ValueError("no run to evaluate")
    names = [run.name for run in runs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(
            f"two runs are named {twice[0]!r} (a run is named after its file): rename one"
        )
    chosen = parse_measures(measures)
    cutoffs = {cutoff for m in chosen if (cutoff := cutoff_of(m)) is not None}
    summaries = [_summarise(qrels, run, chosen, cutoffs, rounds, seed) for run in runs]
    rankings = []
    if len(runs) > 1:
        for name in (str(m) for m in chosen):
            scores = {s.run: dict(s.per_query[name]) for s in summaries}
            rankings.append(rank_systems(scores, metric=name, rounds=rounds, seed=seed))
    return RetrievalEvaluation(
        qrels=qrels.name,
        qrels_path=None if qrels.path is None else str(qrels.path),
        queries=len(qrels.grades),
        judgments=qrels.judged(),
        measures=[str(m) for m in chosen],
        runs=summaries,
        rankings=rankings,
        rounds=rounds,
        seed=seed,
        versions=library_versions(),
    )


def evaluate_files(
    qrels: str | Path,
    runs: Sequence[str | Path],
    measures: str | Sequence[str] = DEFAULT_MEASURES,
    *,
    rounds: int = 2000,
    seed: int = 0,
) -> RetrievalEvaluation:
    """:func:`evaluate_runs` on files: the qrels a TREC or BEIR qrels file, each run a TREC run
    file, and either a samples file (``.jsonl``: ``id`` with ``reference_context_ids`` for the
    qrels, ``context_ids`` for a run). Samples without the ids read are named in ``notes``.

    Raises:
        RetrievalFileError: naming the file and line of what cannot be read.
        FileNotFoundError: a file that does not exist.
        ValueError: as :func:`evaluate_runs`.
    """
    parse_measures(measures)  # a misspelt measure is said before any file is read
    judged, read, notes = read_files(qrels, runs)
    found = evaluate_runs(judged, read, measures, rounds=rounds, seed=seed)
    return found.model_copy(update={"notes": notes})


def read_files(qrels: str | Path, runs: Sequence[str | Path]) -> tuple[Qrels, list[Run], list[str]]:
    """The qrels and runs of :func:`evaluate_files`, with what the files left out in words."""
    notes: list[str] = []
    judged = _read_either(
        qrels, read_qrels, read_samples_qrels, "reference_context_ids", "not judged", notes
    )
    read = [
        _read_either(path, read_run, read_samples_run, "context_ids", "not returned", notes)
        for path in runs
    ]
    return judged, read, notes


def _read_either(
    path: str | Path,
    read_plain: Callable[[str | Path], Read],
    read_samples: Callable[[str | Path], tuple[Read, list[str]]],
    field: str,
    meaning: str,
    notes: list[str],
) -> Read:
    """``path`` read as its own format or, where it is a samples file, from the samples'
    ``field``; the samples without it are named in ``notes``, ``meaning`` what that does."""
    if not is_samples_file(path):
        return read_plain(path)
    found, without = read_samples(path)
    if without:
        notes.append(_left_out(found.name, without, field, meaning))
    return found


def write_sources(found: dict[str, RetrievalEvaluation], out_dir: str | Path) -> list[Path]:
    """The runs evaluated on several qrels (``human``, the judge's grades, both merged) in one
    folder: ``summary.json``'s ``qrels`` and ``judged`` keyed by each source, ``rankings.json``
    a list of rankings per source, ``per_query.jsonl`` of the people's qrels."""
    first = next(iter(found.values()))
    written = first.write(out_dir)
    summary = first.summary()
    for key in ("qrels", "judged"):
        summary[key] = {source: e.summary()[key][HUMAN] for source, e in found.items()}
    written[0].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    rankings = {s: [r.model_dump() for r in e.rankings] for s, e in found.items()}
    written[1].write_text(json.dumps(rankings, indent=2) + "\n", encoding="utf-8")
    return written


def _left_out(name: str, ids: list[str], field: str, meaning: str) -> str:
    shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
    return f"{name}: {len(ids)} samples without {field}, so {meaning} ({shown})"


def _summarise(
    qrels: Qrels, run: Run, measures: list[Any], cutoffs: set[int], rounds: int, seed: int
) -> RunSummary:
    values = per_query(measures, qrels.grades, run.scores)
    summaries = {}
    for name, by_query in values.items():
        found = bootstrap_mean_ci(list(by_query.values()), rounds=rounds, seed=seed)
        assert found is not None, "qrels hold at least one query"
        mean, low, high = found
        summaries[name] = MeasureSummary(mean=mean, ci_low=low, ci_high=high, queries=len(by_query))
    depth = max((len(documents) for documents in run.scores.values()), default=0)
    counts = judged_at(qrels.grades, run.scores, cutoffs or ({depth} if depth else set()))
    return RunSummary(
        run=run.name,
        path=None if run.path is None else str(run.path),
        measures=summaries,
        judged=[JudgedAt(k=k, judged=j, retrieved=r) for k, (j, r) in counts.items()],
        missing_queries=[qid for qid in qrels.grades if qid not in run.scores],
        unjudged_queries=[qid for qid in run.scores if qid not in qrels.grades],
        per_query=values,
    )
