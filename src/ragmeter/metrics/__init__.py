"""The RAGAS metrics, the reference metrics, the ready criteria and any metric a plugin registers,
by name (see ``ragmeter.plugins``); ``diagnosis`` names a group of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.metrics.answer_relevance import AnswerRelevance
from ragmeter.metrics.base import Metric
from ragmeter.metrics.context_relevance import ContextRelevance
from ragmeter.metrics.diagnosis import DIAGNOSIS
from ragmeter.metrics.faithfulness import Faithfulness
from ragmeter.plugins import available, load

GROUPS: dict[str, tuple[str, ...]] = {"diagnosis": DIAGNOSIS}
"""Names that stand for several metrics, shown together."""


def metric_names(names: Sequence[str]) -> list[str]:
    """``names`` with each group replaced by its metrics, each metric once, in order."""
    expanded = [member for name in names for member in GROUPS.get(name.strip(), (name.strip(),))]
    return list(dict.fromkeys(expanded))


def higher_is_better(name: str) -> bool:
    """Whether a rise of the metric ``name`` is an improvement; True for a name not
    registered here (a run's metric whose plugin is not installed, or a criterion of the
    run's own)."""
    try:
        return bool(load("metric", name).higher_is_better)
    except (ValueError, ImportError, AttributeError):
        return True


def metric_by_name(name: str, **options: Any) -> Metric:
    """Build a metric from its registered name and options (``OptionsError`` names a bad one).

    ``NAME@K`` is the metric ``NAME`` with its cutoff option ``k`` set to K (``ndcg@5``,
    ``recall@100``), so that a column's name builds its metric and one run can hold a metric
    at several cutoffs."""
    name = name.strip()
    base, at, cutoff = name.rpartition("@")
    if at and name not in available("metric") and base in available("metric"):
        if not cutoff.isdigit():
            raise ValueError(f"the metric {name!r}: the cutoff after '@' is not a whole number")
        if "k" in options:
            raise ValueError(f"the metric {name!r} has its cutoff in its name: drop its option k")
        name, options = base, {**options, "k": int(cutoff)}
    factory = load("metric", name)
    try:
        metric: Metric = factory(**options)
    except TypeError as exc:  # a plugin metric with its own constructor, given an unknown option
        raise ValueError(f"options for the metric {name!r}: {exc}") from None
    return metric


__all__ = [
    "GROUPS",
    "AnswerRelevance",
    "ContextRelevance",
    "Faithfulness",
    "Metric",
    "metric_by_name",
    "metric_names",
]
