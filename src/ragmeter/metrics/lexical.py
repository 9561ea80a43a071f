"""Exact match and token F1: the judge-free QA metrics, as QA papers report them.

Both compare the answer with each acceptable answer of the reference (``answers``: a list, or
"X or Y", or the whole text) after SQuAD's normalisation, and keep the best. They need no judge
and cost nothing; they also reject answers people accept ("The Rock and Roll Hall of Fame was
built in Cleveland in 1995." against "1995": exact match 0), which is what
``answer_correctness`` reads better (docs/agreement.md, NQ301).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from ragmeter.answers import SHORT_REFERENCE_RULE, accepted_answers, exact_match, token_f1
from ragmeter.metrics.base import Metric
from ragmeter.sample import Sample
from ragmeter.score import Unscorable
from ragmeter.session import JudgeSession

SQUAD_RULE = "SQuAD normalisation: lower case, no ASCII punctuation, no a/an/the, spaces folded"


class _LexicalMetric(Metric):
    """A comparison of the answer's words with the accepted answers', best over them."""

    needs_judge: ClassVar[bool] = False
    rules = (SQUAD_RULE, SHORT_REFERENCE_RULE)

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        accepted = accepted_answers(sample)
        if not accepted:
            raise Unscorable("the sample has no reference answer")
        scores = [self.compare(sample.answer, [gold]) for gold in accepted]
        best = max(range(len(accepted)), key=scores.__getitem__)
        return scores[best], {
            "alternatives": [
                {"answer": gold, "score": round(score, 4)}
                for gold, score in zip(accepted, scores, strict=True)
            ],
            "matched": accepted[best] if scores[best] > 0 else None,
        }

    def planned_calls(self, sample: Sample) -> list[tuple[int, int]]:
        return []

    @staticmethod
    @abstractmethod
    def compare(answer: str, accepted: Sequence[str]) -> float: ...


class ExactMatch(_LexicalMetric):
    name = "exact_match"
    compare = staticmethod(exact_match)


class TokenF1(_LexicalMetric):
    name = "token_f1"
    compare = staticmethod(token_f1)
