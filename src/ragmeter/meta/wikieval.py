"""WikiEval (RAGAS §5, Table 4): pairwise agreement of the metrics with human preferences.

Each question comes with a faithful answer, an ungrounded answer, a poor (incomplete) answer and a
focused and a padded context. People prefer the answer over the ungrounded one (faithfulness), the
answer over the poor one (answer relevance) and the focused context (context relevance).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from ragmeter.cluster import (
    Executor,
    ModelRecipe,
    RayExecutor,
    RayPool,
    keyed_on_cluster,
    workers_for,
)
from ragmeter.evaluate import evaluate
from ragmeter.judges import Embedder, Judge
from ragmeter.meta.baselines import (
    GPTScore,
    OrderRanker,
    rank_pair,
    ranking_key,
    ranking_outcome,
    ranking_prompt,
)
from ragmeter.meta.pairs import Agreement, Pair, PairOutcome, agreement, compare
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.store import ScoreStore

DIMENSIONS = ("faithfulness", "answer_relevance", "context_relevance")

PAPER_TABLE_4 = {
    "RAGAS (paper, gpt-3.5)": {
        "faithfulness": 0.95,
        "answer_relevance": 0.78,
        "context_relevance": 0.70,
    },
    "GPT Score (paper)": {
        "faithfulness": 0.72,
        "answer_relevance": 0.52,
        "context_relevance": 0.63,
    },
    "GPT Ranking (paper)": {
        "faithfulness": 0.54,
        "answer_relevance": 0.40,
        "context_relevance": 0.52,
    },
}


def _contexts(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _from_row(row: dict[str, Any]) -> list[Pair]:
    question, rid = row["question"], str(row["id"])
    focused = _contexts(row["context_v1"])

    def sample(answer: str, contexts: list[str]) -> Sample:
        return Sample(question=question, contexts=contexts, answer=answer)

    good = sample(row["answer"], focused)
    return [
        Pair(rid, "faithfulness", good, sample(row["ungrounded_answer"], focused)),
        Pair(rid, "answer_relevance", good, sample(row["poor_answer"], focused)),
        Pair(rid, "context_relevance", good, sample(row["answer"], _contexts(row["context_v2"]))),
    ]


def _from_pair_record(row: dict[str, Any]) -> Pair:
    question, dimension = row["question"], row["dimension"]
    if dimension == "context_relevance":
        preferred = Sample(
            question=question, contexts=_contexts(row["preferred"]), answer=row["answer"]
        )
        rejected = Sample(
            question=question, contexts=_contexts(row["rejected"]), answer=row["answer"]
        )
    else:
        contexts = _contexts(row["context"])
        preferred = Sample(question=question, contexts=contexts, answer=row["preferred"])
        rejected = Sample(question=question, contexts=contexts, answer=row["rejected"])
    return Pair(str(row["id"]), dimension, preferred, rejected)


def load_wikieval(path: Path | str) -> list[Pair]:
    """Read WikiEval rows (one question with all its variants per line) or pair records
    (``dimension``, ``preferred``, ``rejected`` per line)."""
    pairs: list[Pair] = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        try:
            pairs.extend(_from_row(row) if "dimension" not in row else [_from_pair_record(row)])
        except KeyError as exc:
            raise ValueError(f"{path}: row {number}, field {exc.args[0]!r} is missing") from None
    unknown = {p.dimension for p in pairs} - set(DIMENSIONS)
    if unknown:
        raise ValueError(f"{path}: unknown dimensions {sorted(unknown)}")
    return pairs


class WikiEvalReport(BaseModel):
    agreements: list[Agreement]
    outcomes: list[PairOutcome]
    seconds_per_sample: dict[str, float]
    """Median seconds per scored sample, per ragmeter metric."""
    judge: str
    metric_config: dict[str, Any]


METHODS = ("ragmeter", "gpt_score", "gpt_ranking")


def _distinct(pairs: list[Pair]) -> list[Sample]:
    seen: dict[str, Sample] = {}
    for pair in pairs:
        for sample in (pair.preferred, pair.rejected):
            seen.setdefault(sample.key, sample)
    return list(seen.values())


def _score_outcomes(
    method: str, pairs: list[Pair], result_scores: dict[str, Score]
) -> list[PairOutcome]:
    outcomes = []
    for pair in pairs:
        good, bad = result_scores[pair.preferred.key], result_scores[pair.rejected.key]
        reasons = [s.unscored_reason for s in (good, bad) if s.unscored_reason]
        outcomes.append(
            PairOutcome(
                pair_id=pair.id,
                dimension=pair.dimension,
                method=method,
                preferred_value=good.value,
                rejected_value=bad.value,
                outcome=compare(good.value, bad.value),
                note="; ".join(reasons) or None,
            )
        )
    return outcomes


def run_wikieval(
    pairs: list[Pair],
    *,
    judge: str | Judge = "local",
    embedder: str | Embedder | None = None,
    methods: Sequence[str] = METHODS,
    metrics: dict[str, Metric] | None = None,
    out_dir: Path | None = None,
    cache: bool | str | Path = True,
    retries: int = 2,
    on_progress: Callable[[str], None] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    executor: Executor | RayExecutor | RayPool = "threads",
) -> WikiEvalReport:
    """Score both sides of every pair with each method and count agreement with people.

    ``metrics`` overrides the ragmeter metric used for a dimension (to compare options).
    Everything is committed under ``out_dir`` as it completes, so an interrupted run resumes.
    With Ray workers (``executor``) every method judges on the same workers, each loading
    its models once.
    """
    recipe = ModelRecipe(
        judge,
        embedder,
        cache=cache,
        judge_options=judge_options,
        embedder_options=embedder_options,
    )
    with workers_for(executor, recipe) as pool:
        if pool is None:
            judge_model, embed_model = recipe.open()
        else:
            judge_model, embed_model = pool.judge, pool.embedder
        return _run(
            pairs,
            chosen_metrics(metrics),
            judge_model,
            embed_model,
            pool,
            methods,
            out_dir,
            retries,
            on_progress,
        )


def chosen_metrics(metrics: dict[str, Metric] | None) -> dict[str, Metric]:
    return {d: metric_by_name(d) for d in DIMENSIONS} | (metrics or {})


def _run(
    pairs: list[Pair],
    chosen: dict[str, Metric],
    judge_model: Judge,
    embed_model: Embedder | None,
    pool: RayPool | None,
    methods: Sequence[str],
    out_dir: Path | None,
    retries: int,
    on_progress: Callable[[str], None] | None,
) -> WikiEvalReport:
    store = ScoreStore(out_dir / "rankings.sqlite") if out_dir else None
    outcomes: list[PairOutcome] = []
    seconds: dict[str, float] = {}
    for dimension in DIMENSIONS:
        subset = [p for p in pairs if p.dimension == dimension]
        if not subset:
            continue
        runs: list[tuple[str, Metric]] = []
        if "ragmeter" in methods:
            runs.append(("ragmeter", chosen[dimension]))
        if "gpt_score" in methods:
            runs.append(("GPT Score", GPTScore(dimension)))
        for method, metric in runs:
            if on_progress:
                on_progress(f"{method} · {dimension}")
            result = evaluate(
                _distinct(subset),
                [metric],
                judge=judge_model,
                embedder=embed_model,
                out_dir=out_dir,
                cache=False,
                retries=retries,
                executor=pool or "threads",
            )
            by_key = {s.sample_id: s for s in result.scores}
            outcomes += _score_outcomes(method, subset, by_key)
            if method == "ragmeter":
                timed = [s.seconds for s in result.scores if s.scored and s.usage.model_calls]
                if timed:
                    seconds[dimension] = float(np.median(timed))
        if "gpt_ranking" in methods:
            if on_progress:
                on_progress(f"GPT Ranking · {dimension}")
            outcomes += (
                [rank_pair(p, judge_model, store, retries) for p in subset]
                if pool is None
                else _rank_on_cluster(pool, subset, store, retries)
            )
    if store:
        store.close()
    agreements = [
        agreement(
            method,
            dimension,
            [o for o in outcomes if o.method == method and o.dimension == dimension],
        )
        for method in dict.fromkeys(o.method for o in outcomes)
        for dimension in DIMENSIONS
        if any(o.method == method and o.dimension == dimension for o in outcomes)
    ]
    return WikiEvalReport(
        agreements=agreements,
        outcomes=outcomes,
        seconds_per_sample=seconds,
        judge=judge_model.name,
        metric_config={d: {"config": m.config(), "version": m.version} for d, m in chosen.items()},
    )


def _rank_on_cluster(
    pool: RayPool, pairs: list[Pair], store: ScoreStore | None, retries: int
) -> list[PairOutcome]:
    units = [(pair, order) for pair in pairs for order in (0, 1)]
    scores: dict[tuple[str, int], Score] = {}
    for position, score, _ in keyed_on_cluster(
        pool,
        store,
        units,
        ranking_key,
        partial(OrderRanker, retries=retries),
        lambda pair, order: (f"{pair.id}:{order}", ranking_prompt(pair.dimension).name),
    ):
        pair, order = units[position]
        scores[pair.id, order] = score
    return [ranking_outcome(p, [scores[p.id, 0], scores[p.id, 1]]) for p in pairs]
