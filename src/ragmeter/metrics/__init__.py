"""The RAGAS metrics, by name."""

from __future__ import annotations

import json
from typing import Any

from ragmeter.metrics.answer_relevance import AnswerRelevance
from ragmeter.metrics.base import Metric
from ragmeter.metrics.context_relevance import ContextRelevance
from ragmeter.metrics.faithfulness import Faithfulness

METRICS: dict[str, type[Metric]] = {
    m.name: m for m in (Faithfulness, AnswerRelevance, ContextRelevance)
}


def metric_by_name(name: str, **options: Any) -> Metric:
    """Build a metric from its name and constructor options."""
    try:
        factory = METRICS[name.strip()]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None
    try:
        return factory(**options)
    except TypeError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_metric_options(items: list[str]) -> dict[str, dict[str, Any]]:
    """``["faithfulness.verdicts=generate", "answer_relevance.n=5"]`` ->
    ``{"faithfulness": {"verdicts": "generate"}, "answer_relevance": {"n": 5}}``."""
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        target, sep, value = item.partition("=")
        metric, dot, param = target.partition(".")
        if not (sep and dot and metric and param):
            raise ValueError(f"metric option {item!r}: use METRIC.PARAM=VALUE")
        options.setdefault(metric.strip(), {})[param.strip()] = _value(value.strip())
    return options


__all__ = [
    "METRICS",
    "AnswerRelevance",
    "ContextRelevance",
    "Faithfulness",
    "Metric",
    "metric_by_name",
]
