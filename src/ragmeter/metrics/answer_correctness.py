"""Answer correctness against a reference answer, read per sample as the reference asks.

A **short reference** (a phrase such as "3 euros." or "No.", "X or Y" in NQ's style, or a list
of acceptable answers) is read as the answer to its question (``metrics.answer_reading``): the
score is the probability that the answer gives one of the accepted answers, the best one
deciding; an answer that hedges between answers ("either 1998 or 1999") scores 0, and more
true detail around the right answer costs nothing.

A **longer reference** is read as claims (RAGChecker's overall precision, recall, F1).
Precision: the share of the answer's claims that the reference supports (is what it says
right?). Recall: the share of the reference's claims that the answer states (does it say all
of it?). The score is their F1 by default, ``score="precision"`` or ``"recall"`` picks one; the
explanation always holds all three with each claim's probability.

The explanation says which reading was used (``reading``) and, for a short reference, which
alternative matched. An answer whose sentences claim nothing (``claims.claims_nothing``: it
asks back or echoes the question) scores 0 without a check in either reading: it states none
of the reference, and an echo would otherwise be found "supported" by a reference on the same
subject.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from ragmeter.answers import hedged
from ragmeter.claims import ClaimTable, Part, claims_nothing
from ragmeter.language import language_of
from ragmeter.metrics.answer_reading import (
    GIVES_ANSWER,
    READING_RULE,
    ReadingOptions,
    answers_to_read,
    exactly_given,
    explained,
    given,
    planned,
)
from ragmeter.metrics.claim_metric import ClaimMetric
from ragmeter.prompts import PlannedCalls
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession


class AnswerCorrectnessOptions(ReadingOptions):
    score: Literal["f1", "precision", "recall"] = Field(
        "f1",
        description="The figure reported as the score of a reference read as claims; all "
        "three are explained.",
    )


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


class AnswerCorrectness(ClaimMetric):
    name = "answer_correctness"
    options_model = AnswerCorrectnessOptions
    options: AnswerCorrectnessOptions
    parts: ClassVar[tuple[Part, ...]] = ("answer_in_reference", "reference_in_answer")
    rules = (*ClaimMetric.rules, READING_RULE)

    @property
    def prompts(self) -> list[Any]:
        return [*super().prompts, GIVES_ANSWER]

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        if claims_nothing(sample.answer, sample.question, language_of(sample)):
            return []
        accepted = answers_to_read(sample, self.options.reading)
        if accepted is None:
            return super().planned_calls(sample)
        if not sample.answer.strip() or hedged(sample.answer, accepted):
            return []
        if exactly_given(sample.answer, accepted):
            return []
        return planned(sample, accepted, [sample.answer])

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        echoed = claims_nothing(sample.answer, sample.question, language_of(sample))
        accepted = answers_to_read(sample, self.options.reading) if sample.reference else None
        reading = "claims" if accepted is None else "answer"
        if echoed and (sample.reference or "").strip():
            nothing = {"precision": 0.0, "recall": 0.0, "f1": 0.0}
            return 0.0, {"no_claim": echoed, **nothing, "reading": reading}
        if accepted is None:
            value, explanation = super().measure(sample, session)
            return value, {**explanation, "reading": "claims"}
        if not sample.answer.strip():
            raise Unscorable("the answer is empty")
        hedge = hedged(sample.answer, accepted)
        if hedge:
            return 0.0, {**explained(accepted, [0.0] * len(accepted), 1.0), "hedged": hedge}
        exact = exactly_given(sample.answer, accepted)
        if exact:
            return 1.0, exact
        best = given(session, sample, accepted, [sample.answer])[:, 0]
        value = float(self.verdicts(best).max())
        return value, explained(accepted, list(best), self.options.threshold)

    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        assert table.answer_in_reference is not None and table.reference_in_answer is not None
        precision = float(self.verdicts(table.answer_in_reference).mean())
        recall = float(self.verdicts(table.reference_in_answer).mean())
        figures = {"precision": precision, "recall": recall, "f1": f1(precision, recall)}
        return figures[self.options.score], {k: round(v, 4) for k, v in figures.items()}
