"""The RAGAS metrics, and any metric a plugin registers, by name (see ``ragmeter.plugins``)."""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.answer_relevance import AnswerRelevance
from ragmeter.metrics.base import Metric
from ragmeter.metrics.context_relevance import ContextRelevance
from ragmeter.metrics.faithfulness import Faithfulness
from ragmeter.plugins import load


def metric_by_name(name: str, **options: Any) -> Metric:
    """Build a metric from its registered name and options (``OptionsError`` names a bad one)."""
    factory = load("metric", name.strip())
    try:
        metric: Metric = factory(**options)
    except TypeError as exc:  # a plugin metric with its own constructor, given an unknown option
        raise ValueError(f"options for the metric {name!r}: {exc}") from None
    return metric


__all__ = [
    "AnswerRelevance",
    "ContextRelevance",
    "Faithfulness",
    "Metric",
    "metric_by_name",
]
