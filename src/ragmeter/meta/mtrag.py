"""MTRAG (Katsis et al., 2025): do the metrics rank real answers to multi-turn questions as
people do?

Each row is one answer (by a human writer, GPT-4o or Llama-3.1-405B) to the last user turn of a
conversation, with the passages the answerer was given and the mean of 2-3 annotators' 4-point
ratings of faithfulness, appropriateness and completeness. Agreement is a correlation over rows:
Spearman's rank correlation (the paper's) and Pearson's, each with a percentile-bootstrap 95 %
interval over rows. The authors' own run of RAGAS faithfulness with a strong judge (``rl_f``) is
correlated on the same rows as the baseline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from pydantic import BaseModel

from ragmeter.cluster import Executor, RayExecutor, RayPool
from ragmeter.evaluate import evaluate
from ragmeter.judges import Embedder, Judge
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.sample import Sample, Turn
from ragmeter.score import Score
from ragmeter.stats import Interval, correlation

METRICS = ("faithfulness", "answer_relevance")
"""The metrics judged by default."""
WITH_REFERENCE = ("answer_correctness",)
"""Metrics that read the row's reference answer (the human writer's), judged when asked for;
they are correlated over the other responders' answers only, since the writer's own answer is
the reference."""
AGREEMENTS = (
    ("faithfulness", "faithfulness"),
    ("answer_relevance", "appropriateness"),
    ("answer_relevance", "completeness"),
    ("answer_correctness", "completeness"),
)
"""(ragmeter metric, human rating) pairs that measure the same quality."""

BASELINE = "rl_f"
"""The authors' RAGAS faithfulness, in each row's ``auto``."""
REFERENCE_JUDGE = "rb_llm"
"""The authors' reference-based LLM judge (RAD-Bench style), in each row's ``auto``."""
WRITER = "reference"
"""The responder whose answer is the reference."""

SPEAKERS = {"user": "user", "agent": "assistant"}


class MtragRow(BaseModel):
    sample: Sample
    conversation: str
    """The task: one conversation, answered by each responder."""
    responder: str
    answerability: str
    human: dict[str, float]
    """The mean annotator rating (1-4) per dimension."""
    baseline: float | None
    reference_judge: float | None = None


def load_mtrag(path: Path | str) -> list[MtragRow]:
    """Rows of MTRAG's human-evaluation file (one JSON object per line); an error names the
    row and the field."""
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            rows.append(_row(number, json.loads(line)))
    return rows


def _row(number: int, row: dict[str, Any]) -> MtragRow:
    field = "conversation"
    try:
        turns = [Turn(role=SPEAKERS[t["speaker"]], text=t["text"]) for t in row[field]]  # type: ignore[arg-type]
        if not turns or turns[-1].role != "user":
            raise ValueError("its last turn is not the user's question")
        field = "contexts"
        contexts = [c["text"] for c in row[field]]
        field = "model_response"
        answer = row[field]
        field = "reference_response"
        sample = Sample(
            id=f"{row['task_id']}/{row['model_id']}",
            question=turns[-1].text,
            history=turns[:-1],
            contexts=contexts,
            answer=answer,
            reference=row.get(field),
        )
        field = "human_mean"
        human = {k: float(v) for k, v in row[field].items() if v is not None}
        field = "meta"
        answerability = row[field].get("Answerability") or ["UNKNOWN"]
        automatic = row.get("auto", {})
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"row {number}, field {field!r}: {exc!r}") from None
    return MtragRow(
        sample=sample,
        conversation=str(row["task_id"]),
        responder=str(row["model_id"]),
        answerability=str(answerability[0]).lower(),
        human=human,
        baseline=_number(automatic.get(BASELINE)),
        reference_judge=_number(automatic.get(REFERENCE_JUDGE)),
    )


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


class Correlation(BaseModel):
    """One metric against one human rating over one group of rows."""

    metric: str
    human: str
    group: str
    rows: int
    """Rows scored by the metric and rated by people: what the correlations are over."""
    unscored: int
    spearman: Interval | None
    pearson: Interval | None
    baseline_spearman: Interval | None
    """RAGAS faithfulness (``rl_f``) on the same rows."""
    baseline_pearson: Interval | None
    reference_judge_spearman: Interval | None = None
    """The authors' reference-based judge (``rb_llm``) on the same rows, for metrics that read
    the reference."""
    reference_judge_pearson: Interval | None = None


class MtragReport(BaseModel):
    correlations: list[Correlation]
    unscored_reasons: dict[str, dict[str, int]]
    """Per metric: why rows were unscored, and how many."""
    seconds_per_sample: float | None
    """Median over samples judged now of the seconds the metrics took."""
    judge: str


def _groups(rows: list[MtragRow]) -> dict[str, list[MtragRow]]:
    groups = {"all": rows}
    for attribute in ("responder", "answerability"):
        for name in sorted({getattr(r, attribute) for r in rows}):
            groups[name] = [r for r in rows if getattr(r, attribute) == name]
    return groups


def agreement(
    rows: list[MtragRow],
    scores: Mapping[tuple[str, str], Score],
    metrics: Sequence[str] = METRICS,
) -> list[Correlation]:
    """Every (metric, human rating) correlation of ``metrics`` for all rows, per responder and
    per answerability class."""
    found = []
    for group, members in _groups(rows).items():
        for metric, human in AGREEMENTS:
            if metric not in metrics:
                continue
            rated = [r for r in members if human in r.human]
            if metric in WITH_REFERENCE:
                rated = [r for r in rated if r.responder != WRITER]
            scored = [r for r in rated if scores[r.sample.key, metric].scored]
            ours = [scores[r.sample.key, metric].value for r in scored]
            people = [r.human[human] for r in scored]
            baselines = {
                f"{name}_{kind}": correlation(
                    [getattr(r, name) for r in based], [r.human[human] for r in based], kind
                )
                for name in _baselines(metric)
                for based in [[r for r in scored if getattr(r, name) is not None]]
                for kind in ("spearman", "pearson")
            }
            found.append(
                Correlation(
                    metric=metric,
                    human=human,
                    group=group,
                    rows=len(scored),
                    unscored=len(rated) - len(scored),
                    spearman=correlation(ours, people, "spearman"),  # type: ignore[arg-type]
                    pearson=correlation(ours, people, "pearson"),  # type: ignore[arg-type]
                    **baselines,
                )
            )
    return found


def _baselines(metric: str) -> tuple[str, ...]:
    """The authors' scores shown beside ``metric``: RAGAS faithfulness always, and their
    reference-based judge beside metrics that read the reference."""
    return ("baseline", "reference_judge") if metric in WITH_REFERENCE else ("baseline",)


def chosen_metrics(metrics: Sequence[Metric] | None = None) -> dict[str, Metric]:
    """``metrics`` by name (some of ``METRICS``, configured as the caller likes); both with
    their defaults when None."""
    chosen = {m.name: m for m in metrics} if metrics is not None else {}
    unknown = sorted(set(chosen) - set(METRICS) - set(WITH_REFERENCE))
    if unknown:
        known = ", ".join((*METRICS, *WITH_REFERENCE))
        raise ValueError(f"MTRAG correlates {known}; not {unknown[0]!r}")
    return chosen or {name: metric_by_name(name) for name in METRICS}


def run_mtrag(
    rows: list[MtragRow],
    *,
    metrics: Sequence[Metric] | None = None,
    judge: str | Judge = "local",
    embedder: str | Embedder | None = None,
    out_dir: Path | None = None,
    cache: bool | str | Path = True,
    max_workers: int = 1,
    on_score: Callable[[Score], None] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    executor: Executor | RayExecutor | RayPool = "threads",
) -> MtragReport:
    """Score every row's answer with faithfulness and answer relevance (resumably, under
    ``out_dir``) and correlate the scores with the people's ratings. ``metrics`` picks some of
    the two or configures them."""
    chosen = chosen_metrics(metrics)
    if not set(chosen) & set(WITH_REFERENCE):
        # Samples as before references were read, so their stored scores keep their keys.
        rows = [
            r.model_copy(update={"sample": r.sample.model_copy(update={"reference": None})})
            for r in rows
        ]
    result = evaluate(
        [r.sample for r in rows],
        list(chosen.values()),
        judge=judge,
        embedder=embedder,
        out_dir=out_dir,
        cache=cache,
        max_workers=max_workers,
        on_score=on_score,
        judge_options=judge_options,
        embedder_options=embedder_options,
        executor=executor,
    )
    scores = {(s.sample_id, s.metric): s for s in result.scores}
    reasons: dict[str, dict[str, int]] = {}
    written = {r.sample.key for r in rows if r.responder == WRITER}
    for score in result.scores:
        if not score.scored and not (score.metric in WITH_REFERENCE and score.sample_id in written):
            reasons.setdefault(score.metric, {})
            reason = str(score.unscored_reason)
            reasons[score.metric][reason] = reasons[score.metric].get(reason, 0) + 1
    timed: dict[str, float] = {}
    for score in result.scores:
        if score.usage.model_calls:
            timed[score.sample_id] = timed.get(score.sample_id, 0.0) + score.seconds
    return MtragReport(
        correlations=agreement(rows, scores, list(chosen)),
        unscored_reasons=reasons,
        seconds_per_sample=median(timed.values()) if timed else None,
        judge=result.run.judge,
    )
