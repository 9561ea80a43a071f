"""Answer correctness against a reference answer (RAGChecker's overall precision, recall, F1).

Precision: the share of the answer's claims that the reference supports (is what it says
right?). Recall: the share of the reference's claims that the answer states (does it say all
of it?). The score is their F1 by default, ``score="precision"`` or ``"recall"`` picks one; the
explanation always holds all three with each claim's probability.

An answer whose sentences claim nothing (``claims.claims_nothing``: it asks back or echoes the
question) scores 0 without a check: it states none of the reference, so recall is 0, and none of
what it says is right, so precision is 0. An echo would otherwise be read as one claim and could
be found "supported" by a reference on the same subject.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from ragmeter.claims import ClaimTable, Part, claims_nothing
from ragmeter.language import language_of
from ragmeter.metrics.claim_metric import ClaimMetric, ClaimOptions
from ragmeter.prompts import PlannedCalls
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession


class AnswerCorrectnessOptions(ClaimOptions):
    score: Literal["f1", "precision", "recall"] = Field(
        "f1", description="The figure reported as the score; all three are explained."
    )


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


class AnswerCorrectness(ClaimMetric):
    name = "answer_correctness"
    options_model = AnswerCorrectnessOptions
    options: AnswerCorrectnessOptions
    parts: ClassVar[tuple[Part, ...]] = ("answer_in_reference", "reference_in_answer")

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        echoed = claims_nothing(sample.answer, sample.question, language_of(sample))
        return [] if echoed else super().planned_calls(sample)

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        echoed = claims_nothing(sample.answer, sample.question, language_of(sample))
        if echoed and (sample.reference or "").strip():
            return 0.0, {"no_claim": echoed, "precision": 0.0, "recall": 0.0, "f1": 0.0}
        return super().measure(sample, session)

    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        assert table.answer_in_reference is not None and table.reference_in_answer is not None
        precision = float(self.verdicts(table.answer_in_reference).mean())
        recall = float(self.verdicts(table.reference_in_answer).mean())
        figures = {"precision": precision, "recall": recall, "f1": f1(precision, recall)}
        return figures[self.options.score], {k: round(v, 4) for k, v in figures.items()}
