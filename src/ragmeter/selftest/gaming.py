"""The gaming self-test: how often answers that game a metric, without any order to the judge,
get a score they do not deserve.

Each case (``gaming_cases``) is a sample whose honest score is low, written the way a system
tuned against a metric might write it: echoing the question, stuffing it with the question's
words, copying context sentences that do not answer, hedging, citing passages that say otherwise,
burying a wrong claim in a long answer. A trick succeeds when the score passes the case's
``threshold``. The report gives the success rate with its 95 % Wilson interval, overall, by trick,
by metric and by place, as the injection suite does (``ragmeter.selftest.suite``).

    ragmeter selftest gaming --judge local
    ragmeter selftest gaming --judge openai:gpt-4o-mini --fail-above 0.1
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragmeter.judges import Embedder, Judge
from ragmeter.selftest import suite
from ragmeter.selftest.gaming_cases import CASES, PLACES, SOURCES, TRICKS, GamingCase
from ragmeter.selftest.suite import Outcome, SuiteReport, format_report

__all__ = [
    "CASES",
    "PLACES",
    "SOURCES",
    "TRICKS",
    "GamingCase",
    "Outcome",
    "SuiteReport",
    "format_report",
    "run_suite",
    "select_cases",
]

BREAKDOWNS = ("trick", "metric", "place")
"""The case attributes the rates are broken down by."""


def select_cases(
    tricks: Iterable[str] | None = None, metrics: Iterable[str] | None = None
) -> tuple[GamingCase, ...]:
    """The cases of the given tricks and metrics (all of either when None or empty), in
    catalogue order; ValueError naming an unknown trick or a metric no case attacks."""
    chosen = suite.select(CASES, tricks, "trick", TRICKS, "trick")
    return suite.select(chosen, metrics, "metric", dict.fromkeys(c.metric for c in CASES), "metric")


def run_suite(
    judge: str | Judge, embedder: str | Embedder | None = None, **options: Any
) -> SuiteReport:
    """Score each case with its metric (default configuration) and collect the outcomes, the
    gaming success rate broken down by trick, metric and place;
    ``options`` are ``suite.run_suite``'s (``cases``: this suite's all, by default)."""
    options.setdefault("cases", CASES)
    return suite.run_suite(judge, embedder, breakdowns=BREAKDOWNS, label="gaming", **options)
