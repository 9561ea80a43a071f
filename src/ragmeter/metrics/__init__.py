"""The RAGAS metrics, by name."""

from __future__ import annotations

from ragmeter.metrics.answer_relevance import AnswerRelevance
from ragmeter.metrics.base import Metric
from ragmeter.metrics.context_relevance import ContextRelevance
from ragmeter.metrics.faithfulness import Faithfulness

METRICS: dict[str, type[Metric]] = {
    m.name: m for m in (Faithfulness, AnswerRelevance, ContextRelevance)
}


def metric_by_name(name: str) -> Metric:
    try:
        return METRICS[name.strip()]()
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None


__all__ = [
    "METRICS",
    "AnswerRelevance",
    "ContextRelevance",
    "Faithfulness",
    "Metric",
    "metric_by_name",
]
