"""RAGChecker's meta-evaluation (Ru et al., 2024): does answer correctness compare two answers to
one question as people do?

Each instance is a query, a ground-truth answer and the long-form answers of two RAG systems;
two annotators said which answer is more correct, more complete and better overall, from -2 (the
first) to 2 (the second). The authors' protocol (their ``meta_eval.py``): for each instance take
the second answer's score minus the first's (a missing score filled with the median), pair that
difference with each annotator's label, so each instance counts twice, and correlate: precision
with correctness, recall with completeness, F1 with overall. Intervals are percentile
bootstraps over instances (both of an instance's pairs drawn together). RAGChecker's own run
(with a large LLM as its checker) is correlated on the same instances, and the annotators with
each other: the ceiling.

The overall label is also a person's pairwise preference given a reference, so the instances are
arena pairs too (one per annotator, the label's sign): ``pairwise=True`` decides them with the
arena's claims method and its generative judge and reports Cohen's kappa and accuracy of each,
beside the longer-answer baseline and the sign of answer correctness's F1 difference. The file
has no retrieved passages, so the claims method reads precision and recall only there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from ragmeter.arena.agreement import AgreementStats, agreement_report
from ragmeter.arena.agreement import agreement as label_agreement
from ragmeter.arena.battles import Battle
from ragmeter.arena.data import Pair
from ragmeter.arena.judge import Method, judge_pairs, open_judge, sign
from ragmeter.cluster import Executor, RayExecutor, RayPool
from ragmeter.evaluate import evaluate
from ragmeter.judges import Judge
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.stats import Coefficient, Interval, correlation

Dimension = Literal["correctness", "completeness", "overall"]
FIGURES: dict[Dimension, str] = {
    "correctness": "precision",
    "completeness": "recall",
    "overall": "f1",
}
"""Which figure of answer correctness is compared with which human label (the authors' pairing)."""

RESPONSES = ("model1", "model2")


class RagcheckerInstance(BaseModel):
    instance: str
    domain: str
    samples: tuple[Sample, Sample]
    """The two answers, each with the ground truth as its reference."""
    labels: dict[Dimension, tuple[int, int]]
    """Each annotator's label: positive when the second answer is better."""
    theirs: dict[Dimension, tuple[float | None, float | None]]
    """RAGChecker's own figure for each answer."""


def load_ragchecker(path: Path | str) -> list[RagcheckerInstance]:
    """The instances of RAGChecker's human-labelled file (one JSON object per line); an error
    names the row and the field."""
    instances = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            instances.append(_instance(number, json.loads(line)))
    return instances


def _instance(number: int, row: dict[str, Any]) -> RagcheckerInstance:
    field = "instance_id"
    try:
        instance = str(row[field])
        samples = []
        for field in RESPONSES:
            samples.append(
                Sample(
                    id=f"{instance}/{field}",
                    question=row["query"],
                    answer=row[field]["response"],
                    reference=row["gt_answer"],
                    metadata={"system": row[field]["model_name"]},
                )
            )
        labels: dict[Dimension, tuple[int, int]] = {}
        theirs: dict[Dimension, tuple[float | None, float | None]] = {}
        for dimension in FIGURES:
            field = f"{dimension}_label"
            first, second = (int(label) for label in row[field])
            if not (-2 <= first <= 2 and -2 <= second <= 2):
                raise ValueError(f"labels run from -2 to 2, not {row[field]}")
            labels[dimension] = (first, second)
            field = f"model1/model2.ragchecker.{dimension}_label"
            theirs[dimension] = tuple(  # type: ignore[assignment]
                _number(row[r]["ragchecker"].get(f"{dimension}_label")) for r in RESPONSES
            )
        field = "dataset"
        domain = str(row[field])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"row {number}, field {field!r}: {exc!r}") from None
    return RagcheckerInstance(
        instance=instance, domain=domain, samples=tuple(samples), labels=labels, theirs=theirs
    )


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


class Agreement(BaseModel):
    """One way of scoring against the annotators on one dimension over one group."""

    who: str
    """``ragmeter``, ``ragchecker`` (the authors' run) or ``annotators`` (one against the other)."""
    dimension: Dimension
    group: str
    instances: int
    filled: int
    """Instances where a missing score was filled with the median (the authors' rule)."""
    pearson: Interval | None
    spearman: Interval | None


class RagcheckerReport(BaseModel):
    correlations: list[Agreement]
    unscored_reasons: dict[str, int]
    seconds_per_instance: float | None
    """Median over instances judged now of the seconds their two answers took."""
    checks_per_claim: float | None
    """Yes/No model calls per claim checked, over the answers judged now."""
    judge: str
    pairwise: dict[str, AgreementStats] | None = None
    """With ``pairwise``: each way of deciding the pairs (see ``PAIRWISE_ROWS``) against the
    annotators' overall preferences, every instance once per annotator."""


PAIRWISE_ROWS = {
    "claims": "from claims (arena --method claims)",
    "generative": "generative judge, both orders",
    "longer answer": "baseline: the longer answer",
    "f1 difference": "sign of the F1 difference",
}
"""The rows of the pairwise report, by key, as the command names them."""

PAIRWISE_METHODS: tuple[Method, ...] = ("claims", "generative")
"""The arena methods the pairwise report's rows are decided with, each a run of its own."""


def _differences(pairs: Sequence[tuple[float | None, float | None]]) -> tuple[np.ndarray, int]:
    """Second minus first per instance, a missing score filled with the median of the scores
    present (the authors' rule), and how many instances needed it."""
    present = [v for pair in pairs for v in pair if v is not None]
    fill = median(present) if present else 0.0
    filled = sum(any(v is None for v in pair) for pair in pairs)
    return np.array(
        [(b if b is not None else fill) - (a if a is not None else fill) for a, b in pairs]
    ), filled


def agreement(
    instances: Sequence[RagcheckerInstance], scores: Mapping[str, Score]
) -> list[Agreement]:
    """ragmeter's, RAGChecker's and the annotators' agreement per dimension, for all instances
    and per domain; ``scores`` is answer correctness by sample id."""
    groups = {"all": list(instances)}
    for domain in sorted({i.domain for i in instances}):
        groups[domain] = [i for i in instances if i.domain == domain]
    found = []
    for group, members in groups.items():
        for dimension, figure in FIGURES.items():
            labels = np.array([i.labels[dimension] for i in members], dtype=float)
            ours = [tuple(_figure(scores.get(s.key), figure) for s in i.samples) for i in members]
            theirs = [i.theirs[dimension] for i in members]
            for who, pairs in (("ragmeter", ours), ("ragchecker", theirs)):
                differences, filled = _differences(pairs)  # type: ignore[arg-type]
                found.append(
                    Agreement(
                        who=who,
                        dimension=dimension,
                        group=group,
                        instances=len(members),
                        filled=filled,
                        pearson=_paired(differences, labels, "pearson"),
                        spearman=_paired(differences, labels, "spearman"),
                    )
                )
            found.append(
                Agreement(
                    who="annotators",
                    dimension=dimension,
                    group=group,
                    instances=len(members),
                    filled=0,
                    pearson=correlation(labels[:, 0], labels[:, 1], "pearson"),
                    spearman=correlation(labels[:, 0], labels[:, 1], "spearman"),
                )
            )
    return found


def _paired(differences: np.ndarray, labels: np.ndarray, kind: Coefficient) -> Interval | None:
    """The coefficient over (difference, label) pairs, each instance once per annotator; the
    interval resamples instances, both of an instance's pairs together."""
    x = np.repeat(differences, labels.shape[1])
    return correlation(x, labels.reshape(-1), kind, unit=labels.shape[1])


def _figure(score: Score | None, figure: str) -> float | None:
    if score is None or not score.scored:
        return None
    return float(score.explanation[figure])


def run_ragchecker(
    instances: Sequence[RagcheckerInstance],
    *,
    metric: Metric | None = None,
    judge: str | Judge = "local",
    out_dir: Path | None = None,
    cache: bool | str | Path = True,
    max_workers: int = 1,
    on_score: Callable[[Score], None] | None = None,
    judge_options: Mapping[str, Any] | None = None,
    executor: Executor | RayExecutor | RayPool = "threads",
    pairwise: bool = False,
    on_pair: Callable[[Battle], None] | None = None,
) -> RagcheckerReport:
    """Score both answers of every instance with answer correctness (resumably, under
    ``out_dir``) and correlate the differences with the annotators' labels; with ``pairwise``,
    also decide the instances as arena pairs (see the module's docstring), calling
    ``on_pair`` with each decision."""
    metric = metric or metric_by_name("answer_correctness")
    if metric.name != "answer_correctness":
        raise ValueError(f"RAGChecker's protocol reads answer_correctness, not {metric.name!r}")
    if pairwise:
        if executor != "threads":
            raise ValueError("the pairwise decisions are made in this process: leave out Ray")
        if out_dir is None:
            raise ValueError("the pairwise decisions need a results folder (out_dir)")
        # One judge for both measurements: a local model loads once, and the claims method's
        # checks are answered by the call cache from answer correctness's.
        judge, judge_options = open_judge(judge, cache, judge_options), None
        cache = False
    result = evaluate(
        [s for i in instances for s in i.samples],
        [metric],
        judge=judge,
        out_dir=out_dir,
        cache=cache,
        max_workers=max_workers,
        on_score=on_score,
        judge_options=judge_options,
        executor=executor,
    )
    scores = {s.sample_id: s for s in result.scores}
    (summary,) = result.summary()
    timed: dict[str, float] = {}
    calls = claims = 0
    for score in result.scores:
        if score.usage.model_calls and score.scored:
            instance = score.sample_id.rsplit("/", 1)[0]
            timed[instance] = timed.get(instance, 0.0) + score.seconds
            calls += score.usage.model_calls
            claims += len(score.explanation["answer_claims"]) + len(
                score.explanation["reference_claims"]
            )
    return RagcheckerReport(
        correlations=agreement(instances, scores),
        unscored_reasons=summary.unscored_reasons,
        seconds_per_instance=median(timed.values()) if timed else None,
        checks_per_claim=calls / claims if claims else None,
        judge=result.run.judge,
        pairwise=(
            pairwise_agreement(instances, scores, judge, out_dir, on_pair)  # type: ignore[arg-type]
            if pairwise
            else None
        ),
    )


def ragchecker_pairs(instances: Sequence[RagcheckerInstance]) -> list[Pair]:
    """Each instance as arena pairs, one per annotator: the first response as answer A, the
    second as B, the ground truth as the reference, the sign of the annotator's overall label
    as the preference (positive prefers the second, as the arena's 1 prefers B)."""
    pairs = []
    for instance in instances:
        first, second = instance.samples
        for annotator, label in enumerate(instance.labels["overall"], 1):
            pairs.append(
                Pair(
                    id=f"{instance.instance}/{annotator}",
                    question=first.question,
                    answer_a=first.answer,
                    answer_b=second.answer,
                    system_a=str(first.metadata["system"]),
                    system_b=str(second.metadata["system"]),
                    question_id=instance.instance,
                    domain=instance.domain,
                    label=sign(label),
                    reference=first.reference,
                )
            )
    return pairs


def pairwise_agreement(
    instances: Sequence[RagcheckerInstance],
    scores: Mapping[str, Score],
    judge: Judge,
    out_dir: Path,
    on_pair: Callable[[Battle], None] | None = None,
) -> dict[str, AgreementStats]:
    """Kappa, accuracy and the rest of each row of ``PAIRWISE_ROWS`` against the annotators'
    overall preferences. Each method's decisions are an arena run of their own, resumable, in
    ``out_dir/pairwise-<method>``; ``scores`` is answer correctness by sample id, and a pair
    with an unscored answer is left out of the F1 row."""
    pairs = ragchecker_pairs(instances)
    reports = {
        method: agreement_report(
            judge_pairs(
                pairs,
                judge=judge,
                out_dir=Path(out_dir) / f"pairwise-{method}",
                method=method,
                cache=False,
                on_battle=on_pair,
            )
        )
        for method in PAIRWISE_METHODS
    }
    differences = []
    for pair in pairs:
        first, second = (scores.get(f"{pair.question_id}/{r}") for r in RESPONSES)
        if first is not None and second is not None and first.scored and second.scored:
            f1_first, f1_second = (float(s.explanation["f1"]) for s in (first, second))
            differences.append((sign(f1_second - f1_first), pair.label))
    rows = {"claims": reports["claims"].verdict, "generative": reports["generative"].verdict}
    if reports["claims"].longer_answer is not None:
        rows["longer answer"] = reports["claims"].longer_answer
    rows["f1 difference"] = label_agreement(
        [d for d, _ in differences],
        [label for _, label in differences],  # type: ignore[misc]
    )
    return rows
