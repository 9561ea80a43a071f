"""Answer correctness against a reference answer (RAGChecker's overall precision, recall, F1).

Precision: the share of the answer's claims that the reference supports (is what it says
right?). Recall: the share of the reference's claims that the answer states (does it say all
of it?). The score is their F1 by default, ``score="precision"`` or ``"recall"`` picks one; the
explanation always holds all three with each claim's probability.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from ragmeter.claims import ClaimTable, Part
from ragmeter.metrics.claim_metric import ClaimMetric, ClaimOptions


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

    def read(self, table: ClaimTable) -> tuple[float, dict[str, Any]]:
        assert table.answer_in_reference is not None and table.reference_in_answer is not None
        precision = float(self.verdicts(table.answer_in_reference).mean())
        recall = float(self.verdicts(table.reference_in_answer).mean())
        figures = {"precision": precision, "recall": recall, "f1": f1(precision, recall)}
        return figures[self.options.score], {k: round(v, 4) for k, v in figures.items()}
