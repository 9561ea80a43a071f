"""How well the retriever did, judged against a reference answer: both read each reference
claim's checks against each retrieved chunk.

- ``context_recall``: the share of the reference's claims that some chunk supports (RAGChecker's
  claim recall; ragas's context recall). A short reference ("3 euros.", "No.", a list of
  acceptable answers) is read as the answer to its question instead (``metrics.answer_reading``):
  the probability that some chunk gives one of its answers. Nothing retrieved recalls nothing: 0.
- ``context_precision``: which chunks hold at least one reference claim. ``ranked=True`` (ragas)
  averages precision@k over the ranks of the relevant chunks, so relevant chunks ranked first
  score higher; ``ranked=False`` is the plain share of relevant chunks (RAGChecker).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from ragmeter.claims import ClaimTable, Part
from ragmeter.metrics.answer_reading import (
    GIVES_ANSWER,
    READING_RULE,
    ReadingOptions,
    answers_to_read,
    explained,
    given,
    planned,
)
from ragmeter.metrics.claim_metric import ClaimMetric, ClaimOptions, best_in_chunks, rounded
from ragmeter.prompts import PlannedCalls
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession


class ContextRecall(ClaimMetric):
    name = "context_recall"
    options_model = ReadingOptions
    options: ReadingOptions
    parts: ClassVar[tuple[Part, ...]] = ("reference_in_chunks",)
    rules = (*ClaimMetric.rules, READING_RULE)

    @property
    def prompts(self) -> list[Any]:
        return [*super().prompts, GIVES_ANSWER]

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        accepted = answers_to_read(sample, self.options.reading)
        if accepted is None:
            return super().planned_calls(sample)
        return planned(sample, accepted, sample.contexts)

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        accepted = answers_to_read(sample, self.options.reading) if sample.reference else None
        if accepted is None:
            value, explanation = super().measure(sample, session)
            return value, {**explanation, "reading": "claims"}
        in_chunks = given(session, sample, accepted, sample.contexts)
        best = best_in_chunks(in_chunks)
        value = float(self.verdicts(best).max())
        return value, {
            **explained(accepted, list(best), self.options.threshold),
            "p_in_chunks": [rounded(row) for row in in_chunks],
            "chunks": len(sample.contexts),
        }

    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        assert table.reference_in_chunks is not None
        recalled = best_in_chunks(self.verdicts(table.reference_in_chunks))
        return float(recalled.mean()), {"recalled": rounded(recalled)}


class ContextPrecisionOptions(ClaimOptions):
    ranked: bool = Field(
        True,
        description="Average precision over the relevant chunks' ranks (ragas); false gives "
        "the plain share of relevant chunks (RAGChecker).",
    )


def average_precision(relevant: np.ndarray) -> float:
    """Mean of precision@k over the ranks k of the relevant chunks, each weighted by its
    relevance (1/0, or a probability); 0 when none is relevant."""
    if relevant.sum() <= 0:
        return 0.0
    precision_at = np.cumsum(relevant) / np.arange(1, len(relevant) + 1)
    return float((precision_at * relevant).sum() / relevant.sum())


class ContextPrecision(ClaimMetric):
    name = "context_precision"
    options_model = ContextPrecisionOptions
    options: ContextPrecisionOptions
    parts: ClassVar[tuple[Part, ...]] = ("reference_in_chunks",)

    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        assert table.reference_in_chunks is not None
        if not table.chunks:
            raise Unscorable("nothing was retrieved: no chunk to be precise about")
        relevant = self.verdicts(table.reference_in_chunks).max(axis=0)
        share, ranked = float(relevant.mean()), average_precision(relevant)
        value = ranked if self.options.ranked else share
        return value, {
            "relevant_chunks": rounded(relevant),
            "average_precision": round(ranked, 4),
            "share_relevant": round(share, 4),
        }
