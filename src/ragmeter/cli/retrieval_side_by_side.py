"""``ragmeter retrieval QRELS RUN... --side-by-side``: the runs' top k passages for each query
(``retrieval.top_passages``) read side by side by the judge (``side_by_side``), and every pair
of runs decided on the preferences, beside the qrels' verdicts on the same pairs where there
are qrels (QRELS ``-`` where nobody graded)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.text import Text

from ragmeter.cli.common import say
from ragmeter.cli.side_by_side import (
    Reading,
    as_ranking,
    dry_run,
    print_side_by_side,
    read_side_by_side,
    write_results,
)
from ragmeter.ranking import PairVerdict, Ranking
from ragmeter.retrieval.evaluation import evaluate_files
from ragmeter.retrieval.texts import read_passages, read_queries
from ragmeter.retrieval.top_passages import query_of, read_retrieved, retrieved_samples
from ragmeter.side_by_side import BUILT_IN, Design

RETRIEVED = BUILT_IN["retrieved_passages"]

NO_QRELS = "-"
"""QRELS given as this: nobody graded the passages, so no qrels verdict is given beside."""


def pair_record(pair: PairVerdict, qrels: Sequence[Ranking]) -> dict[str, Any]:
    """One pair of runs as ``side_by_side.json`` lists it: the side-by-side verdict of ``b``
    against ``a``, its win rate and mean preference with their intervals, and per qrels measure
    the verdict on the same pair."""
    test = pair.test
    won = pair.win_rate
    return {
        "a": pair.a,
        "b": pair.b,
        "verdict": pair.verdict,
        "win_rate": None if won is None else won.value,
        "win_rate_ci": None if won is None else [won.low, won.high],
        "preference": test.difference,
        "preference_ci": [test.ci_low, test.ci_high],
        "p_value": test.p_value,
        "adjusted_p": pair.adjusted_p,
        "read": pair.read,
        "qrels": {ranking.metric: _verdict_on(ranking, pair) for ranking in qrels},
    }


def _verdict_on(ranking: Ranking, pair: PairVerdict) -> str:
    """The qrels' verdict on ``pair``, spoken of ``b`` against ``a`` as the pair is."""
    for theirs in ranking.pairs:
        if (theirs.a, theirs.b) == (pair.a, pair.b):
            return theirs.verdict
        if (theirs.b, theirs.a) == (pair.a, pair.b):
            return {"better": "worse", "worse": "better"}.get(theirs.verdict, theirs.verdict)
    raise ValueError(f"the qrels decided no pair {pair.b} vs {pair.a}")


def agreement_line(records: Sequence[dict[str, Any]], measure: str) -> str:
    """How the side-by-side verdicts meet the qrels' on ``measure``: of the pairs the qrels
    separate, how many were decided the same way, and how many the other way."""
    separated = [r for r in records if r["qrels"][measure] != "cannot tell"]
    same = sum(r["verdict"] == r["qrels"][measure] for r in separated)
    other = sum(r["verdict"] not in ("cannot tell", r["qrels"][measure]) for r in separated)
    return (
        f"the qrels separate {len(separated)} of the {len(records)} pairs on {measure}; side by "
        f"side decided {same} of them the same way and {other} the other way"
    )


def run_retrieval_side_by_side(
    console: Console,
    qrels: Path,
    runs: Sequence[Path],
    reading: Reading,
    *,
    measures: str,
    queries: Path | None,
    passages: Path | None,
    depth: int,
    dry: bool,
    out: Path,
) -> None:
    """The command: the runs' samples built (every text found before any judging), the reads
    said (``dry``) or made, and the pairs printed and written beside the qrels' verdicts."""
    read = [read_retrieved(path, depth) for path in runs]
    systems = retrieved_samples(
        read,
        read_queries(queries) if queries else None,
        read_passages(passages) if passages else None,
    )
    graded = None
    if str(qrels) != NO_QRELS:
        graded = evaluate_files(qrels, runs, measures, rounds=reading.rounds, seed=reading.seed)
    if dry:
        design = cast(Design, reading.design)
        dry_run(console, systems, [RETRIEVED], design, reading.anchor, unit="query rank")
        return
    found = read_side_by_side(console, systems, [RETRIEVED], reading, unit_of=query_of)
    ranked = as_ranking(found)
    (metric,) = ranked.metrics
    rankings = graded.rankings if graded is not None else []
    records = [pair_record(pair, rankings) for pair in metric.ranking.pairs]
    path = write_results(out, found, ranked, {"depth": depth, "pairs": records})
    print_side_by_side(console, found, ranked, unit="queries")
    for ranking in rankings:
        console.print(Text(agreement_line(records, ranking.metric)), highlight=False)
    say(console, f"each run's top {depth} passages per query; written: {path}")
