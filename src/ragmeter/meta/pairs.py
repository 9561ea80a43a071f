"""Pairwise agreement: the human preferred one item of each pair; does the metric agree?"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from ragmeter.sample import Sample


@dataclass(frozen=True)
class Pair:
    """Two samples that differ in one quality dimension; people preferred ``preferred``."""

    id: str
    dimension: str
    preferred: Sample
    rejected: Sample


class PairOutcome(BaseModel):
    pair_id: str
    dimension: str
    method: str
    preferred_value: float | None
    rejected_value: float | None
    outcome: float | None
    """1 the method agrees, 0 it disagrees, 0.5 a tie, None if either side is unscored."""
    note: str | None = None


def compare(preferred: float | None, rejected: float | None) -> float | None:
    if preferred is None or rejected is None:
        return None
    if preferred == rejected:
        return 0.5
    return 1.0 if preferred > rejected else 0.0


class Agreement(BaseModel):
    method: str
    dimension: str
    pairs: int
    accuracy: float | None
    """Unscored pairs count as ties (0.5), so failures cannot raise the figure."""
    ties: int
    unscored: int


def agreement(method: str, dimension: str, outcomes: list[PairOutcome]) -> Agreement:
    ties = sum(o.outcome == 0.5 for o in outcomes)
    unscored = sum(o.outcome is None for o in outcomes)
    total = sum(0.5 if o.outcome is None else o.outcome for o in outcomes)
    return Agreement(
        method=method,
        dimension=dimension,
        pairs=len(outcomes),
        accuracy=total / len(outcomes) if outcomes else None,
        ties=ties,
        unscored=unscored,
    )
