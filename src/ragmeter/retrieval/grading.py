"""Relevance graded by the judge where no person graded: every (query, passage) pair in the pool
of the runs' top k becomes a sample of the ``passage_relevance`` metric (UMBRELA's 0-3 scale,
``metrics.passage_relevance``), judged through ``evaluate`` by the command: the call cache and
the run's store make a killed grading resume and a rerun judge nothing, and a pair the judge
could not grade is unscored with its reason, never a grade of 0. The pairs go by query, so a
local judge reads the instructions and the query once for all of a query's passages. Here:
the pool, the pairs as samples, the grades read back as qrels, and their agreement with
people's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from ragmeter.retrieval.qrels import Qrels
from ragmeter.retrieval.runs import Run, in_order
from ragmeter.retrieval.texts import Passage
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.stats import Interval, cohen_kappa, percentile_interval

RELEVANT = 2
"""The least grade that counts as relevant (TREC DL: 1 is related, not relevant)."""
PAIR_SEPARATOR = "\t"
"""Between the query id and the document id in a pair's sample id."""


def pool(runs: Sequence[Run], depth: int) -> list[tuple[str, str]]:
    """The (query, document) pairs in any run's top ``depth`` (trec_eval's order), by query
    and then by document, each once."""
    found: set[tuple[str, str]] = set()
    for run in runs:
        for qid, scores in run.scores.items():
            found.update((qid, docid) for docid in in_order(scores)[:depth])
    return sorted(found)


def pair_samples(
    pairs: Sequence[tuple[str, str]], queries: Mapping[str, str], passages: Mapping[str, Passage]
) -> list[Sample]:
    """A sample per pair; an id the queries or passages files lack is an error naming it."""
    samples = []
    for qid, docid in pairs:
        if qid not in queries:
            raise ValueError(f"query {qid!r} of the runs is not in the queries file")
        if docid not in passages:
            raise ValueError(f"document {docid!r} (query {qid}) is not in the passages file")
        samples.append(
            Sample(
                id=f"{qid}{PAIR_SEPARATOR}{docid}",
                question=queries[qid],
                contexts=[passages[docid].shown],
                answer="",
            )
        )
    return samples


class Grade(BaseModel):
    qid: str
    docid: str
    distribution: dict[str, float] | None
    expected: float | None
    grade: int | None
    """The most likely grade; None where the judge could not grade the pair."""
    unscored: str | None = None
    human: int | None = None


def grades_of(scores: Sequence[Score], human: Qrels) -> list[Grade]:
    """Each graded pair (its ``passage_relevance`` score), with the people's grade where there
    is one."""
    found = []
    for score in scores:
        qid, docid = score.sample_id.split(PAIR_SEPARATOR, 1)
        explanation = score.explanation if score.scored else {}
        found.append(
            Grade(
                qid=qid,
                docid=docid,
                distribution=explanation.get("distribution"),
                expected=explanation.get("expected_grade"),
                grade=explanation.get("grade"),
                unscored=score.unscored_reason,
                human=human.grades.get(qid, {}).get(docid),
            )
        )
    return found


def judge_qrels(grades: Sequence[Grade], name: str = "judge") -> Qrels:
    """The judge's most likely grade of every graded pair."""
    found: dict[str, dict[str, int]] = {}
    for g in grades:
        if g.grade is not None:
            found.setdefault(g.qid, {})[g.docid] = g.grade
    return Qrels(name=name, grades=found)


def merged_qrels(human: Qrels, judge: Qrels) -> Qrels:
    """People's grade where there is one, else the judge's."""
    found = {qid: dict(documents) for qid, documents in judge.grades.items()}
    for qid, documents in human.grades.items():
        found.setdefault(qid, {}).update(documents)
    return Qrels(name="merged", grades=found)


def write_grades(grades: Sequence[Grade], out: Path) -> list[Path]:
    """``grades.qrels`` (TREC: ``qid 0 docid grade``, the most likely grade) and
    ``grades.jsonl`` (every pair with its distribution and the people's grade)."""
    qrels, lines = out / "grades.qrels", out / "grades.jsonl"
    qrels.write_text(
        "".join(f"{g.qid} 0 {g.docid} {g.grade}\n" for g in grades if g.grade is not None)
    )
    lines.write_text("".join(json.dumps(g.model_dump()) + "\n" for g in grades))
    return [qrels, lines]


class Grading(BaseModel):
    """What grading the pool took (``grading.json``): the pairs graded and unscored, with why,
    and the judge's pace."""

    judge: str
    pool: int
    """The depth of the runs' tops pooled."""
    pairs: int
    scored: int
    unscored: int
    unscored_reasons: dict[str, int]
    judged_now: int
    resumed: int
    """Pairs whose grade was in the grading's run folder already."""
    seconds: float | None
    """From the first pair judged to the last, the judge's loading not counted."""
    pairs_a_minute: float | None
    """Over the pairs judged now; None where none was."""
    seconds_a_pair: float | None
    """The judging time kept with each grade the judge read (not answered from the call cache),
    on average: the pace of the grading whenever it was done, a rerun's too."""
    prompt_tokens_a_pair: float | None
    """Prompt tokens the judge read for a graded pair, over the pairs it read any for: a
    prefix a local judge kept from the query's earlier passages is not read again."""
    model_calls: int
    cached_calls: int
    """Judge calls answered from the call cache (no tokens read)."""


def grading_of(
    scores: Sequence[Score],
    *,
    judge: str,
    pool: int,
    judged_now: int,
    resumed: int,
    seconds: float | None,
) -> Grading:
    """The grading's counts and pace from the pairs' scores (their usage, kept with each) and
    the run's record of what it judged now and in how long."""
    scored = [s for s in scores if s.scored]
    read = [s for s in scored if s.usage.model_calls]
    reasons = Counter(s.unscored_reason or "" for s in scores if not s.scored)
    pace = 60 * judged_now / seconds if judged_now and seconds else None
    return Grading(
        judge=judge,
        pool=pool,
        pairs=len(scores),
        scored=len(scored),
        unscored=len(scores) - len(scored),
        unscored_reasons=dict(reasons),
        judged_now=judged_now,
        resumed=resumed,
        seconds=seconds,
        pairs_a_minute=pace,
        seconds_a_pair=sum(s.seconds for s in read) / len(read) if read else None,
        prompt_tokens_a_pair=(
            sum(s.usage.prompt_tokens for s in read) / len(read) if read else None
        ),
        model_calls=sum(s.usage.model_calls for s in scores),
        cached_calls=sum(s.usage.cached_calls for s in scores),
    )


class Agreement(BaseModel):
    """The judge's grades against people's on the pairs both graded."""

    pairs: int
    kappa: Interval | None
    """Cohen's kappa on the four grades."""
    kappa_relevant: Interval | None
    """Cohen's kappa on relevant (grade >= 2) or not."""
    confusion: dict[str, dict[str, int]]
    """People's grade -> the judge's -> pairs."""


def agreement(grades: Sequence[Grade], *, rounds: int = 1000, seed: int = 0) -> Agreement:
    """Cohen's kappa with percentile-bootstrap 95 % intervals over queries (a query's pairs are
    drawn together: they share its assessor and its reading)."""
    both = [g for g in grades if g.grade is not None and g.human is not None]
    by_query: dict[str, list[Grade]] = {}
    for g in both:
        by_query.setdefault(g.qid, []).append(g)
    queries = list(by_query)
    rng = np.random.default_rng(seed)

    def kappas(drawn: Sequence[str]) -> tuple[float | None, float | None]:
        rows = [g for q in drawn for g in by_query[q]]
        people = [min(g.human, 3) for g in rows]  # type: ignore[type-var]
        judged = [g.grade for g in rows]
        return (
            cohen_kappa(people, judged),
            cohen_kappa([h >= RELEVANT for h in people], [j >= RELEVANT for j in judged]),  # type: ignore[operator]
        )

    def interval(value: float | None, draws: list[float | None]) -> Interval | None:
        if value is None:
            return None
        low, high = percentile_interval(np.array([[np.nan if d is None else d] for d in draws]))
        return Interval(value=value, low=float(low[0]), high=float(high[0]))

    found = kappas(queries)
    drawn = [kappas(rng.choice(queries, size=len(queries)).tolist()) for _ in range(rounds)]
    confusion: dict[str, dict[str, int]] = {}
    for g in both:
        row = confusion.setdefault(str(g.human), {})
        row[str(g.grade)] = row.get(str(g.grade), 0) + 1
    return Agreement(
        pairs=len(both),
        kappa=interval(found[0], [d[0] for d in drawn]),
        kappa_relevant=interval(found[1], [d[1] for d in drawn]),
        confusion=confusion,
    )
