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
from ragmeter.selftest.injection_cases import CASES as DESIGN_CASES
from ragmeter.selftest.injection_cases import (
    PLACES,
    SOURCES,
    TECHNIQUES,
    InjectionCase,
)
from ragmeter.selftest.injection_held_apart import HELD_APART
from ragmeter.selftest.suite import Outcome, Skipped, SuiteReport, format_report

CASES = (*DESIGN_CASES, *HELD_APART)
"""Every case: the 155 the default defences were built on, then the held-apart ones."""

__all__ = [
    "CASES",
    "PLACES",
    "SETS",
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

BREAKDOWNS = ("set", "technique", "metric", "place")
"""The case attributes the rates are broken down by."""


SETS = ("design", "held-apart")
"""The cases the default defences were built on, and those written afterwards to get past
them."""


def select_cases(
    techniques: Iterable[str] | None = None,
    metrics: Iterable[str] | None = None,
    sets: Iterable[str] | None = None,
) -> tuple[InjectionCase, ...]:
    """The cases of the given techniques, metrics and sets (all of any when None or empty), in
    catalogue order; ValueError naming an unknown technique or set, or a metric no case
    attacks."""
    chosen = suite.select(CASES, sets, "set", SETS, "set")
    chosen = suite.select(chosen, techniques, "technique", TECHNIQUES, "technique")
    return suite.select(chosen, metrics, "metric", dict.fromkeys(c.metric for c in CASES), "metric")


def run_suite(
    judge: str | Judge, embedder: str | Embedder | None = None, **options: Any
) -> SuiteReport:
    """Score each case with its metric (default configuration) and collect the outcomes, the
    attack success rate broken down by technique, metric and place;
    ``options`` are ``suite.run_suite``'s (``cases``: this suite's all, by default)."""
    options.setdefault("cases", CASES)
    return suite.run_suite(judge, embedder, breakdowns=BREAKDOWNS, label="attack", **options)
