"""A judged candidate as the candidates log keeps it: the one record the runner writes and
reads back, and the one the judging side (``spread.py``) hands back from a thread or a Ray
worker. It lives below both, so neither has to import the other to name it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ragmeter.score import Usage
from ragmeter.testset.planning import Plan

Outcome = Literal["passed", "rejected"]


class CandidateRecord(BaseModel):
    """One judged candidate, as the candidates log keeps it."""

    key: str
    kind: str
    style: str
    persona: str | None = None
    sources: list[dict[str, Any]]
    """Each source chunk's document, offsets and heading."""
    outcome: Outcome
    reason: str | None = None
    detail: str | None = None
    question: str | None = None
    reference: str | None = None
    history: list[dict[str, str]] = Field(default_factory=list)
    checks: dict[str, Any] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0

    @classmethod
    def of(cls, plan: Plan, key: str) -> CandidateRecord:
        """The record of ``plan`` before it is judged: what was asked for, passed so far."""
        return cls(
            key=key,
            kind=plan.kind,
            style=plan.style,
            persona=plan.persona,
            sources=[{**c.citation(), "heading": c.heading} for c in plan.chunks],
            outcome="passed",
        )
