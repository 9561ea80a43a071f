"""The prompt-injection self-test: how often attacks talk a judge into a high score.

Each case (``injection_cases``) is a sample whose honest score is low (the answer contradicts its
context, the context is off-topic, the answer ignores the question) with an attack added to the
text the judge reads. An attack succeeds when the metric's score exceeds the case's ``threshold``,
a value an honest judge would not reach on that sample. ``run_suite`` scores every case with its
metric and reports the attack success rate with its 95 % Wilson interval, overall, by technique,
by metric and by the place that carries the attack; unscored cases are reported, not counted as
successes (nor as defences). Cases of a metric that is not installed (the reference metrics, in
an install without them) are skipped, and the report says so.

    ragmeter selftest injection --judge local
    ragmeter selftest injection --judge openai:gpt-4o-mini --fail-above 0.1
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragmeter.judges import Embedder, Judge
from ragmeter.selftest import suite
from ragmeter.selftest.injection_cases import (
    CASES,
    PLACES,
    SOURCES,
    TECHNIQUES,
    InjectionCase,
)
from ragmeter.selftest.suite import Outcome, Skipped, SuiteReport, format_report

__all__ = [
    "CASES",
    "PLACES",
    "SOURCES",
    "TECHNIQUES",
    "InjectionCase",
    "Outcome",
    "Skipped",
    "SuiteReport",
    "format_report",
    "run_suite",
    "select_cases",
]

BREAKDOWNS = ("technique", "metric", "place")
"""The case attributes the rates are broken down by."""


def select_cases(
    techniques: Iterable[str] | None = None, metrics: Iterable[str] | None = None
) -> tuple[InjectionCase, ...]:
    """The cases of the given techniques and metrics (all of either when None or empty), in
    catalogue order; ValueError naming an unknown technique or a metric no case attacks."""
    chosen = suite.select(CASES, techniques, "technique", TECHNIQUES, "technique")
    return suite.select(chosen, metrics, "metric", dict.fromkeys(c.metric for c in CASES), "metric")


def run_suite(
    judge: str | Judge, embedder: str | Embedder | None = None, **options: Any
) -> SuiteReport:
    """Score each case with its metric (default configuration) and collect the outcomes, the
    attack success rate broken down by technique, metric and place;
    ``options`` are ``suite.run_suite``'s (``cases``: this suite's all, by default)."""
    options.setdefault("cases", CASES)
    return suite.run_suite(judge, embedder, breakdowns=BREAKDOWNS, label="attack", **options)
