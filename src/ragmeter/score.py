"""What a metric produces for one sample: a value, or the reason there is none."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, Field

from ragmeter.judges.base import Message


class Exchange(BaseModel):
    """One call to the judge, kept with the score so a verdict can be inspected."""

    prompt: str
    messages: list[Message]
    reply: str | None = None
    error: str | None = None
    cached: bool = False
    probability: float | None = None
    """For a yes/no question: the judge's probability of yes, as the verdict was read."""
    zero_shot: float | None = None
    """For a yes/no question read by a verdict head: P(yes) from the log-probabilities alone."""
    head: str | None = None
    """The head that read the verdict (``ragmeter.judges.heads``); None for the zero-shot read."""
    states: dict[str, str] | None = None
    """The judge's hidden states at the verdict (packed, see ``pack_state``), where it gives
    them: what a head reads, kept so that heads can be fitted again without the model."""


class Usage(BaseModel):
    model_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_calls: int = 0
    word_reads: int = 0
    """Yes/No questions read from the word replied, the judge giving no log-probabilities."""
    sampled_reads: int = 0
    """Choices among levels read as the shares of sampled replies, for the same reason."""

    def add(self, other: Usage) -> None:
        for name in Usage.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Score(BaseModel):
    sample_id: str
    metric: str
    value: float | None
    unscored_reason: str | None = None
    explanation: dict[str, Any] = Field(default_factory=dict)
    exchanges: list[Exchange] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0

    @property
    def scored(self) -> bool:
        return self.value is not None


class ScoreBrief(Protocol):
    """What summaries read of a score (its sample, metric, value, reason and usage), without
    its explanation and exchanges: a ``Score``, or what a result keeps of one in its run's
    store (``ragmeter.result.StoredScore``)."""

    @property
    def sample_id(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def unscored_reason(self) -> str | None: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def scored(self) -> bool: ...


class Unscorable(Exception):
    """Raised inside a metric when no honest value can be given; becomes an unscored Score."""

    def __init__(self, reason: str, explanation: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.explanation = explanation or {}
