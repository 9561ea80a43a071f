"""Quality checks in a test suite: score samples and fail, with the judge's reasons, when a score is
below its threshold or could not be computed.

The pytest plugin (``pytest_ragmeter``) hands a ``Scorer`` to tests as the ``ragmeter_scorer``
fixture; outside pytest, build one yourself, or check an ``evaluate()`` result with
``assert_thresholds``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmeter.config import DEFAULT_METRICS
from ragmeter.evaluate import evaluate
from ragmeter.explain import INDENT, explain, number
from ragmeter.judges import Embedder, Judge, resolve_models
from ragmeter.judges.cache import CallCache
from ragmeter.metrics import Metric, metric_by_name
from ragmeter.result import Result
from ragmeter.sample import Sample
from ragmeter.score import Score

Thresholds = Mapping[str | Metric, float]
"""The lowest passing score per metric, by name or as a configured metric."""

MAX_SHOWN_CHARS = 300
"""Longer questions and answers are cut in a failure message; the explanation is shown whole."""


def assert_thresholds(result: Result, thresholds: Mapping[str, float]) -> None:
    """Fail unless every sample's score for each metric in ``thresholds`` reaches its threshold.

    An unscored item fails whatever the threshold, and so does a sample with no score for the
    metric: a score that could not be computed says nothing about the answer. The message
    shows, for each failure, the metric, the score, the threshold, the sample and the metric's
    explanation, or the reason there is no score.

    Raises:
        AssertionError: listing every failure.
        ValueError: when a threshold names a metric the result has no scores of.
    """
    __tracebackhide__ = True  # pytest shows the message, not this function's body
    unknown = [metric for metric in thresholds if metric not in result.metrics]
    if unknown:  # else a misspelt name would be a check that can never fail
        raise ValueError(
            f"no scores of {', '.join(map(repr, unknown))} in this result "
            f"(its metrics: {', '.join(map(repr, result.metrics))})"
        )
    scores = {(score.sample_id, score.metric): score for score in result.scores}
    failures = []
    for sample in result.samples:
        for metric, threshold in thresholds.items():
            # A sample the run never judged fails too, as an item with no score.
            score = scores.get((sample.key, metric)) or Score(
                sample_id=sample.key,
                metric=metric,
                value=None,
                unscored_reason="not judged: the result holds no score for it",
            )
            if not _passes(score, threshold):
                failures.append(_failure(score, threshold, sample))
    if failures:
        checks = len(result.samples) * len(thresholds)
        models = f"judge {result.run.judge}" + (
            f", embedder {result.run.embedder}" if result.run.embedder else ""
        )
        heading = f"ragmeter: {len(failures)} of {checks} checks failed ({models})"
        raise AssertionError("\n\n".join([heading, *failures]))


def _passes(score: Score, threshold: float) -> bool:
    return score.value is not None and score.value >= threshold


def _failure(score: Score, threshold: float, sample: Sample) -> str:
    if score.value is None:
        head = f"{score.metric} unscored for sample {sample.key}: {score.unscored_reason}"
    else:
        head = (
            f"{score.metric} = {number(score.value)}, below the threshold {number(threshold)}, "
            f"for sample {sample.key}"
        )
    lines = [
        head,
        f"{INDENT}question: {_shown(sample.question)}",
        f"{INDENT}answer: {_shown(sample.answer)}",
        *[INDENT + line for line in explain(score, sample)],
    ]
    return "\n".join(lines)


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_SHOWN_CHARS else flat[:MAX_SHOWN_CHARS] + " […]"


class Scorer:
    """Scores samples with one judge and embedder, built on first use and kept for every later
    call (a local model loads once per test run), behind the call cache: a rerun of an unchanged
    check makes no model call.

    Args:
        judge: a spec (``"local"``, ``"openai:MODEL"``, ``"fake:FILE"``) or a ``Judge``.
        embedder: a spec or an ``Embedder``; MiniLM when None. Built only when a metric needs it.
        cache: the call cache: True for the user cache folder, a path, or False for none.
        judge_options: the judge provider's options, for a judge given by spec.
        embedder_options: the same for the embedder.
    """

    def __init__(
        self,
        judge: str | Judge = "local",
        embedder: str | Embedder | None = None,
        *,
        cache: bool | str | Path = True,
        judge_options: Mapping[str, Any] | None = None,
        embedder_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.judge = judge
        self.embedder = embedder
        self.cache = cache
        self.judge_options = dict(judge_options or {})
        self.embedder_options = dict(embedder_options or {})
        self._calls: CallCache | bool | None = None
        self._judge_model: Judge | None = None
        self._embed_model: Embedder | None = None

    def score(
        self, samples: Sample | Sequence[Sample], metrics: Sequence[str | Metric] | None = None
    ) -> Result:
        """Score ``samples`` with ``metrics`` (all three RAGAS metrics by default)."""
        chosen = [
            metric_by_name(m) if isinstance(m, str) else m for m in metrics or DEFAULT_METRICS
        ]
        judge, embedder = self._models(needs_embedder=any(m.needs_embedder for m in chosen))
        # The models already sit behind this scorer's call cache: evaluate adds no second one.
        return evaluate(
            [samples] if isinstance(samples, Sample) else list(samples),
            chosen,
            judge=judge,
            embedder=embedder,
            cache=False,
        )

    def assert_scores(
        self,
        samples: Sample | Sequence[Sample],
        thresholds: Thresholds | None = None,
        /,
        **by_name: float,
    ) -> Result:
        """Score ``samples`` and fail unless each reaches every threshold (see
        ``assert_thresholds``); returns the result when all pass.

        Thresholds are given by metric name (``faithfulness=0.8``) or, for a metric with options,
        as a mapping (``{Faithfulness(verdicts="generate"): 0.8}``).
        """
        __tracebackhide__ = True
        wanted: dict[str | Metric, float] = {**(thresholds or {}), **by_name}
        if not wanted:
            raise ValueError("give at least one threshold, e.g. faithfulness=0.8")
        metrics = [metric_by_name(m) if isinstance(m, str) else m for m in wanted]
        result = self.score(samples, metrics)
        assert_thresholds(
            result,
            {
                metric.name: threshold
                for metric, threshold in zip(metrics, wanted.values(), strict=True)
            },
        )
        return result

    def _models(self, needs_embedder: bool) -> tuple[Judge, Embedder | None]:
        """The judge and, once a metric needs it, the embedder, each built through
        ``resolve_models`` (as ``evaluate`` builds them) the first time it is needed."""
        if self._calls is None:
            self._calls = (
                CallCache(None if self.cache is True else self.cache) if self.cache else False
            )
        if self._judge_model is None:
            self._judge_model, _ = resolve_models(
                self.judge,
                cache=self._calls,
                needs_embedder=False,
                judge_options=self.judge_options,
            )
        if needs_embedder and self._embed_model is None:
            # The judge given here is already built; only the embedder is taken from the reply.
            _, self._embed_model = resolve_models(
                self._judge_model,
                self.embedder,
                cache=self._calls,
                embedder_options=self.embedder_options,
            )
        return self._judge_model, self._embed_model
