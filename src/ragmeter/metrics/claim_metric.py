"""The common frame of the metrics read off a sample's claim table (``ragmeter.claims``).

Each such metric names the blocks of the table it needs (``parts``) and reads its value off
them (``read``); making the claims, asking the checks in one batch, refusing a sample that lacks
what the metric needs and explaining the score with the claim-by-claim evidence happen here,
once. The options are the same for all of them, so the metrics of a run make the same claims and
ask the same checks, which the call cache then answers once.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from ragmeter.claims import (
    CLAIM_RULES,
    NO_CLAIM_RULE,
    SHORT_CLAIM_RULE,
    ClaimSource,
    ClaimTable,
    Part,
    ShortClaims,
    claim_prompts,
    claim_table,
    planned_calls,
)
from ragmeter.metrics.base import Metric
from ragmeter.options import Options, Probability
from ragmeter.prompts import PlannedCalls
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession


class ClaimOptions(Options):
    claims: ClaimSource = Field(
        "sentences",
        description="Check the texts' own sentences as they stand, or have the judge write "
        "self-contained statements from them first (faithfulness's prompt).",
    )
    soft: bool = Field(
        True,
        description="Count each check by its probability; false counts a check as a Yes when "
        "its probability reaches threshold (RAGChecker's hard verdicts).",
    )
    threshold: Probability = Field(
        0.5, description="P(supported) that counts as a Yes when soft is off."
    )
    short_claims: ShortClaims = Field(
        "with_question",
        description='Check a claim that does not stand alone ("3 euros.", "Yes, but only '
        "for adults.\") as the answer to the sample's question, or every claim as it stands.",
    )


class ClaimMetric(Metric):
    """A metric read off the claim table; subclasses set ``parts`` and implement ``read``."""

    options_model: ClassVar[type[Options]] = ClaimOptions
    options: ClaimOptions
    parts: ClassVar[tuple[Part, ...]]
    """The blocks of the table the metric reads."""
    rules = (CLAIM_RULES, SHORT_CLAIM_RULE, NO_CLAIM_RULE)

    @property
    def prompts(self) -> list[Any]:
        return claim_prompts(self.options.claims)

    @property
    def uses_answer(self) -> bool:
        """Whether the metric reads the answer (its claims, or as the text checked against)."""
        return any("answer" in part for part in self.parts)

    def verdicts(self, probabilities: np.ndarray) -> np.ndarray:
        """The checks as the metric counts them: probabilities, or 1/0 at the threshold."""
        if self.options.soft:
            return probabilities
        return (probabilities >= self.options.threshold).astype(float)

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        if not sample.reference or (self.uses_answer and not sample.answer.strip()):
            return []
        return planned_calls(sample, self.parts, self.options.claims, self.options.short_claims)

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        if not (sample.reference or "").strip():
            raise Unscorable("the sample has no reference answer")
        if self.uses_answer and not sample.answer.strip():
            raise Unscorable("the answer is empty")
        table = claim_table(
            sample, self.parts, self.options.claims, session, self.options.short_claims
        )
        value, reading = self.read(table)
        return value, {**reading, **table.evidence(), "checks": table.checks}

    @abstractmethod
    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        """The value off the table, and what it was computed from (for the explanation);
        raises ``Unscorable`` when the table holds nothing the value can be read from."""


def best_in_chunks(block: np.ndarray) -> np.ndarray:
    """Per claim, the largest probability that some chunk supports it (0 with no chunks)."""
    return block.max(axis=1) if block.shape[1] else np.zeros(block.shape[0])


def rounded(values: np.ndarray) -> list[float]:
    return [round(float(v), 4) for v in values]
