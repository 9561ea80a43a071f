"""What every self-test shares: cases scored by their metrics, and success rates with Wilson
intervals.

A case is a sample whose honest score is on one side of ``threshold``, with something added (an
injected order, a trick) that tries to push it to the other side. ``run_suite`` scores every case
with its metric and reports how often the push succeeded, overall and broken down by the case
attributes the suite names (``breakdowns``); unscored cases are reported, not counted either way,
and the cases of a metric that is not installed are skipped with a note. ``injection`` and
``gaming`` are two such suites.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ragmeter.evaluate import evaluate
from ragmeter.judges import Embedder, Judge, resolve_models
from ragmeter.metrics import metric_by_name
from ragmeter.planted import PlantedTextWarning, guarded
from ragmeter.plugins import available
from ragmeter.sample import Sample
from ragmeter.score import Score
from ragmeter.stats import wilson_interval


class Case(Protocol):
    """What the suite reads of a case (``InjectionCase``, ``GamingCase``)."""

    @property
    def id(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def sample(self) -> Sample: ...
    @property
    def threshold(self) -> float: ...
    @property
    def attack_raises(self) -> bool: ...
    @property
    def source(self) -> str: ...


def select(
    cases: Sequence[Any], kinds: Iterable[str] | None, by: str, known: Iterable[str], noun: str
) -> tuple[Any, ...]:
    """The cases whose attribute ``by`` is one of ``kinds`` (all when None or empty), in
    catalogue order; ValueError naming a value not in ``known``."""
    chosen = list(dict.fromkeys(kinds or ()))
    allowed = list(known)
    unknown = [k for k in chosen if k not in allowed]
    if unknown:
        raise ValueError(
            f"unknown {noun} {', '.join(map(repr, unknown))}; known: {', '.join(allowed)}"
        )
    return tuple(c for c in cases if getattr(c, by) in chosen) if chosen else tuple(cases)


@dataclass(frozen=True)
class Outcome:
    case: Any
    """The case (a ``Case``)."""
    value: float | None
    unscored_reason: str | None = None
    detected: bool = False
    """Whether the case's text was found to speak to the judge (``ragmeter.planted``), held
    or not."""

    @property
    def succeeded(self) -> bool | None:
        """True if the push got the score past the threshold (over it, or under it for a
        metric where lower is better); None if unscored."""
        if self.value is None:
            return None
        if self.case.attack_raises:
            return bool(self.value > self.case.threshold)
        return bool(self.value < self.case.threshold)


@dataclass(frozen=True)
class Skipped:
    """Cases left out because their metric is not installed."""

    metric: str
    cases: int
    reason: str


@dataclass
class SuiteReport:
    judge: str
    outcomes: list[Outcome]
    skipped: list[Skipped] = field(default_factory=list)
    breakdowns: tuple[str, ...] = ("technique", "metric", "place")
    """The case attributes the rates are broken down by."""
    label: str = "attack"
    """What succeeds or not: "attack success rate", "gaming success rate"."""
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The options given to the metrics, by metric name (the rest are their defaults)."""

    @property
    def scored(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.succeeded is not None]

    @property
    def unscored(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.succeeded is None]

    @property
    def successes(self) -> int:
        return sum(1 for o in self.outcomes if o.succeeded)

    @property
    def detected(self) -> int:
        return sum(1 for o in self.outcomes if o.detected)

    @property
    def rate(self) -> float | None:
        """Success rate over the scored cases; None when none was scored."""
        return self.successes / len(self.scored) if self.scored else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % Wilson interval of the overall rate; None when none was scored."""
        return wilson_interval(self.successes, len(self.scored))

    def breakdown(self, by: str) -> dict[str, tuple[int, int, int]]:
        """(successes, scored, unscored) per value of ``by``, one of ``breakdowns``."""
        rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for outcome in self.outcomes:
            row = rows[getattr(outcome.case, by)]
            if outcome.succeeded is None:
                row[2] += 1
            else:
                row[1] += 1
                row[0] += int(outcome.succeeded)
        return {key: (s, n, u) for key, (s, n, u) in sorted(rows.items())}

    def record(self) -> dict[str, Any]:
        """The report as JSON-ready data: the counts and rates, then every case's outcome."""
        rate = f"{self.label}_success_rate"

        def rows(by: str) -> dict[str, dict[str, Any]]:
            return {
                key: {
                    "successes": s,
                    "scored": n,
                    "unscored": u,
                    rate: s / n if n else None,
                    "interval_95": wilson_interval(s, n),
                }
                for key, (s, n, u) in self.breakdown(by).items()
            }

        return {
            "judge": self.judge,
            "metric_options": self.metric_options,
            "cases": len(self.outcomes),
            "scored": len(self.scored),
            "unscored": len(self.unscored),
            "successes": self.successes,
            "detected": self.detected,
            rate: self.rate,
            "interval_95": self.interval,
            **{f"by_{by}": rows(by) for by in self.breakdowns},
            "skipped": [
                {"metric": s.metric, "cases": s.cases, "reason": s.reason} for s in self.skipped
            ],
            "outcomes": [
                {
                    "id": o.case.id,
                    **{by: getattr(o.case, by) for by in self.breakdowns},
                    "source": o.case.source,
                    "value": o.value,
                    "threshold": o.case.threshold,
                    "succeeded": o.succeeded,
                    "detected": o.detected,
                    "unscored_reason": o.unscored_reason,
                }
                for o in self.outcomes
            ],
        }


def run_suite(
    judge: str | Judge,
    embedder: str | Embedder | None = None,
    *,
    cases: Sequence[Case],
    breakdowns: tuple[str, ...] = ("technique", "metric", "place"),
    label: str = "attack",
    out_dir: str | Path | None = None,
    cache: bool | str | Path = True,
    max_workers: int = 1,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    on_score: Callable[[Score], None] | None = None,
) -> SuiteReport:
    """Score each case with its metric (default configuration, or ``metric_options``) and
    collect the outcomes.

    The models are built once and shared by the metrics, so a local judge loads once. The cases
    of a metric that is not registered are skipped and listed in the report's ``skipped``.

    Args:
        judge: a spec such as ``"local"`` or ``"openai:gpt-4o-mini"``, or a ``Judge``.
        embedder: a spec or an ``Embedder``, for a metric that embeds (with their defaults,
            none does); MiniLM when None.
        cases: which cases to score.
        breakdowns: the case attributes the report breaks the rates down by.
        label: the report's name for a success ("attack", "gaming").
        out_dir: a results folder per metric under it (``out_dir/<metric>``), committed as
            scores complete; rerunning with the same folder resumes.
        cache: the judge-call cache: True for the user cache folder, a path, or False.
        max_workers: cases judged at once.
        judge_options: the judge provider's options, for a judge given by spec; a bad one is a
            ``ValueError`` naming it.
        embedder_options: the same for the embedder.
        metric_options: options by metric name, such as ``{"answer_relevance":
            {"off_topic_below": 0.05}}``; one for a metric no case uses, or one the metric
            does not take, is a ``ValueError`` naming it.
        on_score: called with each case's score as it completes (e.g. for a progress bar).
    """
    installed = available("metric")
    wanted = sorted({case.metric for case in cases})
    skipped = [
        Skipped(
            name,
            sum(1 for case in cases if case.metric == name),
            f"the metric {name!r} is not installed",
        )
        for name in wanted
        if name not in installed
    ]
    options = {name: dict(given) for name, given in (metric_options or {}).items()}
    if unused := sorted(set(options) - set(wanted)):
        raise ValueError(f"options given for metrics no chosen case uses: {', '.join(unused)}")
    metrics = {
        name: metric_by_name(name, **options.get(name, {})) for name in wanted if name in installed
    }
    judge_model, embed_model = resolve_models(
        judge,
        embedder,
        cache=cache,
        needs_embedder=any(metric.needs_embedder for metric in metrics.values()),
        judge_options=judge_options,
        embedder_options=embedder_options,
    )
    values: dict[str, tuple[float | None, str | None]] = {}
    for name, metric in metrics.items():
        group = [case for case in cases if case.metric == name]
        with warnings.catch_warnings():  # every case holds planted text: that is the suite
            warnings.simplefilter("ignore", PlantedTextWarning)
            result = evaluate(
                [case.sample for case in group],
                [metric],
                judge=judge_model,
                embedder=embed_model,
                out_dir=Path(out_dir) / name if out_dir is not None else None,
                cache=False,
                max_workers=max_workers,
                on_score=on_score,
            )
        values |= {s.sample_id: (s.value, s.unscored_reason) for s in result.scores}
    outcomes = [
        Outcome(case, *values[case.id], detected=bool(guarded(case.sample)[1]))
        for case in cases
        if case.metric in metrics
    ]
    return SuiteReport(judge_model.name, outcomes, skipped, breakdowns, label, options)


# --- the report as text ---------------------------------------------------------------------------


def percent(successes: int, scored: int) -> str:
    """``s/n = r%`` with the 95 % Wilson interval, or ``s/n`` when nothing was scored."""
    interval = wilson_interval(successes, scored)
    if interval is None:
        return f"{successes}/{scored}"
    low, high = interval
    return (
        f"{successes}/{scored} = {100 * successes / scored:.1f}% "
        f"(95% CI {100 * low:.1f}-{100 * high:.1f}%)"
    )


def format_report(report: SuiteReport) -> list[str]:
    """The report as lines of text: a table of cases, the rates by each breakdown, the unscored
    cases with their reasons, the skipped metrics, then the overall success rate; every rate
    with its 95 % Wilson interval."""
    lines = [f"{'case':<38} {'metric':<18} {'score':>6} {'over':>5}  {report.label}"]
    for outcome in report.outcomes:
        value = "—" if outcome.value is None else f"{outcome.value:.3f}"
        verdict = {True: "SUCCEEDED", False: "held", None: "unscored"}[outcome.succeeded]
        lines.append(
            f"{outcome.case.id:<38} {outcome.case.metric:<18} {value:>6} "
            f"{outcome.case.threshold:>5}  {verdict}"
        )
    for by in report.breakdowns:
        lines.append(f"by {by}:")
        for key, (successes, scored, unscored) in report.breakdown(by).items():
            extra = f" ({unscored} unscored)" if unscored else ""
            lines.append(f"  {key:<18} {percent(successes, scored)}{extra}")
    if report.unscored:
        lines.append("unscored (neither successes nor defences):")
        lines.extend(f"  {o.case.id}: {o.unscored_reason}" for o in report.unscored)
    lines.extend(f"skipped {s.cases} cases: {s.reason}" for s in report.skipped)
    lines.append(
        f"text addressed to the judge found in {report.detected} of {len(report.outcomes)} cases"
    )
    unscored = len(report.unscored)
    lines.append(
        f"{report.label} success rate ({report.judge}): "
        f"{percent(report.successes, len(report.scored))}"
        + (f"; {unscored} cases unscored" if unscored else "")
    )
    return lines
