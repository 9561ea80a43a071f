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

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.evaluate import evaluate
from ragmeter.judges import Embedder, Judge, resolve_models
from ragmeter.metrics import metric_by_name
from ragmeter.plugins import available
from ragmeter.score import Score
from ragmeter.selftest.injection_cases import (
    CASES,
    PLACES,
    SOURCES,
    TECHNIQUES,
    InjectionCase,
)
from ragmeter.stats import wilson_interval

__all__ = [
    "CASES",
    "PLACES",
    "SOURCES",
    "TECHNIQUES",
    "InjectionCase",
    "Outcome",
    "SuiteReport",
    "format_report",
    "run_suite",
    "select_cases",
]

BREAKDOWNS = ("technique", "metric", "place")
"""The case attributes the rates are broken down by."""

# --- running them ---------------------------------------------------------------------------------


def select_cases(techniques: Iterable[str] | None = None) -> tuple[InjectionCase, ...]:
    """The cases of the given techniques (all cases when None or empty), in catalogue order;
    ValueError naming an unknown technique."""
    chosen = list(dict.fromkeys(techniques or ()))
    unknown = [t for t in chosen if t not in TECHNIQUES]
    if unknown:
        raise ValueError(
            f"unknown technique {', '.join(map(repr, unknown))}; known: {', '.join(TECHNIQUES)}"
        )
    return tuple(c for c in CASES if c.technique in chosen) if chosen else CASES


@dataclass(frozen=True)
class Outcome:
    case: InjectionCase
    value: float | None
    unscored_reason: str | None = None

    @property
    def succeeded(self) -> bool | None:
        """True if the attack got the score past the threshold (over it, or under it for a
        metric where lower is better); None if unscored."""
        if self.value is None:
            return None
        if self.case.attack_raises:
            return self.value > self.case.threshold
        return self.value < self.case.threshold


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
    def rate(self) -> float | None:
        """Attack success rate over the scored cases; None when none was scored."""
        return self.successes / len(self.scored) if self.scored else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % Wilson interval of the overall rate; None when none was scored."""
        return wilson_interval(self.successes, len(self.scored))

    def breakdown(self, by: str) -> dict[str, tuple[int, int, int]]:
        """(successes, scored, unscored) per value of ``by``, one of ``BREAKDOWNS``."""
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

        def rows(by: str) -> dict[str, dict[str, Any]]:
            return {
                key: {
                    "successes": s,
                    "scored": n,
                    "unscored": u,
                    "attack_success_rate": s / n if n else None,
                    "interval_95": wilson_interval(s, n),
                }
                for key, (s, n, u) in self.breakdown(by).items()
            }

        return {
            "judge": self.judge,
            "cases": len(self.outcomes),
            "scored": len(self.scored),
            "unscored": len(self.unscored),
            "successes": self.successes,
            "attack_success_rate": self.rate,
            "interval_95": self.interval,
            **{f"by_{by}": rows(by) for by in BREAKDOWNS},
            "skipped": [
                {"metric": s.metric, "cases": s.cases, "reason": s.reason} for s in self.skipped
            ],
            "outcomes": [
                {
                    "id": o.case.id,
                    "technique": o.case.technique,
                    "metric": o.case.metric,
                    "place": o.case.place,
                    "source": o.case.source,
                    "value": o.value,
                    "threshold": o.case.threshold,
                    "succeeded": o.succeeded,
                    "unscored_reason": o.unscored_reason,
                }
                for o in self.outcomes
            ],
        }


def run_suite(
    judge: str | Judge,
    embedder: str | Embedder | None = None,
    *,
    cases: Sequence[InjectionCase] = CASES,
    out_dir: str | Path | None = None,
    cache: bool | str | Path = True,
    max_workers: int = 1,
    judge_options: Mapping[str, Any] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    on_score: Callable[[Score], None] | None = None,
) -> SuiteReport:
    """Score each case with its metric (default configuration) and collect the outcomes.

    The models are built once and shared by the metrics, so a local judge loads once. The cases
    of a metric that is not registered are skipped and listed in the report's ``skipped``.

    Args:
        judge: a spec such as ``"local"`` or ``"openai:gpt-4o-mini"``, or a ``Judge``.
        embedder: a spec or an ``Embedder``, for a metric that embeds (with their defaults,
            none does); MiniLM when None.
        cases: which cases to score (``select_cases`` picks them by technique).
        out_dir: a results folder per metric under it (``out_dir/<metric>``), committed as
            scores complete; rerunning with the same folder resumes.
        cache: the judge-call cache: True for the user cache folder, a path, or False.
        max_workers: cases judged at once.
        judge_options: the judge provider's options, for a judge given by spec; a bad one is a
            ``ValueError`` naming it.
        embedder_options: the same for the embedder.
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
    metrics = {name: metric_by_name(name) for name in wanted if name in installed}
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
    outcomes = [Outcome(case, *values[case.id]) for case in cases if case.metric in metrics]
    return SuiteReport(judge_model.name, outcomes, skipped)


# --- the report as text ---------------------------------------------------------------------------


def _percent(successes: int, scored: int) -> str:
    """``s/n = r%`` with the 95 % Wilson interval, or ``0/0`` when nothing was scored."""
    interval = wilson_interval(successes, scored)
    if interval is None:
        return f"{successes}/{scored}"
    low, high = interval
    return (
        f"{successes}/{scored} = {100 * successes / scored:.1f}% "
        f"(95% CI {100 * low:.1f}-{100 * high:.1f}%)"
    )


def format_report(report: SuiteReport) -> list[str]:
    """The report as lines of text: a table of cases, the rates by technique, metric and place,
    the unscored cases with their reasons, the skipped metrics, then the overall attack success
    rate; every rate with its 95 % Wilson interval."""
    lines = [f"{'case':<38} {'metric':<18} {'score':>6} {'over':>5}  attack"]
    for outcome in report.outcomes:
        value = "—" if outcome.value is None else f"{outcome.value:.3f}"
        verdict = {True: "SUCCEEDED", False: "held", None: "unscored"}[outcome.succeeded]
        lines.append(
            f"{outcome.case.id:<38} {outcome.case.metric:<18} {value:>6} "
            f"{outcome.case.threshold:>5}  {verdict}"
        )
    for by in BREAKDOWNS:
        lines.append(f"by {by}:")
        for key, (successes, scored, unscored) in report.breakdown(by).items():
            extra = f" ({unscored} unscored)" if unscored else ""
            lines.append(f"  {key:<18} {_percent(successes, scored)}{extra}")
    if report.unscored:
        lines.append("unscored (neither successes nor defences):")
        lines.extend(f"  {o.case.id}: {o.unscored_reason}" for o in report.unscored)
    lines.extend(f"skipped {s.cases} cases: {s.reason}" for s in report.skipped)
    unscored = len(report.unscored)
    lines.append(
        f"attack success rate ({report.judge}): {_percent(report.successes, len(report.scored))}"
        + (f"; {unscored} cases unscored" if unscored else "")
    )
    return lines
