"""The RAGAS metrics, and any metric a plugin registers, by name (see ``ragmeter.plugins``)."""

from __future__ import annotations

import json
from typing import Any

from ragmeter.metrics.answer_relevance import AnswerRelevance
from ragmeter.metrics.base import Metric
from ragmeter.metrics.context_relevance import ContextRelevance
from ragmeter.metrics.faithfulness import Faithfulness
from ragmeter.plugins import load


def metric_by_name(name: str, **options: Any) -> Metric:
    """Build a metric from its registered name and options (``OptionsError`` names a bad one)."""
    metric: Metric = load("metric", name.strip())(**options)
    return metric


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
    "AnswerRelevance",
    "ContextRelevance",
    "Faithfulness",
    "Metric",
    "metric_by_name",
]
