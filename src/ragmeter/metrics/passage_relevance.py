"""How relevant a passage is to a query, graded by the judge on UMBRELA's 0-3 scale
(Upadhyay et al., 2024, after Bing's relevance assessors), read as a distribution over the four
grades in one read: the metric ``ragmeter retrieval --grade`` judges each pooled pair with
(``retrieval.grading``). The query comes before the passage, so a local judge reads the
instructions and the query once for all of a query's passages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ragmeter.metrics.base import Metric
from ragmeter.prompts import (
    DATA_NOTICE,
    Message,
    PlannedCalls,
    YesNoPrompt,
    render_inputs,
    yes_no_call,
)
from ragmeter.sample import Sample
from ragmeter.session import JudgeSession

GRADES = ("0", "1", "2", "3")

GRADE_MEANINGS = (
    "0 = the passage has nothing to do with the query.",
    "1 = the passage is on the query's topic but does not answer it.",
    "2 = the passage holds some answer to the query, though unclear or mixed with other "
    "information.",
    "3 = the passage is about the query and holds its exact answer.",
)
"""What each grade means, as the judge is told and as people grading the pairs are shown."""

INSTRUCTION = (
    "You grade how relevant a passage is to a search query, as a search engine's relevance "
    "assessor does. Grades:\n" + "\n".join(GRADE_MEANINGS)
)


@dataclass(frozen=True)
class GradePrompt(YesNoPrompt):
    """The query and the passage, then the grades asked for as one digit."""

    def render(self, inputs: Mapping[str, Any], **fields: str) -> tuple[Message, ...]:
        system = f"{self.instruction}\n\n{DATA_NOTICE}"
        user = f"{render_inputs(inputs)}\n\n{self.question}"
        return (Message(role="system", content=system), Message(role="user", content=user))


GRADE_PROMPT = GradePrompt(
    name="passage_relevance",
    instruction=INSTRUCTION,
    question="How relevant is the passage to the query? Reply with one digit: 0, 1, 2 or 3.",
)


class PassageRelevance(Metric):
    """The judge's expected grade of the passage (the sample's one context) for the query (its
    question), over 3; the explanation holds the distribution and the most likely grade."""

    name = "passage_relevance"
    rated_on: ClassVar[str | None] = "0-3"
    rating_guide: ClassVar[str] = (
        "Grade how relevant the passage is to the query (shown as the question): "
        + " ".join(GRADE_MEANINGS)
    )

    @property
    def prompts(self) -> Sequence[Any]:
        return (GRADE_PROMPT,)

    def unreadable(self, sample: Sample) -> str | None:
        return None if len(sample.contexts) == 1 else "a graded pair holds one passage"

    def planned_calls(self, sample: Sample) -> PlannedCalls:
        return [yes_no_call(GRADE_PROMPT.render(self._inputs(sample)))]

    def measure(self, sample: Sample, session: JudgeSession) -> tuple[float, dict[str, Any]]:
        distribution, method = session.ask_levels(GRADE_PROMPT, self._inputs(sample), GRADES)
        expected = sum(int(grade) * p for grade, p in distribution.items())
        likeliest = max(GRADES, key=lambda grade: distribution[grade])
        return expected / 3, {
            "distribution": {g: round(p, 4) for g, p in distribution.items()},
            "expected_grade": round(expected, 4),
            "grade": int(likeliest),
            "method": method,
        }

    @staticmethod
    def _inputs(sample: Sample) -> dict[str, str]:
        """The query before the passage: a query's passages share the prompt up to it."""
        return {"query": sample.question, "passage": sample.contexts[0]}
