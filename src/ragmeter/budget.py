"""What an evaluation will cost before it runs, and a hard stop when it has cost enough.

Estimates count tokens approximately, as characters / 4 (OpenAI's rule of thumb for English; code
and other languages use more tokens per character), from the prompts the metrics would really
render, and follow each metric's call pattern as its ``planned_calls`` describes it (a metric
that does not describe one gets a guess: one call per prompt, the sample's text as the prompt).

Estimates assume every call reaches the model: no cache hits, and no retries or repairs.

A budget (``max_calls``, ``max_cost``) is checked before each call reaches the model; cached
calls are free. When it runs out, items in progress stop and are not saved (their finished calls
stay in the call cache); a rerun with a higher budget resumes where the run stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragmeter.judges.base import (
    ChatRequest,
    ChatResponse,
    InFlightLimit,
    Judge,
    Reply,
    Wrapper,
    answer_each,
    answers_batches,
    complete_each,
)
from ragmeter.judges.registry import split_spec
from ragmeter.limits import fit_sample
from ragmeter.metrics import Metric
from ragmeter.planted import guarded
from ragmeter.prompts import PlannedCalls, approx_tokens, rendered_tokens
from ragmeter.sample import Sample
from ragmeter.score import ScoreBrief

NOT_JUDGED = "not judged: "
"""How the reason of an item the budget stopped begins; such items are not saved."""


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


PRICES_AS_OF = "2025-06"
PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
}
"""OpenAI's list prices (standard tier) when written; pass a ``Price`` for anything else."""

FREE_PROVIDERS = frozenset({"local", "fake"})


def price_for(judge: str) -> Price | None:
    """The built-in price of a judge spec: free for in-process judges, the table for OpenAI
    models (a dated snapshot such as ``gpt-4o-mini-2024-07-18`` takes its alias's price), else
    None (unknown)."""
    provider, model = split_spec(judge)
    if provider in FREE_PROVIDERS:
        return Price(0.0, 0.0)
    if provider != "openai":
        return None
    for name in sorted(PRICES, key=len, reverse=True):
        if model == name or model.startswith(f"{name}-20"):
            return PRICES[name]
    return None


# --- the hard stop ----------------------------------------------------------------------------


def is_pending(score: ScoreBrief) -> bool:
    """True for an item the budget stopped before it was judged (not a failed item)."""
    return score.value is None and (score.unscored_reason or "").startswith(NOT_JUDGED)


class BudgetExhausted(Exception):
    """The budget does not allow another call. Deliberately not a ``JudgeError``: it must stop
    the item, not be retried or recorded as a failed call."""


@dataclass(frozen=True)
class Budget:
    """Limits on what one ``evaluate`` call may spend on model calls.

    Attributes:
        max_calls: judge calls that reach the model (cached calls and embeddings are free).
        max_cost: US dollars; a call is refused when its worst case (its prompt, by
            characters / 4, and all of its ``max_tokens``) would take the spend past this.
        price: the judge's price; when None, the built-in table for the judge's name.
    """

    max_calls: int | None = None
    max_cost: float | None = None
    price: Price | None = None

    def __post_init__(self) -> None:
        if self.max_calls is not None and self.max_calls < 0:
            raise ValueError("max_calls must be >= 0")
        if self.max_cost is not None and self.max_cost < 0:
            raise ValueError("max_cost must be >= 0")


class Meter:
    """Counts calls and dollars across threads and refuses a call the budget cannot cover.

    A call's worst-case cost is reserved before it is sent and replaced by its real cost (from
    the usage the server reports) when it returns, so concurrent workers cannot jointly
    overspend.
    """

    def __init__(self, budget: Budget, price: Price | None) -> None:
        if budget.max_cost is not None and price is None:
            raise ValueError(
                "max_cost needs the judge's price: give Budget(price=Price(input, output)) "
                "(US dollars per million tokens)"
            )
        self.budget = budget
        self.price = price
        self.calls = 0
        self.cost = 0.0
        self.exhausted = False
        self._reserved = 0.0
        self._lock = threading.Lock()

    def reserve(self, request: ChatRequest) -> float:
        """Count a call about to be sent and return its reserved cost; raises
        ``BudgetExhausted`` if the budget cannot cover it."""
        worst = (
            self.price.cost(rendered_tokens(request.messages), request.max_tokens)
            if self.price
            else 0.0
        )
        with self._lock:
            over_calls = self.budget.max_calls is not None and self.calls >= self.budget.max_calls
            over_cost = (
                self.budget.max_cost is not None
                and self.cost + self._reserved + worst > self.budget.max_cost
            )
            if over_calls or over_cost:
                self.exhausted = True
                raise BudgetExhausted(self.describe_limit())
            self.calls += 1
            self._reserved += worst
        return worst

    def settle(self, reserved: float, response: ChatResponse | None) -> None:
        """Replace a call's reservation by what it cost (nothing known for a failed call)."""
        spent = (
            self.price.cost(response.prompt_tokens, response.completion_tokens)
            if (self.price and response is not None)
            else 0.0
        )
        with self._lock:
            self._reserved -= reserved
            self.cost += spent

    def describe_limit(self) -> str:
        limits = []
        if self.budget.max_calls is not None:
            limits.append(f"max_calls={self.budget.max_calls}")
        if self.budget.max_cost is not None:
            limits.append(f"max_cost=${self.budget.max_cost:g}")
        return "the budget ran out (" + ", ".join(limits) + ")"

    def record(self) -> dict[str, Any]:
        return {
            "max_calls": self.budget.max_calls,
            "max_cost": self.budget.max_cost,
            "price_per_million": None if self.price is None else vars(self.price),
            "calls": self.calls,
            "cost": round(self.cost, 6) if self.price else None,
            "exhausted": self.exhausted,
        }


class Accounts(Protocol):
    """What a ``MeteredJudge`` draws on: this process's ``Meter``, or the one that Ray workers
    share (``cluster.SharedMeter``)."""

    def reserve(self, request: ChatRequest) -> float: ...

    def settle(self, reserved: float, response: ChatResponse | None) -> None: ...


class MeteredJudge(Wrapper):
    """A judge whose calls pass the meter first. Put it under the call cache, so that cached
    calls never reach it and cost nothing."""

    def __init__(self, inner: Judge, meter: Accounts) -> None:
        super().__init__(inner)
        self.meter = meter

    def complete(self, request: ChatRequest) -> ChatResponse:
        reserved = self.meter.reserve(request)
        try:
            response = self.inner.complete(request)
        except BaseException:
            self.meter.settle(reserved, None)
            raise
        self.meter.settle(reserved, response)
        return response

    def complete_batch(self, requests: Sequence[ChatRequest], concurrency: int = 1) -> list[Reply]:
        """The requests the budget allows, in order, asked together; each one it does not
        allow is answered with ``BudgetExhausted``, so the answers already paid for are kept."""
        if not answers_batches(self.inner):
            return answer_each(self.complete, requests, concurrency)
        reserved: list[float] = []
        stopped: BudgetExhausted | None = None
        for request in requests:
            try:
                reserved.append(self.meter.reserve(request))
            except BudgetExhausted as exc:
                stopped = exc
                break
        try:
            replies = complete_each(self.inner, requests[: len(reserved)], concurrency)
        except BaseException:
            for amount in reserved:
                self.meter.settle(amount, None)
            raise
        for amount, reply in zip(reserved, replies, strict=True):
            self.meter.settle(amount, reply if isinstance(reply, ChatResponse) else None)
        return [*replies, *[stopped] * (len(requests) - len(reserved))]  # type: ignore[list-item]


def guard(judge: Judge, meter: Accounts | None, in_flight: int) -> Judge:
    """The judge as a run asks it, under the call cache: metered when there is a budget, and
    with at most ``in_flight`` calls at once, whether they come from items judged at once or
    from one item's questions asked at once."""
    metered = MeteredJudge(judge, meter) if meter is not None else judge
    return InFlightLimit(metered, in_flight) if in_flight > 1 else metered


# --- estimates ---------------------------------------------------------------------------------


@dataclass
class MetricEstimate:
    """Expected judge calls and tokens for one metric over the samples.

    ``pattern`` is "known" when the metric plans its calls (``Metric.planned_calls``) and
    "guessed" otherwise (one call per prompt, with the sample's text as the prompt).
    """

    metric: str
    items: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_calls: int = 0
    pattern: str = "known"

    def add(self, calls: Sequence[tuple[int, int]]) -> None:
        self.calls += len(calls)
        self.prompt_tokens += sum(p for p, _ in calls)
        self.completion_tokens += sum(c for _, c in calls)


@dataclass
class Estimate:
    metrics: list[MetricEstimate]
    price: Price | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.metrics)

    @property
    def prompt_tokens(self) -> int:
        return sum(m.prompt_tokens for m in self.metrics)

    @property
    def completion_tokens(self) -> int:
        return sum(m.completion_tokens for m in self.metrics)

    def cost(self, metric: MetricEstimate | None = None) -> float | None:
        if self.price is None:
            return None
        rows = [metric] if metric else self.metrics
        return sum(self.price.cost(m.prompt_tokens, m.completion_tokens) for m in rows)

    def record(self) -> dict[str, Any]:
        return {
            "metrics": [vars(m) for m in self.metrics],
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost(),
            "price_per_million": None if self.price is None else vars(self.price),
            "notes": self.notes,
        }


def _guessed(metric: Metric, sample: Sample) -> PlannedCalls:
    text = "".join([sample.question, sample.answer, *sample.contexts])
    instructions = "".join(getattr(p, "instruction", "") for p in metric.prompts)
    return [(approx_tokens(text + instructions), 64)] * max(1, len(metric.prompts))


def estimate(
    samples: Sequence[Sample],
    metrics: Sequence[Metric],
    *,
    price: Price | None = None,
    max_input_chars: int | None = None,
) -> Estimate:
    """Expected judge calls, tokens and (with a price) cost of scoring ``samples`` with
    ``metrics``, without calling any model. Samples are cut to ``max_input_chars`` and their
    planted text taken out first, as ``evaluate`` would by default."""
    fitted = [guarded(fit_sample(sample, max_input_chars)[0])[0] for sample in samples]
    rows = []
    for metric in metrics:
        plans = type(metric).planned_calls is not Metric.planned_calls
        row = MetricEstimate(
            metric.name, items=len(fitted), pattern="known" if plans else "guessed"
        )
        for sample in fitted:
            planned = metric.planned_calls(sample) if plans else None
            row.add(_guessed(metric, sample) if planned is None else planned)
            row.embedding_calls += metric.planned_embeddings(sample)
        rows.append(row)
    notes = [
        "tokens are estimated as characters / 4",
        "assumes no cache hits, retries or repairs",
    ]
    if any(row.pattern == "guessed" for row in rows):
        notes.append("metrics marked 'guessed' are estimated as one call per prompt")
    return Estimate(rows, price, notes)
